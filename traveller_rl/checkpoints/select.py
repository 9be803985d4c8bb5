"""Rank a training run's checkpoints against one opponent, on seeds kept for selection.

Picking the best of many checkpoints by the same evaluation that is then reported flatters
the pick (the largest of several noisy estimates is biased upwards). This script plays each
candidate greedily inside the compiled core against ``--vs`` on *selection* seeds (by default
from 300,000; the result scripts, e.g. ``traveller_rl.recipes.squad --checkpoint``, evaluate on
seeds from 200,000), half the battles from each side, and ranks them. Evaluate the pick
afterwards with the result script: its battles played no part in choosing it.

``--side red`` plays every battle from that side (a checkpoint trained for one side, e.g.
``train_ppo --side-shares blue=0,red=1``, or one side of a by-side checkpoint): the first
half are the two-sided protocol's battles for that side, on the same seeds.

``--forbid react:dodge`` (any action labels) plays the same battles with those actions taken
from the policies' choices wherever another action is legal: an ablation of what a learned
habit is worth to the policy that has it.

    python -m traveller_rl.checkpoints.select runs/squad_bc/m --vs tactician --battles 400 \\
        --every 40 --json runs/squad_bc/m/selection.json
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.commandline import UsageError, int_at_least, run_standalone, seed_type

__all__ = ["build_parser", "candidates", "check_core_opponent", "check_side",
           "forbidden_actions", "main", "rate_cells", "run", "score"]

SELECTION_SEED = 300_000


def candidates(run: Path, every: int, since: int) -> list[Path]:
    """A run folder's pool checkpoints at updates ``>= since`` that are multiples of
    ``every``, then its final ``ppo.pt``; or ``run`` itself when it is a ``.pt`` file."""
    if run.suffix == ".pt":
        if not run.is_file():
            raise ValueError(f"{run}: no such checkpoint")
        return [run]
    if not run.is_dir():
        raise ValueError(f"{run}: neither a train_ppo run folder nor a .pt checkpoint")
    found = []
    for path in sorted((run / "pool").glob("ppo_u*.pt")):
        m = re.fullmatch(r"ppo_u(\d+)\.pt", path.name)
        if m and int(m.group(1)) >= since and int(m.group(1)) % every == 0:
            found.append(path)
    if (run / "ppo.pt").is_file():
        found.append(run / "ppo.pt")
    if not found:
        raise ValueError(f"{run}: no checkpoints (pool/ppo_u*.pt or ppo.pt) to rank")
    return found


def forbidden_actions(labels: list[str], forbid: Sequence[str]) -> np.ndarray | None:
    """A boolean per action of ``labels``: those named in ``forbid`` (None when it is empty).
    ``ValueError`` naming ``--forbid`` for a name that is not one of the labels."""
    if not forbid:
        return None
    unknown = [f for f in forbid if f not in labels]
    if unknown:
        raise ValueError(f"--forbid {','.join(unknown)}: not an action of the checkpoint; "
                         f"its actions are labelled like {', '.join(labels[:2])}, ..., "
                         f"{labels[-1]} (e.g. react:dodge, end_turn, leadership)")
    return np.isin(np.asarray(labels), list(forbid))


def score(checkpoint: Path, scenario: str, vs: str, battles: int, seed: int, envs: int,
          vectors: dict[Any, Any], forbid: Sequence[str] = (),
          side: str | None = None) -> dict[str, Any]:
    """Wins, draws and losses of ``checkpoint`` (greedy) against ``vs``: ``battles // 2``
    battles as each side, from vectors reset with ``seed`` (blue) and ``seed + 1`` (red);
    with ``side``, all ``battles`` from that side (seed + its index; the other side's rate is
    then None).
    ``vectors`` caches the vectors by observation views between calls. ``forbid``: action
    labels taken from the policy's choices wherever another action is legal (an ablation:
    what those actions are worth to it)."""
    from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
    from traveller_agents.views import views_of
    from traveller_env import load_scenario, vector
    from traveller_rl.evaluation import wilson_interval
    from traveller_rl.ppo.rollout import vector_winrate

    data = read_checkpoint(checkpoint)
    banned = forbidden_actions(list(data["action_labels"]), forbid)
    net = network_from_checkpoint(data)
    views = views_of(data)
    key = tuple(sorted(views.items()))
    if key not in vectors:
        names = [s.name for s in load_scenario(scenario).sides]
        vectors[key] = [vector.make(scenario, num_envs=envs, seed=0, backend="core",
                                    opponents={names[1 - i]: vs}, relative_actions=True,
                                    **views) for i in (0, 1)]
    names = list(vectors[key][0].sides)
    played = range(len(names)) if side is None else [names.index(side)]
    per_side: list[tuple[int, int, int] | None] = [None] * len(names)
    for i in played:
        per_side[i] = vector_winrate(net, vectors[key][i], i,
                                     battles if side is not None else battles // 2,
                                     seed + i, banned)
    w, d, lost = (sum(x) for x in zip(*[r for r in per_side if r], strict=True))
    n = w + d + lost
    lo, hi = wilson_interval(w, n)
    return {"checkpoint": str(checkpoint), "update": data.get("update"),
            "decisions": data.get("decisions"), "wins": w, "draws": d, "losses": lost,
            "win_rate": w / n, "ci95": [lo, hi],
            **({"side": side} if side is not None else {}),
            # by side index, whatever the scenario calls its sides (the keys predate --side)
            **{f"win_rate_{key}": (None if r is None else r[0] / max(1, sum(r)))
               for key, r in zip(("blue", "red"), per_side, strict=False)}}


def check_core_opponent(vs: str) -> None:
    """``ValueError`` naming ``--vs`` unless ``vs`` is a policy of the compiled core (the
    rankings play inside it)."""
    from traveller_env import _core

    if vs not in _core.CORE_POLICIES:
        raise ValueError(f"--vs {vs!r}: not a policy of the compiled core; one of "
                         f"{', '.join(_core.CORE_POLICIES)}")


def check_side(side: str | None, scenario: str) -> None:
    """``ValueError`` naming ``--side`` unless it is None or a side of ``scenario``."""
    from traveller_env import load_scenario

    if side is None:
        return
    names = [s.name for s in load_scenario(scenario).sides]
    if side not in names:
        raise ValueError(f"--side {side!r}: not a side of scenario {scenario!r}; one of "
                         f"{', '.join(names)}")


def rate_cells(row: dict[str, Any]) -> str:
    """A ranking row's table cells: win rate (95% CI) | as blue | as red."""
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    return (f"{row['win_rate']:.3f} ({row['ci95'][0]:.3f}-{row['ci95'][1]:.3f}) | "
            f"{rate(row.get('win_rate_blue'))} | {rate(row.get('win_rate_red'))}")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options."""
    p = parser or argparse.ArgumentParser(allow_abbrev=False,
                                          prog="python -m traveller_rl.checkpoints.select",
                                          description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a train_ppo run folder (its pool/ and ppo.pt) or "
                                          "one .pt checkpoint")
    p.add_argument("--scenario", default="squad", help="scenario to play (default: squad)")
    p.add_argument("--vs", default="tactician",
                   help="the opponent, a policy of the core (default: tactician)")
    p.add_argument("--battles", type=int, default=400,
                   help="battles per checkpoint, half from each side (default: 400)")
    p.add_argument("--every", type=int, default=10,
                   help="rank pool checkpoints at multiples of this update (default: 10)")
    p.add_argument("--since", type=int_at_least(0), default=0,
                   help="from this update on (default: 0)")
    p.add_argument("--seed", type=seed_type, default=SELECTION_SEED,
                   help=f"selection seed (default: {SELECTION_SEED}, apart from the result "
                        "scripts' evaluation seeds)")
    p.add_argument("--envs", type=int, default=100, help="battles stepped at once (default: 100)")
    p.add_argument("--side", default=None,
                   help="play every battle from this side (e.g. red: a checkpoint trained "
                        "for one side); default: half from each")
    p.add_argument("--forbid", default="",
                   help="comma-separated action labels (e.g. react:dodge) the policies may not "
                        "choose wherever another action is legal: an ablation of what they "
                        "are worth to them (default: none)")
    p.add_argument("--json", type=Path, default=None, help="write the ranking here")
    return p


def run(args: argparse.Namespace) -> int:
    """Rank, print a table (best first) and write ``--json``."""
    import torch

    from traveller_rl.common import check_minimums

    try:  # --battles: at least one a side
        check_minimums((("--battles", args.battles, 2), ("--every", args.every, 1),
                        ("--envs", args.envs, 1)))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        check_core_opponent(args.vs)
        check_side(args.side, args.scenario)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        paths = candidates(args.run, args.every, args.since)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    torch.set_num_threads(1)
    t0 = time.time()
    vectors: dict[Any, Any] = {}
    forbid = [f for f in args.forbid.split(",") if f]
    try:
        rows = [score(p, args.scenario, args.vs, args.battles, args.seed, args.envs, vectors,
                      forbid, args.side) for p in paths]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    ranked = sorted(rows, key=lambda r: -r["win_rate"])
    print(f"| checkpoint | update | win rate vs {args.vs} (95% CI) | as blue | as red |")
    print("|---|---:|---|---:|---:|")
    for r in ranked:
        print(f"| {r['checkpoint']} | {r['update']} | {rate_cells(r)} |")
    print(f"{len(rows)} checkpoints x {args.battles} battles in {time.time() - t0:.0f} s "
          f"(seeds from {args.seed}" + (f"; all as {args.side}" if args.side else "")
          + (f"; forbidden: {', '.join(forbid)})" if forbid else ")"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                     if k != "func"}, "ranking": ranked}, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
