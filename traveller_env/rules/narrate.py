"""Readable text for the battle engine's events.

``narrate(event)`` turns one event dict of ``Battle.events`` into a sentence, e.g.
``"blue_0 aims at red_0 (+2)."`` or, for an attack, the whole check and damage roll::

    blue_0 attacks red_0 with autorifle: 2D [3, 5] +1 skill +0 DEX -2 range +2 aim = 9,
    Effect +1: hit, 3D [4, 2, 6] +1 Effect = 13 damage; red_0 now STR 7 DEX 8 END 0.

``narrate_log(events)`` does the same for a whole log. Every event type the engine emits has its
own sentence (see ``EVENT_TYPES``); an unknown type, or a known type with missing or malformed
fields, gets a generic description (``generic``) instead of an exception. Pure Python: no
imports beyond the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["EVENT_TYPES", "format_check", "generic", "narrate", "narrate_log"]

Event = Mapping[str, Any]

_STANCE_VERB = {"stand": "stands up", "crouch": "crouches", "prone": "goes prone"}
_STANCE_WORD = {"stand": "standing", "crouch": "crouched", "prone": "prone"}
_DM_LABEL = {"leadership_bonus": "leadership bonus", "leadership_penalty": "leadership penalty"}


def _signed(n: Any) -> str:
    """``+2``, ``-1``, ``+0``; non-integers are shown as they are."""
    return f"{n:+d}" if isinstance(n, int) and not isinstance(n, bool) else str(n)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def _metres(m: Any) -> str:
    return f"{m:g} m" if isinstance(m, int | float) else f"{m} m"


def _pos(p: Any) -> str:
    if isinstance(p, list | tuple) and len(p) == 2:
        return f"({p[0]}, {p[1]})"
    return str(p)


def format_check(roll: Iterable[int] | None, dms: Mapping[str, int], total: Any,
                 base: str = "2D") -> str:
    """``2D [3, 5] +1 skill +0 DEX -2 range = 9``: the dice, every DM by name, the total.

    ``roll`` ``None`` means no dice were rolled (an ambusher's automatic 12)."""
    head = f"{base} {list(roll)}" if roll is not None else "12 (automatic)"
    parts = [head] + [f"{_signed(v)} {_DM_LABEL.get(k, k)}" for k, v in dms.items()]
    return " ".join(parts) + f" = {total}"


def _effect(effect: Any) -> str:
    return f"Effect {_signed(effect)}"


# ---------------------------------------------------------------------------- one per type
def _initiative(e: Event) -> str:
    check = format_check(e["roll"], e.get("dms", {}), e["initiative"])
    if e.get("ambush"):
        return f"{e['actor']} is ready in ambush: Initiative {check}."
    return f"{e['actor']} rolls Initiative: {check}."


def _tactics(e: Event) -> str:
    check = format_check(e["roll"], e.get("dms", {}), e["total"])
    added = e.get("added", e["effect"])
    return (f"{e['actor']} makes a Tactics check for {e['unit']}: {check}, "
            f"{_effect(e['effect'])}: Initiative {_signed(added)} for every combatant of "
            f"{e['unit']}.")


def _round(e: Event) -> str:
    return f"Round {e['round']}."


def _simultaneous(e: Event) -> str:
    group = ", ".join(e["group"])
    return (f"{group} are tied at Initiative {e['initiative']} and DEX {e['DEX']}: they act one "
            "after another in scenario order.")


def _haste(e: Event) -> str:
    if e["haste"]:
        return (f"{e['actor']} acts hastily this round: Initiative {e['initiative']}, DM -1 on "
                "its checks.")
    return f"{e['actor']} takes its time this round (Initiative {e['initiative']})."


def _turn(e: Event) -> str:
    return f"{e['actor']}'s turn (round {e['round']}, Initiative {e['initiative']})."


def _move(e: Event) -> str:
    return f"{e['actor']} moves {_pos(e['from'])} -> {_pos(e['to'])} ({_metres(e['metres'])})."


def _stance(e: Event) -> str:
    verb = _STANCE_VERB.get(e["to"], f"takes the {e['to']} stance")
    before = _STANCE_WORD.get(e["from"], e["from"])
    return f"{e['actor']} {verb} (was {before})."


def _ready(e: Event, verb: str, done: str, pending: str) -> str:
    step = f"{e['progress']}/{e['needed']}"
    return f"{e['actor']} {verb} the {e['weapon']} ({step}): {done if e['done'] else pending}."


def _draw(e: Event) -> str:
    return _ready(e, "draws", "ready", "not ready yet")


def _reload(e: Event) -> str:
    return _ready(e, "reloads", "magazine full", "not finished yet")


def _aim(e: Event) -> str:
    return f"{e['actor']} aims at {e['target']} ({_signed(e['aim'])})."


def _aim_lost(e: Event) -> str:
    return f"{e['actor']} loses its aim at {e['target']}."


def _damage(e: Event) -> str:
    """``3D [4, 2, 6] +1 Effect -3 armour = 10 damage`` (the weapon's own modifier, which the
    event does not carry, is recovered from the result when the damage is above 0)."""
    dice = list(e["damage_roll"])
    effect, damage = e["effect"], e["damage"]
    protection = e.get("protection", 0) or 0
    parts = [f"{len(dice)}D {dice}"]
    if damage > 0:
        modifier = damage - sum(dice) - effect + protection
        if modifier:
            parts.append(_signed(modifier))
    parts.append(f"{_signed(effect)} Effect")
    if protection:
        parts.append(f"{_signed(-protection)} armour")
    text = " ".join(parts)
    return f"{text} = {damage} damage" if damage > 0 else f"{text}: no damage"


def _attack(e: Event) -> str:
    how = " in melee" if e.get("melee") else ""
    check = format_check(e["roll"], e.get("dms", {}), e["total"])
    head = (f"{e['actor']} attacks {e['target']}{how} with {e['weapon']}: {check}, "
            f"{_effect(e['effect'])}")
    if not e["hit"]:
        return f"{head}: miss."
    after = e.get("target_after") or {}
    state = " ".join(f"{k} {v}" for k, v in after.items())
    tail = f"; {e['target']} now {state}" if state else ""
    return f"{head}: hit, {_damage(e)}{tail}."


def _reaction(e: Event) -> str:
    who, att = e["actor"], e["attacker"]
    choice = e["reaction"]
    if choice == "none":
        return f"{who} does not react to {att}'s attack."
    verb = {"dodge": "dodges", "parry": "parries"}.get(choice, f"reacts ({choice}) to")
    return f"{who} {verb} {att}'s attack."


def _leadership(e: Event) -> str:
    check = format_check(e["roll"], e.get("dms", {}), e["total"])
    bonuses, penalties = e.get("bonuses", 0), e.get("penalties", 0)
    if bonuses:
        result = f"{_plural(bonuses, 'bonus', 'bonuses')} (+1) to hand out"
    elif penalties:
        result = f"the other side gets {_plural(penalties, 'penalty', 'penalties')} (-1) to impose"
    else:
        result = "no effect"
    return f"{e['actor']} gives orders (Leadership): {check}, {_effect(e['effect'])}: {result}."


def _bonus_granted(e: Event) -> str:
    return f"{e['actor']} directs {e['target']}: +1 on its next check."


def _penalty_imposed(e: Event) -> str:
    return (f"{e['actor']} hampers {e['target']} (after {e['leader']}'s failed orders): -1 on its "
            "next check.")


def _bonus_used(e: Event) -> str:
    return f"{e['actor']} uses its leadership bonus (+1) on its {e['check']} check."


def _penalty_used(e: Event) -> str:
    return f"{e['actor']} suffers its leadership penalty (-1) on its {e['check']} check."


def _lapse(e: Event) -> str:
    count = e["count"]
    if e["kind"] == "bonus":
        what = f"{e['actor']}'s unused leadership " + ("bonus lapses" if count == 1
                                                        else f"bonuses ({count}) lapse")
    else:
        what = ("The unused penalty" if count == 1 else f"The {count} unused penalties") + (
            f" from {e['actor']}'s orders " + ("lapses" if count == 1 else "lapse"))
    return f"{what} ({e['reason']})."


def _initiative_change(e: Event) -> str:
    when = {"current_round": "this round", "next_round": "next round"}.get(
        e["applies_to"], str(e["applies_to"]))
    return f"{e['actor']}: Initiative {_signed(e['change'])} {when} ({e['reason']})."


def _incapacitated(e: Event) -> str:
    state = e["state"]
    text = (f"{e['actor']} is killed by {e['by']}" if state == "dead"
            else f"{e['actor']} is knocked {state} by {e['by']}")
    if e.get("stays_until_group_ends"):
        text += " (it stays in play until its tied group has finished)"
    return text + "."


def _out(e: Event) -> str:
    return f"{e['actor']} drops out of the fight."


def _end_turn(e: Event) -> str:
    reason = e.get("reason", "chosen")
    if reason == "chosen":
        return f"{e['actor']} ends its turn."
    if reason == "budget spent":
        return f"{e['actor']}'s turn ends (actions spent)."
    return f"{e['actor']}'s turn ends ({reason})."


def _illegal_action(e: Event) -> str:
    return (f"{e['actor']} chose the illegal action {e['label']!r} ({e['reason']}): "
            "forfeited, the do-nothing default is taken instead.")


def _end(e: Event) -> str:
    rounds = _plural(e["round"], "round")
    reason, winner = e.get("reason"), e.get("winner")
    if winner is not None:
        return f"Battle over after {rounds}: victory for {winner}."
    if reason == "max_rounds":
        return f"Battle stopped after {rounds} (max_rounds reached): no winner."
    if reason == "all_out":
        return f"Battle over after {rounds}: no one is left able to fight (draw)."
    return f"Battle over after {rounds} ({reason}): no winner."


_NARRATORS: dict[str, Callable[[Event], str]] = {
    "initiative": _initiative, "tactics": _tactics, "round": _round,
    "simultaneous": _simultaneous, "haste": _haste, "turn": _turn, "move": _move,
    "stance": _stance, "draw": _draw, "reload": _reload, "aim": _aim, "aim_lost": _aim_lost,
    "attack": _attack, "reaction": _reaction, "leadership": _leadership,
    "bonus_granted": _bonus_granted, "penalty_imposed": _penalty_imposed,
    "bonus_used": _bonus_used, "penalty_used": _penalty_used, "lapse": _lapse,
    "initiative_change": _initiative_change, "incapacitated": _incapacitated, "out": _out,
    "end_turn": _end_turn, "illegal_action": _illegal_action, "end": _end,
}

#: The event types with a sentence of their own (every type ``battle.py`` emits).
EVENT_TYPES: tuple[str, ...] = tuple(_NARRATORS)


def generic(event: Mapping[str, Any]) -> str:
    """The fallback text for an event without a sentence of its own: its type and fields."""
    kind = event.get("type", "?")
    fields = []
    for k, v in event.items():
        if k == "type":
            continue
        try:
            shown = json.dumps(v, sort_keys=True, default=str)
        except (TypeError, ValueError):
            shown = repr(v)
        fields.append(f"{k}={shown}")
    return f"[{kind}] " + " ".join(fields) if fields else f"[{kind}]"


def narrate(event: Mapping[str, Any]) -> str | None:
    """One readable sentence for an engine event; ``None`` when ``event`` is not a mapping.

    Unknown event types, and known ones whose fields are missing or malformed, get the
    ``generic`` description; this function never raises on a mapping.
    """
    if not isinstance(event, Mapping):
        return None
    fn = _NARRATORS.get(event.get("type"))  # type: ignore[arg-type]
    if fn is not None:
        try:
            return fn(event)
        except Exception:  # a malformed event: describe it rather than fail
            pass
    try:
        return generic(event)
    except Exception:
        return f"[{event.get('type', '?')}]"


def narrate_log(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Narrate a whole event log, one string per event (non-mapping items are skipped)."""
    lines = []
    for e in events:
        text = narrate(e)
        if text is not None:
            lines.append(text)
    return lines
