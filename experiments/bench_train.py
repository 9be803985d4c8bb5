"""Training speed: MaskablePPO frames per second on ``duel`` through the SB3 bridge, and the
share of wall time spent inside the environment.

The environment's share is measured by a thin ``VecEnvWrapper`` timing every call into the
vectorised environment (``step``, ``reset``, and the ``action_masks`` calls MaskablePPO makes)
with ``time.perf_counter``, over one training run: low overhead, unlike a profiler, which
inflates pure-Python code. The opponent is the uniform random policy, so the figure is the
environment's own cost, not a scripted NPC's thinking time.

    python -m experiments.bench_train --timesteps 20000 --json runs/bench_train.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any


def _timed_vec_env_class() -> type:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class TimedVecEnv(VecEnvWrapper):
        """Adds up the wall time spent in every call into the wrapped VecEnv."""

        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.elapsed = 0.0

        def reset(self) -> Any:
            t = time.perf_counter()
            out = self.venv.reset()
            self.elapsed += time.perf_counter() - t
            return out

        def step_async(self, actions: Any) -> None:
            t = time.perf_counter()
            self.venv.step_async(actions)
            self.elapsed += time.perf_counter() - t

        def step_wait(self) -> Any:
            t = time.perf_counter()
            out = self.venv.step_wait()
            self.elapsed += time.perf_counter() - t
            return out

        def env_method(self, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            out = self.venv.env_method(*args, **kwargs)
            self.elapsed += time.perf_counter() - t
            return out

        def has_attr(self, attr_name: str) -> bool:
            return self.venv.has_attr(attr_name)

    return TimedVecEnv


def isolated_step_us(scenario: str, steps: int = 5000) -> dict[str, float]:
    """Microseconds per learner step of the SB3 bridge alone and through ``DummyVecEnv``,
    with a uniformly random legal learner: the environment's cost without the training
    loop around it (inside training the same calls run slower, on caches PyTorch evicts)."""
    import numpy as np
    from stable_baselines3.common.vec_env import DummyVecEnv

    from traveller_env.sb3 import make_sb3_env

    rng = np.random.default_rng(0)
    bridge = make_sb3_env(scenario, learner="blue")()
    bridge.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(bridge.action_masks())
        _, _, terminated, truncated, _ = bridge.step(int(legal[rng.integers(len(legal))]))
        if terminated or truncated:
            bridge.reset()
    bridge_us = 1e6 * (time.perf_counter() - start) / steps
    venv = DummyVecEnv([make_sb3_env(scenario, learner="blue")])
    venv.seed(0)
    venv.reset()
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(venv.env_method("action_masks")[0])
        venv.step(np.array([legal[rng.integers(len(legal))]]))
    vec_us = 1e6 * (time.perf_counter() - start) / steps
    return {"bridge_us": bridge_us, "dummy_vec_env_us": vec_us}


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(description="MaskablePPO training speed on duel")
    parser.add_argument("--timesteps", type=int, default=20_000,
                        help="timed training steps (default: %(default)s)")
    parser.add_argument("--scenario", default="duel", help="scenario (default: %(default)s)")
    parser.add_argument("--n-envs", type=int, default=1,
                        help="environments in the DummyVecEnv (default: %(default)s)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Train briefly, print frames per second and the environment's share of wall time."""
    args = build_parser().parse_args(argv)

    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from traveller_env.sb3 import make_sb3_env

    TimedVecEnv = _timed_vec_env_class()

    torch.set_num_threads(1)
    venv = TimedVecEnv(DummyVecEnv([make_sb3_env(args.scenario, learner="blue")] * args.n_envs))
    model = MaskablePPO("MlpPolicy", venv, n_steps=512, batch_size=256, seed=0, verbose=0)
    model.learn(1024)  # warm-up
    venv.elapsed = 0.0
    start = time.perf_counter()
    model.learn(args.timesteps, reset_num_timesteps=True)
    wall = time.perf_counter() - start
    share = venv.elapsed / wall
    fps = args.timesteps / wall
    print(f"MaskablePPO on {args.scenario} ({args.n_envs} env, torch threads 1): "
          f"{fps:,.0f} steps/s over {args.timesteps} steps ({wall:.1f} s)")
    print(f"time inside the environment: {share:.1%} of wall time "
          f"({1e6 * venv.elapsed / args.timesteps:.0f} us per step)")
    alone = isolated_step_us(args.scenario)
    print(f"the same steps outside training (random legal learner): bridge "
          f"{alone['bridge_us']:.0f} us, through DummyVecEnv {alone['dummy_vec_env_us']:.0f} us "
          "per step")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "scenario": args.scenario, "timesteps": args.timesteps, "n_envs": args.n_envs,
            "fps": fps, "env_share": share,
            "env_us_per_step_in_training": 1e6 * venv.elapsed / args.timesteps,
            "isolated_us_per_step": alone, "python": platform.python_version(),
            "torch": torch.__version__}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
