"""Learning to aim with the batched trainer: ``train_ppo`` on each ``range_*`` band, evaluated
against the exact optimum (issue 13's aiming result).

For each band, ``experiments.train_ppo`` trains a policy as ``blue_0`` of ``range_<band>``
against the ``passive`` target played inside the vector (the scenario's rewards: +1 for the
knock-out, -0.1 per round), then ``agents.evaluation.evaluate_range`` plays the saved checkpoint
(greedy, as an NPC) in ``--eval-battles`` battles of that band on fixed seeds (10,000 on, the
same evaluation as ``experiments.train_aiming`` and ``experiments.aiming_optimum``) and compares
the mean rounds to incapacitate with the exact optimum of value iteration. One policy per band
(each band is its own scenario to ``train_ppo``); see the README for what that does and does
not show.

    python -m experiments.aiming_ppo --total-timesteps 500000 --seed 1 \
        --json results/aiming_ppo.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from experiments.aiming_optimum import BANDS
from experiments.train_aiming import optimum_by_scenario, print_range

__all__ = ["build_parser", "main", "run"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options (it writes ``--json`` only when asked)."""
    parser = parser or argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bands", default=",".join(BANDS),
                        help=f"comma-separated bands (default: {','.join(BANDS)})")
    parser.add_argument("--total-timesteps", type=int, default=500_000,
                        help="learner decisions per band (default: 500000)")
    parser.add_argument("--seed", type=int, default=1, help="training seed (default: 1)")
    parser.add_argument("--eval-battles", type=int, default=500,
                        help="evaluation battles per band (default: 500)")
    parser.add_argument("--out", type=Path, default=Path("runs/aiming_ppo"),
                        help="run folder: one train_ppo run per band (default: runs/aiming_ppo)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def run(args: argparse.Namespace) -> int:
    """Train and evaluate every band; print the table (and write ``--json``)."""
    from agents.evaluation import evaluate_range
    from agents.trained import load_policy
    from experiments import train_ppo

    bands = [b for b in args.bands.split(",") if b]
    unknown = [b for b in bands if b not in BANDS]
    if unknown or not bands:
        raise SystemExit(f"--bands: {', '.join(unknown) or 'none given'}; allowed: "
                         f"{', '.join(BANDS)}")
    if args.total_timesteps < 1 or args.eval_battles < 1:
        raise SystemExit("--total-timesteps and --eval-battles must be at least 1")
    optimum = optimum_by_scenario(bands)
    rows, runs = [], {}
    for band in bands:
        scenario = f"range_{band}"
        out = args.out / band
        start = time.perf_counter()
        train_ppo.main(["--scenario", scenario, "--opponents", "red=passive",
                        "--total-timesteps", str(args.total_timesteps), "--seed", str(args.seed),
                        "--out", str(out), "--overwrite", "--eval-vs", "passive",
                        "--eval-battles", "50", "--final-eval-battles", "0", "--no-progress"])
        trained_s = time.perf_counter() - start
        policy = load_policy(out / "ppo.pt", scenario)
        row = evaluate_range(policy, battles=args.eval_battles, bands=[band],
                             optimum=optimum)[0]
        row["train_seconds"] = trained_s
        rows.append(row)
        runs[band] = str(out)
        print(f"{scenario}: trained {args.total_timesteps:,} decisions in {trained_s:.0f} s",
              flush=True)
    print_range(rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"command": "python -m experiments.aiming_ppo "
                   f"--bands {args.bands} --total-timesteps {args.total_timesteps} "
                   f"--seed {args.seed} --eval-battles {args.eval_battles}",
                   "runs": runs, "range": rows}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
