"""What an action kind may read of a battle and do to it: the ``BattleEffects`` interface.

The kinds table (``kinds``) sees a battle only through this interface; ``battle.Battle``
implements it. Everything else about a battle (turn sequencing, attack resolution, damage,
the event versions) stays the engine's own business. The R2.1 budget, R4.3 aim breaking and
R4.5 draw/reload progress are applied by the engine before a kind's ``apply`` runs, so they
are not part of it.

The method names are those of the compiled core's ``Battle`` members that its kinds call
(``csrc/src/kinds.cpp``): ``reach``, ``walk_refusal``, ``emit``, ``end_turn``,
``ready_step``, ``break_aim``, ``apply_held``, ``declare_attack``, ``react`` and
``declare_haste``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from .combatant import Combatant
    from .dice import Dice
    from .grid import GridMap
    from .leadership import LeadershipPools
    from .options import RulesOptions
    from .pending import PendingAttack

__all__ = ["BattleEffects"]


class BattleEffects(Protocol):
    """A battle as the action kinds see it.

    Read-only state: ``combatants`` (scenario order), ``by_id``, ``side_names``, ``grid``,
    ``options``, ``dice``, ``pools`` (the leadership pools, which ``direct``/``hamper``/
    ``leadership`` add to and take from), ``max_move_squares`` and ``pending_attack``.
    The methods below are the queries a kind's legality asks and the effects its ``apply``
    may have; the effects assume a legal action (``Battle.apply`` checks legality first).
    """

    combatants: list[Combatant]
    by_id: dict[str, Combatant]
    side_names: list[str]
    grid: GridMap
    options: RulesOptions
    dice: Dice
    pools: LeadershipPools
    max_move_squares: int

    @property
    def pending_attack(self) -> PendingAttack | None:
        """The attack waiting for its target's reaction (R3.6), or ``None``."""
        ...

    # ------------------------------------------------------------------ queries
    def reach(self, actor: Combatant) -> tuple[int, ...]:
        """For each direction of ``grid.DIRECTIONS``, the most squares a Move action of
        ``actor`` can cover now (R4.6, R8.1; 0: none)."""
        ...

    def walk_refusal(self, actor: Combatant, direction: str, squares: int) -> str | None:
        """Why a move of ``squares`` squares towards ``direction`` is refused (R4.6, R8.1),
        or ``None`` when it is legal."""
        ...

    # ------------------------------------------------------------------ effects
    def emit(self, event: dict) -> None:
        """Log an event (its type in ``events.EVENT_KINDS``) and stamp the combatants it
        touches with a new version."""
        ...

    def end_turn(self, reason: str) -> None:
        """End the deciding combatant's turn (R2.3); the next decision follows."""
        ...

    def ready_step(self, actor: Combatant, kind: str, needed: int) -> bool:
        """One more consecutive Minor action of ``draw`` or ``reload`` progress (R4.5),
        logged; True when it completes the ``needed`` actions."""
        ...

    def break_aim(self, actor: Combatant) -> None:
        """Lose the aim ``actor`` holds, if any (R4.3), logged."""
        ...

    def apply_held(self, actor: Combatant, dms: dict[str, int], check: str) -> None:
        """Add a held leadership bonus and/or penalty to the DMs of ``actor``'s next
        ``check`` and use them up (R7.3), logged."""
        ...

    def declare_attack(self, actor: Combatant, target: Combatant) -> None:
        """Declare an attack (R4.1): spend ammunition and aim, pay recoil (R3.7), then wait
        for the target's reaction (R3.6), or resolve it at once without reactions."""
        ...

    def react(self, target: Combatant, choice: str) -> None:
        """The target's reaction (``none``, ``dodge`` or ``parry``) to the pending attack
        (R3.6), then the attack is resolved."""
        ...

    def declare_haste(self, actor: Combatant, yes: bool) -> None:
        """One haste declaration (R3.5); the next declarer, or the first turn, follows."""
        ...
