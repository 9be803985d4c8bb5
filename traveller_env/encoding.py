"""Action encoding: ``Discrete(N)`` index <-> engine action, and the action mask.

The catalogue is fixed for a scenario (it depends only on the combatant ids and the best
movement), so every agent shares one ``Discrete(N)`` space. The mask is built from the
engine's own legality check, so ``mask[i] == 1`` exactly when the engine accepts action ``i``.
"""

from __future__ import annotations

import numpy as np

from .rules.actions import Action, parse_action
from .rules.battle import Battle

__all__ = ["ActionCatalogue"]


class ActionCatalogue:
    """The scenario's action list, its labels and index lookup."""

    def __init__(self, battle: Battle) -> None:
        self.actions: list[Action] = battle.candidate_actions()
        self.labels: list[str] = [a.label for a in self.actions]
        self._index = {label: i for i, label in enumerate(self.labels)}
        self.n = len(self.actions)

    def index(self, label: str) -> int:
        """Index of an action label; ``ValueError`` listing the pattern when unknown."""
        try:
            return self._index[label]
        except KeyError:
            parse_action(label)  # raises a clear error for malformed labels
            raise ValueError(f"action label {label!r} is not in this scenario's action "
                             f"space ({self.n} actions; see action_labels)") from None

    def mask(self, battle: Battle, out: np.ndarray | None = None) -> np.ndarray:
        """``int8`` mask of the actions legal for the deciding combatant."""
        if out is None:
            out = np.zeros(self.n, dtype=np.int8)
        else:
            out[:] = 0
        if battle.done:
            return out
        why = battle.why_illegal
        for i, action in enumerate(self.actions):
            if why(action) is None:
                out[i] = 1
        return out
