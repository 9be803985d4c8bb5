"""Turn sequencing (R2.2-R2.5, R3.1-R3.5, R8.2): Initiative, rounds, haste declarations,
tied groups, whose turn it is, and the end of the battle.

``TurnSequencing`` is a part of ``Battle`` (a mixin over the battle's state): it decides
who decides next and never looks at what an action does. Its ``end_turn`` and
``declare_haste`` belong to the effects the action kinds may have (``effects.BattleEffects``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .checks import roll_check, skill_level
from .reactions import HASTE_INITIATIVE

if TYPE_CHECKING:  # pragma: no cover
    from .combatant import Combatant

__all__ = ["TACTICS_SKILL", "TurnSequencing", "has_military_tactics", "tactics_leader"]

# R3.3 ruling: only Tactics (military) counts in personal combat (naval does not).
TACTICS_SKILL = "tactics.military"
AMBUSH_INITIATIVE = 12  # R3.2


def has_military_tactics(skills: dict[str, int]) -> bool:
    """R3.3: Tactics (military) held, by the specialty or the base skill (level 0); the
    naval specialty alone does not count."""
    return TACTICS_SKILL in skills or TACTICS_SKILL.split(".")[0] in skills


def tactics_leader(unit: list[Combatant]) -> Combatant | None:
    """R3.3: who makes the unit's Tactics check: the highest Tactics (military) level (held
    through the base skill counts as 0), ties to the higher INT, then scenario order."""
    tacticians = [c for c in unit if has_military_tactics(c.skills)]
    if not tacticians:
        return None
    return max(tacticians, key=lambda c: (skill_level(c.skills, TACTICS_SKILL),
                                          c.chars["INT"], -c.order))


class TurnSequencing:
    """The battle's sequencing (see the module docstring); mixed into ``Battle``."""

    def _order_key(self, c: Combatant) -> tuple[int, int]:
        """R2.2: higher Initiative first, then higher current DEX."""
        return (c.current_initiative, c.chars["DEX"])

    def _roll_initiative(self) -> None:
        """R3.1-R3.3: Initiative rolls (or the ambush's automatic 12), then Tactics."""
        prepared = [c.prepared for c in self.combatants]
        ambush = any(prepared) and not all(prepared)
        for c in self.combatants:
            dex = c.dm("DEX")
            if ambush and c.prepared:
                roll, base = None, AMBUSH_INITIATIVE
            else:
                roll = self.dice.roll(2)
                base = sum(roll)
            c.initiative = base + dex
            self.emit({"type": "initiative", "actor": c.id, "roll": roll, "dms": {"DEX": dex},
                       "initiative": c.initiative, "ambush": ambush and c.prepared})
        for side, name in enumerate(self.side_names):
            unit = [c for c in self.combatants if c.side == side]
            best = tactics_leader(unit)
            if best is None:
                continue
            dms = {"skill": skill_level(best.skills, TACTICS_SKILL), "INT": best.dm("INT")}
            roll, total, effect = roll_check(self.dice, dms)
            for c in unit:
                c.initiative += effect
            self.emit({"type": "tactics", "actor": best.id, "unit": name, "roll": roll,
                       "dms": dms, "total": total, "effect": effect, "added": effect})

    def _start_round(self) -> None:
        if self.round >= self.options.max_rounds:
            self._finish(None, "max_rounds", truncated=True)
            return
        self.round += 1
        self.emit({"type": "round", "round": self.round})
        for c in self.combatants:
            c.init_mod_now, c.init_mod_next = c.init_mod_next, 0
            c.hasty = False
            c.turn_begun = False
        able = [c for c in self.combatants if not c.out]
        if self.options.hastening:
            able.sort(key=lambda c: (-c.current_initiative, -c.chars["DEX"], c.order))
            self._haste_queue = [c.id for c in able]
            self.phase, self._decider = "haste", self._haste_queue[0]
        else:
            self._next_turn()

    def declare_haste(self, c: Combatant, yes: bool) -> None:
        """R3.5: one declaration; the next declarer in Initiative order, or the first turn."""
        c.hasty = yes
        if yes:
            c.init_mod_now += HASTE_INITIATIVE
        self.emit({"type": "haste", "actor": c.id, "haste": yes,
                   "initiative": c.current_initiative})
        self._haste_queue.pop(0)
        if self._haste_queue:
            self._decider = self._haste_queue[0]
        else:
            self._next_turn()

    def _change_initiative(self, c: Combatant, delta: int, reason: str) -> None:
        """R3.4: this round if the combatant has yet to begin its turn, else the next round."""
        if c.turn_begun:
            c.init_mod_next += delta
            applies = "next_round"
        else:
            c.init_mod_now += delta
            applies = "current_round"
        self.emit({"type": "initiative_change", "actor": c.id, "change": delta,
                   "reason": reason, "applies_to": applies,
                   "initiative": c.current_initiative,
                   "next_round_change": c.init_mod_next})

    def _next_turn(self) -> None:
        if self._group_queue:
            self._begin_turn(self.by_id[self._group_queue.pop(0)])
            return
        self._finish_group()
        if self._check_end():
            return
        waiting = [c for c in self.combatants if not c.out and not c.turn_begun]
        if not waiting:
            self._start_round()
            return
        best = max(self._order_key(c) for c in waiting)
        group = [c.id for c in waiting if self._order_key(c) == best]  # scenario order
        self._group = group
        self._group_queue = group[1:]
        if len(group) > 1:
            self.emit({"type": "simultaneous", "group": list(group),
                       "initiative": best[0], "DEX": best[1]})
        self._begin_turn(self.by_id[group[0]])

    def _finish_group(self) -> None:
        """R2.5: combatants downed within their own tied group drop out when it has finished.
        R7.5: a pool such a combatant made in its turn after being downed lapses now: its
        leader is incapacitated and will have no next turn."""
        for cid in self._group:
            c = self.by_id[cid]
            if c.down and not c.out:
                c.out = True
                self.emit({"type": "out", "actor": cid})
                self._summary.dropouts += 1
                for p in self.pools.of_leader(cid):
                    self._lapse(p, "leader out of play")
        self._group = []

    def _begin_turn(self, c: Combatant) -> None:
        c.turn_begun = True
        c.minors, c.significant = 0, False
        self.phase, self._decider, self.turn_actor = "turn", c.id, c.id
        if self.pools.entries:
            for p in self.pools.of_leader(c.id):
                self._lapse(p, "leader's next turn")  # R7.5
        self.emit({"type": "turn", "actor": c.id, "initiative": c.current_initiative,
                   "round": self.round})

    def end_turn(self, reason: str) -> None:
        """R2.3: the deciding combatant's turn ends (``reason`` is logged); the next
        decision follows."""
        self.emit({"type": "end_turn", "actor": self._decider, "reason": reason})
        self.turn_actor = None
        self._next_turn()

    def _check_end(self) -> bool:
        """R8.2: combat ends when at most one side has combatants able to act."""
        sides = {c.side for c in self.combatants if not c.out}
        if len(sides) > 1:
            return False
        winner = self.side_names[sides.pop()] if sides else None
        self._finish(winner, "victory" if winner else "all_out", truncated=False)
        return True

    def _finish(self, winner: str | None, reason: str, truncated: bool) -> None:
        self.done, self.truncated, self.winner = True, truncated, winner
        self.phase, self._decider = "over", None
        self.emit({"type": "end", "round": self.round, "winner": winner, "reason": reason})
