"""Learn *when a sergeant should lead, and whom to hand the bonuses*: the blue sergeant
(``blue_0``) trained on scenarios that differ only in its Leadership, by either trainer
(``--trainer``), against the scripted sergeants ``never_lead``, ``always_lead`` and ``leader``.

One policy trains on both Leadership levels at once (its observation carries its own
Leadership DM, so it can tell them apart). The evaluation (``evaluate_sergeant``) plays the
learned sergeant greedily, as an NPC, and each scripted one in the same seeded battles (30,000
on) and reports the blue side's win rate with a Wilson 95% interval, the sergeant's Leadership
checks per turn and the bonuses it handed per battle.

``--trainer ppo`` (``traveller train leadership-ppo``; the default of ``python -m
traveller_rl.recipes.leadership``): the batched trainer ``traveller_rl.ppo.trainer`` on
``leadership_l3`` and ``leadership_l0`` (``configs/scenarios/``), six against six on the squad
map, every combatant with a radio. The sergeants carry an autopistol with Gun Combat 0, so
their own shots are worth something (a sergeant who never acts loses more often than one who
shoots); with Leadership 3 (and INT 10) a Leadership check gives its five riflemen about three
bonuses, with Leadership 0 it is as likely to give the enemy penalties to impose on them. The
learner decides everything the sergeant does (moving, stance, shooting, leading, whom to hand
each bonus); every other seat, on both sides, plays ``--mates`` inside the vector. Rewards: the
scenarios' (+1/-1 for the battle, +-0.02 per point of damage dealt/taken by its side). Its
evaluation (python backend, a fresh ``--mates`` per seat and battle) also reports how often
the sergeant led in the turns in which it could have shot instead, and the penalties imposed on
blue, as a Markdown table; ``--checkpoint`` evaluates a checkpoint without training. Its
defaults are the published run (docs/training.md): 12 M decisions, 256 battles per call,
10 epochs of 8 minibatches, learning rate 1e-3 annealed, gamma 0.99 and GAE lambda 0.8 (a
sergeant's choice pays off within a round or two; with gamma 1 and lambda 0.95 the battle's
+-1 drowned it).

    python -m traveller_rl.recipes.leadership --json results/leadership_ppo.json
    python -m traveller_rl.recipes.leadership --checkpoint runs/leadership_ppo/ppo.pt

``--trainer sb3`` (``traveller train leadership``): MaskablePPO through the SB3 bridge on the
squad scenarios ``squad_commander`` (a poor shot with Leadership 3, where leading pays) and
``squad_commander0`` (the same with Leadership 0), evaluated on both and on ``squad`` (a good
shot with Leadership 2). The squad-mates play ``--mates``, the red side is a scripted squad
(``--enemy-leader`` sergeant, ``--mates`` riflemen). By default the learner decides the
leadership questions only (``--focus leadership,direct``: lead now or not, and whom to hand
each bonus), through the bridge's ``assist``/``focus`` mode, while the scripted ``never_lead``
makes its other decisions; ``--assist ''`` lets it learn everything. Reward: +1 win, -1 loss,
plus 0.02 per point of damage dealt and -0.02 per point taken by the blue side (shared).
Outputs in ``runs/<run name>/`` as for ``traveller train aiming``.

    python -m traveller_rl.recipes.leadership --trainer sb3 --total-timesteps 200000 --seed 1
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from traveller_rl.commandline import (
    UsageError,
    check_output_folder,
    examples_epilog,
    run_standalone,
)
from traveller_rl.common import PPOArgs, checkpoint_provenance, result_command, write_json
from traveller_rl.recipes.trainer_options import (
    add_options,
    dataclass_options,
    merge_options,
    ppo_option,
    resolve,
    trainer_command,
)

__all__ = ["BASELINES", "OPTIONS", "SCENARIOS", "SERGEANT", "Args", "build_parser", "command",
           "evaluate_sergeant", "main", "mates_lineup", "print_table", "run", "run_ppo",
           "squad_lineup", "train_sb3"]

#: The learner's seat.
SERGEANT = "blue_0"
#: The scripted sergeants the learned one is compared against (in the ppo report's order).
BASELINES = ("never_lead", "always_lead", "leader")
#: The ppo trainer's scenarios (the sb3 trainer's are its ``--scenarios``).
SCENARIOS = ("leadership_l3", "leadership_l0")

#: A battle's policy per seat, given the sergeant's policy and the battle's index.
Lineup = Callable[[Any, int], dict[str, Any]]


# --------------------------------------------------------------------------------- the task
class _ChoiceRecorder:
    """Plays ``policy`` and notes each turn in which the sergeant chose between leading and
    shooting (Leadership and an attack on an enemy both legal at one of its decisions), and
    whether it led in that turn: leading in place of a shot is what costs at Leadership 0."""

    def __init__(self, policy: Any, labels: list[str], enemies: set[str]) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", "?")
        self.needs_observation = getattr(policy, "needs_observation", True)
        self.lead = labels.index("leadership")
        self.attacks = np.array([lab.startswith("attack:") and lab[7:] in enemies
                                 for lab in labels])
        self.turns: set[tuple[int, int]] = set()   # (battle, round) with the choice (R2:
        # one turn a round)
        self.led: set[tuple[int, int]] = set()     # ... in which it led
        self.battle = -1

    def reset(self, seed: int | None = None) -> None:
        self.battle += 1
        self.policy.reset(seed)

    def act(self, observation: Any, action_mask: np.ndarray, agent: str, env: Any) -> int:
        action = self.policy.act(observation, action_mask, agent, env)
        if action_mask[self.lead] and (action_mask.astype(bool) & self.attacks).any():
            turn = env.unwrapped.battle.round
            self.turns.add((self.battle, turn))
            if action == self.lead:
                self.led.add((self.battle, turn))
        return action


def mates_lineup(scenario: str, mates: str = "marksman", seed: int = 30_000) -> Lineup:
    """``mates`` in every seat but the sergeant's, a fresh policy per seat and battle (the
    ppo trainer's evaluation)."""
    import traveller_env
    from traveller_agents.registry import make_policy

    agents = traveller_env.raw_env(scenario, backend="python").possible_agents

    def lineup(sergeant: Any, i: int) -> dict[str, Any]:
        policies = {a: make_policy(mates, seed=seed + 97 * i + k, scenario=scenario)
                    for k, a in enumerate(agents) if a != SERGEANT}
        policies[SERGEANT] = sergeant
        return policies

    return lineup


def evaluate_sergeant(sergeant: Any, scenario: str, battles: int, mates: str = "marksman",
                      seed: int = 30_000, *, lineup: Lineup | None = None,
                      backend: str = "python") -> dict:
    """The blue side's results with ``sergeant`` (a ``Policy``) as ``blue_0`` over
    ``battles`` seeded battles of ``scenario`` on ``backend``: the other seats as ``lineup``
    places them (default: ``mates_lineup(scenario, mates, seed)``). The row has every
    statistic; each trainer's report keeps its own (``REPORTED``)."""
    import traveller_env
    from traveller_rl.evaluation import play_battle, wilson_interval

    env = traveller_env.raw_env(scenario, backend=backend)
    lineup = lineup or mates_lineup(scenario, mates, seed)
    side = SERGEANT.rsplit("_", 1)[0]
    recorder = _ChoiceRecorder(sergeant, list(env.unwrapped.action_labels),
                               {a for a in env.possible_agents if not a.startswith(side)})
    wins = draws = leads = turns = bonuses = penalties = 0
    for i in range(battles):
        battle = play_battle(env, lineup(recorder, i), seed + i)
        wins += battle.winner == "blue"
        draws += battle.winner is None
        for ev in battle.events:
            if ev.get("actor") == SERGEANT:
                turns += ev["type"] == "turn"
                leads += ev["type"] == "leadership"
                bonuses += ev["type"] == "bonus_granted"
            elif ev["type"] == "penalty_imposed" and ev["target"].startswith(side):
                penalties += 1
    lo, hi = wilson_interval(wins, battles)
    return {"scenario": scenario, "sergeant": getattr(sergeant, "name", "?"),
            "battles": battles, "wins": wins, "draws": draws,
            "losses": battles - wins - draws, "win_rate": wins / battles, "win_ci95": [lo, hi],
            "leads_per_turn": leads / max(1, turns), "leads_per_battle": leads / battles,
            "turns_lead_or_shoot": len(recorder.turns),
            "leads_instead_of_shot": len(recorder.led) / max(1, len(recorder.turns)),
            "bonuses_per_battle": bonuses / battles,
            "penalties_on_blue_per_battle": penalties / battles}


_COUNTS = ("scenario", "sergeant", "battles", "wins", "draws", "losses", "win_rate",
           "win_ci95", "leads_per_turn")
#: The fields of ``evaluate_sergeant``'s row that each trainer's report (its JSON) keeps.
REPORTED = {
    "ppo": (*_COUNTS, "turns_lead_or_shoot", "leads_instead_of_shot", "bonuses_per_battle",
            "penalties_on_blue_per_battle"),
    "sb3": (*_COUNTS, "leads_per_battle", "bonuses_per_battle"),
}


def reported(row: dict, trainer: str) -> dict:
    """``row`` with the fields ``trainer``'s report keeps."""
    return {key: row[key] for key in REPORTED[trainer]}


def print_table(rows: list[dict], layout: str = "markdown") -> None:
    """The evaluation, one row per scenario and sergeant: a Markdown table with every
    statistic (``layout="markdown"``, the ppo report) or aligned columns of the win rate and
    leading frequency (``layout="columns"``, the sb3 report)."""
    if layout == "columns":
        print(f"{'scenario':<18}{'sergeant':<13}{'W':>5}{'D':>5}{'L':>5}"
              f"{'win rate (95% CI)':>26}{'leads/turn':>12}{'bonuses/battle':>16}")
        for r in rows:
            lo, hi = r["win_ci95"]
            print(f"{r['scenario']:<18}{r['sergeant']:<13}{r['wins']:>5}{r['draws']:>5}"
                  f"{r['losses']:>5}{r['win_rate']:>10.3f} [{lo:.3f}, {hi:.3f}]"
                  f"{r['leads_per_turn']:>12.3f}{r['bonuses_per_battle']:>16.2f}")
        return
    print("| scenario | sergeant | W / D / L | blue win rate (95% CI) | leads per turn | "
          "leads when it could shoot | bonuses per battle | penalties on blue per battle |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        lo, hi = r["win_ci95"]
        print(f"| {r['scenario']} | {r['sergeant']} | {r['wins']} / {r['draws']} / "
              f"{r['losses']} | {r['win_rate']:.3f} ({lo:.3f}-{hi:.3f}) | "
              f"{r['leads_per_turn']:.2f} | {r['leads_instead_of_shot']:.2f} | "
              f"{r['bonuses_per_battle']:.2f} | "
              f"{r['penalties_on_blue_per_battle']:.2f} |")


# ------------------------------------------------------------- trainer ppo: the batched PPO
def run_ppo(options: argparse.Namespace) -> int:
    """Train with the batched trainer (unless ``--checkpoint``), evaluate, print the table (and
    write ``--json``). ``options`` holds the ppo trainer's options (``resolve``)."""
    from traveller_agents.registry import make_policy
    from traveller_agents.trained import load_policy
    from traveller_rl.ppo import trainer

    if options.total_timesteps < 1 or options.eval_battles < 1:
        raise UsageError("--total-timesteps and --eval-battles must be at least 1")
    trained_s = None
    checkpoint = options.checkpoint
    if checkpoint is not None and not Path(checkpoint).is_file():
        raise UsageError(f"--checkpoint {checkpoint}: no such file (a train_ppo .pt)")
    if checkpoint is None:
        check_output_folder("--out", options.out, options.overwrite)
        import traveller_env

        agents = traveller_env.raw_env(SCENARIOS[0], backend="python").possible_agents
        opponents = ",".join(f"{a}={options.mates}" for a in agents if a != SERGEANT)
        start = time.perf_counter()
        status = trainer.main([
            "--scenario", ",".join(SCENARIOS), "--opponents", opponents,
            "--total-timesteps", str(options.total_timesteps), "--seed", str(options.seed),
            "--out", str(options.out), "--overwrite", "--lr", str(options.learning_rate),
            "--hidden", options.net_arch,
            "--anneal-lr" if options.anneal_lr else "--no-anneal-lr",
            "--ent-coef", str(options.ent_coef), "--epochs", str(options.n_epochs),
            "--minibatches", str(options.minibatches), "--num-envs", str(options.num_envs),
            "--gamma", str(options.gamma), "--gae-lambda", str(options.gae_lambda),
            "--eval-every", "0", "--eval-vs", "", "--final-eval-battles", "0",
            "--no-progress"])
        if status:
            return status
        trained_s = time.perf_counter() - start
        checkpoint = options.out / "ppo.pt"
        print(f"trained {options.total_timesteps:,} decisions in {trained_s:.0f} s", flush=True)
    rows = []
    for scenario in SCENARIOS:
        learned = load_policy(checkpoint, scenario)
        learned.name = "learned"
        for sergeant in (learned, *(make_policy(b, seed=1, scenario=scenario)
                                    for b in BASELINES)):
            rows.append(reported(evaluate_sergeant(sergeant, scenario, options.eval_battles,
                                                   options.mates), "ppo"))
            r = rows[-1]
            print(f"{scenario} {r['sergeant']}: {r['win_rate']:.3f} "
                  f"leads/turn {r['leads_per_turn']:.2f}", flush=True)
    print_table(rows)
    if options.json:
        command = result_command("traveller_rl.recipes.leadership", options.checkpoint,
                                 f"--total-timesteps {options.total_timesteps} "
                                 f"--seed {options.seed}",
                                 f"--eval-battles {options.eval_battles}")
        payload = {"command": command,
                   "checkpoint": str(checkpoint), "train_seconds": trained_s,
                   "training": checkpoint_provenance(checkpoint), "rows": rows}
        write_json(options.json, payload)
        print(f"wrote {options.json}")
    return 0


# ------------------------------------------------------- trainer sb3: MaskablePPO (SB3 bridge)
REWARDS = {"win": 1.0, "loss": -1.0, "draw": 0.0, "damage_dealt": 0.02,
           "damage_taken": -0.02, "shared": True}
"""The sb3 trainer's reward terms (the scenarios' own are replaced)."""


@dataclass
class Args(PPOArgs):
    """The sb3 trainer's options (each is also a ``--flag``)."""

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
    """A built-in scenario as a dict, with the sb3 trainer's reward terms."""
    import traveller_env

    sc = traveller_env.load_scenario(name).model_dump()
    sc["rewards"] = dict(REWARDS)
    return sc


def other_policies(args: Args, seed: int) -> dict[str, Any]:
    """Scripted policies of everyone but ``blue_0`` (each with its own seed)."""
    from traveller_agents.registry import make_policy

    pols = {f"blue_{i}": make_policy(args.mates, seed=seed + i) for i in (1, 2, 3)}
    pols["red_0"] = make_policy(args.enemy_leader, seed=seed + 10)
    pols.update({f"red_{i}": make_policy(args.mates, seed=seed + 10 + i) for i in (1, 2, 3)})
    return pols


def squad_lineup(args: Args, seed: int = 30_000) -> Lineup:
    """The sergeant, then ``other_policies`` (the same ones in every battle): the sb3
    trainer's evaluation."""
    others = other_policies(args, seed)
    return lambda sergeant, i: {SERGEANT: sergeant, **others}


def train_sb3(args: Args) -> Path:
    """Train with MaskablePPO, save, evaluate; return the run folder."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from traveller_agents.registry import make_policy
    from traveller_agents.trained import load_policy
    from traveller_env.env import DEFAULT_BACKEND
    from traveller_env.integrations.sb3 import TravellerSB3Env
    from traveller_rl.common import (
        atomic_save_model,
        learning_curve,
        make_model,
        make_run_dir,
        seed_everything,
    )

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
        baselines = [make_policy(b, seed=7) for b in ("leader", "never_lead", "always_lead")]
        for sergeant in (learned, *baselines):
            row = evaluate_sergeant(sergeant, scenario, args.eval_battles,
                                    lineup=squad_lineup(args), backend=DEFAULT_BACKEND)
            rows.append(reported(row, "sb3"))
    results = {"evaluation": rows, "train_seconds": train_seconds,
               "total_timesteps": args.total_timesteps,
               "fps": args.total_timesteps / train_seconds}
    write_json(run_dir / "evaluation.json", results)
    print(f"\ntrained {args.total_timesteps} steps on {args.scenarios} in {train_seconds:.0f} s "
          f"({args.total_timesteps / train_seconds:.0f} steps/s); run: {run_dir}")
    print_table(rows, layout="columns")
    print(f"learning curve: {run_dir / 'learning_curve.png'}")
    return run_dir


#: ``train_sb3`` by the name it had as a script of its own (``traveller train leadership
#: --trainer sb3`` runs it; ``traveller_rl.recipes.leadership``).
train = train_sb3


# ---------------------------------------------------------------------- the command line
#: Example command lines shown at the end of ``--help``.
EXAMPLES = """
traveller train leadership --total-timesteps 200000
traveller train leadership-ppo --total-timesteps 4000000 --out runs/leadership_ppo --overwrite
traveller train leadership-ppo --checkpoint runs/leadership_ppo/ppo.pt --eval-battles 200"""

#: Every option of either trainer, with each one's default.
OPTIONS = merge_options([
    ppo_option("total_timesteps", 12_000_000, "sergeant decisions to train for", type=int),
    ppo_option("seed", 1, "training seed", type=int),
    ppo_option("learning_rate", 1e-3, "learning rate", type=float, flag="lr"),
    ppo_option("anneal_lr", True, "anneal the learning rate linearly to 0", boolean=True),
    ppo_option("net_arch", "128,128", "hidden layer sizes", type=str, flag="hidden"),
    ppo_option("n_epochs", 10, "PPO epochs", type=int, flag="epochs"),
    ppo_option("minibatches", 8, "minibatches per epoch", type=int),
    ppo_option("ent_coef", 0.001, "entropy bonus", type=float),
    ppo_option("gamma", 0.99, "discount per decision", type=float),
    ppo_option("gae_lambda", 0.8, "GAE lambda", type=float),
    ppo_option("num_envs", 256, "battles per call, half on each scenario", type=int),
    ppo_option("mates", "marksman", "policy of every seat but the sergeant's (sb3: of the "
               "squad-mates and the red riflemen)", type=str),
    ppo_option("eval_battles", 500, "evaluation battles per scenario and sergeant", type=int),
    ppo_option("checkpoint", None, "evaluate this checkpoint instead of training one",
               type=Path),
    ppo_option("out", Path("runs/leadership_ppo"), "the batched trainer's run folder",
               type=Path),
    ppo_option("overwrite", False, "write over the files of an existing --out run folder",
               boolean=True),
    ppo_option("json", None, "write the results here", type=Path),
], dataclass_options(Args, "sb3"))


def build_parser(parser: argparse.ArgumentParser | None = None,
                 trainer: str = "ppo") -> argparse.ArgumentParser:
    """The recipe's options, ``--trainer`` defaulting to ``trainer`` (added to ``parser``
    when given, e.g. the ``traveller train ...`` subcommand's)."""
    parser = parser or argparse.ArgumentParser(allow_abbrev=False,
                                               prog="traveller train leadership",
                                               description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog(EXAMPLES)
    return add_options(parser, OPTIONS, trainer)


def run(args: argparse.Namespace) -> int:
    """Train with ``args.trainer`` (or, ppo, evaluate ``--checkpoint``) and evaluate; return
    the exit status."""
    options = resolve(args, OPTIONS)
    if args.trainer == "sb3":
        train_sb3(Args(**vars(options)))
        return 0
    return run_ppo(options)


def command(trainer: str) -> ModuleType:
    """This recipe as a ``traveller`` command whose ``--trainer`` defaults to ``trainer``."""
    return trainer_command(sys.modules[__name__], trainer)


def main(argv: list[str] | None = None, trainer: str = "ppo") -> int:
    """Command-line entry point (``--trainer`` defaults to ``trainer``)."""
    return run_standalone(build_parser(trainer=trainer), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
