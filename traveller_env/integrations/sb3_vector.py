"""Stable-Baselines3 on the compiled core: ``CoreVecEnv``, an SB3 ``VecEnv`` over
``traveller_env.vector`` (``backend="core"``).

The SB3 bridge (``traveller_env.integrations.sb3``) steps one Python environment per SB3 environment
(~1,000-2,600 decisions/s); ``CoreVecEnv`` steps every battle in one call of the compiled
core. Each SB3 environment is one row of the vector: one battle whose learner seats (the
seats not in ``opponents``) share the SB3 policy, while the opponents are played inside the
core (``core.vector.CORE_POLICIES``: ``random``, ``passive``, ``rush``, ``marksman``,
``leader``, ``tactician``, ``cover``)::

    from sb3_contrib import MaskablePPO
    from traveller_env.integrations.sb3_vector import CoreVecEnv

    venv = CoreVecEnv("duel", num_envs=16, opponents={"red": "rush"}, seed=0)
    MaskablePPO("MlpPolicy", venv).learn(100_000)

* **Masks**: ``env_method("action_masks")`` (what sb3-contrib's ``get_action_masks`` calls)
  returns each row's boolean mask of its deciding learner seat.
* **Rewards**: a row's reward is its learner side's reward gained during the step (opponent
  moves included): with the scenario's ``shared: true`` rewards (the default) the side's
  reward, otherwise the sum over its learner seats; summed over a battle it equals the
  side's AEC reward (a knocked-out seat's share stops at the step that knocks it out).
* **Episodes**: a row's ``done`` is set on the step that ends its battle; the observation
  returned is already the next battle's first (the vector resets rows itself). The terminal
  observation is not kept, so a truncated battle (``max_rounds``) is not bootstrapped:
  ``infos[i]`` holds ``"winner"`` (the winning side's index, -1 for a draw) and
  ``"TimeLimit.truncated"`` but no ``"terminal_observation"``. Wrap in SB3's ``VecMonitor``
  for episode statistics.
* Rows are seeded from ``seed`` (``VecEnv.seed(s)`` re-seeds at the next ``reset``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from traveller_env import vector
from traveller_env.env import ScenarioSource

__all__ = ["CoreVecEnv"]


class CoreVecEnv(VecEnv):
    """``num_envs`` battles of ``scenario`` on the compiled core as an SB3 ``VecEnv`` (see the
    module docstring).

    Args:
        scenario: built-in name, path, dict or ``Scenario``.
        num_envs: the number of battles (SB3 environments).
        opponents: side name or agent id -> in-core policy name (``{"red": "rush"}``); every
            other seat is a learner seat. At least one seat must be an opponent or the rows
            mix both sides' decisions (use ``relative_actions=True`` for that self-play).
        seed: the vector's seed.
        relative_actions: name targets by observation slot (as ``vector.make``).
        threads: step the rows in this many threads (results identical to one thread's).
        backend: ``"core"`` (the default and the point of this class) or ``"python"``.
        **options: environment options (``hastening``, ``max_rounds``...).
    """

    def __init__(self, scenario: ScenarioSource = "duel", num_envs: int = 8,
                 opponents: Mapping[str, str] | None = None, seed: int = 0, *,
                 relative_actions: bool = False, threads: int = 1, backend: str = "core",
                 **options: Any) -> None:
        self.venv = vector.make(scenario, num_envs=num_envs, seed=seed, backend=backend,
                                opponents=opponents, relative_actions=relative_actions,
                                threads=threads, **options)
        v = self.venv
        self.action_labels: list[str] = list(v.action_labels)
        self.learner_columns = v.learner_columns
        self._mask = np.zeros((v.num_envs, v.n_actions), dtype=bool)
        self._actions: np.ndarray | None = None
        observation_space = spaces.Box(-1.0, 1.0, shape=(v.obs_dim,), dtype=np.float32)
        super().__init__(v.num_envs, observation_space, spaces.Discrete(v.n_actions))

    # ------------------------------------------------------------------ VecEnv API
    def reset(self) -> VecEnvObs:
        """Start every row's next battle (re-seeded when ``seed()`` was called)."""
        seed = self._seeds[0]
        obs, mask, _ = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        np.copyto(self._mask, mask)
        return obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        """Keep the actions (one index per row) for ``step_wait``."""
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every row; returns ``(obs, rewards, dones, infos)``."""
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async(): call step(actions)")
        actions, self._actions = self._actions, None
        obs, mask, rewards, terminated, truncated, info = self.venv.step(actions)
        np.copyto(self._mask, mask)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for row in np.flatnonzero(dones):
            infos[row] = {"winner": int(info["winner"][row]),
                          "TimeLimit.truncated": bool(truncated[row] and not terminated[row])}
        return obs.copy(), self.venv.learner_side_rewards(rewards), dones.copy(), infos

    def close(self) -> None:
        """Release the vector."""
        self.venv.close()

    def action_masks(self) -> np.ndarray:
        """The boolean masks ``[num_envs, n_actions]`` of every row's deciding learner seat."""
        return self._mask.copy()

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """``"action_masks"``: one mask per row (what MaskablePPO asks); no other method."""
        if method_name != "action_masks":
            raise AttributeError(f"CoreVecEnv has no per-environment method {method_name!r} "
                                 "(only 'action_masks')")
        return [self._mask[i] for i in self._rows(indices)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attributes the rows share (``action_masks``, ``render_mode``, ``action_labels``,
        ``spec``...), once per row; ``AttributeError`` for others."""
        shared = {"render_mode": None, "spec": None, "action_labels": self.action_labels,
                  "action_masks": self.action_masks}
        if attr_name not in shared:
            raise AttributeError(f"CoreVecEnv rows have no attribute {attr_name!r}")
        return [shared[attr_name] for _ in self._rows(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Rows have no settable attributes."""
        raise AttributeError(f"CoreVecEnv rows cannot set {attr_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Rows are never gymnasium-wrapped."""
        return [False for _ in self._rows(indices)]

    # ------------------------------------------------------------------ helpers
    def _rows(self, indices: VecEnvIndices) -> Sequence[int] | Iterable[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int | np.integer):
            return [int(indices)]
        return indices
