"""Gymnasium on the compiled core: ``TravellerVectorEnv``, a ``gymnasium.vector.VectorEnv`` over
``traveller_env.vector``, and ``TravellerGymEnv``, the single-learner ``gymnasium.Env`` that
``gymnasium.make`` builds for the ids registered on ``import traveller_env``::

    import gymnasium as gym
    import traveller_env  # registers traveller/<scenario>-v0

    envs = gym.make_vec("traveller/duel-v0", num_envs=16, vectorization_mode="vector_entry_point",
                        opponents={"red": "rush"})
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample(
        mask=tuple(infos["action_mask"].astype(np.int8))))

* **Rows**: each of the ``num_envs`` environments is one row of ``vector.make``: one battle at a
  time, whose learner seats (those not in ``opponents``) share the actions given; the opponents
  are played inside the core (``core.vector.CORE_POLICIES``).
* **Spaces**: ``single_observation_space`` is the deciding learner seat's observation
  ``Box(-1, 1, (obs_dim,), float32)`` (with ``dict_obs=True``: PettingZoo's ``Dict`` of
  ``"observation"`` and ``"action_mask"``); ``single_action_space`` is ``Discrete(n_actions)``,
  ``action_space`` ``MultiDiscrete``.
* **Action mask**: ``infos["action_mask"]``, bool ``[num_envs, n_actions]``, in every ``reset``
  and ``step`` (and in the observation with ``dict_obs=True``).
* **Rewards**: a row's reward is its learner side's reward gained in the step, opponents' moves
  included (the scenario's ``shared`` rewards: the side's; otherwise summed over its learner
  seats).
* **Autoreset**: ``AutoresetMode.SAME_STEP``, what the core does: the step that ends a battle
  returns its last reward and ``terminated``/``truncated`` with the first observation of the
  row's next battle. As Gymnasium asks for that mode, ``infos["final_obs"]`` (object array,
  ``infos["_final_obs"]`` marks the rows) holds the ended battle's final observation and
  ``infos["final_info"]`` its ``winner`` (side index, -1 a draw), ``battle_seed``, ``battle``,
  ``return`` and ``length``. The core does not keep final observations, so each is rebuilt by
  replaying the battle on the Python engine (``VectorEnv.final_observation``: about 17 ms for a
  30-decision duel, some 60x the core's cost of the whole battle); it is therefore opt-in:
  ``final_obs=True`` adds ``final_obs``, for algorithms that bootstrap truncated battles from
  it (CleanRL's PPO does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from traveller_env import vector
from traveller_env.env import DEFAULT_BACKEND, ScenarioSource
from traveller_env.integrations.sb3 import TravellerSB3Env
from traveller_env.policy import make_policy
from traveller_env.scenario import load_scenario
from traveller_env.scenario_set import is_set_source, set_sources

__all__ = ["DEFAULT_OPPONENTS", "TravellerGymEnv", "TravellerVectorEnv", "default_opponent"]

#: The opponent a registered id plays when ``opponents`` is left out, by scenario name prefix:
#: the range targets cannot shoot back (``passive``, as their scenarios say), the 4v4 and 6v6
#: squads face the planning NPC ``tactician``, the small fights ``rush``.
DEFAULT_OPPONENTS = {"range_": "passive", "squad": "tactician", "leadership_": "tactician",
                     "gen:squad": "tactician", "duel": "rush", "melee": "rush", "ambush": "rush"}


def default_opponent(scenario: Any) -> str:
    """The default opponent policy of ``scenario`` (``DEFAULT_OPPONENTS``; ``rush`` otherwise)."""
    name = scenario if isinstance(scenario, str) else ""
    for prefix, policy in DEFAULT_OPPONENTS.items():
        if name.startswith(prefix):
            return policy
    return "rush"


def _sides(scenario: Any, seeds: tuple[int, int] | None) -> list[str]:
    """The side names of a scenario, or of a set's first scenario."""
    first = set_sources(scenario, seeds)[0] if is_set_source(scenario) else scenario
    return [s.name for s in load_scenario(first).sides]


def resolve_opponents(scenario: Any, opponents: Mapping[str, str] | str | None,
                      learner: str | None, seeds: tuple[int, int] | None = None
                      ) -> dict[str, str]:
    """``vector.make``'s ``opponents`` mapping: a mapping is kept as given (``learner`` must
    then be left out); a policy name (default: ``default_opponent``) plays every side but the
    ``learner`` side (default: the first)."""
    if isinstance(opponents, Mapping):
        if learner is not None:
            raise ValueError("learner: give either learner (with opponents a policy name) or "
                             "an opponents mapping, not both")
        return dict(opponents)
    sides = _sides(scenario, seeds)
    learner = sides[0] if learner is None else learner
    if learner not in sides:
        raise ValueError(f"learner must be a side of the scenario ({', '.join(sides)}), got "
                         f"{learner!r}")
    name = default_opponent(scenario) if opponents is None else opponents
    if not isinstance(name, str):
        raise TypeError(f"opponents must be a policy name or a mapping of sides/agents to "
                        f"policy names, got {type(name).__name__}")
    return {side: name for side in sides if side != learner}


class TravellerVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` battles stepped together in the core, as a ``gymnasium.vector.VectorEnv``
    (see the module docstring).

    Args:
        num_envs: the number of battles (rows).
        scenario: as for ``vector.make``: a built-in name, path, dict, ``Scenario``, or a set
            (``"gen:squad"`` with ``seeds=(lo, hi)`` and ``layout="6v6"``, or a list).
        opponents: side name or agent id -> policy name, or one policy name for every side
            but ``learner``'s (default: ``default_opponent(scenario)``).
        learner: the learning side when ``opponents`` is a name or left out (default: the
            scenario's first side).
        seed: the vector's seed (``reset(seed=s)`` re-seeds).
        backend: ``"core"`` (default) or ``"python"``.
        dict_obs: observations as ``Dict(observation, action_mask)`` instead of the ``Box``.
        final_obs: rebuild each ended battle's final observation (``infos["final_obs"]``;
            costly, off by default).
        **kwargs: the rest of ``vector.make``'s arguments (``threads``, ``layout``, ``seeds``,
            ``relative_actions``) and the environment options.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 8, scenario: ScenarioSource | list = "duel",
                 opponents: Mapping[str, str] | str | None = None, learner: str | None = None,
                 seed: int = 0, backend: str = DEFAULT_BACKEND, dict_obs: bool = False,
                 final_obs: bool = False, **kwargs: Any) -> None:
        resolved = resolve_opponents(scenario, opponents, learner, kwargs.get("seeds"))
        self.venv = v = vector.make(scenario, num_envs=num_envs, seed=seed, backend=backend,
                                    opponents=resolved, **kwargs)
        self.num_envs = v.num_envs
        self.dict_obs = bool(dict_obs)
        self.final_obs = bool(final_obs)
        self.action_labels: list[str] = list(v.action_labels)
        box = spaces.Box(-1.0, 1.0, shape=(v.obs_dim,), dtype=np.float32)
        if self.dict_obs:
            self.single_observation_space = spaces.Dict({
                "observation": box,
                "action_mask": spaces.Box(0, 1, shape=(v.n_actions,), dtype=np.int8)})
        else:
            self.single_observation_space = box
        self.single_action_space = spaces.Discrete(v.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.learner_columns = v.learner_columns
        n = self.num_envs
        self._history: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self._returns = np.zeros(n, dtype=np.float64)
        self._lengths = np.zeros(n, dtype=np.int64)
        self._agent = np.zeros(n, dtype=np.int64)
        self._seed = np.zeros(n, dtype=np.uint64)
        self._battle = np.zeros(n, dtype=np.int64)
        self._mask = np.zeros((n, v.n_actions), dtype=bool)
        self._ready = False

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start every row's next battle (``seed``: re-seed the vector and start at battle 0).
        ``options`` accepts nothing but ``None`` or ``{}``: rows cannot be reset one by one."""
        if options:
            raise ValueError(f"reset(options=...): no options are taken (every row resets "
                             f"together), got {sorted(options)}")
        if isinstance(seed, list | tuple | np.ndarray):
            raise ValueError("reset(seed=...): one int seeds the whole vector (each row's "
                             "battles are drawn from it); a list of seeds is not taken")
        super().reset(seed=seed)
        obs, mask, info = self.venv.reset(seed=seed)
        for h in self._history:
            h.clear()
        self._returns.fill(0.0)
        self._lengths.fill(0)
        self._ready = True
        observation = self._observe(obs, mask, info)
        return observation, self._infos(info)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """One action per row (an int array ``[num_envs]``); returns Gymnasium's five values
        (rewards float32, terminated/truncated bool, all ``[num_envs]``; see the module
        docstring for ``infos``)."""
        if not self._ready:
            raise RuntimeError("step() called before reset(): call reset() first")
        a = np.asarray(actions)
        if a.dtype.kind in "iu":
            a = a.astype(np.int64, copy=False).reshape(-1) if a.size == self.num_envs else a
        np.copyto(self._agent, self.venv.info["agent"])
        np.copyto(self._seed, self.venv.info["battle_seed"])
        np.copyto(self._battle, self.venv.info["episode"])
        obs, mask, rewards, terminated, truncated, info = self.venv.step(a)
        reward = self.venv.learner_side_rewards(rewards)
        self._returns += reward
        self._lengths += 1
        if self.final_obs:
            for r, (act, seat) in enumerate(zip(a.tolist(), self._agent.tolist(), strict=True)):
                self._history[r].append((act, seat))
        done = terminated | truncated
        observation = self._observe(obs, mask, info)
        infos = self._infos(info)
        if done.any():
            self._add_final(infos, done, info)
        return observation, reward, terminated.copy(), truncated.copy(), infos

    def close_extras(self, **kwargs: Any) -> None:
        """Release the vector (if it was made)."""
        venv = getattr(self, "venv", None)
        if venv is not None:
            venv.close()

    # ------------------------------------------------------------------ internals
    def _observe(self, obs: np.ndarray, mask: np.ndarray, info: dict) -> Any:
        np.copyto(self._mask, mask)
        if self.dict_obs:
            return {"observation": obs.copy(), "action_mask": mask.astype(np.int8)}
        return obs.copy()

    def _infos(self, info: dict) -> dict[str, Any]:
        return {"action_mask": self._mask.copy(), "agent": info["agent"].copy(),
                "battle": info["episode"].copy(), "battle_seed": info["battle_seed"].copy()}

    def _add_final(self, infos: dict[str, Any], done: np.ndarray, info: dict) -> None:
        """Gymnasium's ``SAME_STEP`` keys for the rows whose battle ended in this step."""
        rows = np.flatnonzero(done)
        n = self.num_envs
        final_info = {"winner": np.where(done, info["winner"], -1).astype(np.int8),
                      "battle_seed": np.where(done, self._seed, 0).astype(np.uint64),
                      "battle": np.where(done, self._battle, 0),
                      "return": np.where(done, self._returns, 0.0),
                      "length": np.where(done, self._lengths, 0)}
        for key in list(final_info):
            final_info["_" + key] = done.copy()
        infos["final_info"] = final_info
        infos["_final_info"] = done.copy()
        if self.final_obs:
            final = np.full(n, None, dtype=object)
            for r in rows.tolist():
                acts, seats = zip(*self._history[r], strict=True)
                o = self.venv.final_observation(int(self._seed[r]), acts, seats)
                final[r] = ({"observation": o, "action_mask": np.zeros(len(self._mask[r]),
                                                                         dtype=np.int8)}
                            if self.dict_obs else o)
                self._history[r].clear()
            infos["final_obs"] = final
            infos["_final_obs"] = done.copy()
        self._returns[rows] = 0.0
        self._lengths[rows] = 0


class TravellerGymEnv(TravellerSB3Env):
    """The single-learner ``gymnasium.Env`` of a registered id (``gymnasium.make``): the SB3
    bridge with the learner side's seats against ``opponents`` (policy names, as
    ``TravellerVectorEnv``), ``infos["action_mask"]`` in every ``reset``/``step`` and, with
    ``dict_obs=True``, the ``Dict(observation, action_mask)`` observation."""

    def __init__(self, scenario: ScenarioSource = "duel",
                 opponents: Mapping[str, str] | str | None = None, learner: str | None = None,
                 dict_obs: bool = False, **kwargs: Any) -> None:
        resolved = resolve_opponents(scenario, opponents, learner)
        sides = _sides(scenario, None)
        super().__init__(scenario, learner=_learner_of(sides, resolved), policies=None,
                         **kwargs)
        seats = {}
        for agent in self.aec.possible_agents:
            if agent in self._learner_set:
                continue
            side = self.aec.scenario.sides[self.aec.side_of(agent)].name
            name = resolved.get(agent, resolved.get(side))
            if name is None:
                raise ValueError(f"opponents: no policy for {agent} (not a learner seat); "
                                 f"give its side ({side}) or its id")
            seats[agent] = make_policy(name)
        self.policies = seats
        self.dict_obs = bool(dict_obs)
        if self.dict_obs:
            self.observation_space = spaces.Dict({
                "observation": self.observation_space,
                "action_mask": spaces.Box(0, 1, shape=(self.action_space.n,), dtype=np.int8)})

    def _obs(self, fallback: str | None = None) -> Any:
        obs = super()._obs(fallback)
        if self.dict_obs:
            return {"observation": obs, "action_mask": self.action_masks().astype(np.int8)}
        return obs

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["action_mask"] = self.action_masks()
        return info


def _learner_of(sides: list[str], opponents: Mapping[str, str]) -> str:
    """The SB3 bridge's ``learner``: the one side ``opponents`` leaves out."""
    free = [s for s in sides if s not in opponents]
    if len(free) != 1:
        raise ValueError(f"opponents must cover every side but one for the single env "
                         f"(sides: {', '.join(sides)}; opponents: {dict(opponents)})")
    return free[0]
