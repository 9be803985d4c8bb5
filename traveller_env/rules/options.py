"""The rules switches a scenario may set: ``RulesOptions`` (see docs/rules.md).

A module of its own, not the engine's (``battle``): the action kinds read the options through
``effects.BattleEffects``, which names this type, and ``battle`` imports the kinds, so the type
lives below both (``battle`` -> ``kinds`` -> ``effects`` -> ``options``, one way). The scenario
loader builds one (``scenario.rules_options``). The compiled core's twin is
``csrc/include/traveller/options.hpp``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RulesOptions"]


@dataclass(frozen=True)
class RulesOptions:
    """Rules switches a scenario may set (see docs/rules.md)."""

    hastening: bool = True
    reactions: bool = True
    comms_range_m: float = 30.0
    max_rounds: int = 20
