"""Path finding for the scripted policies (R4.6, R8.1), read-only: the squares a straight
Move enters (``move_path``), shortest-path costs around walls and difficult terrain
(``path_cost``, a Dijkstra field per map and goal, cached) and the legal Moves of a decision
with their destinations (``move_options``).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from traveller_agents.context import Context, Square
from traveller_env.rules.attack import chebyshev
from traveller_env.rules.grid import DIRECTIONS, SQUARE_M
from traveller_env.rules.movement import move_budget_m

__all__ = ["move_options", "move_path", "path_cost"]


def move_path(grid: Any, occupied: set[Square] | frozenset[Square], pos: Square,
              direction: str, squares: int, budget_m: float) -> list[Square] | None:
    """The squares a straight Move enters (the engine's rule, read-only), or ``None`` if the
    move is impossible (map edge, wall, corner cut, occupied square, too costly)."""
    path, reason, _ = grid.walk(pos, direction, budget_m, squares)
    if reason is not None or any(sq in occupied for sq in path):
        return None
    return list(path)


_FIELDS: dict[tuple[Any, Square], dict[Square, float]] = {}


def _simple(grid: Any) -> bool:
    return not grid.walls and all(ch in ".c" for row in grid.rows for ch in row)


def path_cost(grid: Any, goal: Square, sq: Square) -> float:
    """Movement in metres from ``sq`` to ``goal`` along the cheapest path (walls and difficult
    terrain respected, other combatants ignored); ``inf`` when unreachable."""
    if _simple(grid):
        return chebyshev(goal, sq) * SQUARE_M
    key = (grid.rows, goal)
    field = _FIELDS.get(key)
    if field is None:
        if len(_FIELDS) > 2048:
            _FIELDS.clear()
        field = _FIELDS[key] = _dijkstra(grid, goal)
    return field.get(sq, math.inf)


def _dijkstra(grid: Any, goal: Square) -> dict[Square, float]:
    """Cost to reach ``goal`` from every square (steps are symmetric except for the cost of
    the square entered, so the field is built from the goal with the cost of leaving)."""
    dist = {goal: 0.0}
    heap = [(0.0, goal)]
    while heap:
        d, (x, y) = heapq.heappop(heap)
        if d > dist[(x, y)]:
            continue
        enter_cost = grid.step_cost_m((x, y))  # entering (x, y) from a neighbour
        for dx, dy in DIRECTIONS.values():
            nb = (x + dx, y + dy)
            if not grid.in_bounds(nb) or nb in grid.walls or grid.cuts_corner(nb, (x, y)):
                continue
            nd = d + enter_cost
            if nd < dist.get(nb, math.inf):
                dist[nb] = nd
                heapq.heappush(heap, (nd, nb))
    return dist


def move_options(ctx: Context) -> list[tuple[str, Square]]:
    """``(label, destination)`` of every legal Move action now."""
    out = []
    me = ctx.me
    budget = move_budget_m(me.movement_m, me.stance)
    occupied = ctx.occupied
    for label in ctx.legal_labels:
        if label.startswith("move:"):
            _, d, n = label.split(":")
            path = move_path(ctx.view.grid, occupied, me.pos, d, int(n), budget)
            if path:
                out.append((label, path[-1]))
    return out
