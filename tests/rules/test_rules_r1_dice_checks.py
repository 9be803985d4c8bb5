"""Rules tests for R1, dice and checks: R1.1 dice, R1.2 checks and Effect, R1.3
characteristic DMs, R1.4 skills, specialties and the unskilled DM.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import random

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import (
    FIRST,
    MISS,
    SECOND,
    THIRD,
    duel,
    events,
    last,
)

from traveller_env.rules.checks import (
    UNSKILLED_DM,
    characteristic_dm,
    roll_check,
    skill_dm,
    skill_level,
)
from traveller_env.rules.dice import Dice, ScriptedDice
from traveller_env.scenario import ScenarioError, build_battle, builtin_scenarios, load_scenario


def test_r1_1_nd_is_the_sum_of_n_six_sided_dice():
    d = Dice(123)
    seen = set()
    for n in (1, 2, 3, 5):
        for _ in range(300):
            r = d.roll(n)
            assert len(r) == n and all(1 <= x <= 6 for x in r)
            seen.update(r)
    assert seen == {1, 2, 3, 4, 5, 6}
    # The same seed gives the same dice.
    assert [Dice(7).roll(3) for _ in range(5)] == [Dice(7).roll(3) for _ in range(5)]
    a = Dice(7)
    assert [a.roll(3) for _ in range(5)] != [a.roll(3) for _ in range(5)]


def test_r1_1_damage_dice_are_summed():
    # A 3D weapon: the damage roll is three dice and damage is their sum (+ Effect 0).
    b, dice = scripted(duel(), [FIRST, SECOND, (3, 3), (2, 5, 6)])
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["effect"] == 0 and e["damage_roll"] == [2, 5, 6] and e["damage"] == 13
    dice.assert_used_up()


def _play_random(name: str, seed: int, choice_seed: int) -> list[dict]:
    b = build_battle(name, seed=seed)
    chooser = random.Random(choice_seed)
    for _ in range(5000):
        if b.done:
            break
        b.apply(chooser.choice(b.legal_actions()))
    return b.events


@pytest.mark.parametrize("name", builtin_scenarios())
def test_r1_1_all_randomness_comes_from_the_battle_dice(name):
    np = pytest.importorskip("numpy")
    state, np_state = random.getstate(), np.random.get_state()
    first = _play_random(name, seed=5, choice_seed=1)
    # Nothing drew from the global random generators ...
    assert random.getstate() == state
    after = np.random.get_state()
    assert after[0] == np_state[0] and (after[1] == np_state[1]).all() and after[2] == np_state[2]
    # ... and the seed alone decides every roll: same seed + same choices = same battle.
    assert _play_random(name, seed=5, choice_seed=1) == first
    rolls = [e["roll"] for e in first if e["type"] == "initiative"]
    other = [e["roll"] for e in _play_random(name, seed=6, choice_seed=1)
             if e["type"] == "initiative"]
    assert rolls != other


def test_r1_1_scripted_battle_uses_exactly_the_battle_dice():
    # Building a battle draws only the Initiative rolls from the battle's dice object.
    b, dice = scripted(duel(), [FIRST, SECOND])
    assert b.dice is dice
    dice.assert_used_up()


@pytest.mark.parametrize("roll, dms, total, effect", [
    ((4, 4), {}, 8, 0),
    ((4, 3), {}, 7, -1),
    ((1, 1), {"a": 3, "b": 2}, 7, -1),
    ((1, 1), {"a": 3, "b": 3}, 8, 0),
    ((6, 6), {"a": -2}, 10, 2),
    ((2, 3), {"x": -3}, 2, -6),
])
def test_r1_2_check_total_and_effect(roll, dms, total, effect):
    dice = ScriptedDice([roll])
    r, t, e = roll_check(dice, dms)
    assert (r, t, e) == (list(roll), total, effect)
    dice.assert_used_up()


@pytest.mark.parametrize("roll, hit", [((3, 3), True), ((3, 2), False), ((6, 6), True)])
def test_r1_2_attack_succeeds_on_8_or_more(roll, hit):
    # DMs: Gun Combat 1, DEX 0, range +1 = +2.
    rolls = [FIRST, SECOND, roll] + ([(1, 2, 3)] if hit else [])
    b, dice = scripted(duel(), rolls)
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 1}
    assert e["total"] == sum(roll) + 2
    assert e["effect"] == sum(roll) + 2 - 8
    assert e["hit"] is hit
    assert e["damage"] == (6 + e["effect"] if hit else 0)
    assert e["damage_roll"] == ([1, 2, 3] if hit else None)
    dice.assert_used_up()


R1_3_TABLE = {0: -3, 1: -2, 2: -2, 3: -1, 4: -1, 5: -1, 6: 0, 7: 0, 8: 0, 9: 1, 10: 1, 11: 1,
              12: 2, 13: 2, 14: 2, 15: 3, 16: 3, 20: 3, 99: 3}


@pytest.mark.parametrize("value, dm", sorted(R1_3_TABLE.items()))
def test_r1_3_characteristic_dm_table(value, dm):
    assert characteristic_dm(value) == dm


@pytest.mark.parametrize("dex, dm", [(1, -2), (2, -2), (3, -1), (5, -1), (6, 0), (8, 0),
                                     (9, 1), (11, 1), (12, 2), (14, 2), (15, 3)])
def test_r1_3_characteristic_dm_in_initiative_and_attacks(dex, dm):
    b, dice = scripted(duel(blue={"chars": {"DEX": dex}}), [FIRST, THIRD])
    assert last(b, "initiative")["actor"] == "red_0"
    assert events(b, "initiative")[0]["dms"] == {"DEX": dm}
    assert events(b, "initiative")[0]["initiative"] == 12 + dm
    assert b.attack_dms("blue_0", "red_0")["DEX"] == dm
    dice.assert_used_up()


def test_r1_3_dms_use_the_current_value_after_damage():
    # blue_0: DEX 9 (DM +1), END 1. red_0 acts first and hits for 3: END 1 -> 0, then 2 off DEX
    # (higher than STR 7): DEX 9 -> 7, DM 0 from then on.
    sc = duel(blue={"chars": {"DEX": 9, "END": 1}})
    b, dice = scripted(sc, [(1, 1), FIRST, (3, 3), (1, 1, 1), MISS])
    assert b.decision == ("turn", "red_0")
    assert b.attack_dms("blue_0", "red_0")["DEX"] == 1
    b.apply("attack:blue_0")
    assert last(b, "attack")["damage"] == 3
    assert b.by_id["blue_0"].chars["DEX"] == 7
    assert b.attack_dms("blue_0", "red_0")["DEX"] == 0
    b.apply("end_turn")
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"] == {"skill": 1, "DEX": 0, "range": 1}
    dice.assert_used_up()


@pytest.mark.parametrize("skills, skill, level", [
    ({"gun_combat.slug": 2}, "gun_combat.slug", 2),
    ({"gun_combat.slug": 0}, "gun_combat.slug", 0),
    ({"gun_combat.energy": 2}, "gun_combat.slug", 0),   # another specialty: level 0
    ({"gun_combat": 0}, "gun_combat.slug", 0),          # the base skill: level 0
    ({"gun_combat.slug": 3, "gun_combat.energy": 1}, "gun_combat.energy", 1),
    ({}, "gun_combat.slug", None),
    ({"melee.blade": 2}, "gun_combat.slug", None),
    ({"melee.blade": 2}, "melee.unarmed", 0),
    ({"heavy_weapons.portable": 1}, "heavy_weapons.portable", 1),
    ({"athletics.dexterity": 2}, "athletics.dexterity", 2),
    ({"athletics.strength": 3}, "athletics.dexterity", 0),
    ({"leadership": 2}, "leadership", 2),
    ({"leadership": 0}, "leadership", 0),
    ({"gun_combat.slug": 1}, "leadership", None),
    ({"tactics.military": 2}, "tactics.military", 2),
    ({"tactics.military": 2, "tactics.naval": 3}, "tactics", 3),   # base asked: best specialty
    ({"tactics": 0}, "tactics.military", 0),
    ({"tactics_x.military": 2}, "tactics", None),       # a different skill with a common prefix
])
def test_r1_4_skill_level_specialty_base_and_unskilled(skills, skill, level):
    assert skill_level(skills, skill) == level
    assert skill_dm(skills, skill) == (-3 if level is None else level)


@pytest.mark.parametrize("base", ["gun_combat", "melee", "heavy_weapons", "athletics",
                                  "tactics"])
def test_r1_4_a_base_skill_with_specialties_above_level_0_is_a_scenario_error(base):
    sc = scenario([fighter((0, 0), skills={base: 2})], [fighter((1, 0))])
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert err.value.path == "sides[0].combatants[0].skills"
    assert "name the specialty" in str(err.value) and base in str(err.value)


def test_r1_4_a_base_skill_at_level_0_and_a_skill_without_specialties_are_fine():
    sc = scenario([fighter((0, 0), skills={"gun_combat": 0, "leadership": 3})],
                  [fighter((1, 0))])
    assert load_scenario(sc).sides[0].combatants[0].skills["leadership"] == 3


@pytest.mark.parametrize("level", ["2", 2.0, True])
def test_r1_4_skill_levels_are_whole_numbers(level):
    sc = scenario([fighter((0, 0), skills={"gun_combat.slug": level})], [fighter((1, 0))])
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert err.value.path.startswith("sides[0].combatants[0].skills")


def test_r1_4_unskilled_dm_is_minus_3():
    assert UNSKILLED_DM == -3


@pytest.mark.parametrize("skills, dm", [
    ({"gun_combat.slug": 2}, 2),
    ({"gun_combat.energy": 3}, 0),
    ({"melee.blade": 3}, -3),
    ({}, -3),
])
def test_r1_4_attack_uses_skill_level_or_unskilled(skills, dm):
    b, dice = scripted(duel(blue={"skills": skills}), [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["dms"] == {"skill": dm, "DEX": 0, "range": 1}
    assert e["total"] == 2 + dm + 1
    dice.assert_used_up()
