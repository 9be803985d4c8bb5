"""Engine actions and their labels (the public action vocabulary).

Labels: ``end_turn``, ``move:<dir>:<squares>``, ``stance:<stand|crouch|prone>``, ``draw``,
``reload``, ``aim:<agent>``, ``attack:<agent>``, ``leadership``, ``direct:<agent>``,
``hamper:<agent>``, ``react:<none|dodge|parry>``, ``haste:<yes|no>``.

The plain data (``Action``, ``STANCES``, ``REACTIONS``) lives in ``vocabulary``; the kinds and
their label patterns are described once, in ``kinds.KINDS``, which also parses labels
(``parse_action``). This module derives the kind sets by cost and argument
(``MINOR_KINDS``, ``SIGNIFICANT_KINDS``, ``FREE_KINDS``, ``TARGETED_KINDS``). The imports run
one way: ``vocabulary`` <- ``kinds`` <- ``actions``.
"""

from __future__ import annotations

from .kinds import kind_names

# ``MINOR_KINDS``, ``SIGNIFICANT_KINDS``, ``FREE_KINDS`` and ``TARGETED_KINDS`` are derived
# from ``kinds.KINDS`` when asked (module ``__getattr__`` below), so they include the kinds
# registered later.
__all__ = ["FREE_KINDS", "MINOR_KINDS", "SIGNIFICANT_KINDS", "TARGETED_KINDS"]  # noqa: F822

_KIND_SETS = {
    "MINOR_KINDS": {"cost": "minor"},
    "SIGNIFICANT_KINDS": {"cost": "significant"},
    "FREE_KINDS": {"cost": "free"},
    "TARGETED_KINDS": {"args": "combatant"},
}


def __getattr__(name: str) -> frozenset[str]:
    """The kind sets, derived from ``kinds.KINDS`` when asked."""
    where = _KIND_SETS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return kind_names(**where)
