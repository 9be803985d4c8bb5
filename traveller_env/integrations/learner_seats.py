"""The AEC environment seen from its learner seats: for clients that drive every selected agent
with an action from its mask and read every possible agent's entries (TorchRL's
``PettingZooWrapper``, BenchMARL).

``learner_seats_env`` builds the environment with ``terminate_on_knockout=True``
(PettingZoo's per-agent termination: a knocked-out agent terminates at once, is selected for
a *dead step*, ``step(None)`` with an all-zero mask, and is then removed from ``agents``,
``rewards``, ``terminations``, ``truncations`` and ``infos``), so that a learner seat's part
ends when it is knocked out. TorchRL's wrapper takes neither the dead step nor the removal: it
samples an action for the selected agent from its mask and reads ``rewards[agent]`` for every
possible agent after each step. ``LearnerSeatsEnv`` is a PettingZoo ``AECEnv`` over the
environment that

* takes the dead steps itself, so the selected agent always has a legal action;
* keeps every possible agent in ``rewards``, ``terminations``, ``truncations`` and ``infos``
  until ``reset`` (a removed agent keeps its final flags and gains 0);
* optionally plays some seats itself (``opponents={"red": "rush"}``: a side name or agent id
  to a policy name of ``traveller_env.policy.make_policy``), so that only the learner seats
  are agents of the wrapper; their rewards add up everything that happened since the previous
  wrapper step (opponent moves included);
* keeps ``infos[agent]`` an empty dict (the events stay in ``unwrapped.new_events(agent)`` and
  ``unwrapped.battle.events``).

A battle that ends before any learner seat decides (possible only with opponents) is skipped:
``reset`` starts the next one (seed + 1 when seeded). When the battle ends every learner is
terminated or truncated and ``agents`` is empty: call ``reset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from traveller_env.env import ScenarioSource, TravellerEnv, raw_env
from traveller_env.policy import Policy, make_policy, policy_action

__all__ = ["MAX_SKIPPED_BATTLES", "LearnerSeatsEnv", "learner_seats_env"]

#: How many battles in a row ``reset`` may skip because they ended before a learner decided.
MAX_SKIPPED_BATTLES = 1000


class LearnerSeatsEnv(AECEnv):
    """The learner seats of ``env`` as a PettingZoo ``AECEnv`` (see the module docstring).

    Args:
        env: a ``TravellerEnv`` (``raw_env``), wrapped or not.
        opponents: side name or agent id -> policy name; those seats are played inside
            ``step`` (an agent id wins over its side). ``None``: every seat is a learner.
        seed: seeds the opponents' policies (each is re-seeded at every ``reset`` from the
            battle seed when ``reset`` is given one).
    """

    def __init__(self, env: AECEnv, opponents: Mapping[str, str] | None = None,
                 seed: int | None = None) -> None:
        super().__init__()
        self.env = env
        base: TravellerEnv = env.unwrapped
        self._base = base
        sides = [s.name for s in base.scenario.sides]
        by_side = {k: v for k, v in (opponents or {}).items() if k in sides}
        by_agent = {k: v for k, v in (opponents or {}).items() if k in base.possible_agents}
        unknown = set(opponents or {}) - set(by_side) - set(by_agent)
        if unknown:
            raise ValueError(f"opponents: {sorted(unknown)} are neither sides ({', '.join(sides)})"
                             f" nor agents ({', '.join(base.possible_agents)})")
        self._policies: dict[str, Policy] = {}
        for a in base.possible_agents:
            name = by_agent.get(a, by_side.get(sides[base.side_of(a)]))
            if name is not None:
                self._policies[a] = make_policy(name, seed=seed)
        self.possible_agents = [a for a in base.possible_agents if a not in self._policies]
        if not self.possible_agents:
            raise ValueError("opponents cover every seat: leave at least one learner seat")
        self.metadata = dict(base.metadata, is_parallelizable=False)
        self.render_mode = base.render_mode
        self.observation_spaces = {a: base.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: base.action_space(a) for a in self.possible_agents}
        self.state_space: spaces.Box = base.state_space
        self.agents: list[str] = []
        self._seeds: np.random.Generator | None = None  # the battle seeds after a seeded reset

    @property
    def unwrapped(self) -> TravellerEnv:
        """The ``TravellerEnv`` underneath (its events, labels, view and ``new_events``)."""
        return self._base

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of a learner seat (the environment's)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of a learner seat (the environment's)."""
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a battle and play up to the first learner decision (skipping battles that
        end before one; seed + 1 each time when seeded). Once seeded, a later ``reset()``
        without a seed draws the next battle's seed from a generator of that seed, so a run
        that seeds its first reset only (TorchRL's wrapper) is reproducible."""
        if seed is not None:
            self._seeds = np.random.default_rng(int(seed))
        elif self._seeds is not None:
            seed = int(self._seeds.integers(2**62))
        for skipped in range(MAX_SKIPPED_BATTLES):
            battle_seed = None if seed is None else int(seed) + skipped
            self.env.reset(seed=battle_seed, options=options)
            for k, policy in enumerate(self._policies.values()):
                policy.reset(None if battle_seed is None else (battle_seed * 131 + k) % 2**63)
            self.rewards = dict.fromkeys(self.possible_agents, 0.0)
            self._cumulative_rewards = dict.fromkeys(self.possible_agents, 0.0)
            self.terminations = dict.fromkeys(self.possible_agents, False)
            self.truncations = dict.fromkeys(self.possible_agents, False)
            self.infos = {a: {} for a in self.possible_agents}
            gained = dict.fromkeys(self.possible_agents, 0.0)
            self._advance(gained)
            if self.agents:
                self._publish(gained)
                return
        raise RuntimeError(f"{MAX_SKIPPED_BATTLES} battles in a row ended before any learner "
                           "seat decided")

    def step(self, action: int | np.integer) -> None:
        """Take ``action`` for the selected learner seat, then play the opponents and dead
        steps up to the next learner decision or the end of the battle."""
        if not self.agents:
            raise RuntimeError("step() called after the battle ended (or before reset): "
                               "call reset()")
        agent = self.agent_selection
        gained = dict.fromkeys(self.possible_agents, 0.0)
        self.env.step(int(action))
        self._collect(gained)
        self._cumulative_rewards[agent] = 0.0
        self._advance(gained)
        self._publish(gained)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The environment's observation of ``agent`` (an all-zero mask unless selected)."""
        return self._base.observe(agent)

    def state(self) -> np.ndarray:
        """The global state vector."""
        return self._base.state()

    def render(self) -> Any:
        """The environment's rendering."""
        return self._base.render()

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    # ------------------------------------------------------------------ helpers
    def _collect(self, gained: dict[str, float]) -> None:
        """Add the last inner step's rewards and done flags of the learner seats."""
        env = self.env
        rewards, terms, truncs = env.rewards, env.terminations, env.truncations
        for a in self.possible_agents:
            if a in rewards:
                gained[a] += rewards[a]
                self.terminations[a] = self.terminations[a] or terms[a]
                self.truncations[a] = self.truncations[a] or truncs[a]

    def _advance(self, gained: dict[str, float]) -> None:
        """Play dead steps and opponent seats until a live learner decides or the battle
        ends; then ``agents`` and ``agent_selection`` follow."""
        env, base = self.env, self._base
        while env.agents:
            sel = env.agent_selection
            if env.terminations[sel] or env.truncations[sel]:
                env.step(None)
            elif sel in self._policies:
                env.step(policy_action(self._policies[sel], base, sel))
            else:
                break
            self._collect(gained)
        live = set(env.agents)
        self.agents = [a for a in self.possible_agents if a in live]
        if self.agents:
            self.agent_selection = env.agent_selection

    def _publish(self, gained: dict[str, float]) -> None:
        self.rewards = gained
        for a, r in gained.items():
            self._cumulative_rewards[a] += r


def learner_seats_env(scenario: ScenarioSource = "duel",
                      opponents: Mapping[str, str] | None = None, seed: int | None = None,
                      **options: Any) -> LearnerSeatsEnv:
    """``LearnerSeatsEnv`` over ``raw_env(scenario, infos="none", terminate_on_knockout=True,
    **options)`` (``backend`` and the other environment options pass through)."""
    options.setdefault("infos", "none")
    options.setdefault("terminate_on_knockout", True)
    return LearnerSeatsEnv(raw_env(scenario, **options), opponents=opponents, seed=seed)
