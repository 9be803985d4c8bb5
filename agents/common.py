"""Shared toolkit for the scripted policies: an import shim over its three homes.

* ``agents.context``: the decision context (``Context``, ``Square``, ``unwrap``);
* ``agents.paths``: path finding (``move_path``, ``path_cost``, ``move_options``);
* ``agents.tactics``: the exact attack arithmetic, the aim-or-fire rule, the shared
  evaluations (``best_attacks``, ``threat``, ``bonus_value``, ``best_reaction``) and the
  base class ``ScriptedPolicy``.

Every public name they had here is re-exported, so ``from agents.common import ...`` keeps
working; new code imports from the homes.
"""

from __future__ import annotations

from traveller_env.rules.attack import chebyshev

from .context import Context, Square, unwrap
from .paths import move_options, move_path, path_cost
from .tactics import (
    ScriptedPolicy,
    aim_plan,
    attack_dm,
    attack_outcome,
    attack_value,
    best_attacks,
    best_reaction,
    bonus_value,
    damage_to_down,
    threat,
)

__all__ = [
    "Context",
    "ScriptedPolicy",
    "Square",
    "aim_plan",
    "attack_dm",
    "attack_outcome",
    "attack_value",
    "best_attacks",
    "best_reaction",
    "bonus_value",
    "chebyshev",
    "damage_to_down",
    "move_options",
    "move_path",
    "path_cost",
    "threat",
    "unwrap",
]
