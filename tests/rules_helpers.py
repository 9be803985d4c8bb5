"""Helpers shared by the rules tests (``test_rules_r*.py``).

Conventions. Every rules test names the rule it checks (``test_r4_3_...`` checks R4.3 of
``docs/rules.md``) and feeds the engine exact dice (``ScriptedDice`` through
``conftest.scripted``), so that totals, DMs, damage, turn order and Initiative changes can be
asserted exactly. Unless a test says otherwise the scenarios have hastening and reactions off
(see ``conftest.scenario``), and every characteristic is 7 (DM 0), so a check's total is the
roll plus the DMs the test names.

Dice order at battle creation: one 2D Initiative roll per combatant in scenario order (none for
a prepared combatant in an ambush), then one 2D Tactics check per side with a tactician.
"""

from __future__ import annotations

from conftest import fighter, scenario

# Initiative rolls (DEX 7: DM 0).
FIRST, SECOND, THIRD = (6, 6), (1, 2), (1, 1)
MISS = (1, 1)  # a 2D attack roll that misses with any DM up to +5

# Blue acts first (Initiative 12), red second (2), for two-combatant battles.
BLUE_FIRST = [(6, 6), (1, 1)]

# A scenario-local weapon: 1D damage, Range 300 m (DM +1 up to 75 m), no recoil.
ZAPPER = {"skill": "gun_combat.slug", "damage": "1D", "range": 300, "magazine": 10}


def events(b, kind: str) -> list[dict]:
    return [e for e in b.events if e["type"] == kind]


events_of = events  # the same helper under a second name


def last(b, kind: str) -> dict:
    found = events(b, kind)
    assert found, f"no {kind!r} event"
    return found[-1]


def matches(event: dict, expected: dict) -> bool:
    """The event has (at least) the expected fields with the expected values; events may carry
    more fields than a test asks about."""
    return {k: event.get(k, "<missing>") for k in expected} == expected


def turn_order(b, rnd: int | None = None) -> list[str]:
    return [e["actor"] for e in events(b, "turn") if rnd is None or e["round"] == rnd]


def turn_inits(b, rnd: int) -> dict[str, int]:
    return {e["actor"]: e["initiative"] for e in events(b, "turn") if e["round"] == rnd}


def legal(b) -> set[str]:
    return {a.label for a in b.legal_actions()}


def is_legal(b, label: str) -> bool:
    return b.why_illegal(label) is None


def end_turns_until(b, agent: str, kind: str = "turn") -> None:
    """Everyone else ends its turn until ``agent`` must decide (a ``kind`` decision)."""
    for _ in range(50):
        if tuple(b.decision) == (kind, agent):
            return
        b.apply("end_turn")
    raise AssertionError(f"{agent} never got a {kind} decision")


def duel(blue=None, red=None, **kw) -> dict:
    """blue_0 at (2,2) and red_0 at (10,2): 12 m apart (autorifle: Range 300, band DM +1)."""
    return scenario([fighter((2, 2), **(blue or {}))], [fighter((10, 2), **(red or {}))], **kw)


def with_weapons(sc: dict, **weapons) -> dict:
    """The scenario dict ``sc`` with ``weapons`` as its scenario-local weapons."""
    sc["weapons"] = weapons
    return sc


def hit_for(damage: int) -> list[tuple[int, ...]]:
    """Attack + damage rolls that deal exactly ``damage`` (1..12) with ZAPPER (1D) at short
    range and skill 1 (DMs +2), no armour."""
    if damage <= 6:
        return [(3, 3), (damage,)]  # total 8, Effect 0
    return [(6, 6), (damage - 6,)]  # total 14, Effect 6


def _leader_scenario(n_allies=2, ally_at=(2, 3)):
    """blue_0 (Leadership 1) at (2,2), ``n_allies`` allies in a row from ``ally_at``, and red_0
    at (10,2)."""
    blue = [fighter((2, 2), skills={"gun_combat.slug": 1, "leadership": 1})]
    for i in range(n_allies):
        blue.append(fighter((ally_at[0] + i, ally_at[1])))
    return scenario(blue, [fighter((10, 2))])


def _react_setup(red_skills=None, reactions=True, blue_weapon="autorifle", red_weapon="autorifle",
                 red_drawn=True, blue_skills=None, adjacent=False):
    """blue_0 at (2,2) attacks red_0 at (10,2), or at (3,2) when ``adjacent``; reactions on."""
    red_pos = (3, 2) if adjacent else (10, 2)
    red = fighter(red_pos, weapon=red_weapon, drawn=red_drawn,
                  skills={"gun_combat.slug": 1} if red_skills is None else red_skills)
    blue = fighter((2, 2), weapon=blue_weapon,
                   skills={"gun_combat.slug": 1} if blue_skills is None else blue_skills)
    return scenario([blue], [red], reactions=reactions)


def _with_weapon(sc, name="derringer", **spec):
    """``sc`` with one scenario-local weapon ``name``: a 1D pistol, Range 10 m, a magazine of 1
    and no spare, overridden by ``spec``."""
    w = {"skill": "gun_combat.slug", "damage": "1D", "range": 10, "magazine": 1,
         "spare_magazines": 0}
    w.update(spec)
    sc["weapons"] = {name: w}
    return sc
