"""Widen a ``train_ppo`` checkpoint's hidden layers without changing what it computes.

A capacity experiment: to ask whether a bigger network learns past where a trained one
stopped, without starting from scratch, the trained network is copied into a wider one
(Net2WiderNet-style, with zero outgoing weights instead of split units). Every new hidden unit
gets fresh incoming weights (the trainer's orthogonal initialisation) and zero weights out of
it, so the wider actor's logits and critic's values equal the old ones exactly; training then
grows the new units' outgoing weights from their gradients. Continue with ``train_ppo --init
OUT.pt --hidden <the new sizes>``.

With ``--move-view``, ``--aim-view`` or ``--attack-view``, the network also gets inputs for that
view (``TravellerEnv(aim_view=True)`` and so on), at the place the observation puts it (the
views come after the rest, in the order move, aim, attack), with zero weights into the old
units, so it still computes the same; continue with ``train_ppo --aim-view`` and so on (the
same ``--hidden`` keeps the width).

    python -m traveller_rl.checkpoints.widen runs/squad_tc/d/ppo.pt --hidden 256,256 \\
        --out runs/squad_wide/start.pt
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traveller_agents.views import VIEWS
from traveller_rl.commandline import UsageError, run_standalone, seed_type

__all__ = ["build_parser", "main", "view_columns", "widen", "widen_checkpoint"]


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
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m traveller_rl.checkpoints.widen",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path, help="a train_ppo checkpoint (.pt)")
    p.add_argument("--hidden", type=_hidden, required=True,
                   help="the new layer sizes: as many layers as the checkpoint's, none smaller")
    p.add_argument("--out", type=Path, required=True, help="where to write the wider checkpoint")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="seed of the new units' incoming weights (default: 0)")
    for view in VIEWS:
        flag = "--" + view.replace("_", "-")
        p.add_argument(flag, action="store_true",
                       help=f"add (zero-weight) inputs for the {view.replace('_', ' ')}, for "
                            f"train_ppo {flag}")
    return p


def view_columns(data: dict[str, Any], add: Sequence[str]) -> tuple[int, list[int]]:
    """For a checkpoint ``data`` gaining the views ``add``: the new observation's size, and
    the new column of each old input (the plain observation first, then the views in
    ``VIEWS`` order, as the env lays them out). ``ValueError`` for a view it already reads."""
    from traveller_env.observations import view_labels

    labels = data["action_labels"]
    slots = [lab.split(":", 1)[1] for lab in labels if lab.startswith("aim:")]
    max_move = max((int(lab.rsplit(":", 1)[1]) for lab in labels if lab.startswith("move:")),
                   default=0)
    sizes = {v: len(view_labels(v, slots, max_move)) for v in VIEWS}
    for v in add:
        if data.get(v):
            raise ValueError(f"--{v.replace('_', '-')}: the checkpoint already reads the "
                             f"{v.replace('_', ' ')}")
    plain = data["obs_dim"] - sum(sizes[v] for v in VIEWS if data.get(v))
    if plain <= 0:
        raise ValueError(f"the checkpoint's obs_dim {data['obs_dim']} is too small for the "
                         "views it records")
    columns, at = list(range(plain)), plain
    for v in VIEWS:
        if data.get(v):
            columns += range(at, at + sizes[v])
        if data.get(v) or v in add:
            at += sizes[v]
    return at, columns


def widen(net: Any, hidden: list[int], seed: int,
          inputs: tuple[int, Sequence[int]] | None = None) -> Any:
    """A new ``ActorCritic`` with layer sizes ``hidden`` computing what the ``ActorCritic``
    ``net`` does (exactly, up to float summation order). ``inputs``: (the new input size, the
    new column of each old input; ``view_columns`` gives them), new inputs getting zero
    weights; by default the inputs stay as they are. ``ValueError`` when ``hidden`` has
    another depth or a smaller layer."""
    import torch

    from traveller_agents.nets import ActorCritic

    old = list(net.hidden)
    if len(hidden) != len(old) or any(h < o for h, o in zip(hidden, old, strict=True)):
        raise ValueError(f"--hidden {','.join(map(str, hidden))}: the checkpoint has layers "
                         f"{','.join(map(str, old))}; give as many layers, none smaller")
    if inputs is None:
        inputs = (net.obs_dim, range(net.obs_dim))
    n_inputs, old_columns = inputs[0], torch.as_tensor(list(inputs[1]))
    torch.manual_seed(seed)
    wide = ActorCritic(n_inputs, net.n_actions, hidden)
    with torch.no_grad():
        for old_mlp, new_mlp in ((net.actor, wide.actor), (net.critic, wide.critic)):
            first = True
            for o, n in zip(old_mlp, new_mlp, strict=True):
                if not isinstance(o, torch.nn.Linear):
                    continue
                rows, cols = o.weight.shape
                # The old units as they were; no input from the new units below them, nor
                # from the new inputs (for the head: the new last-layer units compute, but
                # nothing reads them until training grows these weights).
                n.weight[:rows] = 0.0
                if first:
                    n.weight[:rows, old_columns] = o.weight
                else:
                    n.weight[:rows, :cols] = o.weight
                first = False
                n.bias[:rows] = o.bias
                n.bias[rows:] = 0.0
    return wide


def widen_checkpoint(path: Path, hidden: list[int], out: Path, seed: int = 0,
                     add_views: Sequence[str] = ()) -> Path:
    """Read ``path``, widen its network to ``hidden`` (and to the inputs of the views in
    ``add_views``), write the checkpoint (same scenario, labels, views and bookkeeping, plus
    ``widened_from``) atomically to ``out``."""
    from traveller_agents.checkpoint import (
        arch_of,
        checkpoint_bytes,
        network_from_checkpoint,
        read_checkpoint,
    )
    from traveller_rl.common import atomic_write_bytes

    add = [v for v in VIEWS if v in add_views]
    unknown = sorted(set(add_views) - set(VIEWS))
    if unknown:
        raise ValueError(f"add_views {unknown}: each one of {', '.join(VIEWS)}")
    data = read_checkpoint(path)
    if arch_of(data) != "mlp":
        raise ValueError(f"{path}: its actor is the {data['arch']!r} architecture; widening "
                         "works on MLP networks only (train_ppo --arch mlp)")
    try:
        inputs = view_columns(data, add)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    wide = widen(network_from_checkpoint(data), hidden, seed, inputs=inputs)
    keep = {k: data[k] for k in ("decisions", "update", "seed", *VIEWS, "imitation")
            if k in data}
    keep.update({v: True for v in add})
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, checkpoint_bytes(wide, data["scenario"], data["action_labels"],
                                             widened_from=str(path), **keep))
    return out


def run(args: argparse.Namespace) -> int:
    """Write the wider checkpoint (a ``UsageError`` naming the file on bad input)."""
    try:
        widen_checkpoint(args.checkpoint, args.hidden, args.out, args.seed,
                         add_views=[v for v in VIEWS if getattr(args, v)])
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.out} (hidden {','.join(map(str, args.hidden))})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for bad input)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
