"""Learning to aim with the batched trainer: one ``train_ppo`` policy on every ``range_*`` band,
evaluated against the exact optimum (issue 13's aiming result).

``traveller_rl.ppo.trainer`` trains one policy as ``blue_0`` of all the chosen ``range_<band>``
scenarios at once (the rows shared out evenly; the four bands have the same seats,
observation size and labels, and the observation carries the range to the target), against
the ``passive`` target played inside the vector (the scenarios' rewards: +1 for the knock-out,
-0.1 per round). Then ``agents.evaluation.evaluate_range`` plays the saved checkpoint (greedy,
as an NPC) in ``--eval-battles`` battles of each band on fixed seeds (10,000 on, the same
evaluation as ``traveller_rl.recipes.aiming_sb3`` and ``traveller_rl.recipes.optimum``) and compares the
mean rounds to incapacitate with the exact optimum of value iteration.

The defaults are the settings that learned it (README, "Fast PPO trainer"): many gradient
steps per decision (10 epochs of 8 minibatches, learning rate 1e-3 annealed to 0, no entropy
bonus). The value of aiming once before the first shot is about 0.01 reward per battle at
short range, so few gradient steps (train_ppo's defaults) settle on "shoot, then aim with the
Minor action left" and never learn to aim first.

    python -m traveller_rl.recipes.aiming --total-timesteps 6000000 --seed 1 \
        --json results/aiming_ppo.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from traveller_rl.recipes.optimum import BANDS
from traveller_rl.recipes.aiming_sb3 import optimum_by_scenario, print_range
from traveller_rl.common import write_json

__all__ = ["build_parser", "main", "run"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options (it writes ``--json`` only when asked)."""
    parser = parser or argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bands", default=",".join(BANDS),
                        help=f"comma-separated bands (default: {','.join(BANDS)})")
    parser.add_argument("--total-timesteps", type=int, default=6_000_000,
                        help="learner decisions in all (default: 6000000)")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: 1e-3)")
    parser.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True,
                        help="anneal the learning rate linearly to 0 (default: yes)")
    parser.add_argument("--epochs", type=int, default=10, help="PPO epochs (default: 10)")
    parser.add_argument("--minibatches", type=int, default=8,
                        help="minibatches per epoch (default: 8)")
    parser.add_argument("--num-envs", type=int, default=192,
                        help="battles per call, shared out over the bands (default: 192)")
    parser.add_argument("--seed", type=int, default=1, help="training seed (default: 1)")
    parser.add_argument("--eval-battles", type=int, default=500,
                        help="evaluation battles per band (default: 500)")
    parser.add_argument("--out", type=Path, default=Path("runs/aiming_ppo"),
                        help="train_ppo's run folder (default: runs/aiming_ppo)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def run(args: argparse.Namespace) -> int:
    """Train and evaluate every band; print the table (and write ``--json``)."""
    from agents.evaluation import evaluate_range
    from agents.trained import load_policy
    from traveller_rl.ppo import trainer as train_ppo

    bands = [b for b in args.bands.split(",") if b]
    unknown = [b for b in bands if b not in BANDS]
    if unknown or not bands:
        raise SystemExit(f"--bands: {', '.join(unknown) or 'none given'}; allowed: "
                         f"{', '.join(BANDS)}")
    if args.total_timesteps < 1 or args.eval_battles < 1:
        raise SystemExit("--total-timesteps and --eval-battles must be at least 1")
    optimum = optimum_by_scenario(bands)
    scenarios = ",".join(f"range_{band}" for band in bands)
    start = time.perf_counter()
    train_ppo.main(["--scenario", scenarios, "--opponents", "red=passive",
                    "--total-timesteps", str(args.total_timesteps), "--seed", str(args.seed),
                    "--out", str(args.out), "--overwrite", "--lr", str(args.lr),
                    "--anneal-lr" if args.anneal_lr else "--no-anneal-lr", "--ent-coef", "0",
                    "--epochs", str(args.epochs),
                    "--minibatches", str(args.minibatches), "--num-envs", str(args.num_envs),
                    "--eval-every", "0", "--eval-vs", "", "--final-eval-battles", "0",
                    "--no-progress"])
    trained_s = time.perf_counter() - start
    print(f"trained {args.total_timesteps:,} decisions on {scenarios} in {trained_s:.0f} s",
          flush=True)
    rows = []
    for band in bands:
        scenario = f"range_{band}"
        policy = load_policy(args.out / "ppo.pt", scenario)
        rows.append(evaluate_range(policy, battles=args.eval_battles, bands=[band],
                                   optimum=optimum)[0])
    print_range(rows)
    if args.json:
        payload = {"command": "python -m traveller_rl.recipes.aiming "
                   f"--bands {args.bands} --total-timesteps {args.total_timesteps} "
                   f"--seed {args.seed} --eval-battles {args.eval_battles} --lr {args.lr} "
                   f"--epochs {args.epochs} --minibatches {args.minibatches} "
                   f"--num-envs {args.num_envs}"
                   + (" --anneal-lr" if args.anneal_lr else ""),
                   "run": str(args.out), "train_seconds": trained_s, "range": rows}
        write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
