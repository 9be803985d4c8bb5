"""``traveller export POLICY --onnx out.onnx``: a trained policy as an ONNX file that
``traveller_agents.onnx_policy.OnnxPolicy`` (or any onnxruntime) plays without PyTorch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from traveller_rl.commandline import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traveller export``."""
    p.add_argument("policy", type=Path,
                   help="a train_ppo .pt checkpoint (an MLP, entity or ensemble actor) or a "
                        "MaskablePPO .zip (MlpPolicy)")
    p.add_argument("--onnx", type=Path, required=True, metavar="OUT",
                   help="the ONNX file to write (inputs observation and action_mask, outputs "
                        "masked_logits and action)")
    p.add_argument("--scenario", default=None,
                   help="the scenario the policy plays (default: the one the checkpoint "
                        "records); its labels are written into the file")


EXAMPLES = """
traveller export runs/duel/ppo.pt --onnx runs/duel/policy.onnx
traveller export model.zip --onnx model.onnx --scenario squad"""


def run(args: argparse.Namespace) -> int:
    """Export ``args.policy``; print what was written (exit 0), or the error on stderr (exit 2
    for a policy that cannot be exported, 1 when the file cannot be written)."""
    if not args.policy.exists():
        raise UsageError(f"POLICY {args.policy}: no such trained-policy file (a train_ppo .pt "
                         "or a MaskablePPO .zip)")
    if args.onnx.is_dir():
        raise UsageError(f"--onnx {args.onnx}: is a folder; give a file path")
    if args.scenario is not None:
        from traveller_env.scenario import load_scenario

        load_scenario(args.scenario)
    try:
        from traveller_rl.onnx_export import export_onnx

        meta = export_onnx(args.policy, args.onnx, scenario=args.scenario)
    except ImportError as exc:
        raise UsageError(f"exporting needs {exc.name or 'onnx'}: install the project's onnx "
                         "extra (pip install -e '.[onnx]')") from None
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    hidden = "x".join(str(h) for h in json.loads(meta["hidden"])) or "no hidden layer"
    net = f"tanh MLP {hidden}"
    if meta.get("arch") == "entity":
        net = (f"entity actor (traced; embed {meta['embed']}, {meta['attention']} attention "
               f"blocks, trunk {hidden})")
    elif "arch" in meta:
        net = f"{meta['arch']} of {', '.join(json.loads(meta.get('members', '[]')))} (traced)"
    kind = "slot-relative" if meta["action_targets"] == "relative" else "absolute"
    focus = json.loads(meta["focus"])
    extra = f", focus {','.join(focus)} assisted by {meta['assist']}" if focus else ""
    if "layout" in meta:
        extra += (f", layout {json.loads(meta['layout'])['name']} (plays every scenario that "
                  "fits it)")
    print(f"wrote {args.onnx}: {meta['source_format']} policy for scenario "
          f"{meta['scenario']!r}, observation [batch, {meta['obs_dim']}], "
          f"{meta['n_actions']} {kind} actions, {net}{extra}")
    return 0
