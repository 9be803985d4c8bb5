"""Rules tests for R2, the combat round: R2.1 the action budget, R2.2 Initiative order,
R2.3 taking and ending a turn, R2.4 rounds, R2.5 simultaneous (tied) combatants.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import (
    FIRST,
    MISS,
    SECOND,
    _leader_scenario,
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

MINOR_PROBES = ("aim:red_0", "move:S:1", "stance:crouch")
SIG_PROBES = ("attack:red_0", "leadership")


def _budget_after(seq: str) -> tuple[int, bool]:
    m = sum(1 for s in seq if s == "M")
    return m, "S" in seq


def _minor_ok(m: int, s: bool) -> bool:
    return m < (1 if s else 3)


def _sig_ok(m: int, s: bool) -> bool:
    return not s and m <= 1


ALL_SEQUENCES = ["".join(p) for n in range(1, 5) for p in itertools.product("MS", repeat=n)]


@pytest.mark.parametrize("seq", ALL_SEQUENCES)
def test_r2_1_budget_every_sequence_of_minor_and_significant(seq):
    """Play ``seq`` (M = aim, S = an attack that misses) in blue_0's turn, checking after every
    step exactly which Minor and Significant actions are legal, that an illegal step is
    refused, and that the turn passes by itself once the budget is spent."""
    # First pass on the model: which steps get applied (for the dice script).
    m, s, applied = 0, False, ""
    for step in seq:
        ok = _minor_ok(m, s) if step == "M" else _sig_ok(m, s)
        if not ok or not (_minor_ok(m, s) or _sig_ok(m, s)):
            break
        applied += step
        m, s = (m + 1, s) if step == "M" else (m, True)
        if not (_minor_ok(m, s) or _sig_ok(m, s)):
            break
    rolls = [FIRST, SECOND] + [MISS] * applied.count("S")
    b, dice = scripted(duel(), rolls)
    m, s = 0, False
    for step in seq:
        assert b.decision == ("turn", "blue_0")
        minor_ok, sig_ok = _minor_ok(m, s), _sig_ok(m, s)
        assert b.budget_left("blue_0") == (sig_ok, (1 if s else 3) - m)
        for label in MINOR_PROBES:
            assert is_legal(b, label) is minor_ok, (seq, m, s, label)
        for label in SIG_PROBES:
            assert is_legal(b, label) is sig_ok, (seq, m, s, label)
        assert is_legal(b, "end_turn")
        label = "aim:red_0" if step == "M" else "attack:red_0"
        if not (minor_ok if step == "M" else sig_ok):
            with pytest.raises(IllegalActionError):
                b.apply(label)
            assert b.decision == ("turn", "blue_0")  # a refused action changes nothing
            break
        b.apply(label)
        m, s = (m + 1, s) if step == "M" else (m, True)
        if not (_minor_ok(m, s) or _sig_ok(m, s)):
            # Budget spent: the turn passed by itself (R2.3).
            assert b.decision == ("turn", "red_0")
            assert matches(last(b, "end_turn"), {
                "type": "end_turn", "actor": "blue_0", "reason": "budget spent"
            })
            break
    else:
        # The turn is still open and the budget reports what is left.
        assert b.decision == ("turn", "blue_0")
        assert b.budget_left("blue_0") == (_sig_ok(m, s), (1 if s else 3) - m)
    assert (m, s) == _budget_after(applied)
    dice.assert_used_up()


@pytest.mark.parametrize("first", ["stance:crouch", "move:E:1", "aim:red_0"])
def test_r2_1_every_minor_kind_counts_against_the_budget(first):
    b, dice = scripted(duel(), [FIRST, SECOND])
    b.apply(first)
    b.apply("stance:prone" if first == "stance:crouch" else "stance:crouch")
    assert not is_legal(b, "attack:red_0") and not is_legal(b, "leadership")
    b.apply("move:S:1")
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r2_1_budget_is_fresh_every_turn():
    b, dice = scripted(duel(), [FIRST, SECOND, MISS, MISS])
    b.apply("attack:red_0")
    b.apply("aim:red_0")
    assert b.decision == ("turn", "red_0")
    b.apply("end_turn")
    assert b.decision == ("turn", "blue_0") and b.round == 2
    assert b.budget_left("blue_0") == (True, 3)
    b.apply("aim:red_0")
    b.apply("attack:red_0")
    assert b.budget_left("blue_0") == (False, 0)
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r2_2_descending_initiative():
    blue = [fighter((2, 2)), fighter((2, 4))]
    red = [fighter((10, 2)), fighter((10, 4))]
    # Initiative: blue_0 5, blue_1 11, red_0 8, red_1 3.
    b, dice = scripted(scenario(blue, red), [(2, 3), (5, 6), (4, 4), (1, 2)])
    for _ in range(8):
        b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_1", "red_0", "blue_0", "red_1"]
    assert turn_order(b, 2) == ["blue_1", "red_0", "blue_0", "red_1"]
    assert not events(b, "simultaneous")
    dice.assert_used_up()


def test_r2_2_equal_initiative_higher_dex_goes_first():
    # Both Initiative 10 (DEX 7 and DEX 8 are both DM 0): red_0's higher DEX wins the tie,
    # although it is later in scenario order.
    b, dice = scripted(duel(red={"chars": {"DEX": 8}}), [(5, 5), (4, 6)])
    assert [e["initiative"] for e in events(b, "initiative")] == [10, 10]
    assert b.decision == ("turn", "red_0")
    b.apply("end_turn")
    assert b.decision == ("turn", "blue_0")
    assert not events(b, "simultaneous")
    dice.assert_used_up()


def test_r2_2_equal_initiative_and_dex_is_simultaneous():
    b, dice = scripted(duel(), [(5, 5), (4, 6)])
    assert last(b, "simultaneous")["group"] == ["blue_0", "red_0"]
    assert b.decision == ("turn", "blue_0")
    dice.assert_used_up()


def test_r2_3_turn_passes_by_itself_when_the_budget_is_spent():
    b, dice = scripted(duel(), [FIRST, SECOND, MISS])
    b.apply("aim:red_0")
    assert b.decision == ("turn", "blue_0")
    b.apply("attack:red_0")
    assert b.decision == ("turn", "red_0")
    assert last(b, "end_turn")["reason"] == "budget spent"
    dice.assert_used_up()


def test_r2_3_ending_the_turn_early_loses_the_unused_actions():
    b, dice = scripted(duel(), [FIRST, SECOND])
    b.apply("aim:red_0")
    b.apply("end_turn")
    assert matches(last(b, "end_turn"), {"type": "end_turn", "actor": "blue_0", "reason": "chosen"})
    assert b.decision == ("turn", "red_0")
    b.apply("end_turn")
    # Nothing is carried over: a fresh budget of 1 Significant + 1 Minor or 3 Minor.
    assert b.decision == ("turn", "blue_0")
    assert b.budget_left("blue_0") == (True, 3)
    dice.assert_used_up()


def test_r2_3_leader_with_bonuses_keeps_the_turn_open():
    # Initiative: blue_0 12, blue_1 2, blue_2 3, red_0 4. Leadership 1 + INT 0, roll 10:
    # Effect 3 -> three bonuses.
    sc = _leader_scenario()
    b, dice = scripted(sc, [FIRST, (1, 1), (1, 2), (2, 2), (5, 5)])
    b.apply("aim:red_0")
    b.apply("leadership")
    assert last(b, "leadership")["bonuses"] == 3
    # Budget spent, but bonuses can still be handed out: only direct and end_turn are legal.
    assert b.decision == ("turn", "blue_0")
    assert b.budget_left("blue_0") == (False, 0)
    assert legal(b) == {"direct:blue_1", "direct:blue_2", "end_turn"}
    b.apply("direct:blue_1")
    assert b.decision == ("turn", "blue_0")
    assert legal(b) == {"direct:blue_2", "end_turn"}
    b.apply("direct:blue_2")
    # One bonus is left, but every receiver holds one (R7.3): the turn passes by itself.
    assert b.held_pools("blue_0") == (1, 0)
    assert b.decision == ("turn", "red_0")
    assert matches(last(b, "end_turn"), {
        "type": "end_turn", "actor": "blue_0", "reason": "budget spent"
    })
    dice.assert_used_up()


def test_r2_3_leader_may_end_the_open_turn():
    b, dice = scripted(_leader_scenario(n_allies=1), [FIRST, (1, 1), (2, 2), (5, 5)])
    b.apply("aim:red_0")
    b.apply("leadership")
    assert legal(b) == {"direct:blue_1", "end_turn"}
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r2_3_leader_without_a_receiver_in_range_does_not_keep_the_turn():
    # The only ally is 45 m away (no radios): bonuses exist but cannot be handed out.
    sc = _leader_scenario(n_allies=1, ally_at=(2, 32))
    sc["map"]["height"] = 40
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (5, 5)])
    b.apply("aim:red_0")
    b.apply("leadership")
    assert last(b, "leadership")["bonuses"] == 3
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r2_3_holder_of_penalties_keeps_the_turn_open():
    # blue_0's Leadership fails by 5: red gets five penalties to impose on blue. red_0's turn
    # stays open after its budget is spent, with only hamper and end_turn legal.
    sc = _leader_scenario(n_allies=1)
    b, dice = scripted(sc, [FIRST, (1, 1), (5, 5), (1, 1), MISS])
    b.apply("leadership")
    assert last(b, "leadership")["penalties"] == 5
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    b.apply("aim:blue_0")
    b.apply("attack:blue_0")
    assert b.decision == ("turn", "red_0")
    assert legal(b) == {"hamper:blue_0", "hamper:blue_1", "end_turn"}
    b.apply("hamper:blue_0")
    assert legal(b) == {"hamper:blue_1", "end_turn"}
    b.apply("hamper:blue_1")
    assert b.decision == ("turn", "blue_1")
    dice.assert_used_up()


def test_r2_4_rounds_follow_each_other_and_initiative_is_kept():
    blue = [fighter((2, 2))]
    red = [fighter((10, 2)), fighter((10, 4))]
    # blue_0 12, red_0 7, red_1 5; blue_0 kills red_1 before red_1 has acted.
    b, dice = scripted(scenario(blue, red), [FIRST, (3, 4), (2, 3), (6, 6), (6, 6, 6)])
    assert [e["round"] for e in events(b, "round")] == [1]
    b.apply("attack:red_1")
    assert last(b, "incapacitated")["actor"] == "red_1"
    b.apply("end_turn")
    b.apply("end_turn")
    # red_1 is out: the round ends after red_0.
    assert turn_order(b, 1) == ["blue_0", "red_0"]
    assert b.round == 2 and [e["round"] for e in events(b, "round")] == [1, 2]
    for _ in range(4):
        b.apply("end_turn")
    assert turn_order(b, 2) == turn_order(b, 3) == ["blue_0", "red_0"]
    assert turn_inits(b, 1) == turn_inits(b, 2) == turn_inits(b, 3) == {"blue_0": 12,
                                                                        "red_0": 7}
    dice.assert_used_up()


def test_r2_4_max_rounds_truncates():
    b, dice = scripted(duel(max_rounds=2), [FIRST, SECOND])
    for _ in range(4):
        b.apply("end_turn")
    assert b.done and b.truncated and b.winner is None
    assert b.round == 2
    dice.assert_used_up()


def test_r2_5_tied_group_acts_in_scenario_order():
    blue = [fighter((2, 2)), fighter((2, 4))]
    red = [fighter((10, 2)), fighter((10, 4))]
    b, dice = scripted(scenario(blue, red), [(4, 4), (3, 5), (2, 6), (5, 3)])
    assert last(b, "simultaneous")["group"] == ["blue_0", "blue_1", "red_0", "red_1"]
    for _ in range(8):
        b.apply("end_turn")
    assert turn_order(b, 1) == turn_order(b, 2) == ["blue_0", "blue_1", "red_0", "red_1"]
    dice.assert_used_up()


def test_r2_5_tie_between_sides_uses_side_order_then_combatant_order():
    blue = [fighter((2, 2)), fighter((2, 4))]
    red = [fighter((10, 2)), fighter((10, 4))]
    # red_1 and blue_1 tie at 9 below red_0 (12) and above blue_0 (3).
    b, dice = scripted(scenario(blue, red), [(1, 2), (4, 5), FIRST, (3, 6)])
    for _ in range(4):
        b.apply("end_turn")
    assert turn_order(b, 1) == ["red_0", "blue_1", "red_1", "blue_0"]
    assert last(b, "simultaneous")["group"] == ["blue_1", "red_1"]
    dice.assert_used_up()


def test_r2_5_downed_by_own_group_takes_its_turn_and_drops_when_the_group_ends():
    blue = [fighter((2, 2)), fighter((2, 4))]
    red = [fighter((10, 2))]
    sc = scenario(blue, red, reactions=True)
    rolls = [(4, 4), (4, 4), (4, 4),   # everyone 8: one tied group
             (6, 6), (6, 6, 6),        # blue_0 kills red_0 (Effect 6, 24 damage)
             MISS,                     # blue_1 attacks the downed red_0, which dodges
             MISS]                     # red_0 attacks blue_0
    b, dice = scripted(sc, rolls)
    assert last(b, "simultaneous")["group"] == ["blue_0", "blue_1", "red_0"]
    b.apply("attack:red_0")
    b.apply("react:none")
    inc = last(b, "incapacitated")
    assert inc["actor"] == "red_0" and inc["state"] == "dead" and inc["stays_until_group_ends"]
    assert b.in_play("red_0") and not b.done
    b.apply("end_turn")
    # It can still be attacked and may react.
    assert b.decision == ("turn", "blue_1")
    assert is_legal(b, "attack:red_0")
    b.apply("attack:red_0")
    assert b.decision == ("reaction", "red_0")
    assert is_legal(b, "react:dodge")
    b.apply("react:dodge")
    assert last(b, "attack")["dms"]["dodge"] == -1
    b.apply("end_turn")
    # It takes its turn (all characteristics 0: DEX DM -3).
    assert b.decision == ("turn", "red_0")
    b.apply("attack:blue_0")
    b.apply("react:none")
    assert last(b, "attack")["dms"] == {"skill": 1, "DEX": -3, "range": 1}
    assert not b.done
    b.apply("end_turn")
    # The group has finished: red_0 drops out and blue wins.
    assert last(b, "out")["actor"] == "red_0"
    assert not b.in_play("red_0")
    assert b.done and b.winner == "blue"
    dice.assert_used_up()


def test_r2_5_mutual_knockout_inside_a_tied_group():
    b, dice = scripted(duel(), [(4, 4), (4, 4), (6, 6), (6, 6, 6), (6, 6), (6, 6, 6)])
    b.apply("attack:red_0")
    assert b.by_id["red_0"].down and b.in_play("red_0")
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    b.apply("attack:blue_0")  # DEX DM -3: 12 + 1 - 3 + 1 = 11, Effect 3, 21 damage
    assert last(b, "attack")["damage"] == 21
    assert b.by_id["blue_0"].down and b.in_play("blue_0") and not b.done
    b.apply("end_turn")
    assert {e["actor"] for e in events(b, "out")} == {"blue_0", "red_0"}
    assert b.done and b.winner is None and last(b, "end")["reason"] == "all_out"
    dice.assert_used_up()


def test_r2_5_group_is_fixed_when_its_first_member_begins():
    # blue_0 and red_0 tie at 10; blue_1 has 9. red_0 dodges blue_0's attack before acting
    # (Initiative 8 this round), yet still acts right after blue_0: the group was fixed.
    blue = [fighter((2, 2)), fighter((2, 4))]
    b, dice = scripted(scenario(blue, [fighter((10, 2))], reactions=True),
                       [(5, 5), (4, 5), (5, 5), MISS])
    b.apply("attack:red_0")
    b.apply("react:dodge")
    assert matches(last(b, "initiative_change"), {
        "type": "initiative_change", "actor": "red_0", "change": -2, "reason": "reaction",
        "applies_to": "current_round"
    })
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_0", "red_0", "blue_1"]
    dice.assert_used_up()


def test_r2_5_downed_outside_its_group_drops_at_once():
    blue = [fighter((2, 2))]
    red = [fighter((10, 2)), fighter((10, 4))]
    # red_0 and red_1 tie at 5 below blue_0: blue_0 (alone) kills red_0, which never acts.
    b, dice = scripted(scenario(blue, red), [FIRST, (2, 3), (1, 4), (6, 6), (6, 6, 6)])
    b.apply("attack:red_0")
    assert not last(b, "incapacitated")["stays_until_group_ends"]
    assert not b.in_play("red_0")
    b.apply("end_turn")
    assert b.decision == ("turn", "red_1")
    b.apply("end_turn")
    assert turn_order(b) == ["blue_0", "red_1", "blue_0"]
    dice.assert_used_up()
