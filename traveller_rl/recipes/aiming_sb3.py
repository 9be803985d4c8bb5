"""Learn *when and how long to aim* with MaskablePPO, and measure it against the exact optimum.

One policy plays ``blue_0`` in every ``range_*`` scenario (one rifleman, one passive target at
a chosen distance; reward +1 for the knock-out and -0.1 per extra round) and in ``duel``
against the scripted ``marksman`` and ``rush`` (win +1, loss -1), all at once through the SB3
bridge, on both sides of ``duel`` (targets are named by observation slot, so one policy
fits every seat). The report compares, per range band, the learned policy's mean rounds to
incapacitate and aims before the first shot with the exact optimum of ``agents/aiming.py``,
and gives its ``duel`` win rate against each scripted policy with 95% intervals.

    python -m traveller_rl.recipes.aiming_sb3 --total-timesteps 300000 --seed 1

Each run writes to ``runs/<run name>/``: ``model.zip`` (written atomically), ``config.json``
(the exact arguments, seed and package versions), TensorBoard logs, ``monitor.csv``,
``learning_curve.png`` and ``evaluation.json``. ``--self-play shared`` puts the learning
policy in every seat of ``duel``; ``--self-play pool`` plays it against a pool of its own past
checkpoints (saved every ``--pool-every`` steps).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traveller_env
from agents.aiming import problem_from_battle, solve
from agents.base import PassivePolicy
from agents.evaluation import evaluate_matchup, evaluate_range, format_matchups
from agents.registry import make_policy
from agents.trained import CheckpointPool, load_policy
from traveller_rl.common import (
    PPOArgs,
    add_dataclass_args,
    atomic_save_model,
    learning_curve,
    make_model,
    make_run_dir,
    seed_everything,
    write_json,
)
from traveller_env.sb3 import TravellerSB3Env

BANDS = ("short", "medium", "long", "extreme")


@dataclass
class Args(PPOArgs):
    """Arguments of the aiming experiment (each is also a ``--flag``)."""

    exp_name: str = "aiming"
    """the name of this experiment (prefix of the run name)"""
    bands: str = ",".join(BANDS)
    """range bands to train on (range_<band> scenarios), comma-separated"""
    range_envs_per_band: int = 2
    """training environments per range band (the duel gets one per opponent and side)"""
    duel_opponents: str = "marksman,rush"
    """scripted opponents in duel during training, comma-separated ('' for none)"""
    relative_actions: bool = True
    """name targets by observation slot, so the policy can play either side"""
    self_play: str = "none"
    """'none', 'shared' (one policy in every duel seat) or 'pool' (duel vs past checkpoints)"""
    pool_every: int = 25_000
    """self-play pool: save a checkpoint every this many steps"""
    gamma: float = 1.0
    """discount (1: the range reward already prices every extra round)"""
    eval_battles: int = 300
    """evaluation battles per range band and per duel opponent"""


def make_envs(args: Args, run_dir: Path) -> list[Any]:
    """Factories of the training environments (one per band and per duel opponent)."""
    rel = args.relative_actions
    factories = []
    bands = [b for b in args.bands.split(",") if b] * args.range_envs_per_band
    for band in bands:
        factories.append(lambda band=band: TravellerSB3Env(
            f"range_{band}", learner="blue_0", policies=PassivePolicy(), relative_actions=rel))
    sides = ("blue", "red") if rel else ("blue",)  # absolute targets tie a policy to a seat
    if args.self_play == "shared":
        factories.append(lambda: TravellerSB3Env("duel", learner="all", relative_actions=rel))
    elif args.self_play == "pool":
        for side in sides:
            factories.append(lambda side=side: TravellerSB3Env(
                "duel", learner=side, relative_actions=rel,
                policies=CheckpointPool(run_dir / "pool", "duel", fallback="marksman")))
    for name in [o for o in args.duel_opponents.split(",") if o]:
        for side in sides:
            factories.append(lambda name=name, side=side: TravellerSB3Env(
                "duel", learner=side, policies=make_policy(name), relative_actions=rel))
    return factories


def optimum_by_scenario(bands: list[str]) -> dict[str, dict]:
    """The exact optimum of each range band (``agents.aiming.solve``)."""
    out = {}
    for band in bands:
        scenario = f"range_{band}"
        sol = solve(problem_from_battle(traveller_env.build_battle(scenario, seed=0),
                                        "blue_0", "red_0"))
        out[scenario] = {"expected_rounds": sol.expected_rounds,
                         "optimal_aims_before_first_shot": sol.aims_before_first_shot()}
    return out


def evaluate(model_path: Path, args: Args) -> dict:
    """Range bands against the optimum, and duel against each scripted opponent."""
    bands = [b for b in args.bands.split(",") if b] or list(BANDS)
    optimum = optimum_by_scenario(bands)
    learned = load_policy(model_path, "range_long")
    rows = evaluate_range(learned, battles=args.eval_battles, bands=bands, optimum=optimum)
    duel_policy = load_policy(model_path, "duel")
    matchups = [evaluate_matchup(duel_policy, make_policy(name), "duel",
                                 battles=args.eval_battles)
                for name in ("marksman", "rush", "random")]
    return {"range": rows, "duel": matchups}


def print_range(rows: list[dict]) -> None:
    """The range table: learned beside the optimum."""
    print(f"{'scenario':<15}{'learned rounds (95% CI)':>26}{'optimum':>9}{'ratio':>7}"
          f"{'aims (mode)':>12}{'optimal aims':>13}{'within 5%':>10}")
    for r in rows:
        ok = "yes" if r["ratio_to_optimum"] <= 1.05 else "NO"
        print(f"{r['scenario']:<15}{r['mean_rounds']:>9.3f} [{r['ci95'][0]:.3f}, "
              f"{r['ci95'][1]:.3f}]{r['optimal_rounds']:>9.3f}{r['ratio_to_optimum']:>7.3f}"
              f"{r['modal_aims_before_first_shot']!s:>12}{r['optimal_aims']:>13}{ok:>10}")


def train(args: Args) -> Path:
    """Train, save, evaluate; return the run folder."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    seed_everything(args.seed, args.torch_threads)
    run_dir = make_run_dir(args.runs_dir, args.exp_name, args.seed)
    write_json(run_dir / "config.json", {"args": dataclasses.asdict(args)}, with_versions=True)
    venv = VecMonitor(DummyVecEnv(make_envs(args, run_dir)), str(run_dir / "monitor.csv"))
    venv.seed(args.seed)
    model = make_model(args, venv, run_dir)
    callback = None
    if args.self_play == "pool":
        from traveller_rl.common import PoolCheckpointCallback

        callback = PoolCheckpointCallback(
            run_dir / "pool", args.pool_every,
            targets="relative" if args.relative_actions else "absolute")
    start = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=callback,
                tb_log_name="ppo", progress_bar=False)
    train_seconds = time.perf_counter() - start
    model_path = run_dir / "model.zip"
    atomic_save_model(model, model_path, scenario="duel",
                      action_targets="relative" if args.relative_actions else "absolute")
    venv.close()
    learning_curve(run_dir / "monitor.csv", run_dir / "learning_curve.png",
                   title=f"{args.exp_name} (seed {args.seed})")
    results = evaluate(model_path, args)
    results.update(train_seconds=train_seconds, total_timesteps=args.total_timesteps,
                   fps=args.total_timesteps / train_seconds)
    write_json(run_dir / "evaluation.json", results)
    print(f"\ntrained {args.total_timesteps} steps in {train_seconds:.0f} s "
          f"({args.total_timesteps / train_seconds:.0f} steps/s); run: {run_dir}")
    print_range(results["range"])
    print(format_matchups(results["duel"]))
    print(f"learning curve: {run_dir / 'learning_curve.png'}")
    return run_dir


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The experiment's arguments, one ``--flag`` per field of ``Args`` (added to ``parser``
    when given, e.g. the ``traveller train ...`` subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dataclass_args(parser, Args)
    return parser


def run(args: argparse.Namespace) -> int:
    """Train with the parsed ``args``; return the exit status."""
    train(Args(**vars(args)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``Args`` from the command line and train."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
