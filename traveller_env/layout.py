"""Fixed observation and action layouts: one policy for every scenario that fits.

Without a layout, a scenario's observation and action spaces are its own: as many slots as its
largest side, positions divided by its map's size, moves up to its fastest combatant's best.
A policy trained on one scenario then cannot even be *fed* another. A ``Layout`` fixes all
three, so that every scenario within its limits gives vectors of the same length and meaning:

- ``allies`` ally slots and ``enemies`` enemy slots (slots a scenario does not fill are empty:
  all zeros, and every action on them is masked);
- positions (the own block's ``x``/``y``, a slot's ``dx``/``dy``, the state's ``x``/``y``)
  divided by ``map_size`` instead of the map's width and height, so that a square means the
  same distance on every map;
- ``max_move_squares`` move actions per direction, and as many squares per direction in the
  move and attack views (squares beyond a scenario's best move are described all the same;
  the mask never allows a move its combatants cannot make);
- the global state: ``2 * side_limit`` combatant blocks, side by side (``side_limit`` each,
  scenario order, empty blocks all zeros).

A scenario fits when each side has at most ``side_limit = min(allies + 1, enemies)``
combatants, its map at most ``map_size`` squares each way and its best move at most
``max_move_squares`` squares; ``Layout.check`` raises ``LayoutError`` naming the limit it
breaks. Both engines build the layout's vectors themselves (``ObservationBuilder(layout=)``,
the core's ``Observer``); the differential tests hold them to the same bytes.

``LAYOUTS`` holds the named ones (``"6v6"``: up to six a side on maps up to 40 squares).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .rules.grid import DIRECTIONS
from .rules.kinds import KINDS

__all__ = ["LAYOUTS", "Layout", "LayoutError", "read_layout", "resolve_layout"]


class LayoutError(ValueError):
    """A scenario that does not fit a layout, or a malformed layout."""


@dataclass(frozen=True)
class Layout:
    """A fixed observation and action layout (see the module docstring)."""

    name: str
    allies: int
    enemies: int
    map_size: int
    max_move_squares: int

    def __post_init__(self) -> None:
        for field, low, high in (("allies", 0, 64), ("enemies", 1, 64), ("map_size", 1, 1000),
                                 ("max_move_squares", 1, 64)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise LayoutError(f"layout {self.name!r}: {field} must be an int in "
                                  f"[{low}, {high}], got {value!r}")
        if not isinstance(self.name, str) or not self.name:
            raise LayoutError(f"layout: name must be a non-empty string, got {self.name!r}")

    @property
    def side_limit(self) -> int:
        """The most combatants a side may have: ``min(allies + 1, enemies)``."""
        return min(self.allies + 1, self.enemies)

    @property
    def n_slots(self) -> int:
        """Ally plus enemy slots."""
        return self.allies + self.enemies

    def slot_names(self) -> list[str]:
        """``ally0``..., then ``enemy0``..., as in the observation labels."""
        return ([f"ally{k}" for k in range(self.allies)]
                + [f"enemy{k}" for k in range(self.enemies)])

    def action_labels(self) -> list[str]:
        """The layout's slot-relative action labels, in catalogue order (``rules.kinds.KINDS``):
        targets named by slot (``attack:enemy0``), moves up to ``max_move_squares``."""
        labels: list[str] = []
        slots = self.slot_names()
        for kind in KINDS.values():
            if kind.args == "combatant":
                labels += [f"{kind.name}:{s}" for s in slots]
            elif kind.args == "move":
                labels += [f"{kind.name}:{d}:{n}" for d in DIRECTIONS
                           for n in range(1, self.max_move_squares + 1)]
            else:
                labels += [a.label for a in kind.candidates([], 1)]
        return labels

    def problems(self, side_sizes: list[int], width: int, height: int,
                 max_move_squares: int) -> list[str]:
        """What keeps a scenario with these dimensions out of the layout (empty: it fits)."""
        out = []
        for i, n in enumerate(side_sizes):
            if n > self.side_limit:
                out.append(f"side {i} has {n} combatants; the layout's limit is "
                           f"{self.side_limit} a side ({self.allies} ally and {self.enemies} "
                           "enemy slots)")
        if width > self.map_size or height > self.map_size:
            out.append(f"its map is {width}x{height} squares; the layout's limit is "
                       f"{self.map_size}x{self.map_size} (map_size)")
        if max_move_squares > self.max_move_squares:
            out.append(f"a combatant moves {max_move_squares} squares; the layout's limit is "
                       f"{self.max_move_squares} (max_move_squares)")
        return out

    def check(self, battle: Any, scenario_name: str | None = None) -> None:
        """``LayoutError`` naming every limit ``battle`` (a ``rules.battle.Battle``) breaks."""
        sizes = [sum(1 for c in battle.combatants if c.side == s) for s in (0, 1)]
        problems = self.problems(sizes, battle.grid.width, battle.grid.height,
                                 battle.max_move_squares)
        if problems:
            name = f"scenario {scenario_name!r}" if scenario_name else "the scenario"
            raise LayoutError(f"{name} does not fit layout {self.name!r}: "
                              + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The layout as a plain dict (checkpoints and ONNX metadata keep it)."""
        return asdict(self)


#: The named layouts. ``6v6``: up to six a side (five ally and six enemy slots) on maps up to
#: 40x40 squares, moves up to 4 squares (a human's 6 m): every generated distribution and the
#: built-in squad-sized scenarios fit; the long range scenarios (``duel``, ``range_*``) do not.
LAYOUTS: dict[str, Layout] = {
    "6v6": Layout("6v6", allies=5, enemies=6, map_size=40, max_move_squares=4),
}


def resolve_layout(layout: str | Mapping[str, Any] | Layout | None) -> Layout | None:
    """A ``Layout`` from a name in ``LAYOUTS``, a dict of its fields, a ``Layout`` or ``None``;
    ``LayoutError`` naming what is allowed otherwise."""
    if layout is None or isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise LayoutError(f"layout {layout!r}: one of {', '.join(LAYOUTS)} (or a dict "
                              "with name, allies, enemies, map_size, max_move_squares)")
        return LAYOUTS[layout]
    if isinstance(layout, Mapping):
        fields = ("name", "allies", "enemies", "map_size", "max_move_squares")
        extra = sorted(set(layout) - set(fields))
        missing = [f for f in fields if f not in layout]
        if extra or missing:
            raise LayoutError(f"layout: a dict needs exactly the fields {', '.join(fields)}"
                              + (f"; unknown: {', '.join(extra)}" if extra else "")
                              + (f"; missing: {', '.join(missing)}" if missing else ""))
        return Layout(**{f: layout[f] for f in fields})
    raise LayoutError(f"layout must be a name ({', '.join(LAYOUTS)}), a dict or a Layout, got "
                      f"{type(layout).__name__}")


def read_layout(value: Any, where: str) -> Layout | None:
    """The layout a file stores (a name or a dict of its fields; ``None`` for none), or a
    ``ValueError`` beginning with ``where`` (the file and its field) saying why it cannot be
    read."""
    if value is None:
        return None
    try:
        return resolve_layout(value if isinstance(value, str) else dict(value))
    except (LayoutError, TypeError, ValueError) as exc:
        raise ValueError(f"{where} cannot be read: {exc}") from None
