"""The decision context of the scripted policies: ``Context`` (the battle view, the deciding
combatant, the action mask and labels, with cached enemies, allies and occupied squares),
``Square`` (a grid square) and ``unwrap`` (the ``TravellerEnv`` behind wrappers).

Everything here *reads* the battle through ``env.view`` (a read-only ``BattleView``);
nothing mutates the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from traveller_env.view import BattleView, CombatantView

__all__ = ["Context", "Square", "unwrap"]

#: A grid square, ``(x, y)``.
Square = tuple[int, int]


def unwrap(env: Any) -> Any:
    """The ``TravellerEnv`` behind any PettingZoo wrappers."""
    return getattr(env, "unwrapped", env)


class Context:
    """Everything one decision needs: the view, the deciding combatant, the mask and labels."""

    def __init__(self, env: Any, agent: str, mask: np.ndarray, labels: Sequence[str],
                 index: dict[str, int]) -> None:
        self.env = env
        self.view: BattleView = env.view
        self.agent = agent
        self.mask = mask
        self.labels = labels
        self.index = index
        self.me: CombatantView = self.view.combatant(agent)
        self._legal: list[str] | None = None
        self._enemies: list[CombatantView] | None = None
        self._allies: list[CombatantView] | None = None
        self._occupied: frozenset[Square] | None = None

    @property
    def legal_labels(self) -> list[str]:
        """Labels of the legal actions (mask == 1)."""
        if self._legal is None:
            self._legal = [self.labels[i] for i in np.flatnonzero(self.mask)]
        return self._legal

    def legal(self, label: str) -> bool:
        """Is ``label`` legal now?"""
        i = self.index.get(label)
        return i is not None and bool(self.mask[i])

    @property
    def enemies(self) -> list[CombatantView]:
        """Enemies still in play."""
        if self._enemies is None:
            self._enemies = [e for e in self.view.enemies(self.agent) if not e.down]
        return self._enemies

    @property
    def allies(self) -> list[CombatantView]:
        """Allies still in play (the deciding combatant excluded)."""
        if self._allies is None:
            self._allies = [a for a in self.view.allies(self.agent) if not a.down]
        return self._allies

    @property
    def occupied(self) -> frozenset[Square]:
        """Squares held by other combatants in play."""
        if self._occupied is None:
            self._occupied = frozenset(c.pos for c in self.view.combatants()
                                       if c.in_play and c.id != self.agent)
        return self._occupied

    @property
    def budget(self) -> tuple[bool, int]:
        """``(significant available, minors available)``."""
        return self.view.budget_left(self.agent)

    @property
    def spare_minor(self) -> bool:
        """A Minor action can be spent without losing this turn's Significant action."""
        sig, minors = self.budget
        return minors > 0 and (self.me.minors == 0 or not sig)
