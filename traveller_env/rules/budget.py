"""The turn budget (R2.1): one Significant and one Minor action, or three Minor actions.

``Budget`` is the one statement of that arithmetic; the engine keeps one per combatant turn
and every caller (legality, the mask, agents planning several turns ahead) asks it.
``BUDGET_STATES`` holds its answers for each budget, computed once from ``Budget`` itself (a
turn has only a handful of budgets), for the engine's hot paths.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BUDGET_STATES", "MINORS_WITHOUT_SIGNIFICANT", "MINORS_WITH_SIGNIFICANT", "Budget",
           "BudgetState"]

MINORS_WITH_SIGNIFICANT = 1
MINORS_WITHOUT_SIGNIFICANT = 3


class Budget(NamedTuple):
    """What a combatant has spent this turn: Minor actions and whether a Significant one."""

    minors_used: int = 0
    significant_used: bool = False

    @property
    def significant_left(self) -> bool:
        """A Significant action is legal while none was taken and at most one Minor was."""
        return not self.significant_used and self.minors_used <= MINORS_WITH_SIGNIFICANT

    @property
    def minors_left(self) -> int:
        """Minor actions still legal: up to 1 after a Significant action, else up to 3."""
        cap = MINORS_WITH_SIGNIFICANT if self.significant_used else MINORS_WITHOUT_SIGNIFICANT
        return max(0, cap - self.minors_used)

    @property
    def spent(self) -> bool:
        """Nothing but free actions and ``end_turn`` remains (R2.3): no Significant action
        left and no Minor one either (the two properties above, folded for speed)."""
        if self.significant_used:
            return self.minors_used >= MINORS_WITH_SIGNIFICANT
        return self.minors_used >= MINORS_WITHOUT_SIGNIFICANT

    def allows(self, cost: str) -> bool:
        """Whether an action costing ``cost`` fits what is left: a Significant one while
        ``significant_left``, a Minor one while ``minors_left``; other costs always."""
        if cost == "significant":
            return self.significant_left
        if cost == "minor":
            return self.minors_left > 0
        return True

    def after(self, cost: str) -> Budget:
        """The budget after one more action costing ``"minor"``, ``"significant"`` or
        ``"free"``."""
        if cost == "minor":
            return Budget(self.minors_used + 1, self.significant_used)
        if cost == "significant":
            return Budget(self.minors_used, True)
        return self

    @staticmethod
    def significant_after_minors(minors_used: int, more: int) -> bool:
        """Can a Significant action follow ``more`` further Minor actions, when each turn
        starts afresh after three Minors (the planning view of R2.1 over several turns)?"""
        return Budget((minors_used + more) % MINORS_WITHOUT_SIGNIFICANT).significant_left


class BudgetState:
    """``Budget``'s answers about one budget, computed once: the budget itself, its
    ``significant_left``, ``minors_left`` and ``spent``, and ``allows`` as a mapping from
    the costs ``minor`` and ``significant`` (other costs are always allowed). Read-only by
    convention; a class with slots rather than a named tuple, whose field reads are
    slower."""

    __slots__ = ("allows", "budget", "minors_left", "significant_left", "spent")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.significant_left = budget.significant_left
        self.minors_left = budget.minors_left
        self.spent = budget.spent
        self.allows = {c: budget.allows(c) for c in ("minor", "significant")}


class _BudgetStates(dict):
    """``BUDGET_STATES[minors_used, significant_used]``: the ``BudgetState`` of that budget,
    made from ``Budget`` on first use."""

    def __missing__(self, key: tuple[int, bool]) -> BudgetState:
        state = self[key] = BudgetState(Budget(key[0], bool(key[1])))
        return state


BUDGET_STATES: dict[tuple[int, bool], BudgetState] = _BudgetStates()
