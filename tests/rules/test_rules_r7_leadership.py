"""Rules tests for R7, leadership: R7.1 bonuses, R7.2 communication, R7.3 one bonus and
one penalty per check, R7.4 penalties, R7.5 handing out and lapsing.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import last


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
