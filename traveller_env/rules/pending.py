"""The attack in progress: ``PendingAttack``, declared (R4.1) and waiting for its target's
reaction (R3.6) before it is rolled.

A module of its own, not the engine's (``battle``, which declares and resolves it): the action
kinds read it through ``effects.BattleEffects.pending_attack`` (``react`` asks whether the
attack is melee), which names this type, and ``battle`` imports the kinds, so the type lives
below both (``battle`` -> ``kinds`` -> ``effects`` -> ``pending``, one way). The compiled
core's twin is ``csrc/include/traveller/pending.hpp``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PendingAttack"]


@dataclass(slots=True)
class PendingAttack:
    """An attack waiting for its target's reaction (R3.6)."""

    attacker: str
    target: str
    melee: bool
    dms: dict[str, int]
    range_m: float
