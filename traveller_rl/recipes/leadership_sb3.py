"""Learn *when to lead instead of shoot, and whom to direct*, with MaskablePPO.

The learner is the blue sergeant (``blue_0``) of the squad scenarios; its squad-mates play the
scripted ``marksman`` and the red side is a scripted squad (``leader`` sergeant, ``marksman``
riflemen). By default the learner decides the leadership questions only (``--focus
leadership,direct``: lead now or not, and whom to hand each bonus), through the SB3 bridge's
``assist``/``focus`` mode, while the scripted ``never_lead`` (a ``leader`` that never leads)
makes its other decisions; ``--assist ''`` lets it learn everything. Reward: +1 win, -1
loss, plus 0.02 per point of damage dealt and -0.02 per point taken by the blue side
(shared). The report compares the squad's win rate with the learned
sergeant against the same squad led by the scripted ``leader``, ``never_lead`` and
``always_lead`` (95% Wilson intervals), and how often each sergeant leads, as a function of
its Leadership skill: one policy trains on ``squad_commander`` (a poor shot with Leadership 3,
where leading pays) and ``squad_commander0`` (the same with Leadership 0, where it does not),
and is evaluated on both and on ``squad`` (a good shot with Leadership 2). The observation
carries the sergeant's own Leadership DM, so one policy can tell the cases apart.

    python -m traveller_rl.recipes.leadership_sb3 --total-timesteps 200000 --seed 1

Outputs in ``runs/<run name>/`` as for ``traveller_rl.recipes.aiming_sb3``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traveller_env
from agents.evaluation import play_battle, wilson_interval
from agents.registry import make_policy
from agents.trained import load_policy
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

REWARDS = {"win": 1.0, "loss": -1.0, "draw": 0.0, "damage_dealt": 0.02,
           "damage_taken": -0.02, "shared": True}
BASELINES = ("leader", "never_lead", "always_lead")


@dataclass
class Args(PPOArgs):
    """Arguments of the leadership experiment (each is also a ``--flag``)."""

    exp_name: str = "leadership"
    """the name of this experiment (prefix of the run name)"""
    scenarios: str = "squad_commander,squad_commander0"
    """training scenarios, comma-separated (the environments cycle through them)"""
    mates: str = "marksman"
    """scripted policy of the squad-mates and of the red riflemen"""
    enemy_leader: str = "leader"
    """scripted policy of the red sergeant"""
    assist: str = "never_lead"
    """scripted policy making the learner's other decisions ('' : the learner decides all)"""
    focus: str = "leadership,direct"
    """action kinds the learner decides itself when an assistant is set"""
    n_envs: int = 4
    """parallel training environments (DummyVecEnv)"""
    total_timesteps: int = 200_000
    """learner decisions to train for"""
    gamma: float = 0.995
    """discount"""
    net_arch: str = "128,128"
    """hidden layer sizes of policy and value networks"""
    eval_battles: int = 400
    """evaluation battles per sergeant and scenario"""
    eval_scenarios: str = "squad_commander,squad_commander0,squad"
    """scenarios to evaluate on, comma-separated"""


def scenario_with_rewards(name: str) -> dict:
    """A built-in scenario as a dict, with the experiment's reward terms."""
    sc = traveller_env.load_scenario(name).model_dump()
    sc["rewards"] = dict(REWARDS)
    return sc


def other_policies(args: Args, seed: int) -> dict[str, Any]:
    """Scripted policies of everyone but ``blue_0`` (each with its own seed)."""
    pols = {f"blue_{i}": make_policy(args.mates, seed=seed + i) for i in (1, 2, 3)}
    pols["red_0"] = make_policy(args.enemy_leader, seed=seed + 10)
    pols.update({f"red_{i}": make_policy(args.mates, seed=seed + 10 + i) for i in (1, 2, 3)})
    return pols


def evaluate_sergeant(sergeant: Any, scenario: str, args: Args, seed: int = 30_000) -> dict:
    """The blue squad's results with ``sergeant`` as ``blue_0`` over ``eval_battles``."""
    env = traveller_env.raw_env(scenario)
    policies = {"blue_0": sergeant, **other_policies(args, seed)}
    wins = draws = 0
    leads = sig_turns = bonuses = 0
    for i in range(args.eval_battles):
        battle = play_battle(env, policies, seed + i)
        wins += battle.winner == "blue"
        draws += battle.winner is None
        for ev in battle.events:
            if ev.get("actor") != "blue_0":
                continue
            if ev["type"] == "turn":
                sig_turns += 1
            elif ev["type"] == "leadership":
                leads += 1
            elif ev["type"] == "bonus_granted":
                bonuses += 1
    n = args.eval_battles
    lo, hi = wilson_interval(wins, n)
    return {"scenario": scenario, "sergeant": getattr(sergeant, "name", "?"), "battles": n,
            "wins": wins, "draws": draws, "losses": n - wins - draws, "win_rate": wins / n,
            "win_ci95": [lo, hi], "leads_per_turn": leads / max(1, sig_turns),
            "leads_per_battle": leads / n, "bonuses_per_battle": bonuses / n}


def train(args: Args) -> Path:
    """Train, save, evaluate; return the run folder."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    seed_everything(args.seed, args.torch_threads)
    run_dir = make_run_dir(args.runs_dir, args.exp_name, args.seed)
    write_json(run_dir / "config.json",
               {"args": dataclasses.asdict(args), "rewards": REWARDS}, with_versions=True)
    scenarios = [scenario_with_rewards(name) for name in args.scenarios.split(",") if name]
    focus = tuple(f for f in args.focus.split(",") if f) if args.assist else ()

    def factory(k: int) -> TravellerSB3Env:
        assist = make_policy(args.assist, seed=1000 * k + 99) if args.assist else None
        return TravellerSB3Env(scenarios[k % len(scenarios)], learner="blue_0",
                               policies=other_policies(args, 1000 * k), assist=assist,
                               focus=focus or None, relative_actions=True)

    factories = [lambda k=k: factory(k) for k in range(args.n_envs)]
    venv = VecMonitor(DummyVecEnv(factories), str(run_dir / "monitor.csv"))
    venv.seed(args.seed)
    model = make_model(args, venv, run_dir)
    start = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, tb_log_name="ppo")
    train_seconds = time.perf_counter() - start
    model_path = run_dir / "model.zip"
    extra = {"assist": args.assist, "focus": list(focus)} if focus else {}
    extra["action_targets"] = "relative"
    atomic_save_model(model, model_path, scenario=args.scenarios, **extra)
    venv.close()
    learning_curve(run_dir / "monitor.csv", run_dir / "learning_curve.png",
                   title=f"{args.exp_name} on {args.scenarios} (seed {args.seed})")
    rows = []
    for scenario in [s for s in args.eval_scenarios.split(",") if s]:
        learned = load_policy(model_path, scenario, name="learned")
        rows.append(evaluate_sergeant(learned, scenario, args))
        rows += [evaluate_sergeant(make_policy(b, seed=7), scenario, args) for b in BASELINES]
    results = {"evaluation": rows, "train_seconds": train_seconds,
               "total_timesteps": args.total_timesteps,
               "fps": args.total_timesteps / train_seconds}
    write_json(run_dir / "evaluation.json", results)
    print(f"\ntrained {args.total_timesteps} steps on {args.scenarios} in {train_seconds:.0f} s "
          f"({args.total_timesteps / train_seconds:.0f} steps/s); run: {run_dir}")
    print_table(rows)
    print(f"learning curve: {run_dir / 'learning_curve.png'}")
    return run_dir


def print_table(rows: list[dict]) -> None:
    """Win rate and leading frequency per scenario and sergeant."""
    print(f"{'scenario':<18}{'sergeant':<13}{'W':>5}{'D':>5}{'L':>5}{'win rate (95% CI)':>26}"
          f"{'leads/turn':>12}{'bonuses/battle':>16}")
    for r in rows:
        lo, hi = r["win_ci95"]
        print(f"{r['scenario']:<18}{r['sergeant']:<13}{r['wins']:>5}{r['draws']:>5}"
              f"{r['losses']:>5}{r['win_rate']:>10.3f} [{lo:.3f}, {hi:.3f}]"
              f"{r['leads_per_turn']:>12.3f}{r['bonuses_per_battle']:>16.2f}")


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
