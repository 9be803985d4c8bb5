"""The reward arithmetic of a battle: one home for the Python side.

The AEC env (``traveller_env.env``, on either engine) and the Python backend of
``traveller_env.vector`` both score rewards here; the compiled core keeps its own copy in C++
(``_core.VecBattles``), held to this one by the differential tests (tests/core/test_core_aec.py,
tests/core/test_core_vector.py).

The rules (the scenario's ``rewards``, ``scenario.RewardsSpec``; the AEC env's docstring,
"Rewards"): ``win``/``loss``/``draw`` go to every seat still in the battle when it ends (a
truncation or a mutual elimination is a draw); ``damage_dealt`` and ``damage_taken`` are per
point of damage after armour, to every live seat of the attacker's / target's side when
``shared`` (else to that seat alone); ``per_round`` goes to every seat in play each time a new
round begins; an illegal action under ``illegal_action: penalize`` costs its seat 1.

A seat is *live* from the start of a battle until the step after the one that takes it out of
play (or ends the battle): it receives the rewards of the step that knocks it out and nothing
after, as the AEC env's dead step removes its agent.

``RewardLedger.score`` reads a battle's running counters (``Counters``: the compiled core's
``_core.Battle`` has them natively; ``BattleCounters`` reads them off the Python engine's
``Battle``) and returns each seat's gain of the step, adding the terms in a fixed order
(damage per seat in scenario order, dealt then taken; rounds begun; the outcome; the penalty),
so every caller gets the same floats, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .rules.battle import Battle
    from .scenario import RewardsSpec

__all__ = ["BattleCounters", "Counters", "RewardLedger", "RewardScorer", "outcome_reward"]


class Counters(Protocol):
    """The running counters of one battle that rewards are scored from (seats are indices into
    the scenario's combatants, in scenario order)."""

    @property
    def round(self) -> int:
        """The current round."""

    @property
    def dropouts(self) -> int:
        """How many times a combatant has left play so far."""

    @property
    def done(self) -> bool:
        """True once the battle is over."""

    @property
    def winner(self) -> int:
        """Once over: the winning side's index, or -1 for a draw."""

    def out(self, seat: int) -> bool:
        """Whether the combatant of ``seat`` is out of play."""

    def summary(self) -> tuple[Sequence[int], Sequence[int], int]:
        """``(damage dealt per seat, damage taken per seat, dropouts)``: new sequences, a
        snapshot that later steps leave alone."""


class BattleCounters:
    """``Counters`` read off the Python engine's ``Battle`` (plus ``phase``, ``truncated`` and
    ``decider``, the rest of what the AEC env reads, so that one object serves both engines
    the way the core's ``_core.Battle`` does)."""

    __slots__ = ("_battle", "_ids", "_seat")

    def __init__(self, battle: Battle, ids: Sequence[str]) -> None:
        self._battle = battle
        self._ids = list(ids)
        self._seat = {cid: i for i, cid in enumerate(self._ids)}

    @property
    def round(self) -> int:
        """The current round."""
        return self._battle.round

    @property
    def phase(self) -> str:
        """The battle's phase (``haste``, ``turn``, ``reaction``, ...)."""
        return self._battle.phase

    @property
    def dropouts(self) -> int:
        """How many times a combatant has left play so far."""
        return self._battle.summary.dropouts

    @property
    def done(self) -> bool:
        """True once the battle is over."""
        return self._battle.done

    @property
    def truncated(self) -> bool:
        """True when the battle ended by ``max_rounds``."""
        return self._battle.truncated

    @property
    def winner(self) -> int:
        """The winning side's index, or -1 (a draw, or not over)."""
        b = self._battle
        w = b.winner
        return -1 if w is None else b.side_names.index(w)

    @property
    def decider(self) -> int:
        """The seat that decides now, or -1 once the battle is over."""
        agent = self._battle.current_agent
        return -1 if agent is None else self._seat[agent]

    def out(self, seat: int) -> bool:
        """Whether the combatant of ``seat`` is out of play."""
        return self._battle.by_id[self._ids[seat]].out

    def summary(self) -> tuple[list[int], list[int], int]:
        """``(damage dealt per seat, damage taken per seat, dropouts)``, new lists."""
        s = self._battle.summary
        dealt, taken = s.damage_dealt, s.damage_taken
        return [dealt[c] for c in self._ids], [taken[c] for c in self._ids], s.dropouts


def outcome_reward(spec: RewardsSpec, winner: int, side: int) -> float:
    """The reward side ``side`` receives for a finished battle that side ``winner`` won (-1: a
    draw)."""
    if winner < 0:
        return spec.draw
    return spec.win if winner == side else spec.loss


class RewardScorer:
    """A scenario's reward rules over its seats; ``ledger`` starts the scoring of one battle.

    ``seat_sides``: each seat's side index, in scenario order.
    """

    def __init__(self, spec: RewardsSpec, seat_sides: Sequence[int]) -> None:
        self.spec = spec
        self.seat_sides: list[int] = list(seat_sides)

    def ledger(self, counters: Counters) -> RewardLedger:
        """The bookkeeping of a battle whose counters are ``counters`` (read now as its
        starting point)."""
        return RewardLedger(self, counters)


class RewardLedger:
    """The reward bookkeeping of one battle: what was last scored, and which seats are live
    (see the module docstring)."""

    __slots__ = ("_damage", "_n", "_per_round", "_sides", "_spec", "last_damage",
                 "last_dropouts", "last_round", "live")

    def __init__(self, scorer: RewardScorer, counters: Counters) -> None:
        spec = scorer.spec
        self._spec = spec
        self._sides = scorer.seat_sides
        self._n = len(self._sides)
        self._damage = bool(spec.damage_dealt or spec.damage_taken)
        self._per_round = spec.per_round
        #: Seats that still receive rewards.
        self.live: list[bool] = [True] * self._n
        self.last_round: int = counters.round
        self.last_dropouts: int = counters.dropouts
        self.last_damage: tuple[Sequence[int], Sequence[int]] | None = (
            tuple(counters.summary()[:2]) if self._damage else None)

    def score(self, counters: Counters, penalized: int = -1) -> tuple[list[float] | None, bool]:
        """Score the step that brought the battle to ``counters``.

        ``penalized``: the seat that forfeited an illegal action in it (-1 more), or -1.
        Returns ``(gains, dones)``: each seat's reward for the step (``None`` when no term
        applied, so every seat gets 0), and whether a combatant may have left play or the
        battle ended (when not, no seat's status changed).
        """
        spec = self._spec
        gains: list[float] | None = None
        dones = False
        if self._damage:
            dealt, taken, _ = counters.summary()
            last_dealt, last_taken = self.last_damage
            if dealt != last_dealt or taken != last_taken:
                gains = [0.0] * self._n
                for i in range(self._n):
                    d = dealt[i] - last_dealt[i]
                    if d:
                        self._give(gains, i, spec.damage_dealt * d)
                    t = taken[i] - last_taken[i]
                    if t:
                        self._give(gains, i, spec.damage_taken * t)
                self.last_damage = (dealt, taken)
        rnd = counters.round
        if self._per_round and rnd > self.last_round:
            if gains is None:
                gains = [0.0] * self._n
            amount = self._per_round * (rnd - self.last_round)
            live = self.live
            for i in range(self._n):
                if live[i] and not counters.out(i):  # not to one awaiting its dead step
                    gains[i] += amount
        self.last_round = rnd
        dropouts = counters.dropouts
        if dropouts != self.last_dropouts:
            dones = True
            self.last_dropouts = dropouts
        done = counters.done
        if done:
            dones = True
            if gains is None:
                gains = [0.0] * self._n
            winner, sides, live = counters.winner, self._sides, self.live
            for i in range(self._n):
                if live[i]:
                    gains[i] += outcome_reward(spec, winner, sides[i])
        if penalized >= 0:
            if gains is None:
                gains = [0.0] * self._n
            gains[penalized] += -1.0
        if dones:
            live = self.live
            for i in range(self._n):
                if live[i] and (done or counters.out(i)):
                    live[i] = False
        return gains, dones

    def _give(self, gains: list[float], seat: int, amount: float) -> None:
        """A damage term of ``seat``: to its side's live seats when shared, else to itself."""
        if not amount:
            return
        live = self.live
        if self._spec.shared:
            sides = self._sides
            mine = sides[seat]
            for j in range(self._n):
                if live[j] and sides[j] == mine:
                    gains[j] += amount
        elif live[seat]:
            gains[seat] += amount
