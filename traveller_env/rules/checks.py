"""Characteristic DMs, skill levels and checks (R1.2-R1.4)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from .dice import Dice

__all__ = [
    "CHARACTERISTICS",
    "SPECIALISED_SKILLS",
    "TARGET_NUMBER",
    "UNSKILLED_DM",
    "characteristic_dm",
    "effect_distribution",
    "roll_check",
    "skill_dm",
    "skill_level",
    "success_probability",
]

TARGET_NUMBER = 8
#: Skills that have specialties (R1.4): held at level 0 by the base name, or per specialty.
SPECIALISED_SKILLS = ("gun_combat", "melee", "heavy_weapons", "athletics", "tactics")
UNSKILLED_DM = -3
CHARACTERISTICS = ("STR", "DEX", "END", "INT", "EDU", "SOC")

# R1.3, indexed by characteristic value 0..15 (15+ clamps to the last entry).
_DM_TABLE = (-3, -2, -2, -1, -1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3)


def characteristic_dm(value: int) -> int:
    """DM for a characteristic value (R1.3): 0 -> -3, 1-2 -> -2, ..., 15+ -> +3."""
    if value <= 0:
        return -3
    return _DM_TABLE[min(value, 15)]


def skill_level(skills: Mapping[str, int], skill: str) -> int | None:
    """Level used for a check with ``skill`` (``"gun_combat.slug"`` or ``"leadership"``).

    R1.4 with the MgT2 reading of specialties: the specialty's own level when the combatant has
    it; otherwise level 0 when it has the base skill or any other specialty of it; ``None``
    (unskilled, DM -3) when it has none of the skill at all. A request for a base skill
    (``"tactics"``) takes the best level among its specialties.
    """
    if skill in skills:
        return skills[skill]
    base, _, specialty = skill.partition(".")
    if specialty:
        if base in skills or any(k.startswith(base + ".") for k in skills):
            return 0
        return None
    levels = [v for k, v in skills.items() if k.startswith(base + ".")]
    return max(levels) if levels else None


def skill_dm(skills: Mapping[str, int], skill: str) -> int:
    """The DM a skill gives a check: its level, or -3 when unskilled (R1.4)."""
    level = skill_level(skills, skill)
    return UNSKILLED_DM if level is None else level


def roll_check(dice: Dice, dms: Mapping[str, int]) -> tuple[list[int], int, int]:
    """Roll 2D + DMs (R1.2). Returns ``(roll, total, effect)``; success is ``effect >= 0``."""
    roll = dice.roll(2)
    total = roll[0] + roll[1] + sum(dms.values())
    return roll, total, total - TARGET_NUMBER


# Exact 2D6 distribution: _P2D6[s] = P(2D == s).
_P2D6 = {s: (6 - abs(s - 7)) / 36 for s in range(2, 13)}


def success_probability(dm: int) -> float:
    """Exact probability that ``2D + dm >= 8`` (R1.2)."""
    return sum(p for s, p in _P2D6.items() if s + dm >= TARGET_NUMBER)


def effect_distribution(dm: int) -> dict[int, float]:
    """Exact distribution of the Effect of ``2D + dm`` (``{effect: probability}``)."""
    return {s + dm - TARGET_NUMBER: p for s, p in _P2D6.items()}


@lru_cache(maxsize=64)
def dice_sum_distribution(n: int) -> dict[int, float]:
    """Exact distribution of the sum of ``n`` six-sided dice (``{sum: probability}``)."""
    dist = {0: 1.0}
    for _ in range(n):
        nxt: dict[int, float] = {}
        for s, p in dist.items():
            for face in range(1, 7):
                nxt[s + face] = nxt.get(s + face, 0.0) + p / 6
        dist = nxt
    return dist
