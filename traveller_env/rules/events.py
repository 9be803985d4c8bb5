"""The event log's vocabulary: every event kind, its fields (in log order) and the combatants
it touches.

The engine appends one JSON-serialisable dict per roll and per change to ``Battle.events``
(the log is the replay, the debugging aid and the evidence in rules tests;
docs/environment.md). This module is the one statement of that vocabulary:

* ``EVENT_KINDS`` maps each ``type`` to an ``EventKind``: its fields after ``type``, in the
  order the engine writes them, and which fields name the combatants whose state the event
  changed (``touches``; ``ALL`` for events that change everyone's);
* the engine (``Battle.emit``) stamps the combatants an event touches with the battle's
  ``version``, so caches (observation blocks, masks) key on versions;
* ``check_event(event)`` says what is wrong with an event's shape (tests and the invariant
  checker use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["ALL", "EVENT_KINDS", "EventKind", "check_event"]

ALL = ("*",)


class EventKind(NamedTuple):
    """One event type: ``fields`` after ``type`` in log order, ``touches`` (fields naming the
    combatants it changes, or ``ALL``), the rules it records and a one-line description."""

    fields: tuple[str, ...]
    touches: tuple[str, ...]
    rules: str
    doc: str


EVENT_KINDS: dict[str, EventKind] = {
    "initiative": EventKind(("actor", "roll", "dms", "initiative", "ambush"), ("actor",),
                            "R3.1 R3.2", "an Initiative roll (roll null: the ambush's 12)"),
    "tactics": EventKind(("actor", "unit", "roll", "dms", "total", "effect", "added"), ALL,
                         "R3.3", "a Tactics check whose Effect is added to a whole unit"),
    "round": EventKind(("round",), ALL, "R2.4", "a new round begins"),
    "haste": EventKind(("actor", "haste", "initiative"), ("actor",), "R3.5",
                       "a haste declaration"),
    "simultaneous": EventKind(("group", "initiative", "DEX"), (), "R2.5",
                              "a tied group takes its turns in scenario order"),
    "turn": EventKind(("actor", "initiative", "round"), ("actor",), "R2.3",
                      "a combatant's turn begins"),
    "end_turn": EventKind(("actor", "reason"), ("actor",), "R2.3", "a turn ends"),
    "move": EventKind(("actor", "from", "to", "metres"), ("actor",), "R4.6 R8.1",
                      "a Move action (metres: movement spent)"),
    "stance": EventKind(("actor", "from", "to"), ("actor",), "R4.4", "a change of stance"),
    "draw": EventKind(("actor", "weapon", "progress", "needed", "done"), ("actor",), "R4.5",
                      "a Minor action spent drawing"),
    "reload": EventKind(("actor", "weapon", "progress", "needed", "done"), ("actor",),
                        "R4.5", "a Minor action spent reloading"),
    "aim": EventKind(("actor", "target", "aim"), ("actor",), "R4.3",
                     "an aim action and the aim DM now held"),
    "aim_lost": EventKind(("actor", "target"), ("actor",), "R4.3", "an aim is broken"),
    "leadership": EventKind(("actor", "roll", "dms", "total", "effect", "bonuses",
                             "penalties"), ("actor",), "R4.2 R7.1 R7.4",
                            "a Leadership check and the bonuses or penalties it made"),
    "bonus_used": EventKind(("actor", "check"), ("actor",), "R7.3",
                            "a held bonus goes into a check"),
    "penalty_used": EventKind(("actor", "check"), ("actor",), "R7.3",
                              "a held penalty goes into a check"),
    "bonus_granted": EventKind(("actor", "target"), ("actor", "target"), "R7.1 R7.5",
                               "a leader hands a bonus to an ally"),
    "penalty_imposed": EventKind(("actor", "target", "leader"), ("actor", "target"),
                                 "R7.4 R7.5", "a penalty is imposed on an enemy"),
    "reaction": EventKind(("actor", "reaction", "attacker"), ("actor",), "R3.6",
                          "the target's reaction to an attack"),
    "attack": EventKind(("actor", "target", "weapon", "damage_dice", "melee", "range_m",
                         "actor_pos", "target_pos", "ammo_left", "reaction", "roll", "dms",
                         "total", "effect", "hit", "damage_roll", "damage", "protection",
                         "target_after"), ("actor", "target"), "R4.1 R5 R6",
                        "an attack resolved: dice, every DM by name, Effect and damage"),
    "incapacitated": EventKind(("actor", "by", "state", "stays_until_group_ends"),
                               ("actor",), "R6.3 R2.5", "a combatant goes down"),
    "out": EventKind(("actor",), ("actor",), "R2.5",
                     "a combatant downed within its tied group leaves play"),
    "lapse": EventKind(("actor", "kind", "count", "reason"), ("actor",), "R7.5",
                       "unused bonuses or penalties lapse"),
    "initiative_change": EventKind(("actor", "change", "reason", "applies_to", "initiative",
                                    "next_round_change"), ("actor",), "R3.4 R3.6 R3.7",
                                   "haste, a reaction or recoil changes Initiative"),
    "illegal_action": EventKind(("actor", "label", "reason"), ("actor",), "R2.3",
                                "an illegal choice replaced by the do-nothing default"),
    "end": EventKind(("round", "winner", "reason"), ALL, "R8.2", "the battle ends"),
}


def check_event(event: Any) -> str | None:
    """What is wrong with ``event``'s shape (unknown type, missing, extra or misordered
    fields), or ``None`` when it matches its kind."""
    if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
        return f"not an event (a dict with a string 'type'): {event!r}"
    kind = EVENT_KINDS.get(event["type"])
    if kind is None:
        return f"unknown event type {event['type']!r}; known: {', '.join(EVENT_KINDS)}"
    fields = tuple(event)[1:]
    if tuple(event)[:1] != ("type",) or fields != kind.fields:
        return (f"{event['type']} event fields {list(event)} differ from "
                f"{['type', *kind.fields]}")
    return None
