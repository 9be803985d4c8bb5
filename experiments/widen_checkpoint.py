"""Widen a ``train_ppo`` checkpoint's hidden layers without changing what it computes.

A capacity experiment: to ask whether a bigger network learns past where a trained one
stopped, without starting from scratch, the trained network is copied into a wider one
(Net2WiderNet-style, with zero outgoing weights instead of split units). Every new hidden unit
gets fresh incoming weights (the trainer's orthogonal initialisation) and zero weights out of
it, so the wider actor's logits and critic's values equal the old ones exactly; training then
grows the new units' outgoing weights from their gradients. Continue with ``train_ppo --init
OUT.pt --hidden <the new sizes>``.

With ``--aim-view``, the network also gets inputs for the aim view (``TravellerEnv(aim_view=
True)``, appended after the rest of the observation) with zero weights into the old units, so
it still computes the same; continue with ``train_ppo --aim-view`` (the same ``--hidden``
keeps the width).

    python -m experiments.widen_checkpoint runs/squad_tc/d/ppo.pt --hidden 256,256 \\
        --out runs/squad_wide/start.pt
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main", "widen", "widen_checkpoint"]


def _hidden(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(
            f"--hidden {text!r}: comma-separated positive layer sizes, e.g. 256,256")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(prog="widen_checkpoint", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path, help="a train_ppo checkpoint (.pt)")
    p.add_argument("--hidden", type=_hidden, required=True,
                   help="the new layer sizes: as many layers as the checkpoint's, none smaller")
    p.add_argument("--out", type=Path, required=True, help="where to write the wider checkpoint")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the new units' incoming weights (default: 0)")
    p.add_argument("--aim-view", action="store_true",
                   help="add (zero-weight) inputs for the aim view, for train_ppo --aim-view")
    return p


def widen(net: Any, hidden: list[int], seed: int, extra_inputs: int = 0) -> Any:
    """A new ``ActorCritic`` with layer sizes ``hidden`` (and ``extra_inputs`` more inputs
    after the old ones) computing what the ``ActorCritic`` ``net`` does (exactly, up to float
    summation order). ``ValueError`` when ``hidden`` has another depth or a smaller layer."""
    import torch

    from agents.ppo_policy import ActorCritic

    old = list(net.hidden)
    if len(hidden) != len(old) or any(h < o for h, o in zip(hidden, old, strict=True)):
        raise ValueError(f"--hidden {','.join(map(str, hidden))}: the checkpoint has layers "
                         f"{','.join(map(str, old))}; give as many layers, none smaller")
    torch.manual_seed(seed)
    wide = ActorCritic(net.obs_dim + extra_inputs, net.n_actions, hidden)
    with torch.no_grad():
        for old_mlp, new_mlp in ((net.actor, wide.actor), (net.critic, wide.critic)):
            for o, n in zip(old_mlp, new_mlp, strict=True):
                if not isinstance(o, torch.nn.Linear):
                    continue
                rows, cols = o.weight.shape
                n.weight[:rows, :cols] = o.weight   # the old units, as they were
                # No input from the new units below them, nor from the new inputs (for the
                # head: the new last-layer units compute, but nothing reads them until
                # training grows these weights).
                n.weight[:rows, cols:] = 0.0
                n.bias[:rows] = o.bias
                n.bias[rows:] = 0.0
    return wide


def widen_checkpoint(path: Path, hidden: list[int], out: Path, seed: int = 0,
                     aim_view: bool = False) -> Path:
    """Read ``path``, widen its network to ``hidden`` (with ``aim_view``: and to the aim
    view's inputs), write the checkpoint (same scenario, labels, views and bookkeeping, plus
    ``widened_from``) atomically to ``out``."""
    from agents.ppo_policy import checkpoint_bytes, network_from_checkpoint, read_checkpoint
    from experiments.train_common import atomic_write_bytes

    data = read_checkpoint(path)
    extra = 0
    if aim_view:
        if data.get("aim_view"):
            raise ValueError(f"--aim-view: {path} already reads the aim view")
        # one aim-view entry per slot, as one slot-relative aim action per slot
        extra = sum(label.startswith("aim:") for label in data["action_labels"])
    wide = widen(network_from_checkpoint(data), hidden, seed, extra)
    keep = {k: data[k] for k in ("decisions", "update", "seed", "move_view", "aim_view",
                                      "imitation")
            if k in data}
    if aim_view:
        keep["aim_view"] = True
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, checkpoint_bytes(wide, data["scenario"], data["action_labels"],
                                             widened_from=str(path), **keep))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = build_parser().parse_args(argv)
    try:
        widen_checkpoint(args.checkpoint, args.hidden, args.out, args.seed, args.aim_view)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(str(exc)) from exc
    print(f"wrote {args.out} (hidden {','.join(map(str, args.hidden))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
