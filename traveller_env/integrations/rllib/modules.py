"""RLModules (RLlib's new API stack) for ``TravellerMultiAgentEnv``.

* ``MaskedPPOTorchRLModule``: RLlib's default PPO torch module over the ``"observations"``
  vector, with the ``"action_mask"`` applied to the action logits (masked actions get a logit
  of about -3.4e38, so they are never sampled and their probability is 0 in the loss).
  Adapted from RLlib's example ``ActionMaskingTorchRLModule``, without changing the batch it
  is given.
* ``ScriptedRLModule``: a module that is never trained, for the seats the environment plays
  with a scripted NPC (its config's ``npcs``): the environment offers exactly the action the
  NPC chose, and this module takes it. List it in the ``MultiRLModuleSpec`` and leave it out
  of ``policies_to_train``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

try:
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.utils.torch_utils import FLOAT_MIN
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("traveller_env.integrations.rllib.modules needs Ray RLlib and torch: "
                      "install the project's 'rllib' extra (pip install -e '.[rllib]')") from exc

__all__ = ["MaskedPPOTorchRLModule", "ScriptedRLModule", "split_observation"]

OBS, MASK = "observations", "action_mask"


def split_observation(batch: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """``(batch with OBS = the observation vectors, action mask)`` from a batch whose OBS is
    the environment's ``{"observations", "action_mask"}`` dict (a shallow copy: the input
    batch is left as it is)."""
    obs = batch[Columns.OBS]
    if not isinstance(obs, dict) or OBS not in obs or MASK not in obs:
        keys = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
        raise ValueError(f"expected observations {{{OBS!r}, {MASK!r}}} (TravellerMultiAgentEnv"
                         f"'s), got {keys}")
    out = dict(batch)
    out[Columns.OBS] = obs[OBS]
    return out, obs[MASK]


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default torch module (encoder, pi and value heads from ``model_config``) whose
    action logits are masked by the observation's ``action_mask``.

    Build it with ``RLModuleSpec(module_class=MaskedPPOTorchRLModule, observation_space=<the
    env's Dict space>, action_space=..., model_config={...})``: the networks are built for
    the ``"observations"`` part of the space.
    """

    def __init__(self, *args: Any, observation_space: gym.Space | None = None,
                 **kwargs: Any) -> None:
        if not (isinstance(observation_space, gym.spaces.Dict)
                and {OBS, MASK} <= set(observation_space.spaces)):
            raise ValueError("MaskedPPOTorchRLModule needs the Dict observation space "
                             f"{{{OBS!r}: Box, {MASK!r}: Box}} of TravellerMultiAgentEnv, "
                             f"got {observation_space}")
        self.observation_space_with_mask = observation_space
        super().__init__(*args, observation_space=observation_space[OBS], **kwargs)

    def setup(self) -> None:
        """Build the networks for the observation vector, then expose the full Dict space."""
        super().setup()
        self.observation_space = self.observation_space_with_mask

    @staticmethod
    def _masked(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        mask = torch.as_tensor(mask, device=logits.device)
        out[Columns.ACTION_DIST_INPUTS] = logits + torch.where(
            mask > 0, torch.zeros((), device=logits.device),
            torch.full((), FLOAT_MIN, device=logits.device))
        return out

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Inference and exploration: masked logits."""
        inner, mask = split_observation(batch)
        return self._masked(super()._forward(inner, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Training: masked logits (and the embeddings for the value head)."""
        inner, mask = split_observation(batch)
        return self._masked(super()._forward_train(inner, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        """Values of the observation vectors (the mask plays no part)."""
        if embeddings is None:
            batch, _ = split_observation(batch)
        return super().compute_values(batch, embeddings)


class ScriptedRLModule(RLModule):
    """Takes the one action the environment offers: the choice of the scripted NPC that the
    environment's ``npcs`` config assigns to the seat. It has no parameters and is never
    trained (``_forward_train`` raises: leave it out of ``policies_to_train``)."""

    def setup(self) -> None:
        """No networks."""

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The single allowed action of each row (``ValueError`` if a row allows several:
        the seat is not played by an NPC in the environment's config)."""
        _, mask = split_observation(batch)
        mask = mask.detach().cpu().numpy() if hasattr(mask, "detach") else np.asarray(mask)
        allowed = (mask > 0).sum(axis=-1)
        if np.any(allowed != 1):
            raise ValueError("ScriptedRLModule: an observation allows "
                             f"{int(allowed[allowed != 1][0])} actions; it plays only seats "
                             "that the environment's 'npcs' config gives a scripted policy "
                             "(check the policy mapping)")
        return {Columns.ACTIONS: np.argmax(mask, axis=-1)}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """As inference: the NPC's choice."""
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("ScriptedRLModule is not trainable: leave it out of "
                                  "config.multi_agent(policies_to_train=...)")

