"""Play one ``train_ppo`` checkpoint per side as one policy: write a by-side checkpoint.

On a map that is not mirror-symmetric (``squad``), each side can be learned by its own network: two
runs train at once, one with ``--side-shares blue=1,red=0``, the other with ``--side-shares
blue=0,red=1``, each playing the other's pool checkpoints (``--pool-watch OTHER_RUN
--pool-watch-share 1``), so each meets the other side's current population. This script joins one
checkpoint of each into a single ``.pt`` (``traveller_agents.nets.SideNet``): each seat plays
its own side's network. It plays as an NPC anywhere a policy name is accepted, ``select_checkpoint``
ranks it and ``squad_ppo --checkpoint`` evaluates it; it records each side's path and provenance
(``sides``). A side's checkpoint may be an ensemble. It cannot be trained further (``train_ppo
--init`` refuses it), widened or exported to ONNX.

    python -m traveller_rl.checkpoints.by_side --side blue=runs/s25/sp79/pool/ppo_u000500.pt \\
        --side red=runs/s25/sp80/pool/ppo_u000480.pt --out runs/s25/sp_sides.pt
"""

from __future__ import annotations

import argparse
from pathlib import Path

from traveller_rl.commandline import UsageError, run_standalone

__all__ = ["build_parser", "main", "parse_sides", "side_checkpoint"]


def parse_sides(items: list[str]) -> dict[str, Path]:
    """``SIDE=PATH`` items as ``{side: path}``; ``ValueError`` naming ``--side`` when one is
    malformed or a side is given twice."""
    sides: dict[str, Path] = {}
    for item in items:
        side, sep, path = item.partition("=")
        if not sep or not side or not path:
            raise ValueError(f"--side {item!r}: expected SIDE=CHECKPOINT (e.g. "
                             "blue=runs/a/ppo.pt)")
        if side in sides:
            raise ValueError(f"--side: side {side!r} is given twice")
        sides[side] = Path(path)
    return sides


def side_checkpoint(paths: dict[str, Path], out: Path, scenario: str | None = None) -> Path:
    """Read each side's checkpoint of ``paths``, write the by-side checkpoint atomically to
    ``out``. With ``scenario``, the sides must be exactly that scenario's. ``ValueError`` /
    ``FileNotFoundError`` naming the side or file that is missing or does not fit."""
    from traveller_agents.checkpoint import by_side_bytes, read_checkpoint
    from traveller_rl.common import atomic_write_bytes

    if scenario is not None:
        from traveller_env import load_scenario

        names = [s.name for s in load_scenario(scenario).sides]
        if sorted(paths) != sorted(names):
            raise ValueError(f"--side: scenario {scenario!r} has sides {', '.join(names)}; "
                             f"got {', '.join(paths) or 'none'} (give each side one checkpoint)")
    members = {side: read_checkpoint(path) for side, path in paths.items()}
    blob = by_side_bytes(members, {side: str(path) for side, path in paths.items()})
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, blob)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="python -m traveller_rl.checkpoints.by_side",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--side", action="append", default=[], metavar="SIDE=CHECKPOINT",
                   help="a side's name and its train_ppo checkpoint (.pt); once per side")
    p.add_argument("--scenario", default="squad",
                   help="the scenario whose sides these are (default: squad)")
    p.add_argument("--out", type=Path, required=True, help="the checkpoint to write")
    return p


def run(args: argparse.Namespace) -> int:
    """Write the by-side checkpoint (a ``UsageError`` naming the flag or file on bad input)."""
    try:
        paths = parse_sides(args.side)
        side_checkpoint(paths, args.out, args.scenario)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.out} ({', '.join(f'{s}: {p}' for s, p in paths.items())})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for bad input)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
