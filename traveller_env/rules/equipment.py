"""Weapons and armour as plain data (loaded from ``configs/equipment.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .dice import DiceExpr

__all__ = ["HEAVY_SKILL", "THROWN_SKILL", "Armour", "Weapon"]

HEAVY_SKILL = "heavy_weapons.portable"
THROWN_SKILL = "athletics.dexterity"


@dataclass(frozen=True, slots=True)
class Weapon:
    """A weapon. ``range_m`` is ``None`` for melee weapons (R4.1).

    ``magazine`` rounds per magazine (a thrown weapon: 1, its spares being further grenades),
    ``str_requirement`` drives recoil (R3.7), ``draw_actions``/``reload_actions`` are the
    consecutive Minor actions a draw or reload takes (R4.5).
    """

    name: str
    skill: str
    damage: DiceExpr
    range_m: float | None
    magazine: int = 0
    spare_magazines: int = 0
    str_requirement: int = 0
    draw_actions: int = 1
    reload_actions: int = 1

    #: True for melee weapons (unarmed included): no Range (set from ``range_m``).
    is_melee: bool = field(init=False, repr=False, compare=False)
    #: Unarmed combat needs no draw (R4.5) (set from ``skill``).
    needs_draw: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Derived once (a weapon is immutable): read on every legality and observation.
        object.__setattr__(self, "is_melee", self.range_m is None)
        object.__setattr__(self, "needs_draw", self.skill != "melee.unarmed")

    @property
    def is_thrown(self) -> bool:
        """Thrown weapons use Athletics (dexterity) (R4.1)."""
        return self.skill == THROWN_SKILL


@dataclass(frozen=True, slots=True)
class Armour:
    """Armour: ``protection`` is subtracted from each hit's damage (R6.1)."""

    name: str
    protection: int = 0
