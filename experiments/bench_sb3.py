"""SB3 at core speed: MaskablePPO decisions per second on ``CoreVecEnv`` (the compiled core,
``traveller_env.integrations.sb3_vector``) against the SB3 bridge (``DummyVecEnv`` over
``TravellerSB3Env``), in one run, same scenario, opponent, number of environments and PPO
settings; plus the environments alone (random legal actions, no learning).

    python -m experiments.bench_sb3 --timesteps 20000 --n-envs 16 --json runs/bench_sb3.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np


def maskable_ppo_rate(venv: Any, timesteps: int) -> float:
    """MaskablePPO's decisions per second over ``timesteps`` on ``venv`` (updates included)."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    model = MaskablePPO("MlpPolicy", venv, n_steps=256, batch_size=256, seed=0, verbose=0,
                        policy_kwargs={"net_arch": [64, 64]})
    start = time.perf_counter()
    model.learn(timesteps)
    return timesteps / (time.perf_counter() - start)


def env_only_rate(venv: Any, steps: int) -> float:
    """Decisions per second of ``venv`` alone: random legal actions, masks asked every step."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    rng = np.random.default_rng(0)
    venv.reset()
    start = time.perf_counter()
    for _ in range(steps):
        masks = get_action_masks(venv)
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        venv.step(actions)
    return steps * venv.num_envs / (time.perf_counter() - start)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="duel")
    parser.add_argument("--opponent", default="rush", help="the red side's policy")
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--env-steps", type=int, default=500, help="vector steps, env only")
    parser.add_argument("--json", type=Path, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from stable_baselines3.common.vec_env import DummyVecEnv

    from traveller_env.integrations.sb3 import make_sb3_env
    from traveller_env.integrations.sb3_vector import CoreVecEnv
    from traveller_env.policy import make_policy

    def bridge() -> Any:
        return DummyVecEnv([make_sb3_env(args.scenario, learner="blue",
                                         policies=make_policy(args.opponent, seed=i))
                            for i in range(args.n_envs)])

    def core() -> CoreVecEnv:
        return CoreVecEnv(args.scenario, num_envs=args.n_envs,
                          opponents={"red": args.opponent}, seed=0)

    figures: dict[str, Any] = {"scenario": args.scenario, "opponent": args.opponent,
                               "n_envs": args.n_envs, "timesteps": args.timesteps,
                               "machine": platform.processor() or platform.machine()}
    for name, make in (("bridge", bridge), ("core", core)):
        figures[f"{name}_env_only_per_s"] = env_only_rate(make(), args.env_steps)
        figures[f"{name}_maskable_ppo_per_s"] = maskable_ppo_rate(make(), args.timesteps)
        print(f"{name:6s}: env alone {figures[f'{name}_env_only_per_s']:>10,.0f} decisions/s;"
              f" MaskablePPO {figures[f'{name}_maskable_ppo_per_s']:>8,.0f} decisions/s")
    ratio = figures["core_maskable_ppo_per_s"] / figures["bridge_maskable_ppo_per_s"]
    figures["maskable_ppo_speedup"] = ratio
    print(f"MaskablePPO on the core: {ratio:.1f}x the bridge")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
