"""RLlib on the compiled core: single-agent RLlib over one side's seats, many battles per call.

Each RLlib env runner steps a ``TravellerCoreVectorEnv``: ``num_envs`` battles in the compiled
core (``integrations.gymnasium_vector.TravellerVectorEnv``), the opponents played inside the
core, one decision of the learner side per battle and call. RLlib sees a single agent (the
deciding learner seat of each battle) and a ``gymnasium.vector.VectorEnv``:

* observations ``Dict({"observations": Box(-1, 1, (D,)), "action_mask": Box(0, 1, (N,))})``,
  float32, as ``TravellerMultiAgentEnv``'s, so ``modules.MaskedPPOTorchRLModule`` masks the
  logits as it does there, and a checkpoint loads as an NPC the same way;
* actions slot-relative by default (``relative_actions``), so one module can play any seat;
* rewards: the learner side's (``TravellerVectorEnv``: opponents' moves included), float64;
* ``infos``: ``{"battle_seed": uint64 [N]}`` of the battle now running in each row.

**Autoreset.** The core resets a row in the step that ends its battle (Gymnasium's
``SAME_STEP``); ``traveller_env.integrations.rllib.core_runner.CoreEnvRunner`` is RLlib's env
runner for this mode (and steps the batch without RLlib's per-row work where it can).

``make_core_env(config)`` is the env creator (RLlib's env config: ``scenario``, ``opponents``,
``num_envs``, ``relative_actions``, ``threads`` and the environment options).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from traveller_env.integrations.gymnasium_vector import TravellerVectorEnv

__all__ = ["CORE_CONFIG_KEYS", "TravellerCoreVectorEnv", "make_core_env"]

#: Keys of ``make_core_env``'s config besides the environment options.
CORE_CONFIG_KEYS = ("scenario", "opponents", "num_envs", "relative_actions", "threads")


class TravellerCoreVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` battles in the compiled core as the vector env of RLlib's single-agent env
    runner (see the module docstring; run it with ``core_runner.CoreEnvRunner``).

    Args:
        num_envs: battles stepped per call.
        scenario: a built-in scenario name, path or dict.
        opponents: ``{side or agent id: policy name}`` for every seat but the learner side's
            (policies that run in the core), or one policy name for every other side
            (default: ``gymnasium_vector.default_opponent``).
        relative_actions: slot-relative actions (default ``True``).
        threads: core threads stepping the rows.
        **options: the environment options (``max_rounds``, ...).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 8, scenario: Any = "duel",
                 opponents: Mapping[str, str] | str | None = None,
                 relative_actions: bool = True, threads: int = 1, **options: Any) -> None:
        self.venv = TravellerVectorEnv(num_envs, scenario, opponents=opponents,
                                       backend="core", relative_actions=relative_actions,
                                       threads=threads, **options)
        self.num_envs = self.venv.num_envs
        self.action_labels = self.venv.action_labels
        core = self.venv.venv
        self.single_observation_space = spaces.Dict({
            "observations": spaces.Box(-1.0, 1.0, shape=(core.obs_dim,), dtype=np.float32),
            "action_mask": spaces.Box(0.0, 1.0, shape=(core.n_actions,), dtype=np.float32)})
        self.single_action_space = spaces.Discrete(core.n_actions)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space,
                                                              self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space,
                                                         self.num_envs)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Every row's next battle (``seed``: re-seed, battle 0)."""
        obs, infos = self.venv.reset(seed=seed, options=options)
        return self._obs(obs, infos), self._infos(infos)

    def step(self, actions: Any) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        """One action per row; ``SAME_STEP`` autoreset (see the module docstring)."""
        obs, rewards, terminated, truncated, infos = self.venv.step(
            np.asarray(actions, dtype=np.int64).reshape(-1))
        return (self._obs(obs, infos), rewards.astype(np.float64), terminated, truncated,
                self._infos(infos))

    @staticmethod
    def _obs(obs: np.ndarray, infos: dict) -> dict[str, np.ndarray]:
        return {"observations": obs, "action_mask": infos["action_mask"].astype(np.float32)}

    @staticmethod
    def _infos(infos: dict) -> dict[str, Any]:
        return {"battle_seed": infos["battle_seed"]}

    def close_extras(self, **kwargs: Any) -> None:
        """Release the core's rows."""
        self.venv.close()


def make_core_env(config: Mapping[str, Any] | None = None) -> TravellerCoreVectorEnv:
    """RLlib's env creator for ``TravellerCoreVectorEnv`` (``ValueError`` listing the allowed
    keys for an unknown one). RLlib adds ``num_envs`` (``num_envs_per_env_runner``)."""
    from traveller_env.integrations.rllib.env import _ENV_OPTIONS

    cfg = dict(config or {})
    unknown = sorted(set(cfg) - set(CORE_CONFIG_KEYS) - set(_ENV_OPTIONS))
    if unknown:
        raise ValueError(f"make_core_env config: unknown key(s) {unknown}; allowed: "
                         f"{', '.join(CORE_CONFIG_KEYS + _ENV_OPTIONS)}")
    return TravellerCoreVectorEnv(**cfg)
