"""Traveller Tactics: Mongoose Traveller (2e) personal combat as a PettingZoo AEC environment.

``traveller_env.env(scenario="duel")`` gives the wrapped AEC environment, ``raw_env`` the bare
one; importing this package registers ``"traveller/combat-v0"`` with PettingZoo's registry, so
``pettingzoo.make("aec", "traveller/combat-v0", scenario="duel")`` works too, and registers the
Gymnasium ids ``traveller/<scenario>-v0`` (every built-in scenario) and
``traveller/gen-squad-v0`` (docs/integrations.md#gymnasium).

The compiled battle core is optional at import: ``core_available()`` says whether it is built
here, and ``traveller_env.core.require()`` returns it or says why not and how to build it.
When it is missing (or built from other sources), importing this package warns once
(``CoreMissingWarning``) saying so and how to build it; ``backend="python"`` works regardless,
and ``backend="core"`` raises ``CoreUnavailableError`` (never a silent fallback).
"""

from __future__ import annotations

import warnings

from .core import available as core_available
from .env import TravellerEnv, env, raw_env
from .scenario import ScenarioError, build_battle, builtin_scenarios, load_scenario

__all__ = ["ENV_ID", "GEN_SQUAD_ID", "CoreMissingWarning", "ScenarioError", "TravellerEnv",
           "build_battle", "builtin_scenarios", "core_available", "env", "load_scenario", "raw_env"]
__version__ = "0.1.0"

ENV_ID = "traveller/combat-v0"
#: The Gymnasium id of the generated squad family (``gen:squad``, vector only).
GEN_SQUAD_ID = "traveller/gen-squad-v0"


def _register() -> None:
    import gymnasium
    import pettingzoo

    if ENV_ID not in pettingzoo.aec_registry:
        pettingzoo.register("aec", ENV_ID, entry_point="traveller_env.env:env")
    # Gymnasium: traveller/<scenario>-v0 for every built-in scenario, and traveller/gen-squad-v0
    # (vector only): gymnasium.make gives the single-learner env, gymnasium.make_vec the core's
    # vector (traveller_env.integrations.gymnasium_vector, imported only when one is made).
    bridge = "traveller_env.integrations.gymnasium_vector"
    for name in builtin_scenarios():
        env_id = f"traveller/{name}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=f"{bridge}:TravellerGymEnv",
                               vector_entry_point=f"{bridge}:TravellerVectorEnv",
                               kwargs={"scenario": name})
    if GEN_SQUAD_ID not in gymnasium.registry:
        gymnasium.register(GEN_SQUAD_ID, vector_entry_point=f"{bridge}:TravellerVectorEnv",
                           kwargs={"scenario": "gen:squad", "layout": "6v6"})


_register()


class CoreMissingWarning(RuntimeWarning):
    """Importing ``traveller_env`` without a usable compiled core."""


if not core_available():
    from .core import status as _core_status

    warnings.warn(f"traveller_env: {_core_status()}", CoreMissingWarning, stacklevel=2)
