"""The generalisation gap, from one command: learned policies against ``tactician`` on the
built-in ``squad``, on held-out generated battles and on every built-in scenario that fits a
6v6 layout, both sides. The battles are played by the product's evaluation path,
``traveller_rl.scenario_eval.play_battles`` (``tactician`` in the core, the policy's decisions
batched across battles), the one ``traveller benchmark`` plays its vector suites with.

    python -m experiments.generalisation results/league/understudy.onnx \
        results/league/wanderer.onnx --battles 1000 --out results/generalisation.json

Cells (each ``--battles`` battles, half on each side; a scenario set's scenarios each played
once from each side):

- ``squad``: the built-in map (the league's training map);
- ``gen:squad`` test: ``gen:squad@10000`` ... (4 v 4 on new ground: ``scenario_set.TEST_SEEDS``,
  never trained on, never used to pick a checkpoint);
- ``gen:skirmish`` test: ``gen:skirmish@10000`` ... (1 to 6 a side, any kit);
- ``built-in (fitting)``: the built-in scenarios a 6v6 layout holds, in turn.

Prints a markdown table; ``--out`` writes every battle's record (scenario, side, battle seed,
result) and the cells.

**Picking a checkpoint** without touching the test seeds: ``--select RUN/pool --last 10
--every 40`` plays the last ten checkpoints of a run (of updates that are multiples of 40, and
the latest) on ``--battles`` battles drawn from the validation
seeds (``scenario_set.VALIDATION_SEEDS``) and prints them ranked (``--out``: the ranking).
``--split training`` plays the training seeds instead: the same checkpoints on the draws they
trained on and on new ones tell memorised maps from a policy that plays any map.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from traveller_env.scenario_set import TEST_SEEDS, TRAINING_SEEDS, VALIDATION_SEEDS
from traveller_rl.scenario_eval import load_learned, play_scenarios, summarise

#: The seed ranges ``--select`` can play (``--split``).
SPLITS = {"validation": VALIDATION_SEEDS, "training": TRAINING_SEEDS}

#: The built-in scenarios a 6v6 layout holds (duel and range_* are too long for its map).
BUILTIN_FITTING = ("squad", "ambush", "melee", "leadership_l0", "leadership_l3",
                   "squad_commander", "squad_commander0")


def cells(battles: int) -> dict[str, list[str]]:
    """Each cell's scenario list (played once from each side: ``battles // 2`` scenarios)."""
    n = battles // 2
    lo = TEST_SEEDS[0]
    return {
        "squad": ["squad"] * n,
        "gen:squad (test seeds)": [f"gen:squad@{lo + i}" for i in range(n)],
        "gen:skirmish (test seeds)": [f"gen:skirmish@{lo + i}" for i in range(n)],
        "built-in (fitting)": [BUILTIN_FITTING[i % len(BUILTIN_FITTING)] for i in range(n)],
    }


def candidates(pool: Path, last: int, every: int) -> list[Path]:
    """The last ``last`` of a pool's checkpoints (``ppo_u<update>.pt``) whose update is a
    multiple of ``every``, the pool's latest always among them."""
    paths = sorted(pool.glob("ppo_u*.pt"))
    keep = [p for p in paths if int(p.stem[len("ppo_u"):]) % every == 0]
    if paths and paths[-1] not in keep:
        keep.append(paths[-1])
    return keep[-last:]


def select(pool: Path, last: int, every: int, distribution: str, battles: int, opponent: str,
           seed: int, backend: str, split: str = "validation") -> list[dict]:
    """Checkpoints of ``pool`` (``candidates``) ranked by their win rate on ``battles``
    battles drawn from ``distribution``'s ``split`` seeds (``SPLITS``)."""
    paths = candidates(pool, last, every)
    scenarios = [f"{distribution}@{SPLITS[split][0] + i}" for i in range(battles // 2)]
    ranked = []
    for path in paths:
        cell = summarise(play_scenarios(load_learned(path), scenarios, opponent, seed=seed,
                                        backend=backend))
        ranked.append({"checkpoint": str(path), **cell})
        print(f"{path.name}  {_fmt(cell)}", file=sys.stderr)
    return sorted(ranked, key=lambda c: -(c["win_rate"] or 0.0))


#: A battle's record in ``--out``: one row of these fields (``reason`` only when not played).
RECORD_FIELDS = ("scenario", "side", "battle_seed", "result")


def compact(records: list[dict]) -> list[list]:
    """Records as rows of ``RECORD_FIELDS`` (a not-playable one adds its reason)."""
    return [[r.get(f) for f in RECORD_FIELDS] + ([r["reason"]] if "reason" in r else [])
            for r in records]


def _fmt(cell: dict) -> str:
    if not cell["battles"]:
        return "n/p"
    lo, hi = cell["win_ci95"]
    return f"{cell['win_rate']:.3f} ({lo:.3f}-{hi:.3f})"


def main(argv: list[str] | None = None) -> int:
    """Run the cells for every policy; print the table; write ``--out``."""
    parser = argparse.ArgumentParser(allow_abbrev=False,
                                     prog="python -m experiments.generalisation",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="*", help=".pt checkpoints or .onnx policies")
    parser.add_argument("--select", type=Path, metavar="POOL",
                        help="rank a run's last checkpoints (its pool/ folder) on validation "
                             "seeds instead")
    parser.add_argument("--last", type=int, default=10)
    parser.add_argument("--every", type=int, default=1,
                        help="--select: only checkpoints whose update is a multiple of this "
                             "(and the latest)")
    parser.add_argument("--distribution", default="gen:squad",
                        help="--select: the distribution whose validation seeds to play")
    parser.add_argument("--split", choices=tuple(SPLITS), default="validation",
                        help="--select: the seeds to play (default validation)")
    parser.add_argument("--battles", type=int, default=1000,
                        help="battles per cell, even (default 1000)")
    parser.add_argument("--opponent", default="tactician")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="core", choices=("core", "python"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.battles < 2 or args.battles % 2:
        parser.error(f"--battles {args.battles}: an even number >= 2")
    if args.select is not None:
        lo, hi = SPLITS[args.split]
        if args.battles // 2 > hi - lo + 1:
            parser.error(f"--battles {args.battles}: the {args.split} seeds {lo}-{hi} hold "
                         f"{2 * (hi - lo + 1)} battles (one from each side per seed)")
        ranked = select(args.select, args.last, args.every, args.distribution, args.battles,
                        args.opponent, args.seed, args.backend, args.split)
        for c in ranked:
            print(f"{c['checkpoint']}  {_fmt(c)}")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({f"{args.split}_seeds": [lo, hi],
                                            "ranked": ranked}, indent=1) + "\n")
        return 0
    if not args.policies:
        parser.error("name at least one policy (or --select a run's pool)")
    table: dict[str, dict] = {}
    for path in args.policies:
        learned = load_learned(path)
        row = {}
        for name, scenarios in cells(args.battles).items():
            start = time.time()
            records = play_scenarios(learned, scenarios, args.opponent, seed=args.seed,
                                     backend=args.backend)
            row[name] = {**summarise(records), "seconds": round(time.time() - start, 1),
                         "records": compact(records)}
            print(f"{learned.name:12s} {name:28s} {_fmt(row[name])}  "
                  f"({row[name]['seconds']} s)", file=sys.stderr)
        table[learned.name] = row
    names = list(cells(2))
    print("| policy | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for policy, row in table.items():
        print(f"| `{policy}` | " + " | ".join(_fmt(row[n]) for n in names) + " |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": "python -m experiments.generalisation " + " ".join(argv or sys.argv[1:]),
            "opponent": args.opponent, "battles_per_cell": args.battles, "seed": args.seed,
            "test_seeds": list(TEST_SEEDS), "record_fields": list(RECORD_FIELDS),
            "policies": table}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
