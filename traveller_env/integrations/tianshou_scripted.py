"""A scripted NPC as a Tianshou 2.x algorithm, to seat it in ``MultiAgentOffPolicyAlgorithm``
next to a learner (``tianshou.algorithm.multiagent``)::

    from tianshou.algorithm import MultiAgentOffPolicyAlgorithm
    from tianshou.env import PettingZooEnv
    from traveller_env import env as make_env
    from traveller_env.integrations.tianshou_scripted import ScriptedAlgorithm

    game = make_env("duel")
    ts_env = PettingZooEnv(game)
    marl = MultiAgentOffPolicyAlgorithm(
        algorithms=[learner_dqn, ScriptedAlgorithm(game, "rush", ts_env.action_space)],
        env=ts_env)                                    # blue_0 learns, red_0 plays rush

A scripted policy reads the battle (its view), not only the observation, so
``ScriptedAlgorithm`` acts on the one environment it is given: collect with one environment
(``DummyVectorEnv([lambda: ts_env])``). It never learns.

Tianshou's AEC dispatch credits each reward to the transition of the agent that moved, so a
learner beside a scripted seat never sees the loss dealt on the opponent's move. To *learn*
against a scripted side use ``masked_learner_env`` instead: one gymnasium environment per
battle whose learner seat is Tianshou's only agent (the SB3 bridge ``TravellerSB3Env`` plays
the other seats and credits the learner with everything since its action), with the action
mask in the observation (``obs.mask``, which Tianshou's DQN reads)::

    venv = DummyVectorEnv([lambda: masked_learner_env("duel", opponent="rush", seed=s)
                           for s in range(4)])
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Batch

from traveller_env.env import DEFAULT_BACKEND, ScenarioSource
from traveller_env.integrations.sb3 import TravellerSB3Env
from traveller_env.policy import Policy, make_policy, policy_action

__all__ = ["MaskedObservation", "ScriptedAlgorithm", "masked_learner_env"]


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
            self._scripted.reset(base.battle_seed)
        rows = len(batch.obs.mask)
        if rows != 1:
            raise ValueError(f"ScriptedAlgorithm plays one environment; got {rows} rows (collect "
                             "with one environment)")
        action = policy_action(self._scripted, base, base.agent_selection)
        return Batch(act=np.array([action]))


class MaskedObservation(gym.Wrapper):
    """A masked single-learner env (``action_masks()``, e.g. ``TravellerSB3Env``) whose
    observation is ``{"obs": observation, "mask": action mask}``: Tianshou turns it into
    ``batch.obs.obs`` and ``batch.obs.mask``, and its DQN only picks legal actions. ``info``
    is empty (Tianshou stacks every info into its buffer; the bridge's holds ``None``s)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        n = env.action_space.n
        self.observation_space = gym.spaces.Dict({
            "obs": env.observation_space,
            "mask": gym.spaces.Box(0, 1, shape=(n,), dtype=np.int8)})

    def _with_mask(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        return {"obs": obs, "mask": self.env.action_masks().astype(np.int8)}

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict]:
        """Reset the env; the observation gains the mask."""
        obs, _ = self.env.reset(**kwargs)
        return self._with_mask(obs), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """Step the env; the observation gains the mask."""
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return self._with_mask(obs), reward, terminated, truncated, {}


def masked_learner_env(scenario: ScenarioSource = "duel", learner: str = "blue",
                       opponent: str = "rush", seed: int | None = None,
                       backend: str = DEFAULT_BACKEND, **options: Any) -> MaskedObservation:
    """``TravellerSB3Env`` (``learner``: an agent id or a side; ``opponent`` plays every other
    seat, seeded with ``seed``) with the action mask in the observation, for Tianshou."""
    env = TravellerSB3Env(scenario, learner=learner, policies=make_policy(opponent, seed=seed),
                          backend=backend, **options)
    env.reset(seed=seed)  # seeds the bridge's generator: later unseeded resets follow it
    return MaskedObservation(env)
