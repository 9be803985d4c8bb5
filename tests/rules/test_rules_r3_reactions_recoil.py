"""Rules tests for R3.6 (reactions: dodge and parry) and R3.7 (recoil), the Initiative
costs that change the turn order (R3.4).

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import scripted
from rules_helpers import (
    FIRST,
    MISS,
    SECOND,
    _react_setup,
    duel,
    events,
    is_legal,
    last,
    legal,
    matches,
    turn_inits,
    turn_order,
)

from traveller_env.rules.battle import IllegalActionError


@pytest.mark.parametrize("skills, dm", [
    ({}, -1),
    ({"athletics.dexterity": 0}, -1),
    ({"athletics.dexterity": 1}, -1),
    ({"athletics.dexterity": 2}, -2),
    ({"athletics.dexterity": 3}, -3),
    ({"athletics.strength": 3}, -1),
])
def test_r3_6_dodge_minus_1_or_athletics_dexterity_level(skills, dm):
    b, dice = scripted(_react_setup(red_skills=skills), [FIRST, SECOND, (3, 3)])
    b.apply("attack:red_0")
    assert b.decision == ("reaction", "red_0")
    # Only reactions are possible while the attack waits.
    assert legal(b) == {"react:none", "react:dodge"}
    b.apply("react:dodge")
    e = last(b, "attack")
    assert e["reaction"] == "dodge"
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 1, "dodge": dm}
    assert e["total"] == 8 + dm and e["hit"] is False
    dice.assert_used_up()


def test_r3_6_no_reaction_no_dm_no_cost():
    b, dice = scripted(_react_setup(), [FIRST, SECOND, (3, 3), (1, 1, 1)])
    b.apply("attack:red_0")
    b.apply("react:none")
    e = last(b, "attack")
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 1} and e["hit"]
    assert not events(b, "initiative_change")
    dice.assert_used_up()


def test_r3_6_reactions_off_means_no_reaction_decision():
    b, dice = scripted(_react_setup(reactions=False), [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    assert b.decision == ("turn", "blue_0")
    assert last(b, "attack")["reaction"] == "none"
    dice.assert_used_up()


@pytest.mark.parametrize("red_weapon, red_skills, dm", [
    ("blade", {"melee.blade": 3}, -3),
    ("blade", {"melee.blade": 2}, -2),
    ("blade", {"melee.blade": 1}, -1),
    ("blade", {"melee.blade": 0}, -1),
    ("blade", {}, -1),
    ("unarmed", {"melee.unarmed": 2}, -2),
    ("unarmed", {}, -1),
])
def test_r3_6_parry_minus_melee_level_minimum_1(red_weapon, red_skills, dm):
    sc = _react_setup(red_skills=red_skills, blue_weapon="dagger", red_weapon=red_weapon,
                      blue_skills={"melee.blade": 1}, adjacent=True)
    b, dice = scripted(sc, [FIRST, SECOND, (4, 3)])
    b.apply("attack:red_0")
    assert legal(b) == {"react:none", "react:dodge", "react:parry"}
    b.apply("react:parry")
    e = last(b, "attack")
    assert e["reaction"] == "parry" and e["melee"]
    assert e["dms"] == {"skill": 1, "STR": 0, "parry": dm}
    assert e["total"] == 8 + dm and not e["hit"]
    dice.assert_used_up()


@pytest.mark.parametrize("blue_weapon, red_weapon, red_drawn, why", [
    ("autorifle", "blade", True, "only against melee"),
    ("dagger", "autorifle", True, "melee weapon"),
])
def test_r3_6_parry_legality(blue_weapon, red_weapon, red_drawn, why):
    sc = _react_setup(blue_weapon=blue_weapon, red_weapon=red_weapon, red_drawn=red_drawn,
                      blue_skills={"melee.blade": 1, "gun_combat.slug": 1}, adjacent=True)
    b, dice = scripted(sc, [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    assert b.decision == ("reaction", "red_0")
    assert b.why_illegal("react:parry") is not None
    assert is_legal(b, "react:dodge") and is_legal(b, "react:none")
    with pytest.raises(IllegalActionError):
        b.apply("react:parry")
    b.apply("react:dodge")
    dice.assert_used_up()


@pytest.mark.parametrize("red_weapon", ["dagger", "autorifle"])
def test_r3_6_no_weapon_drawn_parries_unarmed(red_weapon):
    """R3.6 ruling: with no weapon drawn the target may parry unarmed, with Melee (unarmed)
    (minimum 1)."""
    sc = _react_setup(blue_weapon="dagger", red_weapon=red_weapon, red_drawn=False,
                      blue_skills={"melee.blade": 1}, adjacent=True)
    sc["sides"][1]["combatants"][0]["skills"] = {"melee.unarmed": 2, "melee.blade": 3}
    b, dice = scripted(sc, [FIRST, SECOND, (4, 4)])
    b.apply("attack:red_0")
    assert b.why_illegal("react:parry") is None
    b.apply("react:parry")
    e = last(b, "attack")
    assert e["reaction"] == "parry" and e["dms"]["parry"] == -2  # unarmed 2, not blade 3
    dice.assert_used_up()


def test_r3_6_one_reaction_per_attack():
    b, dice = scripted(_react_setup(), [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    b.apply("react:dodge")
    assert b.decision == ("turn", "blue_0")
    assert not is_legal(b, "react:dodge")
    assert len(events(b, "reaction")) == 1
    dice.assert_used_up()


@pytest.mark.parametrize("reaction, breaks", [("dodge", True), ("none", False)])
def test_r3_6_reaction_costs_2_initiative_and_breaks_aim(reaction, breaks):
    # red_0 acts first and aims at blue_0; blue_0 then attacks red_0, which reacts after acting.
    b, dice = scripted(_react_setup(), [SECOND, FIRST, MISS])
    b.apply("aim:blue_0")
    b.apply("end_turn")
    b.apply("attack:red_0")
    b.apply(f"react:{reaction}")
    red = b.by_id["red_0"]
    if breaks:
        assert matches(last(b, "aim_lost"), {
            "type": "aim_lost", "actor": "red_0", "target": "blue_0"
        })
        assert red.aim_target is None
        assert matches(last(b, "initiative_change"), {
            "type": "initiative_change", "actor": "red_0", "change": -2, "reason": "reaction",
            "applies_to": "next_round"
        })
        assert red.init_mod_next == -2
    else:
        assert not events(b, "aim_lost") and not events(b, "initiative_change")
        assert (red.aim_target, red.aim_dm) == ("blue_0", 1)
    dice.assert_used_up()


@pytest.mark.parametrize("weapon, str_value, change", [
    ("rocket_launcher", 7, -2),   # STR 12 needed: DM +2 vs DM 0
    ("rocket_launcher", 10, -1),  # DM +2 vs +1
    ("rocket_launcher", 12, None),
    ("rocket_launcher", 15, None),
    ("laser_rifle", 7, -1),       # STR 9 needed: DM +1 vs 0
    ("laser_rifle", 9, None),
    ("autorifle", 1, None),       # no requirement
])
def test_r3_7_recoil_costs_initiative_next_round(weapon, str_value, change):
    skills = {"heavy_weapons.portable": 1, "gun_combat.energy": 1, "gun_combat.slug": 1}
    sc = duel(blue={"weapon": weapon, "skills": skills, "chars": {"STR": str_value}})
    b, dice = scripted(sc, [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    ch = events(b, "initiative_change")
    if change is None:
        assert ch == []
    else:
        assert len(ch) == 1
        assert matches(ch[0], {
            "type": "initiative_change", "actor": "blue_0", "change": change,
            "reason": "recoil", "applies_to": "next_round"
        })
    for _ in range(4):
        b.apply("end_turn")
    assert turn_inits(b, 1)["blue_0"] == 12
    assert turn_inits(b, 2)["blue_0"] == 12 + (change or 0)
    assert turn_inits(b, 3)["blue_0"] == 12
    dice.assert_used_up()


def test_r3_7_recoil_can_change_the_order():
    # blue_0 12 fires the rocket launcher with STR 7: 10 next round, behind red_0's 11.
    skills = {"heavy_weapons.portable": 1}
    sc = duel(blue={"weapon": "rocket_launcher", "skills": skills})
    b, dice = scripted(sc, [FIRST, (5, 6), MISS])
    b.apply("attack:red_0")
    for _ in range(5):
        b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_0", "red_0"]
    assert turn_order(b, 2) == ["red_0", "blue_0"]
    assert turn_order(b, 3) == ["blue_0", "red_0"]
    dice.assert_used_up()
