"""Movement (R4.6): how far one Move action goes."""

from __future__ import annotations

from .grid import SQUARE_M

__all__ = ["PRONE_MOVE_FACTOR", "move_budget_m", "squares_per_move"]

PRONE_MOVE_FACTOR = 0.25


def move_budget_m(movement_m: float, stance: str) -> float:
    """Metres one Move action may cover: the Movement score, quartered when prone. Difficult
    terrain is paid per step (R8.1), never taken off this budget."""
    return movement_m * PRONE_MOVE_FACTOR if stance == "prone" else movement_m


def squares_per_move(budget_m: float) -> int:
    """Open squares one Move action crosses with ``budget_m`` metres (at least one: a Move may
    always enter one passable square, R4.6)."""
    return max(1, int(budget_m // SQUARE_M))
