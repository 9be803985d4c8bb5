"""SB3 bridge: a ``gymnasium.Env`` in which SB3 drives some seats of the AEC environment.

``learner`` chooses the seats the learning policy plays:

* an agent id (``"blue_0"``): one combatant; every other follows ``policies``;
* a side name (``"blue"``): every combatant of that side shares the learning policy;
* ``"all"``: shared-policy self-play, one policy in every seat.

Between two learner decisions the bridge plays the other seats with their policies and takes
the dead steps PettingZoo requires. The reward returned by ``step`` is the *learner's own*
reward accumulated over everything that happened since its action (not the next agent's:
a known bug of PettingZoo's SB3 tutorial wrapper). ``action_masks()`` serves sb3-contrib's
``MaskablePPO``.

The AEC environment underneath is built with ``terminate_on_knockout=True`` (the bridge needs
the moment a learner is knocked out: ``play_out``) and, unless ``illegal_action`` is given
(or set by the scenario), ``illegal_action="terminate"``: an illegal learner action costs -1
and ends the episode with a warning (PettingZoo's and Gymnasium's convention, so that
``gymnasium.utils.env_checker.check_env`` and SB3's ``check_env``, which step unmasked random
actions, pass); ``illegal_action="raise"`` raises instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from traveller_env.env import (
    DEFAULT_BACKEND,
    ScenarioSource,
    TravellerEnv,
    classic_illegal_action,
    raw_env,
)
from traveller_env.integrations.discrete import discrete_action
from traveller_env.policy import RandomPolicy, policy_action
from traveller_env.rules.kinds import KINDS

__all__ = ["TravellerSB3Env", "make_sb3_env"]


class TravellerSB3Env(gym.Env):
    """A single-learner ``gymnasium.Env`` over ``TravellerEnv`` (see the module docstring).

    Args:
        scenario: built-in name, path or dict.
        learner: an agent id, a side name, or ``"all"`` for shared-policy self-play.
        policies: the policies of the other seats: one ``Policy`` for all of them, or a
            mapping from agent id to ``Policy``; seats left out play uniformly at random.
        assist, focus: the learner decides only the action kinds in ``focus`` (e.g.
            ``("leadership", "direct")``); its other decisions are made by the ``assist``
            policy. The action space gains one action, ``delegate_action`` (= N), which hands
            the current decision to ``assist``; the mask offers the legal focus actions and
            it. Use ``traveller_agents.trained.load_policy`` with the same assist to play the model.
        relative_actions: name targets by observation slot (``attack:enemy0``) instead of
            by agent id, so that one policy can play any seat (``encoding.RelativeActions``;
            ``action_labels`` lists the bridge's labels). Needed for self-play and for a
            policy that must play both sides.
        play_out: when a single learning agent is incapacitated before the end, play the
            battle out and add its side's outcome reward (win/loss/draw) to the last step,
            so that being knocked out is never better than losing.
        backend: the engine, ``"python"`` or ``"core"`` (as for ``raw_env``).
        **options: environment options (``hastening``, ``reactions``, ``illegal_action``
            (default ``"terminate"``, see the module docstring)...).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, scenario: ScenarioSource = "duel", learner: str = "blue",
                 policies: Any = None, play_out: bool = True,
                 render_mode: str | None = None, assist: Any = None,
                 focus: Iterable[str] | None = None, relative_actions: bool = False,
                 backend: str = DEFAULT_BACKEND, **options: Any) -> None:
        super().__init__()
        options.setdefault("terminate_on_knockout", True)
        scenario = classic_illegal_action(scenario, options)
        self.aec: TravellerEnv = raw_env(scenario, render_mode=render_mode, backend=backend,
                                         **options)
        self.render_mode = render_mode
        agents = self.aec.possible_agents
        sides = self.aec.scenario.sides
        if learner == "all":
            self.learners = list(agents)
            self.mode = "all"
        elif learner in agents:
            self.learners, self.mode = [learner], "agent"
        elif learner in [s.name for s in sides]:
            self.learners = [a for a in agents if a.rsplit("_", 1)[0] == learner]
            self.mode = "side"
        else:
            raise ValueError(f"learner {learner!r} is neither an agent ({', '.join(agents)}), "
                             f"a side ({', '.join(s.name for s in sides)}) nor 'all'")
        self._policy_action = policy_action
        self.learner = learner
        self._learner_set = frozenset(self.learners)
        self.policies = self._resolve_policies(policies)
        self.play_out = play_out
        self.observation_space = self.aec.observation_space(agents[0])["observation"]
        self.action_space = self.aec.action_space(agents[0])
        self.current_agent: str | None = None
        self.relative = self.aec.relative_actions if relative_actions else None
        labels = self.aec.action_labels
        if self.relative is not None:
            labels = self.relative.labels
            self.action_space = spaces.Discrete(self.relative.n)
        self.action_labels = list(labels)
        self.assist = assist
        self.focus = tuple(focus or ())
        self.delegate_action: int | None = None
        if assist is not None or self.focus:
            if assist is None or not self.focus:
                raise ValueError("assist and focus go together: a Policy for the learner's "
                                 "other decisions, and the action kinds the learner decides")
            kinds = set(KINDS)
            unknown = sorted(set(self.focus) - kinds)
            if unknown:
                raise ValueError(f"focus: unknown action kinds {unknown}; kinds: "
                                 f"{', '.join(sorted(kinds))}")
            n = self.action_space.n
            self._focus_mask = np.array([lbl.split(":")[0] in self.focus for lbl in labels])
            self._abs_focus_mask = np.array(
                [lbl.split(":")[0] in self.focus for lbl in self.aec.action_labels])
            self.delegate_action = n
            self.action_space = spaces.Discrete(n + 1)
            self.action_labels.append("delegate")

    def _resolve_policies(self, policies: Any) -> dict[str, Any]:
        others = [a for a in self.aec.possible_agents if a not in self._learner_set]
        if policies is None:
            shared = RandomPolicy()
            return dict.fromkeys(others, shared)
        if isinstance(policies, Mapping):
            unknown = sorted(set(policies) - set(others))
            if unknown:
                raise ValueError(f"policies given for {unknown}, which are not non-learner "
                                 f"agents ({', '.join(others) or 'none'})")
            fallback = RandomPolicy()
            return {a: policies.get(a, fallback) for a in others}
        if not callable(getattr(policies, "act", None)):
            raise TypeError("policies must be a Policy (with act/reset) or a mapping of them")
        return dict.fromkeys(others, policies)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start a battle; the battle seed comes from the bridge's own seeded generator."""
        super().reset(seed=seed)
        for _ in range(100):
            battle_seed = int(self.np_random.integers(2**62))
            seats = [*self.policies.values(), *([self.assist] if self.assist else [])]
            for i, p in enumerate({id(p): p for p in seats}.values()):
                p.reset(battle_seed + 1 + i)
            self.aec.reset(seed=battle_seed)
            self._advance()
            if self.current_agent is not None:
                return self._obs(), self._info()
        raise RuntimeError("the learner never got a decision in 100 battles: check the "
                           "scenario (is the learner's side wiped out before it can act?)")

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply the learner's action, play the other seats, return the learner's reward."""
        if self.current_agent is None:
            raise RuntimeError("step() called after the episode ended (or before reset()): "
                               "call reset()")
        acting = self.current_agent
        action = self._check_action(action)
        if self.delegate_action is not None and action == self.delegate_action:
            action = self._assist_action(acting)
        elif self.relative is not None:
            action = self.relative.to_absolute(acting, action)
        first_event = len(self.aec.battle.events)
        self.aec.step(action)
        reward = self._reward_now(acting)
        if self.mode == "side" and acting not in self._rewarded(acting):
            # The shared reward is read off one seat, but a forfeit's -1 is the actor's alone.
            events = self.aec.battle.events
            reward -= sum(1.0 for e in events[first_event:] if e["type"] == "illegal_action")
        more, ended = self._advance(acting)
        reward += more
        b = self.aec.battle
        terminated = ended and not b.truncated
        truncated = ended and b.truncated
        return self._obs(acting), float(reward), terminated, truncated, self._info()

    def _check_action(self, action: Any) -> int:
        """The action as an int in ``action_space``, or a ``ValueError`` naming the space."""
        n = self.action_space.n
        value = discrete_action(action, n)
        if value is None:
            extra = (f"; {self.delegate_action} hands the decision to the assist policy"
                     if self.delegate_action is not None else "")
            raise ValueError(f"{self.current_agent}: action {action!r} is outside the bridge's "
                             f"action space Discrete({n}): expected one int in [0, {n})"
                             f"{extra}")
        return value

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the current learner decision (for ``MaskablePPO``)."""
        if self.current_agent is None:
            return np.zeros(self.action_space.n, dtype=bool)
        mask = self.aec.action_mask(self.current_agent).astype(bool)
        if self.relative is not None:
            mask = self.relative.mask(self.current_agent, mask)
        if self.delegate_action is None:
            return mask
        return np.append(mask & self._focus_mask, True)

    def _assist_action(self, agent: str) -> int:
        return self._policy_action(self.assist, self.aec, agent)

    def _learner_decides(self, agent: str) -> bool:
        """With ``focus``, the learner decides only when a focus action is legal."""
        if self.delegate_action is None:
            return True
        return bool((self.aec.action_mask(agent).astype(bool) & self._abs_focus_mask).any())

    def render(self) -> str | np.ndarray | None:
        """Delegates to the AEC environment's ``render``."""
        return self.aec.render()

    # ------------------------------------------------------------------ internals
    def _rewarded(self, acting: str) -> list[str]:
        """The seats whose rewards ``_reward_now`` reads (side mode)."""
        rewards = self.aec.rewards
        present = [a for a in self.learners if a in rewards]
        if present and self.aec.scenario.rewards.shared:
            return present[:1]
        return present

    def _reward_now(self, acting: str) -> float:
        rewards = self.aec.rewards
        if self.mode == "side":
            return sum(rewards[a] for a in self._rewarded(acting))
        return rewards.get(acting if self.mode == "all" else self.learners[0], 0.0)

    def _advance(self, acting: str | None = None) -> tuple[float, bool]:
        """Play non-learner seats and dead steps until a learner decides or the battle ends.
        Returns the learner's reward gathered meanwhile and whether its episode ended."""
        aec = self.aec
        reward = 0.0
        self.current_agent = None
        learner_gone = False
        while aec.agents:
            agent = aec.agent_selection
            if aec.terminations[agent] or aec.truncations[agent]:
                if self.mode == "agent" and agent == self.learners[0] and not aec.battle.done:
                    learner_gone = True  # knocked out while the battle goes on
                aec.step(None)
                continue
            if agent in self._learner_set:
                if self._learner_decides(agent):
                    self.current_agent = agent
                    return reward, False
                self.aec.step(self._assist_action(agent))
                if acting is not None:
                    reward += self._reward_now(acting)
                continue
            if learner_gone and not self.play_out:
                return reward, True
            aec.step(self._policy_action(self.policies[agent], aec, agent))
            if acting is not None:
                reward += self._reward_now(acting)
        # The battle is over.
        if self.mode == "agent" and learner_gone:
            reward += aec.outcome_reward(aec.battle.by_id[self.learners[0]].side)
        return reward, True

    def _obs(self, fallback: str | None = None) -> np.ndarray:
        agent = self.current_agent or fallback or self.learners[0]
        return self.aec.observation_vector(agent)

    def _info(self) -> dict[str, Any]:
        b = self.aec.battle
        return {"agent": self.current_agent, "round": b.round, "winner": b.winner,
                "done": b.done}


def make_sb3_env(scenario: ScenarioSource = "duel", learner: str = "blue", policies: Any = None,
                 **kwargs: Any) -> Callable[[], TravellerSB3Env]:
    """A no-argument factory for SB3's ``make_vec_env`` / ``SubprocVecEnv``."""

    def _make() -> TravellerSB3Env:
        return TravellerSB3Env(scenario, learner=learner, policies=policies, **kwargs)

    return _make
