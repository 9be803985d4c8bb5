"""Throughput of RLlib PPO with 1, 2, ... env runners, on the AEC env and on the core.

Two paths of ``traveller_rl/rllib.py`` side by side, with the same runner counts:

* ``aec``: ``TravellerMultiAgentEnv`` (one battle per environment stepped in Python),
  shared-policy self-play, 8 environments per runner: every decision is the module's;
* ``core``: single-agent RLlib on ``integrations.rllib.core`` (64 battles per runner stepped
  in the compiled core), the learner side against ``rush`` played in the core: every
  environment step is a decision of the module (the opponent's are not counted).

For each path and number of env runners it builds the PPO algorithm (masked module) on a
local Ray instance, warms up with one training iteration, then measures

* sampling: every env runner samples ``--sample-steps`` environment steps at once (parallel),
  environment steps per second of wall time;
* training: whole ``algo.train()`` iterations (sampling, then the PPO update in this process),
  environment steps per second;

beside a reference measured in the same run: the environment stepped in a plain loop in this
process with uniformly random legal actions (no RLlib). The ratios to the reference and
between runner counts and the core's to the AEC's are the figures to read; absolute rates
depend on the machine and its load (the load average is recorded).

``--learn N`` then trains both paths as blue against ``rush`` in duel for ``N`` learner
decisions each (the same network and PPO settings, ``--runners``' last count) and evaluates
each against ``random`` and ``rush`` (``traveller_rl.rllib.train``): wall time and win rates
side by side.

    python -m experiments.bench_rllib --runners 1,2 --json results/bench_rllib.json
    python -m experiments.bench_rllib --runners 2 --learn 100000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.common import versions, write_json
from traveller_rl.rllib import Args, build_config, prepare, start_ray, train


def reference_steps_per_second(scenario: str, seconds: float, seed: int = 0) -> float:
    """``TravellerMultiAgentEnv`` stepped with random legal actions in a plain loop."""
    from traveller_env.integrations.rllib import TravellerMultiAgentEnv

    env = TravellerMultiAgentEnv({"scenario": scenario})
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        agent = next(a for a, o in obs.items() if o["action_mask"].any())
        legal = np.flatnonzero(obs[agent]["action_mask"])
        obs, _, term, trunc, _ = env.step({agent: int(legal[rng.integers(len(legal))])})
        steps += 1
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - start)


def measure(env: str, runners: int, args: Any) -> dict[str, Any]:
    """Sampling and training throughput of path ``env`` with ``runners`` env runners."""
    import torch

    torch.set_num_threads(1)
    a = Args(scenario=args.scenario, num_env_runners=runners, env=env,
             opponents="red=rush" if env == "core" else "",
             num_envs_per_env_runner=args.num_envs_per_env_runner,
             train_batch_size=args.train_batch_size, seed=args.seed)
    env_config, plan, probe = prepare(a)
    spaces = ((probe.single_observation_space, probe.single_action_space) if env == "core"
              else (probe.observation_space, probe.action_space))
    config = build_config(a, env_config, plan, *spaces)
    algo = config.build_algo()
    try:
        # Warm-up (actors started, first weights synced), then training rounds first: the
        # step counts of a training iteration would include the sampling rounds' steps.
        before = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        train_rates = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            result = algo.train()
            seconds = time.perf_counter() - start
            after = result["env_runners"]["num_env_steps_sampled_lifetime"]
            train_rates.append(float(after - before) / seconds)
            before = after
        group = algo.env_runner_group
        per_runner = max(1, args.sample_steps // max(1, runners))
        sample_rates = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            if runners:
                episodes = group.foreach_env_runner(
                    lambda r: sum(len(e) for e in r.sample(num_timesteps=per_runner,
                                                           random_actions=False)),
                    local_env_runner=False)
            else:
                episodes = [sum(len(e) for e in group.local_env_runner.sample(
                    num_timesteps=per_runner))]
            sample_rates.append(sum(episodes) / (time.perf_counter() - start))
    finally:
        algo.stop()
    return {"env": env, "env_runners": runners,
            "sample_steps_per_s": float(np.median(sample_rates)),
            "train_steps_per_s": float(np.median(train_rates)),
            "sample_rates": sample_rates, "train_rates": train_rates}


def learn(env: str, runners: int, args: Any) -> dict[str, Any]:
    """Train path ``env`` as blue against ``rush`` in duel for ``args.learn`` learner
    decisions (``traveller_rl.rllib.train``, its default PPO settings) and evaluate it."""
    import json
    import tempfile

    out = Path(tempfile.mkdtemp(prefix=f"bench_rllib_{env}_"))
    a = Args(scenario="duel", env=env, opponents="red=rush", num_env_runners=runners,
             learner_decisions=args.learn, seed=args.seed, eval_battles=args.eval_battles,
             out=str(out), overwrite=True)
    start = time.perf_counter()
    train(a)
    wall = time.perf_counter() - start
    results = json.loads((out / "evaluation.json").read_text())
    row = {"env": env, "env_runners": runners, "wall_seconds": wall,
           "train_seconds": results["train_seconds"],
           "learner_decisions": results["learner_decisions"],
           "evaluation": results.get("evaluation", []), "load_average": os.getloadavg()}
    rates = ", ".join(f"vs {r['opponent']} {r['win_rate']:.3f} "
                      f"[{r['win_ci95'][0]:.3f}, {r['win_ci95'][1]:.3f}]"
                      for r in row["evaluation"])
    print(f"learning {env}: {row['learner_decisions']} learner decisions in "
          f"{row['train_seconds']:.0f} s of training ({wall:.0f} s in all): {rates}", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table (and write ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="duel")
    parser.add_argument("--runners", default="1,2", help="env runner counts to measure")
    parser.add_argument("--num-envs-per-env-runner", type=int, default=0,
                        help="0: 8 on the AEC env, 64 on the core")
    parser.add_argument("--envs", default="aec,core", help="paths to measure")
    parser.add_argument("--learn", type=int, default=0,
                        help="then train each path for this many learner decisions")
    parser.add_argument("--train-batch-size", type=int, default=2000)
    parser.add_argument("--sample-steps", type=int, default=4000,
                        help="environment steps per sampling round (split over runners)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measure (median)")
    parser.add_argument("--reference-seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval-battles", type=int, default=200,
                        help="evaluation battles of --learn per opponent")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    try:
        counts = [int(x) for x in args.runners.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0:
        print("bench_rllib: error: --runners must be counts like 1,2", file=sys.stderr)
        return 2
    envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    if not envs or set(envs) - {"aec", "core"}:
        print("bench_rllib: error: --envs must name aec and/or core", file=sys.stderr)
        return 2
    import ray

    load_before = os.getloadavg()
    reference = reference_steps_per_second(args.scenario, args.reference_seconds, args.seed)
    start_ray("", max(counts))
    try:
        rows = [measure(e, n, args) for e in envs for n in counts]
    finally:
        ray.shutdown()
    load_after = os.getloadavg()
    print(f"reference: the AEC env in a plain loop (random legal actions) {reference:,.0f} "
          "steps/s")
    print(f"{'path':>5}{'env runners':>12}{'sampling steps/s':>18}{'x reference':>12}"
          f"{'x aec':>8}{'training steps/s':>18}{'x aec':>8}")
    for r in rows:
        aec = next((b for b in rows if b["env"] == "aec"
                    and b["env_runners"] == r["env_runners"]), None)
        r["sample_x_aec"] = r["sample_steps_per_s"] / aec["sample_steps_per_s"] if aec else None
        r["train_x_aec"] = r["train_steps_per_s"] / aec["train_steps_per_s"] if aec else None
        print(f"{r['env']:>5}{r['env_runners']:>12}{r['sample_steps_per_s']:>18,.0f}"
              f"{r['sample_steps_per_s'] / reference:>12.2f}"
              f"{r['sample_x_aec'] or float('nan'):>8.2f}{r['train_steps_per_s']:>18,.0f}"
              f"{r['train_x_aec'] or float('nan'):>8.2f}")
    print(f"load average before/after: {load_before[0]:.1f} / {load_after[0]:.1f} "
          f"on {os.cpu_count()} cores")
    learning = [learn(e, counts[-1], args) for e in envs] if args.learn else []
    if args.json:
        write_json(args.json, {"scenario": args.scenario, "reference_steps_per_s": reference,
                               "rows": rows, "learning": learning, "cores": os.cpu_count(),
                               "load_average_before": load_before,
                               "load_average_after": load_after,
                               "num_envs_per_env_runner": args.num_envs_per_env_runner,
                               "train_batch_size": args.train_batch_size,
                               "versions": versions()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
