"""Rules tests for the Significant actions: R4.1 attack (ranged and melee: skill, DMs,
drawn, loaded, range, line of sight, targets, reach) and R4.2 the Leadership check.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import (
    FIRST,
    MISS,
    SECOND,
    _leader_scenario,
    _with_weapon,
    duel,
    is_legal,
    last,
)

from traveller_env.rules.battle import IllegalActionError


def test_r4_1_ranged_attack_dms_hit_damage_and_ammo():
    b, dice = scripted(duel(blue={"chars": {"DEX": 12}, "skills": {"gun_combat.slug": 2}}),
                       [FIRST, SECOND, (2, 2), (1, 2, 3)])
    assert b.by_id["blue_0"].ammo == 20
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["dms"] == {"skill": 2, "DEX": 2, "range": 1}
    assert (e["total"], e["effect"], e["hit"], e["damage"]) == (9, 1, True, 7)
    assert e["range_m"] == 12.0 and e["melee"] is False and e["weapon"] == "autorifle"
    assert b.by_id["blue_0"].ammo == 19
    assert b.by_id["red_0"].chars["END"] == 0
    dice.assert_used_up()


@pytest.mark.parametrize("weapon, skills, dm", [
    ("rocket_launcher", {"heavy_weapons.portable": 2}, 2),
    ("rocket_launcher", {"gun_combat.slug": 3}, -3),
    ("frag_grenade", {"athletics.dexterity": 1}, 1),
    ("frag_grenade", {"gun_combat.slug": 2}, -3),
    ("laser_rifle", {"gun_combat.energy": 2}, 2),
    ("laser_rifle", {"gun_combat.slug": 2}, 0),
])
def test_r4_1_skill_of_heavy_thrown_and_energy_weapons(weapon, skills, dm):
    b, dice = scripted(duel(blue={"weapon": weapon, "skills": skills, "chars": {"STR": 12}}),
                       [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"]["skill"] == dm
    dice.assert_used_up()


def test_r4_1_weapon_must_be_drawn():
    b, dice = scripted(duel(blue={"drawn": False}), [FIRST, SECOND, MISS])
    assert "not drawn" in b.why_illegal("attack:red_0")
    with pytest.raises(IllegalActionError):
        b.apply("attack:red_0")
    b.apply("draw")
    assert is_legal(b, "attack:red_0")
    b.apply("attack:red_0")
    dice.assert_used_up()


def test_r4_1_weapon_must_be_loaded():
    sc = _with_weapon(duel(blue={"weapon": "derringer"}))
    b, dice = scripted(sc, [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    assert b.by_id["blue_0"].ammo == 0
    b.apply("end_turn")
    b.apply("end_turn")
    assert b.decision == ("turn", "blue_0")
    assert "empty" in b.why_illegal("attack:red_0")
    assert b.why_illegal("reload") is not None  # no spare
    dice.assert_used_up()


@pytest.mark.parametrize("x, legal_, dm", [(1, True, 1), (26, True, -4), (27, False, None)])
def test_r4_1_target_within_4x_range(x, legal_, dm):
    # autopistol: Range 10 m. 26 squares = 39 m (<= 40), 27 squares = 40.5 m.
    sc = scenario([fighter((0, 0), weapon="autopistol")], [fighter((x, 0))], width=30)
    b, dice = scripted(sc, [FIRST, SECOND] + ([MISS] if legal_ else []))
    assert is_legal(b, "attack:red_0") is legal_
    if legal_:
        b.apply("attack:red_0")
        assert last(b, "attack")["dms"]["range"] == dm
    else:
        assert "range" in b.why_illegal("attack:red_0")
        with pytest.raises(IllegalActionError):
            b.apply("attack:red_0")
    dice.assert_used_up()


def test_r4_1_line_of_sight_needed():
    terrain = ["." * 20] * 10
    terrain[2] = "......#............."
    b, dice = scripted(duel(terrain=terrain), [FIRST, SECOND])
    assert "line of sight" in b.why_illegal("attack:red_0")
    assert "line of sight" in b.why_illegal("aim:red_0")
    dice.assert_used_up()


def test_r4_1_only_enemies_can_be_attacked():
    blue = [fighter((2, 2)), fighter((2, 4))]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [FIRST, SECOND, SECOND])
    assert b.why_illegal("attack:blue_1") is not None
    assert b.why_illegal("attack:blue_0") is not None
    assert b.why_illegal("attack:nobody") is not None
    dice.assert_used_up()


@pytest.mark.parametrize("red_pos, adjacent", [((3, 2), True), ((3, 3), True), ((1, 1), True),
                                               ((2, 3), True), ((4, 2), False),
                                               ((4, 4), False), ((2, 5), False)])
def test_r4_1_melee_needs_an_adjacent_target(red_pos, adjacent):
    sc = scenario([fighter((2, 2), weapon="dagger", skills={"melee.blade": 1})],
                  [fighter(red_pos)])
    b, dice = scripted(sc, [FIRST, SECOND] + ([MISS] if adjacent else []))
    assert is_legal(b, "attack:red_0") is adjacent
    if adjacent:
        b.apply("attack:red_0")
        assert b.by_id["blue_0"].ammo == 0  # no ammunition involved
    dice.assert_used_up()


@pytest.mark.parametrize("chars, dms", [
    ({"STR": 10, "DEX": 13}, {"DEX": 2}),
    ({"STR": 13, "DEX": 10}, {"STR": 2}),
    ({"STR": 4, "DEX": 2}, {"STR": -1}),
    ({"STR": 7, "DEX": 7}, {"STR": 0}),
])
def test_r4_1_melee_dms_better_of_str_and_dex_no_ranged_modifiers(chars, dms):
    terrain = ["." * 20] * 10
    terrain[2] = "..c................."
    sc = scenario([fighter((1, 1), weapon="blade", skills={"melee.blade": 2}, chars=chars)],
                  [fighter((2, 2), stance="prone")], terrain=terrain)
    hit = 8 + sum(dms.values()) >= 8
    b, dice = scripted(sc, [FIRST, SECOND, (3, 3)] + ([(2, 2)] if hit else []))
    b.apply("attack:red_0")
    e = last(b, "attack")
    # No range, cover or prone DMs in melee (R5.3).
    assert e["dms"] == {"skill": 2, **dms}
    assert e["melee"] and e["total"] == 8 + sum(dms.values())
    dice.assert_used_up()


def test_r4_2_leadership_check_uses_best_of_int_edu_soc():
    sc = _leader_scenario(n_allies=1)
    sc["sides"][0]["combatants"][0]["skills"] = {"leadership": 2}
    sc["sides"][0]["combatants"][0]["characteristics"].update({"INT": 5, "EDU": 12, "SOC": 9})
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (3, 3)])
    b.apply("leadership")
    e = last(b, "leadership")
    assert e["dms"] == {"skill": 2, "EDU": 2}
    assert (e["roll"], e["total"], e["effect"], e["bonuses"], e["penalties"]) == (
        [3, 3], 10, 2, 2, 0)
    # Significant action: no other Significant action, one Minor left.
    assert b.budget_left("blue_0") == (False, 1)
    dice.assert_used_up()


@pytest.mark.parametrize("chars, best", [
    ({"INT": 12, "EDU": 4, "SOC": 9}, 2),
    ({"INT": 4, "EDU": 4, "SOC": 15}, 3),
    ({"INT": 2, "EDU": 1, "SOC": 3}, -1),
    ({"INT": 9, "EDU": 10, "SOC": 11}, 1),
])
def test_r4_2_leadership_best_characteristic_dm(chars, best):
    sc = _leader_scenario(n_allies=1)
    sc["sides"][0]["combatants"][0]["characteristics"].update(chars)
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (3, 3)])
    b.apply("leadership")
    e = last(b, "leadership")
    assert e["dms"]["skill"] == 1
    assert sum(e["dms"].values()) == 1 + best and len(e["dms"]) == 2
    assert e["total"] == 6 + 1 + best
    dice.assert_used_up()


def test_r4_2_leadership_unskilled_is_minus_3():
    sc = _leader_scenario(n_allies=1)
    sc["sides"][0]["combatants"][0]["skills"] = {"gun_combat.slug": 1}
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (6, 6)])
    b.apply("leadership")
    e = last(b, "leadership")
    assert e["dms"] == {"skill": -3, "INT": 0}
    assert (e["total"], e["effect"], e["bonuses"]) == (9, 1, 1)
    dice.assert_used_up()
