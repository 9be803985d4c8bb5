"""Ray RLlib bridge: the environment as a turn-based ``MultiAgentEnv``, the compiled core as
a single-agent vector env, and masking RLModules.

``TravellerMultiAgentEnv({"scenario": "duel"})`` (``traveller_env.integrations.rllib.env``) is
the turn-based environment; ``traveller_env.integrations.rllib.core`` runs single-agent RLlib on
the compiled core (``make_core_env``; ``core_runner.CoreEnvRunner``); ``MaskedPPOTorchRLModule`` and
``ScriptedRLModule`` (``traveller_env.integrations.rllib.modules``, loaded on first use since
they need torch) are the modules for PPO on RLlib's new API stack. ``traveller train rllib``
(``traveller_rl.rllib``) puts them together. Needs the project's ``rllib`` extra
(``ray[rllib]==2.60.0``).
"""

from __future__ import annotations

from typing import Any

from traveller_env.integrations.rllib.env import TravellerMultiAgentEnv

__all__ = ["MaskedPPOTorchRLModule", "ScriptedRLModule", "TravellerMultiAgentEnv"]


def __getattr__(name: str) -> Any:
    if name in ("MaskedPPOTorchRLModule", "ScriptedRLModule"):
        from traveller_env.integrations.rllib import modules

        return getattr(modules, name)
    raise AttributeError(f"module 'traveller_env.integrations.rllib' has no attribute {name!r}")
