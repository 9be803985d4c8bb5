"""Rules tests for R6, damage: R6.1 damage on a hit, R6.2 END first then STR or DEX,
R6.3 unconscious, dead and out of the fight.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import BLUE_FIRST, ZAPPER, events_of, hit_for, last, with_weapons


# ============================================================================ R6.1 damage
def test_r6_1_damage_is_dice_plus_effect_minus_armour():
    sc = scenario([fighter((0, 0))], [fighter((10, 0), armour="jack", chars={"END": 15})])
    battle, dice = scripted(sc, [*BLUE_FIRST, (5, 4), (2, 3, 4)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    # check: 9 + skill 1 + range 1 = 11, Effect 3; damage 3D = 9, + 3 - jack 1 = 11.
    assert ev["effect"] == 3 and ev["damage_roll"] == [2, 3, 4]
    assert ev["protection"] == 1 and ev["damage"] == 11
    assert battle.by_id["red_0"].chars["END"] == 4
    dice.assert_used_up()


def test_r6_1_damage_dice_modifier_counts():
    # autopistol 3D-3: 4+4+4-3 = 9, + Effect 0 - 0 = 9.
    sc = scenario([fighter((0, 0), weapon="autopistol")], [fighter((1, 0), chars={"END": 15})])
    battle, dice = scripted(sc, [*BLUE_FIRST, (3, 3), (4, 4, 4)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    assert ev["effect"] == 0 and ev["damage"] == 9
    assert battle.by_id["red_0"].chars["END"] == 6
    dice.assert_used_up()


def test_r6_1_damage_never_below_zero():
    sc = scenario([fighter((0, 0))], [fighter((10, 0), armour="combat_armour")])
    battle, dice = scripted(sc, [*BLUE_FIRST, (3, 3), (1, 1, 1)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    assert ev["hit"] and ev["damage"] == 0
    assert battle.by_id["red_0"].chars == {"STR": 7, "DEX": 7, "END": 7, "INT": 7, "EDU": 7,
                                           "SOC": 7}
    dice.assert_used_up()


def test_r6_1_miss_does_no_damage_and_rolls_no_damage_dice():
    sc = scenario([fighter((0, 0))], [fighter((10, 0))])
    battle, dice = scripted(sc, [*BLUE_FIRST, (2, 3)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    assert not ev["hit"] and ev["damage"] == 0 and ev["damage_roll"] is None
    dice.assert_used_up()


# ============================================================================ R6.2 END first
def zapper_battle(target_chars: dict, extra_rolls: list, max_rounds: int = 20):
    sc = with_weapons(scenario([fighter((0, 0), weapon="zapper")],
                               [fighter((5, 0), chars=target_chars), fighter((9, 9))],
                               max_rounds=max_rounds), zapper=ZAPPER)
    return scripted(sc, [(6, 6), (1, 1), (1, 2), *extra_rolls])


@pytest.mark.parametrize(
    ("chars", "damage", "after"),
    [
        ({"STR": 7, "DEX": 7, "END": 7}, 5, {"STR": 7, "DEX": 7, "END": 2}),   # END absorbs
        ({"STR": 7, "DEX": 7, "END": 7}, 7, {"STR": 7, "DEX": 7, "END": 0}),   # exactly END
        ({"STR": 5, "DEX": 8, "END": 4}, 10, {"STR": 5, "DEX": 2, "END": 0}),  # DEX higher
        ({"STR": 8, "DEX": 5, "END": 4}, 10, {"STR": 2, "DEX": 5, "END": 0}),  # STR higher
        ({"STR": 6, "DEX": 6, "END": 1}, 3, {"STR": 4, "DEX": 6, "END": 0}),   # tie: STR
        ({"STR": 3, "DEX": 2, "END": 1}, 5, {"STR": 0, "DEX": 1, "END": 0}),   # then the other
        ({"STR": 2, "DEX": 3, "END": 1}, 4, {"STR": 2, "DEX": 0, "END": 0}),
    ],
)
def test_r6_2_damage_overflows_to_higher_of_str_dex(chars, damage, after):
    battle, dice = zapper_battle(chars, hit_for(damage))
    battle.apply("attack:red_0")
    assert last(battle, "attack")["damage"] == damage
    red = battle.by_id["red_0"]
    assert {k: red.chars[k] for k in ("STR", "DEX", "END")} == after
    assert last(battle, "attack")["target_after"] == after
    dice.assert_used_up()


def test_r6_2_higher_of_str_dex_is_judged_at_the_moment_of_each_hit():
    # Hit 1 (4): END 1 -> 0, DEX 8 -> 5 (DEX higher). Hit 2 (2): STR 6 > DEX 5 now -> STR 4.
    rolls = [*hit_for(4), *hit_for(2)]
    battle, dice = zapper_battle({"STR": 6, "DEX": 8, "END": 1}, rolls)
    battle.apply("attack:red_0")
    assert battle.by_id["red_0"].chars["DEX"] == 5
    battle.apply("end_turn")  # blue_0 (Minor left)
    battle.apply("end_turn")  # red_1
    battle.apply("end_turn")  # red_0
    battle.apply("attack:red_0")  # round 2
    red = battle.by_id["red_0"]
    assert (red.chars["STR"], red.chars["DEX"], red.chars["END"]) == (4, 5, 0)
    dice.assert_used_up()


# ============================================================================ R6.3 out of fight
@pytest.mark.parametrize(
    ("chars", "damage", "state"),
    [
        ({"STR": 3, "DEX": 2, "END": 1}, 4, "unconscious"),  # STR 0, DEX 1
        ({"STR": 2, "DEX": 3, "END": 1}, 4, "unconscious"),  # DEX 0, STR 2
        ({"STR": 2, "DEX": 2, "END": 1}, 5, "dead"),         # all three 0
        ({"STR": 1, "DEX": 1, "END": 1}, 12, "dead"),        # overkill
    ],
)
def test_r6_3_unconscious_or_dead_and_out_of_the_fight(chars, damage, state):
    battle, dice = zapper_battle(chars, hit_for(damage))
    battle.apply("attack:red_0")
    inc = last(battle, "incapacitated")
    assert inc["actor"] == "red_0" and inc["state"] == state and inc["by"] == "blue_0"
    red = battle.by_id["red_0"]
    assert red.down and red.out and red.dead == (state == "dead")
    # Removed from play: not a target, not in the able list, never takes a turn.
    assert "out of the fight" in battle.why_illegal("aim:red_0")
    assert battle.able_ids() == ["blue_0", "red_1"]
    assert not battle.done
    battle.apply("end_turn")
    battle.apply("end_turn")  # red_1; then round 2 without red_0
    turns = [e["actor"] for e in events_of(battle, "turn")]
    assert turns == ["blue_0", "red_1", "blue_0"]
    assert "out of the fight" in battle.why_illegal("attack:red_0")
    dice.assert_used_up()


def test_r6_3_not_out_while_one_of_str_dex_and_end_remain():
    # END 0 and DEX 1 left, STR 5: still in the fight.
    battle, dice = zapper_battle({"STR": 5, "DEX": 8, "END": 1}, hit_for(8))
    battle.apply("attack:red_0")
    red = battle.by_id["red_0"]
    assert (red.chars["END"], red.chars["DEX"], red.chars["STR"]) == (0, 1, 5)
    assert not red.down and not red.out and not events_of(battle, "incapacitated")
    dice.assert_used_up()
