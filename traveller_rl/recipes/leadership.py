"""Leadership where leading at skill 0 hurts: a sergeant trained by ``train_ppo`` on two
scenarios that differ only in its Leadership, against the scripted sergeants (issue 13).

``leadership_l3`` and ``leadership_l0`` (``configs/scenarios/``) are six against six on the
squad map, every combatant with a radio. The sergeants carry an autopistol with Gun Combat 0,
so their own shots are worth something (a sergeant who never acts loses more often than one
who shoots); with Leadership 3 (and INT 10) a Leadership check gives its five riflemen about
three bonuses, with Leadership 0 it is as likely to give the enemy penalties to impose on them.

The learner is ``blue_0``, the blue sergeant, in both scenarios at once (one policy: its
observation carries its own Leadership DM); every other seat, on both sides, plays
``marksman`` inside the vector. It decides everything the sergeant does (moving, stance,
shooting, leading, whom to hand each bonus). Rewards: the scenarios' (+1/-1 for the battle,
+-0.02 per point of damage dealt/taken by its side).

The evaluation plays ``--eval-battles`` battles per (scenario, sergeant) on fixed seeds (30,000
on, the same battles for every sergeant) through the AEC env, the learned checkpoint as an NPC
(greedy) beside ``never_lead``, ``always_lead`` and ``leader``, everyone else ``marksman``;
it reports the blue side's win rate with a Wilson 95% interval, the sergeant's Leadership
checks per turn, how often it led in the turns in which it could have shot instead, and the
bonuses it handed per battle.

The defaults are the README's run: 12 M decisions, 256 battles per call, 10 epochs of 8
minibatches, learning rate 1e-3 annealed, gamma 0.99 and GAE lambda 0.8 (a sergeant's choice
pays off within a round or two; with gamma 1 and lambda 0.95 the battle's +-1 drowned it).

    python -m traveller_rl.recipes.leadership --json results/leadership_ppo.json
    python -m traveller_rl.recipes.leadership --checkpoint runs/leadership_ppo/ppo.pt   # evaluate only
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.common import checkpoint_provenance, result_command, write_json

__all__ = ["SCENARIOS", "build_parser", "evaluate_sergeant", "main", "run"]

SCENARIOS = ("leadership_l3", "leadership_l0")
BASELINES = ("never_lead", "always_lead", "leader")
SERGEANT = "blue_0"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options (it writes ``--json`` only when asked)."""
    parser = parser or argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-timesteps", type=int, default=12_000_000,
                        help="sergeant decisions to train for (default: 12000000)")
    parser.add_argument("--seed", type=int, default=1, help="training seed (default: 1)")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: 1e-3)")
    parser.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True,
                        help="anneal the learning rate linearly to 0 (default: yes)")
    parser.add_argument("--hidden", default="128,128",
                        help="hidden layer sizes (default: 128,128)")
    parser.add_argument("--epochs", type=int, default=10, help="PPO epochs (default: 10)")
    parser.add_argument("--minibatches", type=int, default=8,
                        help="minibatches per epoch (default: 8)")
    parser.add_argument("--ent-coef", type=float, default=0.001,
                        help="entropy bonus (default: 0.001)")
    parser.add_argument("--gamma", type=float, default=0.99,
                        help="discount per decision (default: 0.99)")
    parser.add_argument("--gae-lambda", type=float, default=0.8,
                        help="GAE lambda (default: 0.8)")
    parser.add_argument("--num-envs", type=int, default=256,
                        help="battles per call, half on each scenario (default: 256)")
    parser.add_argument("--mates", default="marksman",
                        help="policy of every seat but the sergeant's (default: marksman)")
    parser.add_argument("--eval-battles", type=int, default=500,
                        help="evaluation battles per scenario and sergeant (default: 500)")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="evaluate this checkpoint instead of training one")
    parser.add_argument("--out", type=Path, default=Path("runs/leadership_ppo"),
                        help="train_ppo's run folder (default: runs/leadership_ppo)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


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


def evaluate_sergeant(sergeant: Any, scenario: str, battles: int, mates: str = "marksman",
                      seed: int = 30_000) -> dict:
    """The blue side's results with ``sergeant`` (a ``Policy``) as ``blue_0`` and ``mates``
    everywhere else, over ``battles`` seeded battles of ``scenario``."""
    import traveller_env
    from agents.evaluation import play_battle, wilson_interval
    from agents.registry import make_policy

    env = traveller_env.raw_env(scenario, backend="python")
    side = SERGEANT.rsplit("_", 1)[0]
    recorder = _ChoiceRecorder(sergeant, list(env.unwrapped.action_labels),
                               {a for a in env.possible_agents if not a.startswith(side)})
    wins = draws = leads = turns = bonuses = penalties = 0
    for i in range(battles):
        policies = {a: make_policy(mates, seed=seed + 97 * i + k, scenario=scenario)
                    for k, a in enumerate(env.possible_agents) if a != SERGEANT}
        policies[SERGEANT] = recorder
        battle = play_battle(env, policies, seed + i)
        wins += battle.winner == "blue"
        draws += battle.winner is None
        for ev in battle.events:
            if ev.get("actor") == SERGEANT:
                turns += ev["type"] == "turn"
                leads += ev["type"] == "leadership"
                bonuses += ev["type"] == "bonus_granted"
            elif ev["type"] == "penalty_imposed" and ev["target"].startswith("blue"):
                penalties += 1
    lo, hi = wilson_interval(wins, battles)
    return {"scenario": scenario, "sergeant": getattr(sergeant, "name", "?"),
            "battles": battles, "wins": wins, "draws": draws,
            "losses": battles - wins - draws, "win_rate": wins / battles, "win_ci95": [lo, hi],
            "leads_per_turn": leads / max(1, turns),
            "turns_lead_or_shoot": len(recorder.turns),
            "leads_instead_of_shot": len(recorder.led) / max(1, len(recorder.turns)),
            "bonuses_per_battle": bonuses / battles,
            "penalties_on_blue_per_battle": penalties / battles}


def print_table(rows: list[dict]) -> None:
    """The evaluation as a Markdown table."""
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


def run(args: argparse.Namespace) -> int:
    """Train (unless ``--checkpoint``), evaluate, print the table (and write ``--json``)."""
    from agents.registry import make_policy
    from agents.trained import load_policy
    from traveller_rl.ppo import trainer as train_ppo

    if args.total_timesteps < 1 or args.eval_battles < 1:
        raise SystemExit("--total-timesteps and --eval-battles must be at least 1")
    trained_s = None
    checkpoint = args.checkpoint
    if checkpoint is None:
        import traveller_env

        agents = traveller_env.raw_env(SCENARIOS[0], backend="python").possible_agents
        opponents = ",".join(f"{a}={args.mates}" for a in agents if a != SERGEANT)
        start = time.perf_counter()
        status = train_ppo.main([
            "--scenario", ",".join(SCENARIOS), "--opponents", opponents,
            "--total-timesteps", str(args.total_timesteps), "--seed", str(args.seed),
            "--out", str(args.out), "--overwrite", "--lr", str(args.lr), "--hidden", args.hidden,
            "--anneal-lr" if args.anneal_lr else "--no-anneal-lr",
            "--ent-coef", str(args.ent_coef), "--epochs", str(args.epochs),
            "--minibatches", str(args.minibatches), "--num-envs", str(args.num_envs),
            "--gamma", str(args.gamma), "--gae-lambda", str(args.gae_lambda),
            "--eval-every", "0", "--eval-vs", "", "--final-eval-battles", "0",
            "--no-progress"])
        if status:
            return status
        trained_s = time.perf_counter() - start
        checkpoint = args.out / "ppo.pt"
        print(f"trained {args.total_timesteps:,} decisions in {trained_s:.0f} s", flush=True)
    rows = []
    for scenario in SCENARIOS:
        learned = load_policy(checkpoint, scenario)
        learned.name = "learned"
        for sergeant in (learned, *(make_policy(b, seed=1, scenario=scenario)
                                    for b in BASELINES)):
            rows.append(evaluate_sergeant(sergeant, scenario, args.eval_battles, args.mates))
            r = rows[-1]
            print(f"{scenario} {r['sergeant']}: {r['win_rate']:.3f} "
                  f"leads/turn {r['leads_per_turn']:.2f}", flush=True)
    print_table(rows)
    if args.json:
        command = result_command("traveller_rl.recipes.leadership", args.checkpoint,
                                 f"--total-timesteps {args.total_timesteps} --seed {args.seed}",
                                 f"--eval-battles {args.eval_battles}")
        payload = {"command": command,
                   "checkpoint": str(checkpoint), "train_seconds": trained_s,
                   "training": checkpoint_provenance(checkpoint), "rows": rows}
        write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
