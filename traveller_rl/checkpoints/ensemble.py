"""Play several ``train_ppo`` checkpoints as one policy: write an ensemble checkpoint.

The ensemble's logits are the mean of its members' logits, so its policy is the normalised
geometric mean of theirs and greedy play takes the action with the highest mean
log-probability (``traveller_agents.nets.EnsembleNet``). The members must read the same
observation (size, views, labels, layout) and choose among the same slot-relative actions;
their architectures and widths may differ. Members trained on a fixed layout make an ensemble
on that layout (it plays every scenario that fits it). The result is an ordinary ``.pt``
checkpoint: it plays as an NPC anywhere a policy name is accepted, ``select_checkpoint``
ranks it and ``squad_ppo --checkpoint`` evaluates it. It records each member's path and provenance
(``members``), and an imitation start of any member (``imitation``). It exports to ONNX
(``traveller export``) but cannot be trained further (``train_ppo --init`` refuses it) or
widened.

Ensembling runs trained side by side is a cheap way to smooth over each run's idiosyncratic
mistakes; docs/findings.md measures what it gives there.

    python -m traveller_rl.checkpoints.ensemble runs/s21/atk64/pool/ppo_u000560.pt \\
        runs/s21/atk65/pool/ppo_u000320.pt --out runs/s21/atk_pair.pt
"""

from __future__ import annotations

import argparse
from pathlib import Path

from traveller_rl.commandline import UsageError, run_standalone

__all__ = ["build_parser", "ensemble_checkpoints", "main"]


def ensemble_checkpoints(paths: list[Path], out: Path) -> Path:
    """Read the checkpoints ``paths``, write their ensemble atomically to ``out``.
    ``FileNotFoundError``/``ValueError`` naming the file that is missing or does not fit."""
    from traveller_agents.checkpoint import ensemble_bytes, read_checkpoint
    from traveller_rl.common import atomic_write_bytes

    if len(set(map(str, paths))) != len(paths):
        raise ValueError("checkpoints: the same file is listed twice; an ensemble's members "
                         "are distinct checkpoints")
    members = [read_checkpoint(p) for p in paths]
    blob = ensemble_bytes(members, [str(p) for p in paths])
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, blob)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="python -m traveller_rl.checkpoints.ensemble",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoints", type=Path, nargs="+",
                   help="two or more train_ppo checkpoints (.pt) of the same battles")
    p.add_argument("--out", type=Path, required=True, help="the ensemble checkpoint to write")
    return p


def run(args: argparse.Namespace) -> int:
    """Write the ensemble (a ``UsageError`` naming the file on bad input)."""
    try:
        ensemble_checkpoints(list(args.checkpoints), args.out)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.out} ({len(args.checkpoints)} members)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for bad input)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
