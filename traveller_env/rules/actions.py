"""Engine actions and their labels (the public action vocabulary).

Labels: ``end_turn``, ``move:<dir>:<squares>``, ``stance:<stand|crouch|prone>``, ``draw``,
``reload``, ``aim:<agent>``, ``attack:<agent>``, ``leadership``, ``direct:<agent>``,
``hamper:<agent>``, ``react:<none|dodge|parry>``, ``haste:<yes|no>``. The kinds and their
label patterns are described once, in ``kinds.KINDS``; the sets below are derived from it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

# ``MINOR_KINDS``, ``SIGNIFICANT_KINDS``, ``FREE_KINDS`` and ``TARGETED_KINDS`` are derived
# from ``kinds.KINDS`` when asked (module ``__getattr__`` below).
__all__ = ["REACTIONS", "STANCES", "Action", "parse_action"]

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


@lru_cache(maxsize=4096)
def parse_action(label: str) -> Action:
    """Parse an action label; raise ``ValueError`` naming the label when it is malformed."""
    from .kinds import KINDS

    if not isinstance(label, str):
        raise ValueError(f"action label must be a string, got {label!r}")
    parts = label.split(":")
    kind = KINDS.get(parts[0])
    action = kind.parse(parts) if kind is not None else None
    if action is None:
        patterns = [k.pattern for k in KINDS.values()]
        raise ValueError(f"unknown action label {label!r}; expected "
                         f"{', '.join(patterns[:-1])} or {patterns[-1]}")
    return action


def _kinds_where(**attrs: Any) -> frozenset[str]:
    from .kinds import KINDS

    return frozenset(k.name for k in KINDS.values()
                     if all(getattr(k, a) == v for a, v in attrs.items()))


def __getattr__(name: str) -> frozenset[str]:
    """The kind sets, derived from ``kinds.KINDS`` when asked."""
    if name == "MINOR_KINDS":
        return _kinds_where(cost="minor")
    if name == "SIGNIFICANT_KINDS":
        return _kinds_where(cost="significant")
    if name == "FREE_KINDS":
        return _kinds_where(cost="free")
    if name == "TARGETED_KINDS":
        return _kinds_where(args="combatant")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
