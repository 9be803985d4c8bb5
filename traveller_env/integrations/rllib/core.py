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
``SAME_STEP``) and cannot hold a row back for a call, while RLlib 2.60's
``SingleAgentEnvRunner`` expects ``NEXT_STEP`` (the call after a battle's end ignores that
row's action and returns the first observation of the next battle). ``CoreEnvRunner`` is the
runner for this mode: the step that ends a battle hands RLlib the next battle's first
observation as the ended episode's last one (RLlib computes the next action from it), and
the runner starts the new episode with that same observation at once, so the next call's
action is recorded as the first step of the new battle. No decision and no reward is dropped
or moved between battles (``tests/integrations/test_rllib_core.py`` replays the episodes on
the AEC env). A terminated battle's last observation is never used for bootstrapping; one cut
by ``max_rounds`` is bootstrapped from the next battle's first observation (the core keeps no
final observations).

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

try:
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("traveller_env.integrations.rllib needs Ray RLlib: install the project's "
                      "'rllib' extra (pip install -e '.[rllib]', which pins ray[rllib]==2.60.0)"
                      ) from exc

from traveller_env.integrations.gymnasium_vector import TravellerVectorEnv

__all__ = ["CORE_CONFIG_KEYS", "CoreEnvRunner", "TravellerCoreVectorEnv", "make_core_env"]

#: Keys of ``make_core_env``'s config besides the environment options.
CORE_CONFIG_KEYS = ("scenario", "opponents", "num_envs", "relative_actions", "threads")


class TravellerCoreVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` battles in the compiled core as the vector env of RLlib's single-agent env
    runner (see the module docstring; run it with ``CoreEnvRunner``).

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


class CoreEnvRunner(SingleAgentEnvRunner):
    """RLlib's ``SingleAgentEnvRunner`` for a vector env that resets a battle in the step that
    ends it (``SAME_STEP``; see the module docstring): the episode that replaces an ended one
    starts at once with the ended one's last observation, the next battle's first. Set it
    with ``config.env_runners(env_runner_cls=CoreEnvRunner,
    gym_env_vectorize_mode="vector_entry_point")``."""

    _resetting_all = False

    def _reset_envs(self, episodes: Any, shared_data: Any, explore: bool) -> Any:
        """RLlib's reset of every row (its episodes get the reset observations there)."""
        self._resetting_all = True
        try:
            return super()._reset_envs(episodes, shared_data, explore)
        finally:
            self._resetting_all = False

    def _new_episode(self, env_index: int, episodes: Any = None) -> None:
        """A fresh episode for row ``env_index``; after a battle ended inside ``sample``, it
        starts with the next battle's first observation (the ended episode's last)."""
        episodes = episodes if episodes is not None else self._ongoing_episodes
        ended = episodes[env_index] if env_index < len(episodes) else None
        super()._new_episode(env_index, episodes)
        if self._resetting_all or ended is None or not ended.is_done:
            return
        episodes[env_index].add_env_reset(observation=ended.get_observations(-1),
                                          infos=ended.get_infos(-1))
