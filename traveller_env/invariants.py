"""Runtime invariants of a battle: properties that must hold after every step, whatever the
actions taken (random, scripted or hostile).

``check_invariants(battle, catalogue, mask)`` checks the state; ``check_new_events(battle,
start)`` checks the events appended since ``battle.events[start]``. Both raise
``InvariantError`` (an ``AssertionError``) naming the invariant broken, the combatant concerned
and what was found. ``TravellerEnv(..., check_invariants=True)`` runs both after every step;
the fuzz tests and ``experiments/soak.py`` rely on it.

State invariants (``check_invariants``):

* ``characteristics``: every characteristic lies in ``0..`` its starting value (R6.2);
* ``incapacitation``: ``down`` exactly when END is 0 with STR or DEX 0 (R6.3), ``dead``
  exactly when all three are 0, and ``out`` only when down (R2.5);
* ``ammunition``: ``0 <= ammo <= magazine`` and ``0 <= spares <= spare magazines`` (R4.1,
  R4.5); a melee weapon holds none;
* ``budget``: at most 3 Minor actions without a Significant one and at most 1 with it (R2.1);
* ``aim``: the aim DM lies in ``0..6``, the aim target is set exactly when the DM is
  positive, and it is an enemy (R4.3);
* ``readying``: draw/reload progress is below the actions needed (R4.5);
* ``leadership``: bonus and penalty holdings are single flags, every pool holds at least one
  and belongs to a leader still in play (R7.3, R7.5);
* ``position``: every combatant in play stands on the map, outside walls, alone in its square
  (R8.1); stances are ``stand``/``crouch``/``prone``;
* ``decision``: while the battle goes on, the deciding combatant is in play and has at least
  one legal action (its mask is not all zero); once over, the log ends with ``end``;
* ``round``: ``1 <= round <= max_rounds`` (R8.2).

Event invariants (``check_new_events``):

* ``json``: events are JSON-serialisable (no NaN, string keys);
* ``event_shape``: every event is of a known type with exactly its fields, in log order
  (``rules.events.EVENT_KINDS``);
* ``check``: every check (``attack``, ``leadership``, ``tactics``) has a 2D roll of d6
  results, ``sum(roll) + sum(dms.values()) == total`` and ``effect == total - 8`` (R1.2); an
  ``initiative`` roll gives ``sum(roll) + DEX DM == initiative``, the ambush's automatic roll
  ``12 + DEX DM`` (R3.1, R3.2);
* ``leadership_bonus``: a check takes at most one bonus (+1) and one penalty (-1), each
  announced by exactly one ``bonus_used`` / ``penalty_used`` event of its actor (R7.3);
* ``out_acts``: no combatant out of play takes a turn or acts (R2.5, R6.3); no one is
  incapacitated twice, and ``out`` follows ``incapacitated``;
* ``attack``: the target is an enemy in play, ``hit == (effect >= 0)``, damage is never
  negative and 0 on a miss, melee attacks use no ammunition, ranged ones leave ``0..``
  magazine rounds (R4.1, R6.1);
* ``aim``/``move``/``leadership``: aim DMs in ``1..6``, moves cost movement and end on a
  passable square, bonuses/penalties match the Effect (R4.3, R4.6, R7.1, R7.4);
* ``end``: exactly one ``end`` event, the last one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from traveller_env.rules.vocabulary import STANCES

from .rules.checks import TARGET_NUMBER, characteristic_dm
from .rules.damage import is_dead, is_incapacitated
from .rules.events import check_event
from .rules.grid import WALL
from .rules.kinds import KINDS

#: The kinds whose progress carries over consecutive Minor actions (R4.5).
READY_KINDS = frozenset(k.name for k in KINDS.values() if k.keeps_ready)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .encoding import ActionCatalogue
    from .rules.battle import Battle

__all__ = ["InvariantError", "check_invariants", "check_new_events"]

CHECK_TYPES = frozenset({"attack", "leadership", "tactics"})
ACTING_TYPES = frozenset({"haste", "turn", "move", "stance", "draw", "reload", "aim", "attack",
                          "leadership", "reaction", "bonus_granted", "penalty_imposed",
                          "end_turn", "illegal_action"})


class InvariantError(AssertionError):
    """A broken invariant. ``invariant`` names it, ``combatant`` is the combatant concerned
    (``None`` for battle-wide invariants), ``detail`` says what was found."""

    def __init__(self, invariant: str, combatant: str | None, detail: str) -> None:
        self.invariant, self.combatant, self.detail = invariant, combatant, detail
        who = f" [{combatant}]" if combatant else ""
        super().__init__(f"invariant {invariant!r} broken{who}: {detail}")


# ---------------------------------------------------------------------------- state
def check_invariants(battle: Battle, catalogue: ActionCatalogue | None = None,
                     mask: Sequence[int] | np.ndarray | None = None) -> None:
    """Check the battle's state (see the module docstring); raise ``InvariantError``.

    ``mask`` is the action mask shown to the deciding combatant; without one, it is computed
    from ``catalogue`` when given. Either way the deciding combatant must have a legal action.
    """
    by_id = battle.by_id
    squares: dict[tuple[int, int], str] = {}
    grid = battle.grid
    for c in battle.combatants:
        cid = c.id
        for k, v in c.chars.items():
            top = c.max_chars.get(k)
            if not isinstance(v, int) or v < 0 or (top is not None and v > top):
                raise InvariantError("characteristics", cid,
                                     f"{k} is {v!r}; allowed 0..{top if top is not None else ''}")
        s, d, e = c.chars["STR"], c.chars["DEX"], c.chars["END"]
        if c.down != is_incapacitated(s, d, e) or c.dead != is_dead(s, d, e):
            raise InvariantError("incapacitation", cid, f"down={c.down} dead={c.dead} with "
                                 f"STR {s}, DEX {d}, END {e} (R6.3)")
        if c.out and not c.down:
            raise InvariantError("incapacitation", cid, "out of play without being down")
        w = c.weapon
        if not 0 <= c.ammo <= w.magazine:
            raise InvariantError("ammunition", cid, f"ammo {c.ammo}, magazine {w.magazine}")
        if not 0 <= c.spares <= w.spare_magazines:
            raise InvariantError("ammunition", cid,
                                 f"spares {c.spares}, started with {w.spare_magazines}")
        if c.minors < 0 or c.minors > (1 if c.significant else 3):
            raise InvariantError("budget", cid, f"{c.minors} Minor actions with significant="
                                 f"{c.significant} (R2.1: at most 3, or 1 with a Significant)")
        if not 0 <= c.aim_dm <= 6 or (c.aim_target is None) != (c.aim_dm == 0):
            raise InvariantError("aim", cid, f"aim DM {c.aim_dm} on {c.aim_target!r} (R4.3)")
        if c.aim_target is not None:
            t = by_id.get(c.aim_target)
            if t is None or t.side == c.side:
                raise InvariantError("aim", cid, f"aims at {c.aim_target!r}, not an enemy")
        if c.ready_kind is not None:
            needed = w.draw_actions if c.ready_kind == "draw" else w.reload_actions
            if c.ready_kind not in READY_KINDS or not 0 < c.ready_count < needed:
                raise InvariantError("readying", cid, f"{c.ready_kind} progress "
                                     f"{c.ready_count} of {needed} (R4.5)")
        if type(c.bonus) is not bool or type(c.penalty) is not bool:
            raise InvariantError("leadership", cid, f"bonus {c.bonus!r}, penalty "
                                 f"{c.penalty!r}: at most one of each is held (R7.3)")
        if c.stance not in STANCES:
            raise InvariantError("position", cid, f"stance {c.stance!r}")
        if not c.out:
            pos = c.pos
            if not grid.in_bounds(pos) or grid.terrain(pos) == WALL:
                raise InvariantError("position", cid, f"{list(pos)} is off the map or in a wall")
            other = squares.get(pos)
            if other is not None:
                raise InvariantError("position", cid, f"shares {list(pos)} with {other}")
            squares[pos] = cid
    for pool in battle.pools:
        leader = by_id.get(pool.leader)
        # R7.5: pools lapse when the leader is incapacitated; one made after that by a leader
        # still in play (R2.5) lapses when it drops out.
        if pool.count < 1 or leader is None or leader.out or pool.kind not in ("bonus",
                                                                                "penalty"):
            raise InvariantError("leadership", pool.leader, f"{pool.kind} pool of "
                                 f"{pool.count} held by a leader out of play (R7.5)")
    if not 1 <= battle.round <= battle.options.max_rounds:
        raise InvariantError("round", None, f"round {battle.round} of "
                             f"{battle.options.max_rounds}")
    if battle.done:
        if not battle.events or battle.events[-1]["type"] != "end":
            raise InvariantError("decision", None, "the battle is over but the log does not "
                                 "end with an 'end' event")
        return
    decider = battle.current_agent
    c = by_id.get(decider) if decider is not None else None
    if c is None or c.out:
        raise InvariantError("decision", decider, "the deciding combatant is not in play")
    if mask is None and catalogue is not None:
        mask = catalogue.mask(battle)
    if mask is not None:
        if catalogue is not None and len(mask) != catalogue.n:
            raise InvariantError("decision", decider, f"mask of {len(mask)} entries for "
                                 f"{catalogue.n} actions")
        if not any(mask):
            raise InvariantError("decision", decider, f"all-zero action mask in phase "
                                 f"{battle.phase!r}")


# ---------------------------------------------------------------------------- events
def _check_roll(ev: dict, who: str | None) -> int:
    roll = ev.get("roll")
    if (not isinstance(roll, list) or len(roll) != 2
            or not all(isinstance(d, int) and 1 <= d <= 6 for d in roll)):
        raise InvariantError("check", who, f"{ev['type']} roll {roll!r} is not 2D")
    dms = ev.get("dms")
    if not isinstance(dms, dict) or not all(isinstance(v, int) for v in dms.values()):
        raise InvariantError("check", who, f"{ev['type']} dms {dms!r}")
    return sum(roll) + sum(dms.values())


def check_new_events(battle: Battle, start: int = 0) -> None:
    """Check the events ``battle.events[start:]`` (see the module docstring).

    ``start`` should be where a step's events begin (every ``apply`` appends a complete
    batch), so that each check sits in the same batch as its ``bonus_used`` event.
    """
    events = battle.events[start:]
    if not events:
        return
    try:
        json.dumps(events, allow_nan=False)
    except (TypeError, ValueError) as exc:
        bad = next((e for e in events if not _json_ok(e)), events[0])
        raise InvariantError("json", bad.get("actor"), f"event {bad!r} is not "
                             f"JSON-serialisable: {exc}") from None
    by_id = battle.by_id
    grid = battle.grid
    made_out = {e["actor"] for e in events if e["type"] == "out"} | {
        e["actor"] for e in events
        if e["type"] == "incapacitated" and not e["stays_until_group_ends"]}
    out = {c.id for c in battle.combatants if c.out} - made_out
    down = {c.id for c in battle.combatants if c.down} - {
        e["actor"] for e in events if e["type"] == "incapacitated"}
    held: dict[str, dict[str, int]] = {}  # bonus_used / penalty_used not yet spent
    last_round = None
    ends = [start + i for i, e in enumerate(events) if e["type"] == "end"]
    if ends and (len(ends) > 1 or ends[0] != len(battle.events) - 1 or not battle.done):
        raise InvariantError("end", None, f"'end' events at {ends} in a log of "
                             f"{len(battle.events)} (done={battle.done})")
    for ev in events:
        shape = check_event(ev)
        if shape is not None:
            raise InvariantError("event_shape", ev.get("actor"), shape)
        t = ev["type"]
        who = ev.get("actor")
        if t in ACTING_TYPES and who in out:
            raise InvariantError("out_acts", who, f"acts ({t}) while out of play")
        if t in CHECK_TYPES:
            total = _check_roll(ev, who)
            if total != ev["total"] or ev["effect"] != ev["total"] - TARGET_NUMBER:
                raise InvariantError("check", who, f"{t}: roll {ev['roll']} + dms "
                                     f"{ev['dms']} = {total}, but total {ev['total']}, "
                                     f"effect {ev['effect']} (R1.2)")
            mine = held.pop(who, {}) if t != "tactics" else {}
            dms = ev["dms"]
            for key, value, used in (("leadership_bonus", 1, "bonus_used"),
                                     ("leadership_penalty", -1, "penalty_used")):
                if key in dms and dms[key] != value:
                    raise InvariantError("leadership_bonus", who, f"{t} takes {key} "
                                         f"{dms[key]}; at most one, worth {value} (R7.3)")
                if (key in dms) != (mine.get(used, 0) == 1):
                    raise InvariantError("leadership_bonus", who, f"{t} dms {dms} after "
                                         f"{mine.get(used, 0)} {used} event(s) (R7.3)")
        elif t == "initiative":
            if ev["roll"] is None:
                expected = 12 + characteristic_dm(by_id[who].max_chars.get(
                    "DEX", by_id[who].chars["DEX"]))
                if not ev["ambush"] or ev["initiative"] != expected:
                    raise InvariantError("check", who, f"automatic initiative {ev!r} (R3.2)")
            elif _check_roll(ev, who) != ev["initiative"]:
                raise InvariantError("check", who, f"initiative {ev['initiative']} is not "
                                     f"roll {ev['roll']} + dms {ev['dms']} (R3.1)")
        elif t in ("bonus_used", "penalty_used"):
            mine = held.setdefault(who, {})
            mine[t] = mine.get(t, 0) + 1
            if mine[t] > 1:
                raise InvariantError("leadership_bonus", who, f"two {t} events before one "
                                     "check (R7.3)")
        elif t == "incapacitated":
            if who in down or who in out:
                raise InvariantError("out_acts", who, "incapacitated twice")
            down.add(who)
            if not ev["stays_until_group_ends"]:
                out.add(who)
        elif t == "out":
            if who not in down or who in out:
                raise InvariantError("out_acts", who, "'out' without being incapacitated, "
                                     "or twice")
            out.add(who)
        elif t == "aim" and not 1 <= ev["aim"] <= 6:
            raise InvariantError("aim", who, f"aim DM {ev['aim']} (R4.3: +1..+6)")
        elif t == "move":
            to = tuple(ev["to"])
            if ev["metres"] <= 0 or not grid.in_bounds(to) or grid.terrain(to) == WALL:
                raise InvariantError("move", who, f"move {ev!r} (R4.6, R8.1)")
        elif t == "round":
            last_round = ev["round"]
        elif t == "end" and ev["winner"] not in (None, *battle.side_names):
            raise InvariantError("end", None, f"winner {ev['winner']!r}")
        if t == "attack":
            _check_attack(ev, by_id, out)
        elif t == "leadership" and (ev["bonuses"] != max(0, ev["effect"])
                                    or ev["penalties"] != max(0, -ev["effect"])):
            raise InvariantError("leadership", who, f"effect {ev['effect']} gave "
                                 f"{ev['bonuses']} bonuses, {ev['penalties']} penalties")
    leftover = {k: v for k, v in held.items() if v}
    if leftover:
        raise InvariantError("leadership_bonus", next(iter(leftover)),
                             f"{leftover} without a check taking them (R7.3)")
    if last_round is not None and last_round != battle.round:
        raise InvariantError("round", None, f"last 'round' event says {last_round}, the "
                             f"battle is in round {battle.round}")


def _check_attack(ev: dict, by_id: dict[str, Any], out: set[str]) -> None:
    who, tid = ev["actor"], ev["target"]
    a, t = by_id.get(who), by_id.get(tid)
    if a is None or t is None or a.side == t.side:
        raise InvariantError("attack", who, f"attacks {tid!r}, not an enemy (R4.1)")
    if tid in out:
        raise InvariantError("attack", who, f"attacks {tid}, which is out of play")
    if ev["hit"] != (ev["effect"] >= 0):
        raise InvariantError("attack", who, f"hit={ev['hit']} with effect {ev['effect']}")
    dmg = ev["damage"]
    if dmg < 0 or (not ev["hit"] and dmg != 0) or (ev["hit"] and ev["damage_roll"] is None):
        raise InvariantError("attack", who, f"damage {dmg} (hit={ev['hit']}) (R6.1)")
    ammo = ev["ammo_left"]
    if ev["melee"] != (ammo is None) or (ammo is not None
                                         and not 0 <= ammo <= a.weapon.magazine):
        raise InvariantError("ammunition", who, f"ammo_left {ammo!r} after a "
                             f"{'melee' if ev['melee'] else 'ranged'} attack")
    if any(v < 0 for v in ev["target_after"].values()):
        raise InvariantError("characteristics", tid, f"target_after {ev['target_after']}")


def _json_ok(event: Any) -> bool:
    try:
        json.dumps(event, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True

