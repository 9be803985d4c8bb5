"""A scripted NPC as a Tianshou 2.x algorithm, to seat it in ``MultiAgentOffPolicyAlgorithm``
next to a learner (``tianshou.algorithm.multiagent``)::

    from tianshou.algorithm import MultiAgentOffPolicyAlgorithm
    from tianshou.env import PettingZooEnv
    from traveller_env import env as make_env
    from traveller_env.tianshou_scripted import ScriptedAlgorithm

    game = make_env("duel")
    ts_env = PettingZooEnv(game)
    marl = MultiAgentOffPolicyAlgorithm(
        algorithms=[learner_dqn, ScriptedAlgorithm(game, "rush", ts_env.action_space)],
        env=ts_env)                                    # blue_0 learns, red_0 plays rush

A scripted policy reads the battle (its view), not only the observation, so
``ScriptedAlgorithm`` acts on the one environment it is given: collect with one environment
(``DummyVectorEnv([lambda: ts_env])``). It never learns.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Batch

from .policy import Policy, make_policy, policy_action

__all__ = ["ScriptedAlgorithm"]


class ScriptedAlgorithm(MARLRandomDiscreteMaskedOffPolicyAlgorithm):
    """The policy ``policy`` (a name for ``traveller_env.policy.make_policy``, or a
    ``Policy``) playing the selected agent of ``env`` as a Tianshou off-policy algorithm that
    never learns (as Tianshou's own random MARL agent, whose training is a no-op)."""

    def __init__(self, env: Any, policy: str | Policy, action_space: gym.spaces.Space,
                 seed: int | None = None) -> None:
        super().__init__(action_space)
        scripted = make_policy(policy, seed=seed) if isinstance(policy, str) else policy
        self.policy.forward = _ScriptedForward(env, scripted)  # type: ignore[method-assign]


class _ScriptedForward:
    """``forward`` of the wrapped Tianshou policy: one action per batch row, each the scripted
    policy's action for the agent selected in ``env`` now (one environment, one row)."""

    def __init__(self, env: Any, scripted: Policy) -> None:
        self._env = env
        self._scripted = scripted
        self._battle: Any = None

    def __call__(self, batch: Any, state: Any = None, **kwargs: Any) -> Batch:
        base = self._env.unwrapped
        if base.battle is not self._battle:  # a new battle: re-seed from its seed
            self._battle = base.battle
            self._scripted.reset(base.seed)
        rows = len(batch.obs.mask)
        if rows != 1:
            raise ValueError(f"ScriptedAlgorithm plays one environment; got {rows} rows (collect "
                             "with one environment)")
        action = policy_action(self._scripted, base, base.agent_selection)
        return Batch(act=np.array([action]))
