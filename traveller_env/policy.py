"""The policy interface shared by scripted, random and trained policies (``traveller_env.policy``;
``agents.base`` re-exports it).

A policy picks one action index for the selected agent of a ``TravellerEnv``::

    class MyPolicy:
        name = "mine"
        def reset(self, seed: int | None = None) -> None: ...
        def act(self, observation, action_mask, agent, env) -> int: ...

``observation`` is the agent's float32 vector, ``action_mask`` its int8 mask (the chosen
index must be legal), ``agent`` its id and ``env`` the (unwrapped) environment, whose public
API (labels, ``observation_slots``, and the read-only battle view) a scripted policy may read
but never mutate. Each policy draws randomness only from its own generator, seeded by
``reset(seed)``.

A policy that never reads ``observation`` (it decides from the mask and the view) may say so
with a class attribute ``needs_observation = False``; callers that honour it
(``policy_action``, the SB3 bridge, the evaluation and tournament loops) then pass ``None``
instead of building the vector, which is a large share of an environment step.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["PassivePolicy", "Policy", "RandomPolicy", "legal_indices", "policy_action"]


@runtime_checkable
class Policy(Protocol):
    """What every policy implements (see the module docstring)."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new battle; re-seed the policy's own generator."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """Return a legal action index for ``agent``."""


def policy_action(policy: Policy, env: Any, agent: str) -> int:
    """``policy``'s action for ``agent``, the selected agent of ``env`` (a ``TravellerEnv``):
    the observation is built only for a policy that reads it (``needs_observation``)."""
    if getattr(policy, "needs_observation", True):
        obs = env.observe(agent)
        return int(policy.act(obs["observation"], obs["action_mask"], agent, env))
    return int(policy.act(None, env.action_mask(agent), agent, env))


def legal_indices(action_mask: np.ndarray) -> np.ndarray:
    """Indices where the mask is 1; ``ValueError`` if none (never for a selected agent)."""
    legal = np.flatnonzero(action_mask)
    if legal.size == 0:
        raise ValueError("the action mask allows no action: is this agent the selected one?")
    return legal


class RandomPolicy:
    """``random``: uniform over the legal actions (the floor every behaviour must beat)."""

    name = "random"
    needs_observation = False

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """A uniformly random legal action."""
        legal = legal_indices(action_mask)
        # The same draw as ``rng.choice(legal)`` (the same stream), without its overhead.
        return int(legal[self.rng.integers(len(legal))])


class PassivePolicy:
    """``passive``: never acts (``haste:no``, ``react:none``, ``end_turn``); the target of the
    ``range_*`` scenarios."""

    name = "passive"
    needs_observation = False

    def __init__(self, seed: int | None = None) -> None:
        pass

    def reset(self, seed: int | None = None) -> None:
        """Nothing random to reseed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The first legal of end_turn, haste:no, react:none (else any legal action)."""
        env = getattr(env, "unwrapped", env)
        for label in ("end_turn", "haste:no", "react:none"):
            i = env.action_index(label)
            if action_mask[i]:
                return i
        return int(legal_indices(action_mask)[0])
