"""The battle map (R8.1): a grid of 1.5 m squares with terrain, line of sight and cover.

Coordinates are ``(x, y)`` with ``x`` to the east and ``y`` to the south. Line of sight and
cover are computed exactly (integer arithmetic on doubled coordinates). The map never changes
during a battle, so they are tabulated for every pair of squares on first use (maps up to
``MAX_TABLE_SQUARES``) or cached per pair (larger maps); move reach is cached per square.
"""

from __future__ import annotations

import math

__all__ = ["COVER", "DIFFICULT", "DIRECTIONS", "OPEN", "SQUARE_M", "WALL", "GridMap"]

SQUARE_M = 1.5
OPEN, DIFFICULT, COVER, WALL = ".", "~", "c", "#"
TERRAIN_CHARS = (OPEN, DIFFICULT, COVER, WALL)

# Compass directions; north is -y (R8.1).
DIRECTIONS: dict[str, tuple[int, int]] = {
    "N": (0, -1), "NE": (1, -1), "E": (1, 0), "SE": (1, 1),
    "S": (0, 1), "SW": (-1, 1), "W": (-1, 0), "NW": (-1, -1),
}

Square = tuple[int, int]


def _segment_enters_square(a: Square, b: Square, sq: Square) -> bool:
    """Does the segment between the centres of ``a`` and ``b`` pass through the interior of
    ``sq``? Touching a corner does not count (R8.1).

    Segments join square centres, so they never run along a grid line; a positive-length
    overlap with the closed square therefore means the interior is crossed. Exact: the
    segment's parameter ``t`` is kept as a numerator over one common denominator ``den``
    (integer arithmetic on doubled coordinates, no rounding).
    """
    # Doubled coordinates: centres at 2x+1, square sq spans [2x, 2x+2].
    x0, y0 = 2 * a[0] + 1, 2 * a[1] + 1
    dx, dy = 2 * (b[0] - a[0]), 2 * (b[1] - a[1])
    den = (abs(dx) or 1) * (abs(dy) or 1)
    t_lo, t_hi = 0, den
    for p0, d, lo in ((x0, dx, 2 * sq[0]), (y0, dy, 2 * sq[1])):
        hi = lo + 2
        if d == 0:
            if not lo < p0 < hi:
                return False
            continue
        scale = den // d  # exact: d divides den, and the sign of d comes with it
        t1, t2 = (lo - p0) * scale, (hi - p0) * scale
        if t1 > t2:
            t1, t2 = t2, t1
        t_lo, t_hi = max(t_lo, t1), min(t_hi, t2)
        if t_lo >= t_hi:
            return False
    return t_lo < t_hi


class GridMap:
    """Terrain, passability, distances, line of sight and cover for one map."""

    def __init__(self, width: int, height: int, terrain: list[str] | None = None) -> None:
        self.width = width
        self.height = height
        rows = terrain if terrain is not None else [OPEN * width] * height
        self.rows = tuple(rows)
        self.walls = frozenset(
            (x, y) for y, row in enumerate(rows) for x, ch in enumerate(row) if ch == WALL
        )
        self.cover_squares = frozenset(
            (x, y) for y, row in enumerate(rows) for x, ch in enumerate(row) if ch == COVER
        )
        self._los_cache: dict[tuple[Square, Square], bool] = {}
        self._cover_cache: dict[tuple[Square, Square], bool] = {}
        self._walk_cache: dict[tuple, tuple] = {}
        self._steps_cache: dict[tuple, tuple] = {}
        self._walked_cache: dict[tuple, tuple] = {}
        self._step_table: dict[tuple[Square, str], tuple] = {}  # ``_step``, on first use
        self._reach_cache: dict[tuple, tuple] = {}
        self._cover_near: dict[Square, list[Square]] = {}  # low cover next to a square
        # (line of sight rows, cover rows) per square index, built on first use when the map
        # is small enough; () when it is not (then the per-pair caches above serve).
        self._tables: tuple[list[bytes], list[bytes]] | tuple[()] | None = None
        self._los_rows: list[bytes] | None = None
        self._cover_rows: list[bytes] | None = None

    def terrain(self, sq: Square) -> str:
        """The terrain character of a square."""
        return self.rows[sq[1]][sq[0]]

    def in_bounds(self, sq: Square) -> bool:
        """True when the square lies on the map."""
        return 0 <= sq[0] < self.width and 0 <= sq[1] < self.height

    def passable(self, sq: Square) -> bool:
        """On the map and not a wall."""
        return self.in_bounds(sq) and sq not in self.walls

    def step_cost_m(self, sq: Square) -> float:
        """Metres of movement it costs to enter ``sq`` (R8.1: 1.5, or 3 when difficult)."""
        return 2 * SQUARE_M if self.terrain(sq) == DIFFICULT else SQUARE_M

    def cuts_corner(self, frm: Square, to: Square) -> bool:
        """A diagonal step may not cut the corner of a wall (R8.1)."""
        dx, dy = to[0] - frm[0], to[1] - frm[1]
        if dx == 0 or dy == 0:
            return False
        return (frm[0] + dx, frm[1]) in self.walls or (frm[0], frm[1] + dy) in self.walls

    def walk(self, pos: Square, direction: str, budget_m: float,
             squares: int) -> tuple[tuple[Square, ...], str | None, bool]:
        """Walk up to ``squares`` steps from ``pos`` ignoring other combatants (R4.6, R8.1).

        Returns ``(path, reason, cost_failure)``: the legal prefix of squares entered, why the
        next step is refused (``None`` if all were legal), and whether that refusal is the
        movement budget (checked after occupancy, so the caller can order its reasons; the
        path then ends with the square that could not be paid for). Cached: the map never
        changes.
        """
        key = (pos, direction, budget_m, squares)
        hit = self._walk_cache.get(key)
        if hit is not None:
            return hit
        path, refusal = self._steps(pos, direction, budget_m, squares)
        if refusal is None:
            result = (path, None, False)
        else:
            what, step, sq, spent = refusal
            if what == "map":
                reason = f"step {step} leaves the map"
            elif what == "wall":
                reason = f"step {step} enters a wall at {list(sq)}"
            elif what == "corner":
                reason = f"step {step} cuts the corner of a wall (R8.1)"
            else:
                reason = (f"{squares} squares {direction} cost {spent:g} m, more than the "
                          f"{budget_m:g} m of movement (R4.6)")
            result = (path, reason, what == "cost")
        self._walk_cache[key] = result
        return result

    def _steps(self, pos: Square, direction: str, budget_m: float,
               squares: int) -> tuple[tuple[Square, ...], tuple | None]:
        """The stepping of ``walk`` without its messages (cached; ``reach`` and ``walked``
        need no messages): ``(path, refusal)``, ``refusal`` being ``None`` or ``(what, step,
        square, metres spent)`` with ``what`` one of ``map``, ``wall``, ``corner``, ``cost``
        (then the path ends with the square that could not be paid for)."""
        key = (pos, direction, budget_m, squares)
        hit = self._steps_cache.get(key)
        if hit is not None:
            return hit
        table, step_from = self._step_table, self._step
        spent, path = 0.0, []
        refusal = None
        sq = pos
        for step in range(1, squares + 1):
            nxt, blocked, cost = table.get((sq, direction)) or step_from(sq, direction)
            if blocked is not None:
                refusal = (blocked, step, nxt, spent)
                break
            spent += cost
            path.append(nxt)
            if step > 1 and spent > budget_m + 1e-9:
                refusal = ("cost", step, nxt, spent)
                break
            sq = nxt
        hit = self._steps_cache[key] = (tuple(path), refusal)
        return hit

    def _step(self, frm: Square, direction: str) -> tuple[Square, str | None, float]:
        """One step from ``frm`` (cached per square and direction): the square entered, why
        it cannot be entered (``map``: off the map, ``wall``, ``corner``: cutting a wall's
        corner; ``None``: it can) and the metres entering it costs (R8.1)."""
        dx, dy = DIRECTIONS[direction]
        nxt = (frm[0] + dx, frm[1] + dy)
        if not self.in_bounds(nxt):
            hit = (nxt, "map", 0.0)
        elif nxt in self.walls:
            hit = (nxt, "wall", 0.0)
        elif self.cuts_corner(frm, nxt):
            hit = (nxt, "corner", 0.0)
        else:
            hit = (nxt, None, self.step_cost_m(nxt))
        self._step_table[(frm, direction)] = hit
        return hit

    def walked(self, pos: Square, direction: str, budget_m: float, squares: int,
               limit: int) -> tuple[tuple[Square, ...], float]:
        """The squares a legal Move of ``squares`` enters and the metres they cost (R8.1: each
        square's ``step_cost_m``), cached. A legal move is a prefix of the walk of ``limit``
        squares that ``reach`` took, which is read from its cache."""
        key = (pos, direction, budget_m, squares)
        hit = self._walked_cache.get(key)
        if hit is None:
            path = self._steps(pos, direction, budget_m, limit)[0][:squares]
            hit = self._walked_cache[key] = (path, sum(self.step_cost_m(sq) for sq in path))
        return hit

    def reach(self, pos: Square, budget_m: float,
              limit: int) -> tuple[tuple[int, ...], dict[Square, tuple[int, int]]]:
        """The static part of a Move's reach from ``pos`` (cached; the map never changes).

        Returns ``(reach, blockers)``: for each direction (``DIRECTIONS`` order) the most
        squares a Move can cover ignoring other combatants, and for each square on those
        paths ``(direction index, step index)``, so that a combatant standing there cuts
        that direction's reach to the step index (R8.1: occupied squares cannot be entered).
        """
        key = (pos, budget_m, limit)
        hit = self._reach_cache.get(key)
        if hit is not None:
            return hit
        reach: list[int] = []
        blockers: dict[Square, tuple[int, int]] = {}
        for d_index, direction in enumerate(DIRECTIONS):
            path, refusal = self._steps(pos, direction, budget_m, limit)
            k = len(path) - 1 if refusal is not None and refusal[0] == "cost" else len(path)
            reach.append(k)
            for i in range(k):
                blockers[path[i]] = (d_index, i)
        hit = self._reach_cache[key] = (tuple(reach), blockers)
        return hit

    @staticmethod
    def distance_m(a: Square, b: Square) -> float:
        """Length of the segment between square centres, in metres (R8.1)."""
        return math.hypot(a[0] - b[0], a[1] - b[1]) * SQUARE_M

    def line_of_sight(self, a: Square, b: Square) -> bool:
        """True when the centre-to-centre segment crosses no wall square (R8.1)."""
        if not self.walls:
            return True
        rows = self._los_rows
        if rows is None:
            rows = self._table(0)
            if rows is None:
                key = (a, b) if a <= b else (b, a)
                cached = self._los_cache.get(key)
                if cached is None:
                    cached = not any(self._crossed(key[0], key[1], self.walls))
                    self._los_cache[key] = cached
                return cached
        w = self.width
        return rows[a[1] * w + a[0]][b[1] * w + b[0]] == 1

    def cover_between(self, shooter: Square, target: Square) -> bool:
        """True when the segment passes through a low-cover square adjacent to the target.

        Whether the target counts as *in cover* also depends on its stance (R8.1, R5.3); the
        caller checks that.
        """
        if not self.cover_squares:
            return False
        rows = self._cover_rows
        if rows is None:
            rows = self._table(1)
            if rows is None:
                key = (shooter, target)
                cached = self._cover_cache.get(key)
                if cached is None:
                    cached = any(self._crossed(shooter, target, self.cover_near(target)))
                    self._cover_cache[key] = cached
                return cached
        w = self.width
        return rows[shooter[1] * w + shooter[0]][target[1] * w + target[0]] == 1

    def _table(self, which: int) -> list[bytes] | None:
        """Row ``which`` (0: line of sight, 1: cover) of the visibility tables, built on first
        use; ``None`` when the map is too large for them. Once built, ``_los_rows`` and
        ``_cover_rows`` hold them for the hot paths."""
        if self._tables is None:
            self._tables = _visibility_tables(self)
        if not self._tables:
            return None
        self._los_rows, self._cover_rows = self._tables
        return self._tables[which]

    def cover_near(self, target: Square) -> list[Square]:
        """The low-cover squares next to ``target`` (8 neighbours)."""
        near = self._cover_near.get(target)
        if near is None:
            tx, ty = target
            near = self._cover_near[target] = [
                sq for sq in ((tx + dx, ty + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                              if dx or dy) if sq in self.cover_squares]
        return near

    def _crossed(self, a: Square, b: Square, squares) -> list[Square]:
        lo_x, hi_x = min(a[0], b[0]), max(a[0], b[0])
        lo_y, hi_y = min(a[1], b[1]), max(a[1], b[1])
        return [sq for sq in squares
                if lo_x <= sq[0] <= hi_x and lo_y <= sq[1] <= hi_y and sq != a and sq != b
                and _segment_enters_square(a, b, sq)]


# Precomputed visibility tables cost squares^2 bytes each and about squares^2 x (walls + 8 x
# cover squares) element operations to build; above these bounds the per-pair caches serve.
MAX_TABLE_SQUARES = 2500
MAX_TABLE_WORK = 200_000_000


def _visibility_tables(grid: GridMap) -> tuple[list[bytes], list[bytes]] | tuple[()]:
    """Line of sight and cover for every ordered pair of squares, as rows of bytes indexed by
    ``y * width + x``; the same exact integer test as ``_segment_enters_square``, vectorised
    over all pairs (tests compare the two)."""
    import numpy as np

    n = grid.width * grid.height
    work = n * n * (len(grid.walls) + 8 * len(grid.cover_squares))
    if n > MAX_TABLE_SQUARES or work > MAX_TABLE_WORK:
        return ()
    idx = np.arange(n)
    xs, ys = idx % grid.width, idx // grid.width
    ax, ay = xs[:, None], ys[:, None]  # from (rows)
    bx, by = xs[None, :], ys[None, :]  # to (columns)
    blocked = np.zeros((n, n), dtype=bool)
    for wall in grid.walls:
        blocked |= _crosses(ax, ay, bx, by, wall)
    cover = np.zeros((n, n), dtype=bool)
    for c in grid.cover_squares:  # a cover square shields the squares around it
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                t = (c[0] + dx, c[1] + dy)
                if (dx or dy) and grid.in_bounds(t):
                    col = t[1] * grid.width + t[0]
                    cover[:, col] |= _crosses(xs, ys, t[0], t[1], c)
    return ([bytes(row) for row in (~blocked).astype(np.uint8)],
            [bytes(row) for row in cover.astype(np.uint8)])


def _crosses(ax, ay, bx, by, sq: Square):
    """Vectorised ``_segment_enters_square`` (segments from ``a`` to ``b``, broadcast), with
    the same exclusions as ``GridMap._crossed``: ``sq`` must differ from both ends."""
    import numpy as np

    x0, y0 = 2 * ax + 1, 2 * ay + 1
    dx, dy = 2 * (bx - ax), 2 * (by - ay)
    den = np.maximum(np.abs(dx), 1) * np.maximum(np.abs(dy), 1)
    t_lo, t_hi = np.zeros_like(den), den
    ok = np.ones(np.broadcast(den, x0, y0).shape, dtype=bool)
    for p0, d, lo in ((x0, dx, 2 * sq[0]), (y0, dy, 2 * sq[1])):
        hi = lo + 2
        still = d == 0
        ok = ok & (~still | ((lo < p0) & (p0 < hi)))
        scale = den // np.where(still, 1, d)  # exact: d divides den
        t1, t2 = (lo - p0) * scale, (hi - p0) * scale
        t_lo = np.where(still, t_lo, np.maximum(t_lo, np.minimum(t1, t2)))
        t_hi = np.where(still, t_hi, np.minimum(t_hi, np.maximum(t1, t2)))
    ends = ((ax == sq[0]) & (ay == sq[1])) | ((bx == sq[0]) & (by == sq[1]))
    return ok & (t_lo < t_hi) & ~ends
