"""Throughput of RLlib PPO on ``TravellerMultiAgentEnv`` with 1, 2, ... env runners.

For each number of env runners it builds the PPO algorithm of ``traveller_rl/rllib.py``
(shared-policy self-play, masked module) on a local Ray instance, warms up with one
training iteration, then measures

* sampling: every env runner samples ``--sample-steps`` environment steps at once (parallel),
  environment steps per second of wall time;
* training: whole ``algo.train()`` iterations (sampling, then the PPO update in this process),
  environment steps per second;

beside a reference measured in the same run: the environment stepped in a plain loop in this
process with uniformly random legal actions (no RLlib). The ratios to the reference and
between runner counts are the figures to read; absolute rates depend on the machine and its
load (the load average is recorded).

    python -m experiments.bench_rllib --runners 1,2 --json results/bench_rllib.json
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
from traveller_rl.rllib import Args, build_config, prepare, start_ray


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


def measure(runners: int, args: Any) -> dict[str, Any]:
    """Sampling and training throughput with ``runners`` env runners."""
    import torch

    torch.set_num_threads(1)
    a = Args(scenario=args.scenario, num_env_runners=runners,
             num_envs_per_env_runner=args.num_envs_per_env_runner,
             train_batch_size=args.train_batch_size, seed=args.seed)
    env_config, plan, probe = prepare(a)
    config = build_config(a, env_config, plan, probe.observation_space, probe.action_space)
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
    return {"env_runners": runners, "sample_steps_per_s": float(np.median(sample_rates)),
            "train_steps_per_s": float(np.median(train_rates)),
            "sample_rates": sample_rates, "train_rates": train_rates}


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="duel")
    parser.add_argument("--runners", default="1,2", help="env runner counts to measure")
    parser.add_argument("--num-envs-per-env-runner", type=int, default=8)
    parser.add_argument("--train-batch-size", type=int, default=2000)
    parser.add_argument("--sample-steps", type=int, default=4000,
                        help="environment steps per sampling round (split over runners)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per measure (median)")
    parser.add_argument("--reference-seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    try:
        counts = [int(x) for x in args.runners.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0:
        print("bench_rllib: error: --runners must be counts like 1,2", file=sys.stderr)
        return 2
    import ray

    load_before = os.getloadavg()
    reference = reference_steps_per_second(args.scenario, args.reference_seconds, args.seed)
    start_ray("", max(counts))
    try:
        rows = [measure(n, args) for n in counts]
    finally:
        ray.shutdown()
    load_after = os.getloadavg()
    base = rows[0]
    print(f"reference: the env in a plain loop (random legal actions) {reference:,.0f} steps/s")
    print(f"{'env runners':>11}{'sampling steps/s':>18}{'x reference':>12}{'x first':>9}"
          f"{'training steps/s':>18}{'x first':>9}")
    for r in rows:
        print(f"{r['env_runners']:>11}{r['sample_steps_per_s']:>18,.0f}"
              f"{r['sample_steps_per_s'] / reference:>12.2f}"
              f"{r['sample_steps_per_s'] / base['sample_steps_per_s']:>9.2f}"
              f"{r['train_steps_per_s']:>18,.0f}"
              f"{r['train_steps_per_s'] / base['train_steps_per_s']:>9.2f}")
    print(f"load average before/after: {load_before[0]:.1f} / {load_after[0]:.1f} "
          f"on {os.cpu_count()} cores")
    if args.json:
        write_json(args.json, {"scenario": args.scenario, "reference_steps_per_s": reference,
                               "rows": rows, "cores": os.cpu_count(),
                               "load_average_before": load_before,
                               "load_average_after": load_after,
                               "num_envs_per_env_runner": args.num_envs_per_env_runner,
                               "train_batch_size": args.train_batch_size,
                               "versions": versions()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
