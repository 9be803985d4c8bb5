"""The plain data of the action vocabulary: the ``Action`` value and the fixed choices its
arguments take (stances, reactions).

It imports nothing from the rules, so that every other rules module can use it: the kinds
table (``kinds``) builds and parses actions from it, and ``actions`` is the public face that
re-exports it with the parser and the kind sets.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["REACTIONS", "STANCES", "Action"]

STANCES = ("stand", "crouch", "prone")
REACTIONS = ("none", "dodge", "parry")


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
