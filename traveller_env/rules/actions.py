"""Engine actions and their labels (the public action vocabulary).

Labels: ``end_turn``, ``move:<dir>:<squares>``, ``stance:<stand|crouch|prone>``, ``draw``,
``reload``, ``aim:<agent>``, ``attack:<agent>``, ``leadership``, ``direct:<agent>``,
``hamper:<agent>``, ``react:<none|dodge|parry>``, ``haste:<yes|no>``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .grid import DIRECTIONS

__all__ = [
    "FREE_KINDS",
    "MINOR_KINDS",
    "REACTIONS",
    "SIGNIFICANT_KINDS",
    "STANCES",
    "TARGETED_KINDS",
    "Action",
    "parse_action",
]

STANCES = ("stand", "crouch", "prone")
REACTIONS = ("none", "dodge", "parry")
MINOR_KINDS = frozenset({"move", "stance", "draw", "reload", "aim"})
SIGNIFICANT_KINDS = frozenset({"attack", "leadership"})
FREE_KINDS = frozenset({"direct", "hamper"})  # R7.5: cost no action
TARGETED_KINDS = frozenset({"aim", "attack", "direct", "hamper"})
_SIMPLE = frozenset({"end_turn", "draw", "reload", "leadership"})


class Action(NamedTuple):
    """One action. ``arg`` is the target agent, stance, reaction or haste choice;
    ``direction``/``squares`` are for moves."""

    kind: str
    arg: str | None = None
    direction: str | None = None
    squares: int = 0

    @property
    def label(self) -> str:
        """The action's public label, e.g. ``move:NE:2`` or ``attack:red_0``."""
        if self.kind == "move":
            return f"move:{self.direction}:{self.squares}"
        if self.arg is None:
            return self.kind
        return f"{self.kind}:{self.arg}"

    def __str__(self) -> str:
        return self.label


@lru_cache(maxsize=4096)
def parse_action(label: str) -> Action:
    """Parse an action label; raise ``ValueError`` naming the label when it is malformed."""
    if not isinstance(label, str):
        raise ValueError(f"action label must be a string, got {label!r}")
    parts = label.split(":")
    kind = parts[0]
    if kind in _SIMPLE and len(parts) == 1:
        return Action(kind)
    if kind == "move" and len(parts) == 3 and parts[1] in DIRECTIONS and parts[2].isdigit():
        squares = int(parts[2])
        if squares >= 1:
            return Action("move", None, parts[1], squares)
    if len(parts) == 2 and parts[1]:
        arg = parts[1]
        if kind in TARGETED_KINDS:
            return Action(kind, arg)
        if kind == "stance" and arg in STANCES:
            return Action(kind, arg)
        if kind == "react" and arg in REACTIONS:
            return Action(kind, arg)
        if kind == "haste" and arg in ("yes", "no"):
            return Action(kind, arg)
    raise ValueError(
        f"unknown action label {label!r}; expected end_turn, move:<N|NE|E|SE|S|SW|W|NW>:<n>, "
        "stance:<stand|crouch|prone>, draw, reload, aim:<agent>, attack:<agent>, leadership, "
        "direct:<agent>, hamper:<agent>, react:<none|dodge|parry> or haste:<yes|no>"
    )
