"""Rules tests for R5 (ranged attack modifiers), R6 (damage), R7 (leadership) and R8 (map, end
of combat, scenario rules), one or more per rule, with scripted dice for exact totals.

Conventions: ``scenario`` (conftest) turns hastening and reactions off, so creating a battle
rolls one 2D Initiative per combatant in scenario order and nothing else unless someone has
Tactics. All characteristics default to 7 (DM 0), so a check's total is the roll plus the DMs
named in each test.
"""

from __future__ import annotations

import math

import pytest
from conftest import fighter, scenario, scripted

from traveller_env.rules.battle import IllegalActionError, range_dm
from traveller_env.rules.grid import GridMap
from traveller_env.scenario import ScenarioError, build_battle, load_scenario

# Blue acts first (Initiative 12), red second (2), for two-combatant battles.
BLUE_FIRST = [(6, 6), (1, 1)]

# Scenario-local weapons whose range bands fall exactly on square distances (1.5 m each).
GUN6 = {"skill": "gun_combat.slug", "damage": "1D", "range": 6, "magazine": 10}
GUN30 = {"skill": "gun_combat.slug", "damage": "1D", "range": 30, "magazine": 10}
ZAPPER = {"skill": "gun_combat.slug", "damage": "1D", "range": 300, "magazine": 10}


def with_weapons(sc: dict, **weapons) -> dict:
    sc["weapons"] = weapons
    return sc


def events_of(battle, kind: str) -> list[dict]:
    return [e for e in battle.events if e["type"] == kind]


def last(battle, kind: str) -> dict:
    return events_of(battle, kind)[-1]


def check_total(event: dict) -> int:
    return sum(event["roll"]) + sum(event["dms"].values())


# ============================================================================ R5.1 range bands
@pytest.mark.parametrize(
    ("squares", "metres", "expected"),
    [
        (1, 1.5, 1),     # exactly 1/4 Range
        (2, 3.0, 0),     # just beyond 1/4 Range
        (4, 6.0, 0),     # exactly Range
        (5, 7.5, -2),    # just beyond Range
        (8, 12.0, -2),   # exactly 2x Range
        (9, 13.5, -4),   # just beyond 2x Range
        (16, 24.0, -4),  # exactly 4x Range
    ],
)
def test_r5_1_range_band_boundaries(squares, metres, expected):
    sc = with_weapons(scenario([fighter((0, 0), weapon="gun6")], [fighter((squares, 0))],
                               width=30), gun6=GUN6)
    battle, dice = scripted(sc, BLUE_FIRST)
    assert battle.distance_m("blue_0", "red_0") == pytest.approx(metres)
    assert battle.attack_dms("blue_0", "red_0")["range"] == expected
    assert battle.why_illegal("attack:red_0") is None
    dice.assert_used_up()


def test_r5_1_beyond_four_times_range_is_no_attack():
    # 17 squares = 25.5 m, just beyond 4 x 6 m.
    sc = with_weapons(scenario([fighter((0, 0), weapon="gun6")], [fighter((17, 0))], width=30),
                      gun6=GUN6)
    battle, dice = scripted(sc, BLUE_FIRST)
    assert range_dm(25.5, 6) is None
    reason = battle.why_illegal("attack:red_0")
    assert reason is not None and "beyond" in reason
    with pytest.raises(IllegalActionError):
        battle.apply("attack:red_0")
    dice.assert_used_up()


def test_r5_1_range_is_euclidean_centre_to_centre():
    # Range 30: 1/4 Range = 7.5 m. Offset (3, 4) is exactly 5 squares = 7.5 m (DM +1);
    # offset (4, 4) is 8.49 m (DM +0), though only 4 squares away by king moves.
    sc = with_weapons(scenario([fighter((0, 0), weapon="gun30")],
                               [fighter((3, 4)), fighter((4, 5))]), gun30=GUN30)
    sc["sides"][0]["combatants"].append(fighter((0, 1), weapon="gun30"))
    battle, dice = scripted(sc, [(6, 6), (5, 5), (1, 1), (1, 2)])
    assert battle.distance_m("blue_0", "red_0") == pytest.approx(7.5)
    assert battle.attack_dms("blue_0", "red_0")["range"] == 1
    assert battle.distance_m("blue_1", "red_1") == pytest.approx(1.5 * math.hypot(4, 4))
    assert battle.attack_dms("blue_1", "red_1")["range"] == 0
    dice.assert_used_up()


def test_r5_1_range_dm_enters_the_attack_total():
    # 16 squares = 24 m = 4x Range: DM -4. Roll 12 + skill 1 - 4 = 9: hit, Effect 1.
    sc = with_weapons(scenario([fighter((0, 0), weapon="gun6")], [fighter((16, 0))], width=30),
                      gun6=GUN6)
    battle, dice = scripted(sc, [*BLUE_FIRST, (6, 6), (3,)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    assert ev["dms"] == {"skill": 1, "DEX": 0, "range": -4}
    assert ev["total"] == 9 and ev["effect"] == 1 and ev["hit"]
    assert ev["damage"] == 3 + 1
    dice.assert_used_up()


# ============================================================================ R5.2 aiming
def test_r5_2_aim_adds_one_per_consecutive_aim_capped_at_plus_6():
    sc = scenario([fighter((0, 0))], [fighter((10, 0))])
    battle, dice = scripted(sc, [*BLUE_FIRST, (1, 1), (1, 1, 1)])
    for _ in range(3):  # round 1: three Minor actions spent aiming
        battle.apply("aim:red_0")
    assert [e["aim"] for e in events_of(battle, "aim")] == [1, 2, 3]
    battle.apply("end_turn")  # red
    for _ in range(3):  # round 2: aim carries over, +6 reached
        battle.apply("aim:red_0")
    battle.apply("end_turn")  # red
    battle.apply("aim:red_0")  # round 3: still legal at +6, stays +6
    assert events_of(battle, "aim")[-1]["aim"] == 6
    assert battle.attack_dms("blue_0", "red_0")["aim"] == 6
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    # roll 2 + skill 1 + DEX 0 + range +1 (15 m <= 75 m) + aim 6 = 10
    assert ev["dms"]["aim"] == 6
    assert ev["total"] == 10 and ev["hit"]
    dice.assert_used_up()


def test_r5_2_no_aim_no_aim_dm():
    sc = scenario([fighter((0, 0))], [fighter((10, 0))])
    battle, dice = scripted(sc, BLUE_FIRST)
    assert "aim" not in battle.attack_dms("blue_0", "red_0")
    battle.apply("aim:red_0")
    assert battle.attack_dms("blue_0", "red_0")["aim"] == 1
    dice.assert_used_up()


# ============================================================================ R5.3 cover, prone
ROW = ".........."


def cover_case(target_pos, stance, cover_squares, shooter_pos=(0, 1), height=3):
    rows = [list(ROW) for _ in range(height)]
    for x, y in cover_squares:
        rows[y][x] = "c"
    terrain = ["".join(r) for r in rows]
    sc = scenario([fighter(shooter_pos)], [fighter(target_pos, stance=stance)], width=10,
                  height=height, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    dice.assert_used_up()
    return battle.attack_dms("blue_0", "red_0")


@pytest.mark.parametrize(
    ("stance", "cover", "expected"),
    [
        ("crouch", [(4, 1)], {"cover": -2}),                  # low cover next to target, on line
        ("prone", [(4, 1)], {"cover": -2, "prone": -1}),      # both: -3
        ("prone", [], {"prone": -1}),                         # prone in the open
        ("stand", [(4, 1)], {}),                              # standing: cover does not count
        ("crouch", [], {}),                                   # crouched in the open
        ("crouch", [(3, 1)], {}),                             # cover not adjacent to the target
        ("crouch", [(4, 0), (4, 2)], {}),                     # adjacent but off the line
        ("crouch", [(6, 1)], {}),                             # behind the target
    ],
)
def test_r5_3_cover_and_prone_dms(stance, cover, expected):
    dms = cover_case((5, 1), stance, cover)
    got = {k: v for k, v in dms.items() if k in ("cover", "prone")}
    assert got == expected
    assert sum(got.values()) == sum(expected.values())


def test_r5_3_cover_square_touched_only_at_a_corner_gives_no_cover():
    # Segment (0,0)->(5,5) runs along the diagonal: it touches (4,5) and (5,4) only at a
    # corner, but crosses (4,4).
    assert cover_case((5, 5), "crouch", [(4, 5), (5, 4)], shooter_pos=(0, 0), height=6) == \
        {"skill": 1, "DEX": 0, "range": 1}
    assert cover_case((5, 5), "crouch", [(4, 4)], shooter_pos=(0, 0), height=6)["cover"] == -2


def test_r5_3_cover_and_prone_total_minus_3_in_the_check():
    terrain = [ROW, "....c.....", ROW]
    sc = scenario([fighter((0, 1))], [fighter((5, 1), stance="prone")], width=10, height=3,
                  terrain=terrain)
    battle, dice = scripted(sc, [*BLUE_FIRST, (4, 4)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    # 8 + skill 1 + range 1 - cover 2 - prone 1 = 7: a miss that would hit without -3.
    assert ev["total"] == 7 and not ev["hit"]
    dice.assert_used_up()


def test_r5_3_neither_cover_nor_prone_applies_to_melee():
    # Prone target behind low cover, attacked in melee from the adjacent square.
    terrain = [ROW, "....c.....", ROW]
    sc = scenario([fighter((4, 0), weapon="blade", skills={"melee.blade": 1})],
                  [fighter((5, 1), stance="prone")], width=10, height=3, terrain=terrain)
    battle, dice = scripted(sc, [*BLUE_FIRST, (3, 4), (1, 1)])
    dms = battle.attack_dms("blue_0", "red_0")
    assert "cover" not in dms and "prone" not in dms
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    assert ev["melee"] and ev["dms"] == {"skill": 1, "STR": 0}
    assert ev["total"] == 8 and ev["hit"]
    dice.assert_used_up()


# ============================================================================ R5.4 unskilled
@pytest.mark.parametrize(
    ("weapon", "skills", "expected"),
    [
        ("autorifle", {}, -3),                        # no Gun Combat at all
        ("autorifle", {"leadership": 3}, -3),         # other skills do not help
        ("autorifle", {"gun_combat.energy": 2}, 0),   # another specialty: level 0 (R1.4)
        ("autorifle", {"gun_combat.slug": 2}, 2),
        ("blade", {}, -3),                            # unskilled melee too
    ],
)
def test_r5_4_unskilled_attack_dm_minus_3(weapon, skills, expected):
    sc = scenario([fighter((0, 0), weapon=weapon, skills=skills)], [fighter((1, 0))])
    battle, dice = scripted(sc, BLUE_FIRST)
    assert battle.attack_dms("blue_0", "red_0")["skill"] == expected
    dice.assert_used_up()


def test_r5_4_unskilled_dm_in_the_attack_total():
    sc = scenario([fighter((0, 0), skills={})], [fighter((10, 0))])
    battle, dice = scripted(sc, [*BLUE_FIRST, (5, 5), (1, 1, 1)])
    battle.apply("attack:red_0")
    ev = last(battle, "attack")
    # 10 - 3 (unskilled) + 1 (short range) = 8: a hit with Effect 0.
    assert ev["dms"]["skill"] == -3
    assert ev["total"] == 8
    dice.assert_used_up()


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
def hit_for(damage: int) -> list[tuple[int, ...]]:
    """Attack + damage rolls that deal exactly ``damage`` (1..12) with ZAPPER (1D) at short
    range and skill 1 (DMs +2), no armour."""
    if damage <= 6:
        return [(3, 3), (damage,)]  # total 8, Effect 0
    return [(6, 6), (damage - 6,)]  # total 14, Effect 6


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


# ============================================================================ R7 leadership
def leader(position, leadership=2, **kw):
    return fighter(position, skills={"leadership": leadership, "gun_combat.slug": 1}, **kw)


@pytest.mark.parametrize(
    ("roll", "effect", "bonuses", "penalties"),
    [((5, 4), 3, (3, 0), 0), ((6, 6), 6, (6, 0), 0), ((3, 4), 1, (1, 0), 0),
     ((3, 3), 0, (0, 0), 0), ((2, 2), -2, (0, 0), 2)],
)
def test_r7_1_bonus_count_equals_effect(roll, effect, bonuses, penalties):
    sc = scenario([leader((0, 0)), fighter((1, 0))], [fighter((5, 5))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (2, 2), roll])
    battle.apply("leadership")
    ev = last(battle, "leadership")
    assert ev["dms"] == {"skill": 2, "INT": 0}
    assert ev["effect"] == effect and ev["total"] == sum(roll) + 2
    assert (ev["bonuses"], ev["penalties"]) == (bonuses[0], penalties)
    assert battle.held_pools("blue_0") == bonuses
    assert battle.held_pools("red_0") == (0, penalties)
    dice.assert_used_up()


def test_r7_1_bonuses_go_to_allies_only_not_to_the_leader():
    sc = scenario([leader((0, 0)), fighter((1, 0)), fighter((2, 0))], [fighter((5, 5))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (1, 2), (2, 2), (3, 4)])  # Effect 1
    battle.apply("leadership")
    assert "own side" in battle.why_illegal("direct:blue_0")
    assert "own side" in battle.why_illegal("direct:red_0")
    assert battle.why_illegal("direct:blue_1") is None
    battle.apply("direct:blue_1")
    assert battle.by_id["blue_1"].bonus
    assert last(battle, "bonus_granted") == {"type": "bonus_granted", "actor": "blue_0",
                                             "target": "blue_1"}
    # The one bonus is spent: no more to hand out.
    assert "no leadership bonus" in battle.why_illegal("direct:blue_2")
    assert battle.held_pools("blue_0") == (0, 0)
    dice.assert_used_up()


def test_r7_1_bonus_adds_plus_1_to_the_receivers_attack():
    sc = scenario([leader((0, 0)), fighter((1, 0))], [fighter((10, 0))])
    # Initiative: blue_0 12, blue_1 11, red_0 2.
    battle, dice = scripted(sc, [(6, 6), (5, 6), (1, 1), (3, 4), (3, 2), (1, 1, 1)])
    battle.apply("leadership")
    battle.apply("direct:blue_1")
    battle.apply("end_turn")
    battle.apply("attack:red_0")  # blue_1
    ev = last(battle, "attack")
    # roll 5 + skill 1 + range 1 + bonus 1 = 8: a hit only thanks to the bonus.
    assert ev["dms"]["leadership_bonus"] == 1 and ev["total"] == 8 and ev["hit"]
    assert last(battle, "bonus_used") == {"type": "bonus_used", "actor": "blue_1",
                                          "check": "attack"}
    assert not battle.by_id["blue_1"].bonus
    dice.assert_used_up()


def test_r7_1_held_bonus_used_by_the_next_check_even_a_leadership_check():
    sc = scenario([leader((0, 0)), leader((1, 0))], [fighter((10, 0))])
    battle, dice = scripted(sc, [(6, 6), (5, 6), (1, 1), (3, 4), (3, 2)])
    battle.apply("leadership")
    battle.apply("direct:blue_1")
    battle.apply("end_turn")
    battle.apply("leadership")  # blue_1's next check
    ev = last(battle, "leadership")
    assert ev["dms"] == {"skill": 2, "INT": 0, "leadership_bonus": 1}
    assert ev["total"] == 5 + 3 and ev["effect"] == 0
    assert last(battle, "bonus_used") == {"type": "bonus_used", "actor": "blue_1",
                                          "check": "leadership"}
    assert not battle.by_id["blue_1"].bonus
    dice.assert_used_up()


@pytest.mark.parametrize(
    ("receiver", "radios", "comms", "legal"),
    [
        ((20, 0), (False, False), 30, True),    # exactly 30 m
        ((21, 0), (False, False), 30, False),   # 31.5 m
        ((21, 0), (True, True), 30, True),      # both radio: any distance
        ((39, 9), (True, True), 30, True),
        ((21, 0), (True, False), 30, False),    # only one radio
        ((21, 0), (False, True), 30, False),
        ((10, 0), (False, False), 15, True),    # scenario's comms_range_m: 15 m
        ((11, 0), (False, False), 15, False),
    ],
)
def test_r7_2_leader_must_communicate_with_receiver(receiver, radios, comms, legal):
    sc = scenario([leader((0, 0), radio=radios[0]), fighter(receiver, radio=radios[1])],
                  [fighter((0, 9))], width=40, comms_range_m=comms)
    battle, dice = scripted(sc, [(6, 6), (1, 1), (2, 2), (5, 4)])
    battle.apply("leadership")
    reason = battle.why_illegal("direct:blue_1")
    if legal:
        assert reason is None
    else:
        assert "communication range" in reason
    dice.assert_used_up()


def test_r7_3_receiver_holds_at_most_one_bonus_and_one_penalty():
    # blue_0 and blue_2 lead; blue_3 fails leadership (penalties for red to impose on blue).
    sc = scenario([leader((0, 0)), fighter((1, 0)), leader((2, 0)), leader((3, 0))],
                  [fighter((5, 5))])
    # Initiative: blue_0 12, blue_2 11, blue_3 10, red_0 9, blue_1 2.
    rolls = [(6, 6), (1, 1), (5, 6), (5, 5), (4, 5),
             (5, 4),   # blue_0 leadership: 11, Effect 3
             (5, 4),   # blue_2 leadership: Effect 3
             (1, 1)]   # blue_3 leadership: 4, Effect -4
    battle, dice = scripted(sc, rolls)
    battle.apply("leadership")
    battle.apply("direct:blue_1")
    assert "already holds a bonus" in battle.why_illegal("direct:blue_1")  # same leader
    battle.apply("end_turn")
    battle.apply("leadership")  # blue_2
    assert "already holds a bonus" in battle.why_illegal("direct:blue_1")  # another leader
    battle.apply("end_turn")
    battle.apply("leadership")  # blue_3
    battle.apply("end_turn")
    assert battle.decision.agent == "red_0"
    battle.apply("hamper:blue_1")
    assert "already holds a penalty" in battle.why_illegal("hamper:blue_1")
    assert battle.why_illegal("hamper:blue_0") is None
    dice.assert_used_up()


def test_r7_3_bonus_and_penalty_held_together_cancel():
    sc = scenario([leader((0, 0)), fighter((1, 0)), fighter((2, 0), skills={})],
                  [fighter((10, 0))])
    # Initiative: blue_0 12, blue_2 11, red_0 10, blue_1 2.
    rolls = [(6, 6), (1, 1), (5, 6), (5, 5),
             (5, 4),          # blue_0 leadership: Effect 3
             (2, 3),          # blue_2 leadership unskilled: 5 - 3 = 2, Effect -6
             (3, 3), (1, 1, 1)]  # blue_1 attack
    battle, dice = scripted(sc, rolls)
    battle.apply("leadership")
    battle.apply("direct:blue_1")
    battle.apply("end_turn")
    battle.apply("leadership")  # blue_2
    assert last(battle, "leadership")["penalties"] == 6
    battle.apply("end_turn")
    battle.apply("hamper:blue_1")  # red_0, in its own turn
    battle.apply("end_turn")
    battle.apply("attack:red_0")  # blue_1
    ev = last(battle, "attack")
    assert ev["dms"]["leadership_bonus"] == 1 and ev["dms"]["leadership_penalty"] == -1
    assert ev["total"] == 6 + 1 + 1  # roll + skill + range: the two cancel
    assert [e["type"] for e in battle.events if e["type"].endswith("_used")] == \
        ["bonus_used", "penalty_used"]
    b1 = battle.by_id["blue_1"]
    assert not b1.bonus and not b1.penalty
    dice.assert_used_up()


def test_r7_4_negative_effect_gives_penalties_to_the_other_side():
    # An unskilled leader (DM -3, still legal) fails; red imposes the penalties in its own
    # turn, from far beyond comms range; blue cannot impose them on itself.
    sc = scenario([fighter((0, 0), skills={}), fighter((1, 0))], [fighter((39, 9))], width=40)
    # Initiative: blue_0 12, red_0 10, blue_1 2.
    battle, dice = scripted(sc, [(6, 6), (1, 1), (5, 5), (3, 3), (3, 3)])
    assert battle.why_illegal("leadership") is None
    battle.apply("leadership")
    ev = last(battle, "leadership")
    assert ev["dms"] == {"skill": -3, "INT": 0}
    assert ev["effect"] == -5 and ev["penalties"] == 5 and ev["bonuses"] == 0
    assert battle.held_pools("blue_0") == (0, 0)
    assert battle.why_illegal("hamper:blue_1") is not None  # not by blue
    assert battle.why_illegal("direct:blue_1") is not None  # penalties are no bonuses
    battle.apply("end_turn")
    assert battle.held_pools("red_0") == (0, 5)
    assert "other side" in battle.why_illegal("hamper:red_0")
    battle.apply("hamper:blue_1")
    assert last(battle, "penalty_imposed") == {"type": "penalty_imposed", "actor": "red_0",
                                               "target": "blue_1", "leader": "blue_0"}
    assert battle.held_pools("red_0") == (0, 4)
    battle.apply("end_turn")
    battle.apply("attack:red_0")  # blue_1: 6 + skill 1 + range (58 m <= 75 m) 1 - 1 = 7
    ev = last(battle, "attack")
    assert ev["dms"]["leadership_penalty"] == -1 and ev["total"] == 7 and not ev["hit"]
    assert last(battle, "penalty_used")["actor"] == "blue_1"
    dice.assert_used_up()


def test_r7_4_effect_zero_gives_nothing():
    sc = scenario([leader((0, 0)), fighter((1, 0))], [fighter((5, 5))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (2, 2), (3, 3)])
    battle.apply("leadership")
    assert last(battle, "leadership")["effect"] == 0
    assert battle.held_pools("blue_0") == (0, 0) and battle.held_pools("red_0") == (0, 0)
    assert battle.why_illegal("direct:blue_1") is not None
    dice.assert_used_up()


def test_r7_5_pools_lapse_when_the_leaders_next_turn_begins():
    sc = scenario([leader((0, 0)), fighter((1, 0))], [fighter((5, 5))])
    # Initiative: blue_0 12, red_0 10, blue_1 2.
    battle, dice = scripted(sc, [(6, 6), (1, 1), (5, 5), (5, 4)])
    battle.apply("leadership")
    battle.apply("direct:blue_1")
    battle.apply("end_turn")
    battle.apply("end_turn")  # red_0
    assert battle.held_pools("blue_0") == (2, 0)  # still there until blue_0's next turn
    battle.apply("end_turn")  # blue_1 (keeps its bonus: it made no check)
    assert battle.round == 2 and battle.decision.agent == "blue_0"
    lapse = last(battle, "lapse")
    assert lapse == {"type": "lapse", "actor": "blue_0", "kind": "bonus", "count": 2,
                     "reason": "leader's next turn"}
    assert battle.held_pools("blue_0") == (0, 0)
    assert battle.by_id["blue_1"].bonus  # a handed-out bonus sits until the next check
    dice.assert_used_up()


def test_r7_5_penalties_lapse_at_the_leaders_next_turn():
    sc = scenario([leader((0, 0)), fighter((1, 0))], [fighter((5, 5))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (5, 5), (1, 2)])  # Effect -3
    battle.apply("leadership")
    battle.apply("end_turn")
    assert battle.held_pools("red_0") == (0, 3)
    battle.apply("end_turn")  # red_0 imposes nothing
    battle.apply("end_turn")  # blue_1
    assert last(battle, "lapse")["kind"] == "penalty"
    assert battle.held_pools("red_0") == (0, 0)
    dice.assert_used_up()


@pytest.mark.parametrize("kind", ["bonus", "penalty"])
def test_r7_5_pools_lapse_when_the_leader_is_incapacitated(kind):
    sc = scenario([leader((0, 0), chars={"STR": 1, "DEX": 1, "END": 1}), fighter((1, 0))],
                  [fighter((10, 0)), fighter((10, 2))])
    # Initiative: blue_0 12 - 2 (DEX 1) = 10, red_0 8, red_1 7, blue_1 2.
    rolls = [(6, 6), (1, 1), (4, 4), (3, 4),
             (5, 4) if kind == "bonus" else (1, 2),  # Effect 3 or -3
             (6, 6), (1, 1, 1)]                       # red_0 kills blue_0
    battle, dice = scripted(sc, rolls)
    battle.apply("leadership")
    if kind == "bonus":
        battle.apply("direct:blue_1")
    battle.apply("end_turn")
    battle.apply("attack:blue_0")  # red_0
    assert last(battle, "incapacitated")["actor"] == "blue_0"
    lapse = last(battle, "lapse")
    assert lapse["actor"] == "blue_0" and lapse["kind"] == kind
    assert lapse["reason"] == "leader incapacitated"
    assert lapse["count"] == (2 if kind == "bonus" else 3)
    assert battle.held_pools("red_0") == (0, 0)
    if kind == "bonus":
        assert battle.by_id["blue_1"].bonus  # already handed out: kept
    else:
        assert "no leadership penalty" in battle.why_illegal("hamper:blue_1")
    dice.assert_used_up()


def test_r7_5_direct_and_hamper_cost_no_action():
    sc = scenario([leader((0, 0)), fighter((1, 0)), fighter((2, 0))], [fighter((5, 5))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (1, 2), (2, 2), (5, 4)])
    battle.apply("stance:crouch")  # Minor
    battle.apply("leadership")     # Significant: budget now spent
    assert battle.decision == ("turn", "blue_0")  # turn stays open for the free actions
    battle.apply("direct:blue_1")
    assert battle.decision == ("turn", "blue_0")
    assert battle.budget_left("blue_0") == (False, 0)
    battle.apply("direct:blue_2")
    # One bonus left but nobody to receive it: the turn passes by itself (R2.3).
    assert last(battle, "end_turn") == {"type": "end_turn", "actor": "blue_0",
                                        "reason": "budget spent"}
    assert battle.decision == ("turn", "red_0")
    dice.assert_used_up()


# ============================================================================ R8.1 map
def test_r8_1_walls_block_line_of_sight_and_attacks():
    terrain = ["..........", ".....#....", ".........."]
    sc = scenario([fighter((0, 1))], [fighter((9, 1))], width=10, height=3, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    assert not battle.line_of_sight("blue_0", "red_0")
    assert "line of sight" in battle.why_illegal("attack:red_0")
    assert "line of sight" in battle.why_illegal("aim:red_0")
    dice.assert_used_up()


def test_r8_1_squares_touched_only_at_a_corner_do_not_block():
    # The diagonal (0,0)->(3,3) passes the corners of (1,0), (0,1), (2,1), (1,2) ...
    grid = GridMap(4, 4, [".#..", "#.#.", ".#.#", "..#."])
    assert grid.line_of_sight((0, 0), (3, 3))
    # ... but a wall on the diagonal itself blocks.
    assert not GridMap(4, 4, ["....", ".#..", "....", "...."]).line_of_sight((0, 0), (3, 3))
    # A shallow line (0,0)->(4,1) crosses (2,0) and (2,1) (an edge, not a corner), not (1,1).
    assert not GridMap(5, 2, [".....", "..#.."]).line_of_sight((0, 0), (4, 1))
    assert not GridMap(5, 2, ["..#..", "....."]).line_of_sight((0, 0), (4, 1))
    assert GridMap(5, 2, [".....", ".#..."]).line_of_sight((0, 0), (4, 1))
    assert not GridMap(5, 2, [".....", "...#."]).line_of_sight((0, 0), (4, 1))
    assert GridMap(5, 2, ["...#.", "....."]).line_of_sight((0, 0), (4, 1))


def test_r8_1_corner_touching_walls_allow_attacks():
    terrain = [".#..", "#.#.", ".#.#", "..#."]
    sc = scenario([fighter((0, 0))], [fighter((3, 3))], width=4, height=4, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    assert battle.why_illegal("attack:red_0") is None
    dice.assert_used_up()


def test_r8_1_combatants_do_not_block_line_of_sight():
    sc = scenario([fighter((0, 0)), fighter((2, 0))], [fighter((1, 0)), fighter((5, 0))])
    battle, dice = scripted(sc, [(6, 6), (1, 1), (1, 2), (2, 2)])
    assert battle.line_of_sight("blue_0", "red_1")
    assert battle.why_illegal("attack:red_1") is None
    dice.assert_used_up()


@pytest.mark.parametrize(
    ("terrain", "label", "legal"),
    [
        (["....", "....", "...."], "move:NE:1", True),
        (["....", "..#.", "...."], "move:NE:1", False),   # wall east of the mover
        ([".#..", "....", "...."], "move:NE:1", False),   # wall north of the mover
        (["..#.", "....", "...."], "move:NE:1", False),   # wall in the square entered
        (["....", "..#.", "...."], "move:N:1", True),
        (["....", "..#.", "...."], "move:SE:1", False),   # wall east cuts SE too
        (["....", "....", "#..."], "move:SW:1", False),   # entering a wall
        (["....", "....", ".#.."], "move:SW:1", False),   # wall south cuts SW
    ],
)
def test_r8_1_diagonal_moves_cannot_cut_wall_corners(terrain, label, legal):
    sc = scenario([fighter((1, 1))], [fighter((3, 2))], width=4, height=3, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    reason = battle.why_illegal(label)
    assert (reason is None) == legal, reason
    dice.assert_used_up()


def test_r8_1_no_one_enters_or_moves_through_an_occupied_square():
    sc = scenario([fighter((0, 0)), fighter((0, 1))], [fighter((3, 0))], width=6, height=3)
    battle, dice = scripted(sc, [(6, 6), (1, 1), (1, 2)])
    assert battle.why_illegal("move:E:2") is None
    assert "occupied" in battle.why_illegal("move:E:3")   # enemy square
    assert "occupied" in battle.why_illegal("move:E:4")   # through it
    assert "occupied" in battle.why_illegal("move:S:1")   # ally square
    battle.apply("move:E:2")
    assert battle.by_id["blue_0"].pos == (2, 0)
    dice.assert_used_up()


def test_r8_1_move_costs_1_5_m_per_step_3_m_into_difficult():
    terrain = [".~......", "........"]
    sc = scenario([fighter((0, 0))], [fighter((7, 1))], width=8, height=2, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    # 1.5-per-step budget of 6 m: E:4 would cost 3 + 1.5 * 3 = 7.5 m.
    assert "more than" in battle.why_illegal("move:E:4")
    battle.apply("move:E:3")
    assert last(battle, "move")["metres"] == pytest.approx(6.0)
    battle.apply("move:SE:1")
    assert last(battle, "move")["metres"] == pytest.approx(1.5)  # diagonals cost the same
    dice.assert_used_up()


def test_r8_1_low_cover_is_passable_and_blocks_no_sight():
    terrain = ["..c...", "......"]
    sc = scenario([fighter((0, 0))], [fighter((5, 0))], width=6, height=2, terrain=terrain)
    battle, dice = scripted(sc, BLUE_FIRST)
    assert battle.line_of_sight("blue_0", "red_0")
    battle.apply("move:E:2")
    assert battle.by_id["blue_0"].pos == (2, 0)
    dice.assert_used_up()


# ============================================================================ R8.2 end
def test_r8_2_combat_ends_with_a_winner_when_one_side_is_left():
    sc = with_weapons(scenario([fighter((0, 0), weapon="zapper")],
                               [fighter((5, 0), chars={"STR": 1, "DEX": 1, "END": 1})]),
                      zapper=ZAPPER)
    battle, dice = scripted(sc, [*BLUE_FIRST, *hit_for(3)])
    assert not battle.done
    battle.apply("attack:red_0")
    assert battle.done and battle.winner == "blue" and not battle.truncated
    assert battle.decision is None and battle.current_agent is None
    assert battle.events[-1] == {"type": "end", "round": 1, "winner": "blue",
                                 "reason": "victory"}
    assert battle.why_illegal("end_turn") == "the battle is over"
    with pytest.raises(IllegalActionError):
        battle.apply("end_turn")
    dice.assert_used_up()


def test_r8_2_max_rounds_is_a_truncation_without_winner():
    sc = scenario([fighter((0, 0))], [fighter((5, 0))], max_rounds=2)
    battle, dice = scripted(sc, BLUE_FIRST)
    for _ in range(3):
        battle.apply("end_turn")
        assert not battle.done
    battle.apply("end_turn")
    assert battle.done and battle.truncated and battle.winner is None
    assert [e["round"] for e in events_of(battle, "round")] == [1, 2]
    assert battle.events[-1] == {"type": "end", "round": 2, "winner": None,
                                 "reason": "max_rounds"}
    dice.assert_used_up()


def test_r8_2_combat_goes_on_while_both_sides_can_act():
    sc = with_weapons(scenario([fighter((0, 0), weapon="zapper")],
                               [fighter((5, 0), chars={"STR": 1, "DEX": 1, "END": 1}),
                                fighter((6, 0))]), zapper=ZAPPER)
    battle, dice = scripted(sc, [(6, 6), (1, 1), (1, 2), *hit_for(3)])
    battle.apply("attack:red_0")
    assert not battle.done and battle.winner is None
    dice.assert_used_up()


# ============================================================================ R8.3 scenarios
def test_r8_3_exactly_two_sides():
    one = scenario([fighter((0, 0))], [fighter((1, 0))])
    one["sides"].pop()
    three = scenario([fighter((0, 0))], [fighter((1, 0))])
    three["sides"].append({"name": "green", "combatants": [fighter((2, 0))]})
    for sc in (one, three):
        with pytest.raises(ScenarioError) as err:
            load_scenario(sc)
        assert err.value.path == "sides"


def test_r8_3_each_side_has_a_combatant():
    sc = scenario([fighter((0, 0))], [])
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert err.value.path == "sides[1].combatants"


@pytest.mark.parametrize("value", [0, 16, -1, 7.5, True, "7"])
def test_r8_3_characteristics_are_whole_numbers_1_to_15(value):
    sc = scenario([fighter((0, 0), chars={"END": value})], [fighter((1, 0))])
    if value == "7":  # a numeric string is read as the number
        assert load_scenario(sc).sides[0].combatants[0].characteristics.END == 7
        return
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    assert err.value.path == "sides[0].combatants[0].characteristics.END"
    assert repr(value) in str(err.value)


def test_r8_3_characteristics_1_and_15_are_allowed():
    sc = scenario([fighter((0, 0), chars={"STR": 1, "DEX": 15})], [fighter((1, 0))])
    battle = build_battle(sc, seed=1)
    assert battle.by_id["blue_0"].chars["STR"] == 1
    assert battle.by_id["blue_0"].chars["DEX"] == 15


def test_r8_3_prepared_on_side_with_combatant_override():
    sc = scenario([fighter((0, 0)), fighter((1, 0), prepared=False, chars={"DEX": 9})],
                  [fighter((5, 0)), fighter((6, 0), prepared=True, chars={"DEX": 12})])
    sc["sides"][0]["prepared"] = True
    # Only blue_1 and red_0 roll: blue_0 (side) and red_1 (own flag) are prepared.
    battle, dice = scripted(sc, [(2, 3), (4, 4)])
    init = {e["actor"]: e for e in events_of(battle, "initiative")}
    assert init["blue_0"]["roll"] is None and init["blue_0"]["initiative"] == 12
    assert init["blue_0"]["ambush"]
    assert init["blue_1"]["roll"] == [2, 3] and init["blue_1"]["initiative"] == 5 + 1
    assert init["red_0"]["roll"] == [4, 4] and not init["red_0"]["ambush"]
    assert init["red_1"]["roll"] is None and init["red_1"]["initiative"] == 12 + 2
    assert battle.by_id["blue_0"].prepared and not battle.by_id["blue_1"].prepared
    assert battle.by_id["red_1"].prepared and not battle.by_id["red_0"].prepared
    dice.assert_used_up()
