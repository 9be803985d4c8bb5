"""Traveller Tactics: Mongoose Traveller (2e) personal combat as a PettingZoo AEC environment.

``traveller_env.env(scenario="duel")`` gives the wrapped AEC environment, ``raw_env`` the bare
one; importing this package registers ``"traveller/combat-v0"`` with PettingZoo's registry, so
``pettingzoo.make("aec", "traveller/combat-v0", scenario="duel")`` works too.
"""

from __future__ import annotations

from .env import TravellerEnv, env, raw_env
from .scenario import ScenarioError, build_battle, builtin_scenarios, load_scenario

__all__ = ["ENV_ID", "ScenarioError", "TravellerEnv", "build_battle", "builtin_scenarios", "env",
           "load_scenario", "raw_env"]
__version__ = "0.1.0"

ENV_ID = "traveller/combat-v0"


def _register() -> None:
    import pettingzoo

    if ENV_ID not in pettingzoo.aec_registry:
        pettingzoo.register("aec", ENV_ID, entry_point="traveller_env.env:env")


_register()
