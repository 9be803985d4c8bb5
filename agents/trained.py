"""Trained policies: a sb3-contrib ``MaskablePPO`` checkpoint as a ``Policy``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.env import ScenarioSource, TravellerEnv

__all__ = ["TrainedPolicy", "load_policy"]


class TrainedPolicy:
    """A ``MaskablePPO`` model playing through the ``Policy`` protocol.

    ``act`` feeds the agent's observation vector and action mask to the model. Deterministic
    by default (the most probable legal action); with ``deterministic=False`` it samples from
    the masked action distribution with the policy's own generator (seeded by ``reset``), so
    runs stay reproducible. Build one with ``load_policy``.
    """

    def __init__(self, model: Any, name: str, deterministic: bool = True,
                 seed: int | None = None) -> None:
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the sampling generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The model's action for this observation, restricted to the legal ones."""
        mask = np.asarray(action_mask).astype(bool)
        if self.deterministic:
            action, _ = self.model.predict(observation, action_masks=mask, deterministic=True)
            action = int(np.asarray(action).reshape(-1)[0])
            if mask[action]:
                return action
        probs = self.probabilities(observation, mask)
        if self.deterministic:
            return int(np.argmax(probs))
        return int(self.rng.choice(len(probs), p=probs))

    def probabilities(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's masked action probabilities (they sum to 1 over the legal actions)."""
        import torch

        policy = self.model.policy
        obs, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            dist = policy.get_distribution(obs, action_masks=mask[None, :])
            probs = dist.distribution.probs.cpu().numpy()[0].astype(np.float64)
        probs = np.where(mask, probs, 0.0)
        total = probs.sum()
        if total <= 0:
            return mask / mask.sum()
        return probs / total


def load_policy(path: str | Path, scenario: ScenarioSource, deterministic: bool = True,
                seed: int | None = None, name: str | None = None) -> TrainedPolicy:
    """Load a ``MaskablePPO`` ``.zip`` for ``scenario`` (built-in name, path or dict).

    Raises ``FileNotFoundError`` when the file is missing and ``ValueError`` naming the file
    and the mismatch when the model's action or observation space does not fit the
    scenario's (``Discrete(N)`` actions, ``Box((D,))`` observation vectors).
    """
    from sb3_contrib import MaskablePPO

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such trained-policy file")
    env = TravellerEnv(scenario)
    agent = env.possible_agents[0]
    want_act = env.action_space(agent)
    want_obs = env.observation_space(agent)["observation"]
    try:
        model = MaskablePPO.load(str(path), device="cpu")
    except Exception as exc:  # a zip that is not a MaskablePPO checkpoint
        raise ValueError(f"{path}: cannot be loaded as a MaskablePPO model: {exc}") from exc
    label = env.scenario.name
    got_act = model.action_space
    if getattr(got_act, "n", None) != want_act.n:
        raise ValueError(f"{path}: action space {got_act} does not fit scenario {label!r}, "
                         f"which has Discrete({want_act.n}) actions")
    got_obs = model.observation_space
    if getattr(got_obs, "shape", None) != want_obs.shape:
        raise ValueError(f"{path}: observation space {got_obs} does not fit scenario "
                         f"{label!r}, whose observation vectors have shape {want_obs.shape}")
    return TrainedPolicy(model, name or path.stem, deterministic=deterministic, seed=seed)
