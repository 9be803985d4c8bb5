"""RLlib PPO beside the project's own trainer (sb3-contrib MaskablePPO), same budget.

Both learn to play ``blue`` in a scenario (default ``duel``) against a scripted NPC on
``red`` (default ``rush``) for the same number of *learner decisions*, with the same network
(64-64 tanh, separate value network), learning rate, discount, GAE lambda, entropy bonus,
minibatch size and epochs, and slot-relative actions:

* RLlib: ``experiments/train_rllib.py`` with ``--policy-mapping per-side --opponents
  red=<npc> --learner-decisions N`` (the NPC is a ``ScriptedRLModule``, not trained);
* SB3: ``MaskablePPO`` on the SB3 bridge (``TravellerSB3Env(learner="blue",
  policies=<npc>)``), ``train_common.make_model``, as in ``experiments/train_aiming.py``.

Each trained policy is then evaluated the same way, sides alternating
(``agents.evaluation.evaluate_matchup``, Wilson 95% intervals), against the NPC it trained
with and against ``random``.

    python -m experiments.compare_rllib_sb3 --decisions 100000 --json results/compare.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from experiments.train_common import (
    PPOArgs,
    atomic_save_model,
    make_model,
    seed_everything,
    versions,
    write_json,
)


def train_sb3(args: Any, out: Path) -> tuple[Any, float]:
    """MaskablePPO for ``args.decisions`` learner decisions; returns (policy, seconds)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.registry import make_policy
    from agents.trained import TrainedPolicy
    from traveller_env.sb3 import TravellerSB3Env

    ppo = PPOArgs(seed=args.seed, total_timesteps=args.decisions, learning_rate=args.lr,
                  n_steps=args.sb3_n_steps, batch_size=args.minibatch_size,
                  n_epochs=args.num_epochs, gamma=1.0, gae_lambda=0.95, ent_coef=0.01,
                  net_arch="64,64")
    seed_everything(args.seed, 1)
    factories = [lambda: TravellerSB3Env(args.scenario, learner="blue",
                                         policies=make_policy(args.npc, scenario=args.scenario),
                                         relative_actions=True)
                 for _ in range(args.sb3_envs)]
    venv = DummyVecEnv(factories)
    venv.seed(args.seed)
    out.mkdir(parents=True, exist_ok=True)
    model = make_model(ppo, venv, out)
    start = time.perf_counter()
    model.learn(total_timesteps=args.decisions, progress_bar=False)
    seconds = time.perf_counter() - start
    venv.close()
    atomic_save_model(model, out / "model.zip", scenario=args.scenario,
                      action_targets="relative")
    return TrainedPolicy(model, "sb3", relative=True), seconds


def identical_battles(policies: list[Any], opponent: str, args: Any) -> int:
    """In how many of the evaluation battles against ``opponent`` (the same seeds and side
    assignment as ``evaluate_matchup``) the policies produce the same event log."""
    import traveller_env
    from agents.evaluation import play_battle
    from agents.registry import make_policy

    env = traveller_env.raw_env(args.scenario)
    same = 0
    for i in range(args.eval_battles):
        logs = []
        for policy in policies:
            npc = make_policy(opponent, scenario=args.scenario)
            seats = {a: policy if env.side_of(a) == i % 2 else npc for a in env.possible_agents}
            logs.append(list(play_battle(env, seats, 20_000 + i).events))
        same += all(log == logs[0] for log in logs[1:])
    return same


def train_rllib(args: Any, out: Path) -> tuple[Any, float, int]:
    """RLlib PPO for ``args.decisions`` learner decisions; returns (policy, seconds,
    decisions actually made: RLlib stops at the end of a training iteration)."""
    import json

    from agents.rllib_policy import load_rllib_policy
    from experiments import train_rllib

    rl = train_rllib.Args(scenario=args.scenario, num_env_runners=args.num_env_runners,
                          learner_decisions=args.decisions, out=str(out), seed=args.seed,
                          policy_mapping="per-side", opponents=f"red={args.npc}",
                          lr=args.lr, minibatch_size=args.minibatch_size,
                          num_epochs=args.num_epochs, eval_battles=0)
    run = train_rllib.train(rl)
    results = json.loads((run / "evaluation.json").read_text())
    policy = load_rllib_policy(run / "checkpoint", args.scenario, module="blue", name="rllib")
    return policy, results["train_seconds"], results["learner_decisions"]


def main(argv: list[str] | None = None) -> int:
    """Train both, evaluate both, print the table (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="duel")
    parser.add_argument("--npc", default="rush", help="scripted opponent on red")
    parser.add_argument("--decisions", type=int, default=100_000,
                        help="learner decisions for each trainer")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--minibatch-size", type=int, default=256)
    parser.add_argument("--num-epochs", type=int, default=10)
    parser.add_argument("--num-env-runners", type=int, default=2, help="RLlib env runners")
    parser.add_argument("--sb3-envs", type=int, default=2, help="SB3 environments")
    parser.add_argument("--sb3-n-steps", type=int, default=512,
                        help="SB3 rollout per environment (2 x 512 learner decisions per "
                             "update, about RLlib's 2000 environment steps of which half "
                             "are the learner's)")
    parser.add_argument("--eval-battles", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("runs") / f"compare__{int(time.time())}")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.eval_battles < 1:
        print("compare_rllib_sb3: error: --decisions and --eval-battles must be >= 1",
              file=sys.stderr)
        return 2

    from agents.evaluation import evaluate_matchup, format_matchups
    from agents.registry import make_policy

    rllib_policy, rllib_seconds, rllib_decisions = train_rllib(args, args.out / "rllib")
    sb3_policy, sb3_seconds = train_sb3(args, args.out / "sb3")
    rows = []
    for trainer, policy, seconds, decisions in (
            ("rllib", rllib_policy, rllib_seconds, rllib_decisions),
            ("sb3", sb3_policy, sb3_seconds, args.decisions)):
        for opponent in dict.fromkeys([args.npc, "random"]):
            row = evaluate_matchup(policy, make_policy(opponent, scenario=args.scenario),
                                   args.scenario, battles=args.eval_battles)
            rows.append({"trainer": trainer, "learner_decisions": decisions,
                         "train_seconds": seconds, **row})
    for trainer in ("rllib", "sb3"):
        mine = [r for r in rows if r["trainer"] == trainer]
        print(f"{trainer}: {mine[0]['learner_decisions']} learner decisions in "
              f"{mine[0]['train_seconds']:.0f} s")
        print(format_matchups(mine))
    same = {o: identical_battles([rllib_policy, sb3_policy], o, args)
            for o in dict.fromkeys([args.npc, "random"])}
    for o, n in same.items():
        print(f"identical battles (same event log) against {o}: {n} of {args.eval_battles}")
    if args.json:
        write_json(args.json, {"args": {k: str(v) for k, v in vars(args).items()},
                               "rows": rows, "identical_battles": same,
                               "versions": versions()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
