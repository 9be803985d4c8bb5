"""Damage to characteristics (R6.2-R6.3), as pure functions shared by the engine and analysis."""

from __future__ import annotations

__all__ = ["apply_damage", "damage_to_incapacitate", "is_dead", "is_incapacitated"]


def apply_damage(str_: int, dex: int, end: int, damage: int) -> tuple[int, int, int]:
    """Return ``(STR, DEX, END)`` after ``damage`` points (R6.2).

    END absorbs first; the rest comes off the higher of STR and DEX at that moment (STR on a
    tie), and what that cannot absorb comes off the other. Nothing goes below 0.
    """
    take = min(damage, end)
    end -= take
    rest = damage - take
    if str_ >= dex:
        take = min(rest, str_)
        str_ -= take
        dex -= min(rest - take, dex)
    else:
        take = min(rest, dex)
        dex -= take
        str_ -= min(rest - take, str_)
    return str_, dex, end


def is_incapacitated(str_: int, dex: int, end: int) -> bool:
    """R6.3: END at 0 and STR or DEX at 0 (unconscious or dead)."""
    return end == 0 and (str_ == 0 or dex == 0)


def is_dead(str_: int, dex: int, end: int) -> bool:
    """R6.3: all three at 0."""
    return end == 0 and str_ == 0 and dex == 0


def damage_to_incapacitate(str_: int, dex: int, end: int) -> int:
    """The least damage one hit must do to incapacitate (R6.2-R6.3): all of END, then the
    higher of STR and DEX (taken first, so it reaches 0 before the other); 0 when already
    incapacitated."""
    if is_incapacitated(str_, dex, end):
        return 0
    return end + max(str_, dex)
