"""Rank ensembles of two runs' checkpoints (one from each) against one opponent, on seeds kept
for selection, and write the best pair as an ensemble checkpoint.

An ensemble of two runs trained side by side smooths over each run's own mistakes
(``experiments.ensemble_checkpoints``); which two checkpoints make the best pair is not the
pair of each run's best single checkpoint. This script takes the ``--top`` checkpoints of each
run from two ``select_checkpoint --json`` rankings, plays every pair (``top x top`` ensembles)
greedily inside the compiled core against ``--vs``, half the battles from each side, on
``--seed`` (by default 320,000: apart from the single rankings' 300,000 and the result
scripts' 200,000, so that the pairs are not ranked on the battles that picked their members),
ranks them and writes the best one to ``--out``. Evaluate it afterwards with the result script
(``experiments.squad_ppo --checkpoint``), whose battles played no part in choosing it.

    python -m experiments.select_checkpoint runs/a --battles 1000 --json runs/sel_a.json
    python -m experiments.select_checkpoint runs/b --battles 1000 --json runs/sel_b.json
    python -m experiments.select_pair runs/sel_a.json runs/sel_b.json --top 6 \\
        --battles 2000 --json runs/pairs.json --out runs/best_pair.pt
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["PAIR_SEED", "build_parser", "main", "ranked_checkpoints", "run"]

PAIR_SEED = 320_000


def ranked_checkpoints(ranking: Path, top: int) -> list[Path]:
    """The ``top`` best distinct checkpoints of a ``select_checkpoint --json`` file (a run's
    ``ppo.pt`` that repeats its last pool checkpoint counts once). ``ValueError`` naming the
    file when it is not such a ranking or a checkpoint it lists is gone."""
    try:
        rows = json.loads(ranking.read_text())["ranking"]
        order = [(Path(r["checkpoint"]), r.get("update")) for r in rows]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{ranking}: not a select_checkpoint --json ranking ({exc})") from None
    picked: list[Path] = []
    seen: set[tuple[str, Any]] = set()
    for path, update in order:
        key = (str(path.parent.parent if path.parent.name == "pool" else path.parent), update)
        if key in seen:
            continue
        if not path.is_file():
            raise ValueError(f"{ranking}: it lists {path}, which does not exist")
        seen.add(key)
        picked.append(path)
        if len(picked) == top:
            break
    if not picked:
        raise ValueError(f"{ranking}: the ranking is empty")
    return picked


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options."""
    p = parser or argparse.ArgumentParser(prog="select_pair",
                                          description=__doc__.split("\n\n")[0])
    p.add_argument("rankings", type=Path, nargs=2,
                   help="two select_checkpoint --json rankings, one per run")
    p.add_argument("--top", type=int, default=6,
                   help="checkpoints taken from each ranking (default: 6; top x top pairs)")
    p.add_argument("--scenario", default="squad", help="scenario to play (default: squad)")
    p.add_argument("--vs", default="tactician",
                   help="the opponent, a policy of the core (default: tactician)")
    p.add_argument("--battles", type=int, default=2000,
                   help="battles per pair, half from each side (default: 2000)")
    p.add_argument("--seed", type=int, default=PAIR_SEED,
                   help=f"selection seed of the pairs (default: {PAIR_SEED})")
    p.add_argument("--envs", type=int, default=100, help="battles stepped at once (default: 100)")
    p.add_argument("--json", type=Path, default=None, help="write the ranking here")
    p.add_argument("--out", type=Path, default=None,
                   help="write the best pair's ensemble checkpoint here")
    return p


def run(args: argparse.Namespace) -> int:
    """Rank the pairs, print a table (best first), write ``--json`` and ``--out``."""
    import torch

    from experiments.ensemble_checkpoints import ensemble_checkpoints
    from experiments.select_checkpoint import check_core_opponent, rate_cells, score
    from experiments.train_common import check_minimums

    try:
        check_minimums((("--top", args.top, 1), ("--battles", args.battles, 2),
                        ("--envs", args.envs, 1)))
        check_core_opponent(args.vs)
        first, second = (ranked_checkpoints(r, args.top) for r in args.rankings)
        if {str(p) for p in first} & {str(p) for p in second}:
            raise ValueError("the two rankings share checkpoints; give one ranking per run")
    except ValueError as exc:
        raise SystemExit(f"select_pair: {exc}") from None
    torch.set_num_threads(1)
    t0 = time.time()
    vectors: dict[Any, Any] = {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, a in enumerate(first):
            for j, b in enumerate(second):
                path = Path(tmp) / f"pair_{i}_{j}.pt"
                try:
                    ensemble_checkpoints([a, b], path)
                    row = score(path, args.scenario, args.vs, args.battles, args.seed,
                                args.envs, vectors)
                except ValueError as exc:
                    raise SystemExit(f"select_pair: {exc}") from None
                row.pop("checkpoint"), row.pop("update")
                rows.append({"members": [str(a), str(b)], **row})
    ranked = sorted(rows, key=lambda r: -r["win_rate"])
    print(f"| pair | win rate vs {args.vs} (95% CI) | as blue | as red |")
    print("|---|---|---:|---:|")
    for r in ranked:
        print(f"| {' + '.join(r['members'])} | {rate_cells(r)} |")
    print(f"{len(rows)} pairs x {args.battles} battles in {time.time() - t0:.0f} s "
          f"(seeds from {args.seed})")
    if args.out:
        ensemble_checkpoints([Path(m) for m in ranked[0]["members"]], args.out)
        print(f"wrote {args.out}: {' + '.join(ranked[0]['members'])}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "args": {k: (str(v) if isinstance(v, Path) else
                         [str(x) for x in v] if isinstance(v, list) else v)
                     for k, v in vars(args).items() if k != "func"},
            "ranking": ranked}, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
