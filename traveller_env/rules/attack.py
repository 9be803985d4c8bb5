"""Attack arithmetic (R4.1, R4.3, R5, R6.1, R7.3), as pure functions.

Every DM of an attack, its reach (adjacency, line of sight, 4x Range), aiming and the damage
of a hit are stated here once. The engine applies them to the real battle; the read-only view
and the scripted policies ask the same functions about hypothetical positions, stances and
aims. ``attacker`` and ``target`` are anything with a combatant's attributes (the engine's
``Combatant`` or the view's ``CombatantView``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .checks import skill_dm, success_probability

__all__ = [
    "AIM_MAX",
    "BEYOND_RANGE_DM",
    "COVER_DM",
    "HASTE_DM",
    "PRONE_DM",
    "attack_dms",
    "attack_reach",
    "chebyshev",
    "damage_on_hit",
    "held_dms",
    "hit_probability",
    "in_attack_reach",
    "next_aim_dm",
    "range_dm",
    "total_dm",
]

Square = tuple[int, int]

AIM_MAX = 6  # R4.3
COVER_DM = -2  # R5.3
PRONE_DM = -1  # R5.3
HASTE_DM = -1  # R3.5
# Beyond 4x Range an attack is illegal; this DM keeps a hypothetical hit chance at 0.
BEYOND_RANGE_DM = -99


def chebyshev(a: Square, b: Square) -> int:
    """Squares between two squares when every step (diagonals too) costs one square."""
    return max(abs(a[0] - b[0]), abs(a[1] - b[1]))


def range_dm(distance_m: float, weapon_range_m: float) -> int | None:
    """R5.1: DM for a ranged attack at ``distance_m``; ``None`` when beyond 4x Range."""
    if distance_m <= weapon_range_m / 4:
        return 1
    if distance_m <= weapon_range_m:
        return 0
    if distance_m <= 2 * weapon_range_m:
        return -2
    if distance_m <= 4 * weapon_range_m:
        return -4
    return None


def attack_reach(weapon: Any, grid: Any, apos: Square) -> Callable[[Square], bool]:
    """R4.1, for an attacker at ``apos``: a test of whether a target square is in reach. A
    melee target must be adjacent (diagonals included); a ranged one in line of sight and
    within 4x the weapon's Range. (Drawn and loaded are not checked here.) The per-attacker
    part is settled once, for testing many targets."""
    if weapon.is_melee:
        return lambda tpos: chebyshev(apos, tpos) <= 1
    los, dist, limit = grid.line_of_sight, grid.distance_m, 4 * weapon.range_m
    return lambda tpos: los(apos, tpos) and dist(apos, tpos) <= limit


def in_attack_reach(weapon: Any, grid: Any, apos: Square, tpos: Square) -> bool:
    """R4.1: whether a target at ``tpos`` is in reach of an attacker at ``apos`` (see
    ``attack_reach``)."""
    return attack_reach(weapon, grid, apos)(tpos)


def attack_dms(attacker: Any, target: Any, grid: Any, *, apos: Square | None = None,
               tpos: Square | None = None, tstance: str | None = None,
               aim: int | None = None, hasty: bool | None = None) -> dict[str, int]:
    """The DMs of ``attacker``'s attack on ``target``, before reactions and leadership.

    Melee (R4.1): skill + the better of STR and DEX DM. Ranged: skill + DEX DM + range band
    (R5.1; ``BEYOND_RANGE_DM`` past 4x Range) + aim (R4.3) + cover and prone (R5.3). Haste
    (R3.5) either way. The keyword arguments ask hypothetical questions: another attacker or
    target square, target stance, aim DM (default: the aim held on that target) or haste.
    The dict's key order is the event log's.
    """
    w = attacker.weapon
    dms = {"skill": skill_dm(attacker.skills, w.skill)}
    if w.is_melee:
        str_dm, dex_dm = attacker.dm("STR"), attacker.dm("DEX")
        if str_dm >= dex_dm:
            dms["STR"] = str_dm
        else:
            dms["DEX"] = dex_dm
    else:
        apos = attacker.pos if apos is None else apos
        tpos = target.pos if tpos is None else tpos
        dms["DEX"] = attacker.dm("DEX")
        band = range_dm(grid.distance_m(apos, tpos), w.range_m)
        dms["range"] = BEYOND_RANGE_DM if band is None else band
        if aim is None:
            aim = attacker.aim_dm if attacker.aim_target == target.id else 0
        if aim:
            dms["aim"] = aim
        stance = target.stance if tstance is None else tstance
        if stance != "stand" and grid.cover_between(apos, tpos):
            dms["cover"] = COVER_DM
        if stance == "prone":
            dms["prone"] = PRONE_DM
    if attacker.hasty if hasty is None else hasty:
        dms["haste"] = HASTE_DM
    return dms


def held_dms(combatant: Any) -> dict[str, int]:
    """R7.3: the leadership bonus (+1) and/or penalty (-1) the combatant holds, which its
    next check takes (both together cancel)."""
    dms = {}
    if combatant.bonus:
        dms["leadership_bonus"] = 1
    if combatant.penalty:
        dms["leadership_penalty"] = -1
    return dms


def hit_probability(attacker: Any, target: Any, grid: Any, *, apos: Square | None = None,
                    tpos: Square | None = None, aim: int | None = None) -> float:
    """The exact chance that ``attacker``'s attack on ``target`` hits: 2D + every DM of
    ``attack_dms`` + the leadership bonus/penalty it holds (``held_dms``) >= 8 (R1.2), before
    any reaction (R3.6); 0 when the target is out of reach (R4.1). ``apos``, ``tpos`` and
    ``aim`` ask hypothetical questions, as in ``attack_dms`` (drawn and loaded are not
    checked)."""
    apos = attacker.pos if apos is None else apos
    tpos = target.pos if tpos is None else tpos
    if not in_attack_reach(attacker.weapon, grid, apos, tpos):
        return 0.0
    dms = attack_dms(attacker, target, grid, apos=apos, tpos=tpos, aim=aim)
    dms.update(held_dms(attacker))
    return success_probability(total_dm(dms))


def total_dm(dms: dict[str, int]) -> int:
    """The sum of a check's DMs."""
    return sum(dms.values())


def next_aim_dm(aim_target: str | None, aim_dm: int, target: str) -> int:
    """R4.3: the aim DM after one more Minor action aiming at ``target``: +1 more on the same
    target up to ``AIM_MAX``, else a fresh +1."""
    return min(AIM_MAX, aim_dm + 1) if aim_target == target else 1


def damage_on_hit(dice_total: int, modifier: int, effect: int, protection: int) -> int:
    """R6.1: the weapon's damage dice (their sum and modifier) + the attack's Effect - the
    target's armour protection, never below 0."""
    return max(0, dice_total + modifier + effect - protection)
