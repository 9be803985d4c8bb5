"""Rules tests for R8: R8.1 the map (squares, movement, line of sight, cover terrain), R8.2
the end of combat, R8.3 what a scenario must be.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import BLUE_FIRST, ZAPPER, events_of, hit_for, last, with_weapons

from traveller_env.rules.battle import IllegalActionError
from traveller_env.rules.grid import GridMap
from traveller_env.scenario import ScenarioError, build_battle, load_scenario


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


def test_r8_1_an_incapacitated_combatant_frees_its_square():
    """R8.1 ruling: once out of play, a downed combatant's square may be entered."""
    sc = with_weapons(scenario([fighter((0, 0), weapon="zapper")],
                               [fighter((2, 0), chars={"STR": 1, "DEX": 1, "END": 1}),
                                fighter((5, 2))], width=8, height=3), zapper=ZAPPER)
    battle, dice = scripted(sc, [*BLUE_FIRST, (2, 2), *hit_for(3)])
    assert "occupied" in battle.why_illegal("move:E:2")
    battle.apply("attack:red_0")
    assert battle.by_id["red_0"].out
    assert battle.why_illegal("move:E:2") is None
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


@pytest.mark.parametrize("value", [0, 16, -1, 7.5, 7.0, True, "7"])
def test_r8_3_characteristics_are_whole_numbers_1_to_15(value):
    """R8.3: out of range, or given as a float, a string or a boolean: a scenario error."""
    sc = scenario([fighter((0, 0), chars={"END": value})], [fighter((1, 0))])
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
