"""Learn *when and how long to aim*, judged against the exact optimum: one policy as ``blue_0``
in every chosen ``range_<band>`` scenario, trained by either trainer (``--trainer``).

A ``range_<band>`` scenario is one rifleman and one passive target at that band's distance
(reward +1 for the knock-out, -0.1 per round). The evaluation plays the trained policy greedily,
as an NPC, in ``--eval-battles`` battles of each band on fixed seeds (10,000 on, as
``traveller_rl.recipes.optimum``) and compares its mean rounds to incapacitate and its aims
before the first shot with the exact optimum of value iteration (``traveller_agents/aiming.py``).

``--trainer ppo`` (``traveller train aiming-ppo``; the default of ``python -m
traveller_rl.recipes.aiming``): the batched trainer ``traveller_rl.ppo.trainer`` trains on all
the chosen bands at once (the rows shared out evenly; the bands have the same seats,
observation size and labels, and the observation carries the range to the target), against
the ``passive`` target played inside the vector. Its defaults are the settings that learned it
(README, "Fast PPO trainer"): many gradient steps per decision (10 epochs of 8 minibatches,
learning rate 1e-3 annealed to 0, no entropy bonus). The value of aiming once before the first
shot is about 0.01 reward per battle at short range, so few gradient steps settle on "shoot,
then aim with the Minor action left" and never learn to aim first. It writes its run folder
``--out`` and, when asked, ``--json``.

    python -m traveller_rl.recipes.aiming --total-timesteps 6000000 --seed 1 \\
        --json results/aiming_ppo.json

``--trainer sb3`` (``traveller train aiming``): MaskablePPO through the SB3 bridge, on the bands
and in ``duel`` against the scripted ``marksman`` and ``rush`` (win +1, loss -1) on both sides
(targets are named by observation slot, so one policy fits every seat); its evaluation adds the
``duel`` win rate against ``marksman``, ``rush`` and ``random`` with 95% intervals. Each run
writes ``runs/<run name>/``: ``model.zip`` (written atomically), ``config.json`` (the exact
arguments, seed and package versions), TensorBoard logs, ``monitor.csv``,
``learning_curve.png`` and ``evaluation.json``. ``--self-play shared`` puts the learning policy
in every seat of ``duel``; ``--self-play pool`` plays it against a pool of its own past
checkpoints (saved every ``--pool-every`` steps).

    python -m traveller_rl.recipes.aiming --trainer sb3 --total-timesteps 300000 --seed 1
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import traveller_env
from traveller_agents.aiming import problem_from_battle, solve
from traveller_agents.registry import make_policy
from traveller_agents.trained import load_policy
from traveller_env.integrations.sb3 import TravellerSB3Env
from traveller_env.policy import PassivePolicy
from traveller_rl.commandline import (
    UsageError,
    check_output_folder,
    examples_epilog,
    run_standalone,
)
from traveller_rl.common import (
    PPOArgs,
    atomic_save_model,
    learning_curve,
    make_model,
    make_run_dir,
    seed_everything,
    write_json,
)
from traveller_rl.evaluation import evaluate_matchup, evaluate_range, format_matchups
from traveller_rl.pool import CheckpointPool
from traveller_rl.recipes.optimum import BANDS
from traveller_rl.recipes.trainer_options import (
    add_options,
    dataclass_options,
    merge_options,
    ppo_option,
    resolve,
    trainer_command,
)

__all__ = ["OPTIONS", "Args", "build_parser", "command", "evaluate", "evaluate_bands", "main",
           "make_envs", "optimum_by_scenario", "print_range", "run", "train_ppo", "train_sb3"]


# --------------------------------------------------------------------------------- the task
def optimum_by_scenario(bands: list[str]) -> dict[str, dict]:
    """The exact optimum of each range band (``traveller_agents.aiming.solve``)."""
    out = {}
    for band in bands:
        scenario = f"range_{band}"
        sol = solve(problem_from_battle(traveller_env.build_battle(scenario, seed=0),
                                        "blue_0", "red_0"))
        out[scenario] = {"expected_rounds": sol.expected_rounds,
                         "optimal_aims_before_first_shot": sol.aims_before_first_shot()}
    return out


def evaluate_bands(model: Path, bands: list[str], battles: int) -> list[dict]:
    """Each band's row of the range table: the trained ``model`` (a checkpoint of either
    trainer) as ``blue_0`` in ``battles`` battles, beside the band's optimum."""
    optimum = optimum_by_scenario(bands)
    return [evaluate_range(load_policy(model, f"range_{band}"), battles=battles, bands=[band],
                           optimum=optimum)[0]
            for band in bands]


def print_range(rows: list[dict]) -> None:
    """The range table: learned beside the optimum."""
    print(f"{'scenario':<15}{'learned rounds (95% CI)':>26}{'optimum':>9}{'ratio':>7}"
          f"{'aims (mode)':>12}{'optimal aims':>13}{'within 5%':>10}")
    for r in rows:
        ok = "yes" if r["ratio_to_optimum"] <= 1.05 else "NO"
        print(f"{r['scenario']:<15}{r['mean_rounds']:>9.3f} [{r['ci95'][0]:.3f}, "
              f"{r['ci95'][1]:.3f}]{r['optimal_rounds']:>9.3f}{r['ratio_to_optimum']:>7.3f}"
              f"{r['modal_aims_before_first_shot']!s:>12}{r['optimal_aims']:>13}{ok:>10}")


def _bands(text: str) -> list[str]:
    """The comma-separated ``--bands``, checked (a usage error names the unknown ones)."""
    bands = [b for b in text.split(",") if b]
    unknown = [b for b in bands if b not in BANDS]
    if unknown or not bands:
        raise UsageError(f"--bands: {', '.join(unknown) or 'none given'}; allowed: "
                         f"{', '.join(BANDS)}")
    return bands


# ------------------------------------------------------------- trainer ppo: the batched PPO
def train_ppo(options: argparse.Namespace) -> int:
    """Train with the batched trainer, evaluate every band; print the table (and write
    ``--json``). ``options`` holds the ppo trainer's options (``resolve``)."""
    from traveller_rl.ppo import trainer

    bands = _bands(options.bands)
    if options.total_timesteps < 1 or options.eval_battles < 1:
        raise UsageError("--total-timesteps and --eval-battles must be at least 1")
    check_output_folder("--out", options.out, options.overwrite)
    scenarios = ",".join(f"range_{band}" for band in bands)
    start = time.perf_counter()
    trainer.main(["--scenario", scenarios, "--opponents", "red=passive",
                  "--total-timesteps", str(options.total_timesteps), "--seed", str(options.seed),
                  "--out", str(options.out), "--overwrite", "--lr", str(options.learning_rate),
                  "--anneal-lr" if options.anneal_lr else "--no-anneal-lr", "--ent-coef", "0",
                  "--epochs", str(options.n_epochs),
                  "--minibatches", str(options.minibatches), "--num-envs",
                  str(options.num_envs), "--eval-every", "0", "--eval-vs", "",
                  "--final-eval-battles", "0", "--no-progress"])
    trained_s = time.perf_counter() - start
    print(f"trained {options.total_timesteps:,} decisions on {scenarios} in {trained_s:.0f} s",
          flush=True)
    rows = evaluate_bands(options.out / "ppo.pt", bands, options.eval_battles)
    print_range(rows)
    if options.json:
        payload = {"command": "python -m traveller_rl.recipes.aiming "
                   f"--bands {options.bands} --total-timesteps {options.total_timesteps} "
                   f"--seed {options.seed} --eval-battles {options.eval_battles} "
                   f"--lr {options.learning_rate} --epochs {options.n_epochs} "
                   f"--minibatches {options.minibatches} --num-envs {options.num_envs}"
                   + (" --anneal-lr" if options.anneal_lr else ""),
                   "run": str(options.out), "train_seconds": trained_s, "range": rows}
        write_json(options.json, payload)
        print(f"wrote {options.json}")
    return 0


# ------------------------------------------------------- trainer sb3: MaskablePPO (SB3 bridge)
@dataclass
class Args(PPOArgs):
    """The sb3 trainer's options (each is also a ``--flag``)."""

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


def evaluate(model_path: Path, args: Args) -> dict:
    """The sb3 evaluation: range bands against the optimum, and duel against each scripted
    opponent."""
    bands = [b for b in args.bands.split(",") if b] or list(BANDS)
    rows = evaluate_bands(model_path, bands, args.eval_battles)
    duel_policy = load_policy(model_path, "duel")
    matchups = [evaluate_matchup(duel_policy, make_policy(name), "duel",
                                 battles=args.eval_battles)
                for name in ("marksman", "rush", "random")]
    return {"range": rows, "duel": matchups}


def train_sb3(args: Args) -> Path:
    """Train with MaskablePPO, save, evaluate; return the run folder."""
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


#: ``train_sb3`` by the name it had as a script of its own (``traveller train aiming
#: --trainer sb3`` runs it; ``traveller_rl.recipes.aiming``).
train = train_sb3


# ---------------------------------------------------------------------- the command line
#: Example command lines shown at the end of ``--help``.
EXAMPLES = """
traveller train aiming --total-timesteps 100000 --bands short,medium
traveller train aiming-ppo --total-timesteps 2000000 --out runs/aiming_ppo --overwrite
traveller train aiming --trainer ppo --bands long --json runs/aiming.json"""

#: Every option of either trainer, with each one's default.
OPTIONS = merge_options([
    ppo_option("bands", ",".join(BANDS), "comma-separated bands", type=str),
    ppo_option("total_timesteps", 6_000_000, "learner decisions in all", type=int),
    ppo_option("learning_rate", 1e-3, "learning rate", type=float, flag="lr"),
    ppo_option("anneal_lr", True, "anneal the learning rate linearly to 0", boolean=True),
    ppo_option("n_epochs", 10, "PPO epochs", type=int, flag="epochs"),
    ppo_option("minibatches", 8, "minibatches per epoch", type=int),
    ppo_option("num_envs", 192, "battles per call, shared out over the bands", type=int),
    ppo_option("seed", 1, "training seed", type=int),
    ppo_option("eval_battles", 500, "evaluation battles per band (and, sb3, per duel opponent)",
               type=int),
    ppo_option("out", Path("runs/aiming_ppo"), "the batched trainer's run folder", type=Path),
    ppo_option("overwrite", False, "write over the files of an existing --out run folder",
               boolean=True),
    ppo_option("json", None, "write the results here", type=Path),
], dataclass_options(Args, "sb3"))


def build_parser(parser: argparse.ArgumentParser | None = None,
                 trainer: str = "ppo") -> argparse.ArgumentParser:
    """The recipe's options, ``--trainer`` defaulting to ``trainer`` (added to ``parser``
    when given, e.g. the ``traveller train ...`` subcommand's)."""
    parser = parser or argparse.ArgumentParser(allow_abbrev=False, prog="traveller train aiming",
                                               description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog(EXAMPLES)
    return add_options(parser, OPTIONS, trainer)


def run(args: argparse.Namespace) -> int:
    """Train with ``args.trainer`` and evaluate; return the exit status."""
    options = resolve(args, OPTIONS)
    if args.trainer == "sb3":
        train_sb3(Args(**vars(options)))
        return 0
    return train_ppo(options)


def command(trainer: str) -> ModuleType:
    """This recipe as a ``traveller`` command whose ``--trainer`` defaults to ``trainer``."""
    return trainer_command(sys.modules[__name__], trainer)


def main(argv: list[str] | None = None, trainer: str = "ppo") -> int:
    """Command-line entry point (``--trainer`` defaults to ``trainer``)."""
    return run_standalone(build_parser(trainer=trainer), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
