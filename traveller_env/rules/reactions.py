"""Dynamic Initiative (R3.4-R3.7): haste, reactions and recoil, as pure functions."""

from __future__ import annotations

from typing import Any

from .checks import characteristic_dm, skill_level

__all__ = [
    "HASTE_INITIATIVE",
    "REACTION_INITIATIVE_COST",
    "UNARMED_SKILL",
    "can_parry",
    "parry_skill",
    "reaction_dm",
    "recoil_cost",
]

HASTE_INITIATIVE = 2  # R3.5 (the DM -1 on its checks is attack.HASTE_DM)
REACTION_INITIATIVE_COST = 2  # R3.6
UNARMED_SKILL = "melee.unarmed"
DODGE_SKILL = "athletics.dexterity"


def _melee_weapon_ready(c: Any) -> bool:
    w = c.weapon
    return w.is_melee and (c.drawn or not w.needs_draw)


def can_parry(reactor: Any, melee_attack: bool) -> bool:
    """R3.6: parry answers melee attacks only, with a drawn melee weapon, or unarmed when the
    reactor has no weapon drawn."""
    if not melee_attack:
        return False
    return _melee_weapon_ready(reactor) or not reactor.drawn


def parry_skill(reactor: Any) -> str:
    """The Melee skill a parry uses: the drawn melee weapon's, else Melee (unarmed)."""
    return reactor.weapon.skill if _melee_weapon_ready(reactor) else UNARMED_SKILL


def reaction_dm(reactor: Any, reaction: str) -> int:
    """R3.6: the DM a reaction puts on the attack: dodge -max(1, Athletics (dexterity)),
    parry -max(1, the parry's Melee skill); ``none`` 0."""
    if reaction == "dodge":
        return -max(1, skill_level(reactor.skills, DODGE_SKILL) or 0)
    if reaction == "parry":
        return -max(1, skill_level(reactor.skills, parry_skill(reactor)) or 0)
    return 0


def recoil_cost(str_requirement: int, attacker_str: int) -> int:
    """R3.7: Initiative lost by attacking with a weapon whose STR requirement's DM exceeds
    the attacker's STR DM (0 when it does not)."""
    if str_requirement <= 0:
        return 0
    return max(0, characteristic_dm(str_requirement) - characteristic_dm(attacker_str))
