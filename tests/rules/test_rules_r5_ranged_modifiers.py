"""Rules tests for R5, the ranged attack modifiers: R5.1 range bands, R5.2 aiming, R5.3
cover and prone, R5.4 unskilled.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import math

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import BLUE_FIRST, events_of, last, with_weapons

from traveller_env.rules.attack import range_dm
from traveller_env.rules.battle import IllegalActionError

# Scenario-local weapons whose range bands fall exactly on square distances (1.5 m each).
GUN6 = {"skill": "gun_combat.slug", "damage": "1D", "range": 6, "magazine": 10}
GUN30 = {"skill": "gun_combat.slug", "damage": "1D", "range": 30, "magazine": 10}


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
