"""Rules tests for R1 (dice and checks), R2 (the combat round), R3 (Initiative) and R4 (actions).

Every test names the rule it checks and feeds the engine exact dice (``ScriptedDice``), so that
totals, DMs, damage, turn order and Initiative changes can be asserted exactly. Unless a test
says otherwise the scenarios have hastening and reactions off (see ``conftest.scenario``).

Dice order at battle creation: one 2D Initiative roll per combatant in scenario order (none for
a prepared combatant in an ambush), then one 2D Tactics check per side with a tactician.
"""

from __future__ import annotations

import itertools
import random

import pytest
from conftest import fighter, scenario, scripted

from traveller_env.rules.battle import IllegalActionError
from traveller_env.rules.checks import (
    UNSKILLED_DM,
    characteristic_dm,
    roll_check,
    skill_dm,
    skill_level,
)
from traveller_env.rules.dice import Dice, ScriptedDice
from traveller_env.scenario import build_battle, builtin_scenarios

# Initiative rolls (DEX 7: DM 0).
FIRST, SECOND, THIRD = (6, 6), (1, 2), (1, 1)
MISS = (1, 1)  # a 2D attack roll that misses with any DM up to +5


# ---------------------------------------------------------------------------- helpers
def events(b, kind: str) -> list[dict]:
    return [e for e in b.events if e["type"] == kind]


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


# ============================================================================ R1 dice and checks
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
    ({"tactics": 1}, "tactics", 1),
    ({"tactics_x.military": 2}, "tactics", None),       # a different skill with a common prefix
])
def test_r1_4_skill_level_specialty_base_and_unskilled(skills, skill, level):
    assert skill_level(skills, skill) == level
    assert skill_dm(skills, skill) == (-3 if level is None else level)


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


# ============================================================================ R2 the combat round
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


def _leader_scenario(n_allies=2, ally_at=(2, 3)):
    blue = [fighter((2, 2), skills={"gun_combat.slug": 1, "leadership": 1})]
    for i in range(n_allies):
        blue.append(fighter((ally_at[0] + i, ally_at[1])))
    return scenario(blue, [fighter((10, 2))])


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


# ============================================================================ R3 Initiative
def test_r3_1_initiative_is_2d_plus_dex_dm():
    blue = [fighter((2, 2), chars={"DEX": 2}), fighter((2, 4), chars={"DEX": 12})]
    red = [fighter((10, 2), chars={"DEX": 15})]
    b, dice = scripted(scenario(blue, red), [(3, 4), (2, 2), (6, 5)])
    got = [(e["actor"], e["roll"], e["dms"], e["initiative"], e["ambush"])
           for e in events(b, "initiative")]
    assert got == [("blue_0", [3, 4], {"DEX": -2}, 5, False),
                   ("blue_1", [2, 2], {"DEX": 2}, 6, False),
                   ("red_0", [6, 5], {"DEX": 3}, 14, False)]
    assert [b.by_id[c].initiative for c in ("blue_0", "blue_1", "red_0")] == [5, 6, 14]
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r3_2_ambush_prepared_take_12_plus_dex_dm():
    blue = [fighter((2, 2), drawn=False), fighter((2, 4), drawn=False)]
    red = [fighter((10, 2), chars={"DEX": 9}, drawn=False),
           fighter((10, 4), chars={"DEX": 4}, drawn=False)]
    sc = scenario(blue, red)
    sc["sides"][1]["prepared"] = True
    # Only the unprepared roll.
    b, dice = scripted(sc, [FIRST, (3, 4)])
    got = {e["actor"]: (e["roll"], e["initiative"], e["ambush"]) for e in events(b, "initiative")}
    assert got == {"blue_0": ([6, 6], 12, False), "blue_1": ([3, 4], 7, False),
                   "red_0": (None, 13, True), "red_1": (None, 11, True)}
    # Prepared combatants start with their weapons drawn (R4.5); the others do not.
    assert b.by_id["red_0"].drawn and b.by_id["red_1"].drawn
    assert not b.by_id["blue_0"].drawn
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r3_2_combatant_prepared_overrides_its_side():
    blue = [fighter((2, 2))]
    red = [fighter((10, 2)), fighter((10, 4), prepared=False)]
    sc = scenario(blue, red)
    sc["sides"][1]["prepared"] = True
    b, dice = scripted(sc, [(2, 2), (3, 3)])
    got = {e["actor"]: (e["roll"], e["initiative"]) for e in events(b, "initiative")}
    assert got == {"blue_0": ([2, 2], 4), "red_0": (None, 12), "red_1": ([3, 3], 6)}
    dice.assert_used_up()


def test_r3_2_everyone_prepared_means_everyone_rolls():
    sc = duel()
    for side in sc["sides"]:
        side["prepared"] = True
    b, dice = scripted(sc, [(2, 2), (3, 3)])
    got = [(e["roll"], e["initiative"], e["ambush"]) for e in events(b, "initiative")]
    assert got == [([2, 2], 4, False), ([3, 3], 6, False)]
    dice.assert_used_up()


def test_r3_3_tactics_highest_level_checks_for_the_unit():
    blue = [fighter((2, 2), skills={"tactics.military": 1}, chars={"INT": 12}),
            fighter((2, 4), skills={"tactics.military": 2})]
    red = [fighter((10, 2))]
    # Initiative 6, 7, 8; blue's Tactics: blue_1 (level 2, INT DM 0) rolls 10: Effect 4.
    b, dice = scripted(scenario(blue, red), [(3, 3), (3, 4), (4, 4), (5, 5)])
    t = last(b, "tactics")
    assert (t["actor"], t["unit"], t["roll"], t["dms"], t["total"], t["effect"]) == (
        "blue_1", "blue", [5, 5], {"skill": 2, "INT": 0}, 12, 4)
    assert len(events(b, "tactics")) == 1
    assert [b.by_id[c].initiative for c in ("blue_0", "blue_1", "red_0")] == [10, 11, 8]
    assert b.decision == ("turn", "blue_1")
    dice.assert_used_up()


def test_r3_3_tactics_tie_goes_to_higher_int():
    blue = [fighter((2, 2), skills={"tactics.military": 1}, chars={"INT": 9}),
            fighter((2, 4), skills={"tactics.military": 1}, chars={"INT": 10})]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [(3, 3), (3, 4), (4, 4), (4, 4)])
    t = last(b, "tactics")
    assert t["actor"] == "blue_1" and t["dms"] == {"skill": 1, "INT": 1} and t["effect"] == 2
    assert [b.by_id[c].initiative for c in ("blue_0", "blue_1", "red_0")] == [8, 9, 8]
    dice.assert_used_up()


def test_r3_3_tactics_tie_on_int_goes_to_scenario_order():
    blue = [fighter((2, 2), skills={"tactics": 1}, chars={"INT": 9}),
            fighter((2, 4), skills={"tactics.military": 1}, chars={"INT": 9})]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [(3, 3), (3, 4), (4, 4), (4, 4)])
    assert last(b, "tactics")["actor"] == "blue_0"
    dice.assert_used_up()


def test_r3_3_negative_effect_and_both_sides_in_side_order():
    blue = [fighter((2, 2), skills={"tactics.military": 0}), fighter((2, 4))]
    red = [fighter((10, 2), skills={"tactics.military": 3}, chars={"INT": 4})]
    # blue's check first: 2 + 0 + 0 = 2, Effect -6. Then red's: 6 + 3 - 1 = 8, Effect 0.
    b, dice = scripted(scenario(blue, red), [(5, 5), (4, 4), (3, 3), (1, 1), (3, 3)])
    tac = events(b, "tactics")
    assert [(t["actor"], t["effect"], t["added"]) for t in tac] == [("blue_0", -6, -6),
                                                                   ("red_0", 0, 0)]
    assert tac[1]["dms"] == {"skill": 3, "INT": -1}
    assert [b.by_id[c].initiative for c in ("blue_0", "blue_1", "red_0")] == [4, 2, 6]
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r3_3_no_tactics_skill_no_check():
    b, dice = scripted(duel(blue={"skills": {"gun_combat.slug": 1, "leadership": 2}}),
                       [FIRST, SECOND])
    assert not events(b, "tactics")
    dice.assert_used_up()


def _three(reactions=True, **kw):
    """blue_0 12, blue_1 9, red_0 10 (scenario order blue_0, blue_1, red_0)."""
    blue = [fighter((2, 2)), fighter((2, 4))]
    sc = scenario(blue, [fighter((10, 2))], reactions=reactions, **kw)
    return sc, [FIRST, (4, 5), (5, 5)]


def test_r3_4_reaction_before_acting_moves_the_reactor_later_this_round():
    sc, init = _three()
    b, dice = scripted(sc, [*init, MISS])
    b.apply("attack:red_0")
    b.apply("react:dodge")
    assert matches(last(b, "initiative_change"), {
        "type": "initiative_change", "actor": "red_0", "change": -2, "reason": "reaction",
        "applies_to": "current_round"
    })
    assert b.by_id["red_0"].current_initiative == 8
    b.apply("end_turn")
    # red_0 (now 8) falls behind blue_1 (9).
    assert b.decision == ("turn", "blue_1")
    for _ in range(5):
        b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_0", "blue_1", "red_0"]
    assert turn_inits(b, 1) == {"blue_0": 12, "blue_1": 9, "red_0": 8}
    # Only for one round.
    assert turn_order(b, 2) == ["blue_0", "red_0", "blue_1"]
    assert turn_inits(b, 2) == {"blue_0": 12, "red_0": 10, "blue_1": 9}
    assert b.by_id["red_0"].initiative == 10
    dice.assert_used_up()


def test_r3_4_reaction_after_acting_applies_next_round():
    sc, init = _three()
    b, dice = scripted(sc, [*init, MISS])
    b.apply("end_turn")
    b.apply("end_turn")
    assert b.decision == ("turn", "blue_1")
    b.apply("attack:red_0")
    b.apply("react:dodge")
    assert last(b, "initiative_change")["applies_to"] == "next_round"
    assert b.by_id["red_0"].current_initiative == 10
    for _ in range(7):
        b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_0", "red_0", "blue_1"]
    assert turn_order(b, 2) == ["blue_0", "blue_1", "red_0"]
    assert turn_inits(b, 2)["red_0"] == 8
    assert turn_order(b, 3) == ["blue_0", "red_0", "blue_1"]
    assert turn_inits(b, 3)["red_0"] == 10
    dice.assert_used_up()


def test_r3_4_changes_accumulate_within_a_round():
    # red_0 dodges twice before acting: -4 this round, 6 < blue_1's 9.
    blue = [fighter((2, 2)), fighter((2, 4))]
    red = [fighter((10, 2)), fighter((10, 4))]
    sc = scenario(blue, red, reactions=True)
    # blue_0 12, blue_1 11, red_0 10, red_1 9
    b, dice = scripted(sc, [FIRST, (5, 6), (5, 5), (4, 5), MISS, MISS])
    b.apply("attack:red_0")
    b.apply("react:dodge")
    b.apply("end_turn")
    b.apply("attack:red_0")
    b.apply("react:dodge")
    assert b.by_id["red_0"].current_initiative == 6
    b.apply("end_turn")
    assert b.decision == ("turn", "red_1")
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r3_4_dex_ties_use_current_dex():
    # red_0 (DEX 8) and red_1 (DEX 7) tie at 8; red_0 would go first, but blue_0's hit takes
    # its DEX to 6 (END 1 absorbs 1, then DEX, the higher of STR 7 / DEX 8, takes 2).
    red = [fighter((10, 2), chars={"DEX": 8, "END": 1}), fighter((10, 4))]
    b, dice = scripted(scenario([fighter((2, 2))], red),
                       [FIRST, (4, 4), (4, 4), (3, 3), (1, 1, 1)])
    assert b.by_id["red_0"].initiative == b.by_id["red_1"].initiative == 8
    b.apply("attack:red_0")
    assert b.by_id["red_0"].chars["DEX"] == 6
    b.apply("end_turn")
    assert b.decision == ("turn", "red_1")
    dice.assert_used_up()


def test_r3_4_dex_tie_without_damage_control():
    red = [fighter((10, 2), chars={"DEX": 8, "END": 1}), fighter((10, 4))]
    b, dice = scripted(scenario([fighter((2, 2))], red), [FIRST, (4, 4), (4, 4), MISS])
    b.apply("attack:red_0")
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    dice.assert_used_up()


def test_r3_5_haste_declarations_in_initiative_order():
    # blue_0 9, blue_1 8, red_0 10: declarations red_0, blue_0, blue_1.
    blue = [fighter((2, 2)), fighter((2, 4))]
    sc = scenario(blue, [fighter((10, 2))], hastening=True)
    b, dice = scripted(sc, [(4, 5), (4, 4), (5, 5), MISS])
    assert b.decision == ("haste", "red_0")
    # Only haste declarations are possible now.
    assert legal(b) == {"haste:yes", "haste:no"}
    assert not is_legal(b, "end_turn") and not is_legal(b, "aim:blue_0")
    b.apply("haste:no")
    assert b.decision == ("haste", "blue_0")
    b.apply("haste:yes")
    # Declared openly: the declaration is in the log before the next declarer decides.
    assert matches(last(b, "haste"), {
        "type": "haste", "actor": "blue_0", "haste": True, "initiative": 11
    })
    assert b.decision == ("haste", "blue_1")
    b.apply("haste:no")
    # blue_0 (9 + 2 = 11) now acts before red_0 (10); its checks take DM -1.
    assert b.decision == ("turn", "blue_0")
    assert b.by_id["blue_0"].current_initiative == 11
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"] == {"skill": 1, "DEX": 0, "range": 1, "haste": -1}
    assert last(b, "attack")["total"] == 3
    b.apply("end_turn")
    b.apply("end_turn")
    b.apply("end_turn")
    assert turn_order(b, 1) == ["blue_0", "red_0", "blue_1"]
    # Round 2: haste lasted one round; declarations again in the base order.
    assert [e["actor"] for e in events(b, "haste")] == ["red_0", "blue_0", "blue_1"]
    assert b.decision == ("haste", "red_0")
    b.apply("haste:no")
    assert b.decision == ("haste", "blue_0")
    b.apply("haste:no")
    b.apply("haste:no")
    assert b.decision == ("turn", "red_0")
    assert b.attack_dms("blue_0", "red_0") == {"skill": 1, "DEX": 0, "range": 1}
    dice.assert_used_up()


def test_r3_5_haste_applies_to_leadership_checks():
    sc = _leader_scenario(n_allies=1)
    sc["options"]["hastening"] = True
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (5, 5)])
    b.apply("haste:yes")
    b.apply("haste:no")
    b.apply("haste:no")
    b.apply("leadership")
    e = last(b, "leadership")
    assert e["dms"] == {"skill": 1, "INT": 0, "haste": -1}
    assert (e["total"], e["effect"], e["bonuses"]) == (10, 2, 2)
    dice.assert_used_up()


def test_r3_5_haste_tie_break_and_declaration_order_use_current_initiative():
    # blue_0 10, red_0 9. In round 1 red_0 attacks blue_0, which has acted and dodges:
    # blue_0 has 8 in round 2, so red_0 declares first in round 2.
    b, dice = scripted(duel(hastening=True, reactions=True), [(5, 5), (4, 5), MISS])
    assert b.decision == ("haste", "blue_0")
    b.apply("haste:no")
    b.apply("haste:no")
    b.apply("end_turn")
    b.apply("attack:blue_0")
    b.apply("react:dodge")
    b.apply("end_turn")
    assert b.round == 2 and b.decision == ("haste", "red_0")
    b.apply("haste:no")
    assert b.decision == ("haste", "blue_0")
    # Haste brings blue_0 back to 10 > 9.
    b.apply("haste:yes")
    assert b.decision == ("turn", "blue_0")
    dice.assert_used_up()


def _react_setup(red_skills=None, reactions=True, blue_weapon="autorifle", red_weapon="autorifle",
                 red_drawn=True, blue_skills=None, adjacent=False):
    red_pos = (3, 2) if adjacent else (10, 2)
    red = fighter(red_pos, weapon=red_weapon, drawn=red_drawn,
                  skills={"gun_combat.slug": 1} if red_skills is None else red_skills)
    blue = fighter((2, 2), weapon=blue_weapon,
                   skills={"gun_combat.slug": 1} if blue_skills is None else blue_skills)
    return scenario([blue], [red], reactions=reactions)


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
    ("dagger", "dagger", False, "not drawn"),
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


# ============================================================================ R4 actions
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


def _with_weapon(sc, name="derringer", **spec):
    w = {"skill": "gun_combat.slug", "damage": "1D", "range": 10, "magazine": 1,
         "spare_magazines": 0}
    w.update(spec)
    sc["weapons"] = {name: w}
    return sc


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


def _aim_scenario(**kw):
    """blue_0 (12) at (2,2); red_0 (2) at (10,2) and red_1 (3) at (10,5), both in band +1."""
    sc = scenario([fighter((2, 2))], [fighter((10, 2)), fighter((10, 5))], **kw)
    return sc, [FIRST, (1, 1), (1, 2)]


def _next_blue_turn(b):
    end_turns_until(b, "blue_0")


def test_r4_3_aim_plus_1_per_consecutive_minor_and_carries_over_rounds():
    sc, init = _aim_scenario()
    b, dice = scripted(sc, [*init, MISS])
    for expected in (1, 2, 3):
        b.apply("aim:red_0")
        assert matches(last(b, "aim"), {
            "type": "aim", "actor": "blue_0", "target": "red_0", "aim": expected
        })
        assert b.attack_dms("blue_0", "red_0")["aim"] == expected
    # The aim is only for red_0.
    assert "aim" not in b.attack_dms("blue_0", "red_1")
    _next_blue_turn(b)
    assert b.round == 2
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 1, "aim": 3}
    assert e["total"] == 7 and not e["hit"]
    # The attack used the aim.
    assert b.by_id["blue_0"].aim_target is None
    assert "aim" not in b.attack_dms("blue_0", "red_0")
    dice.assert_used_up()


def test_r4_3_aim_caps_at_plus_6():
    sc, init = _aim_scenario()
    b, dice = scripted(sc, [*init, MISS, (1, 1, 1)])
    for _ in range(3):
        b.apply("aim:red_0")
    _next_blue_turn(b)
    for _ in range(3):
        b.apply("aim:red_0")
    assert last(b, "aim")["aim"] == 6
    _next_blue_turn(b)
    # Aiming stays legal at +6 and the DM stays +6.
    assert is_legal(b, "aim:red_0")
    b.apply("aim:red_0")
    assert last(b, "aim")["aim"] == 6
    assert b.by_id["blue_0"].aim_dm == 6
    b.apply("attack:red_0")
    e = last(b, "attack")
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 1, "aim": 6}
    assert (e["total"], e["effect"], e["damage"]) == (10, 2, 5)
    dice.assert_used_up()


@pytest.mark.parametrize("other", ["move:S:1", "stance:crouch", "stance:prone"])
def test_r4_3_aim_broken_by_another_minor_action(other):
    sc, init = _aim_scenario()
    b, dice = scripted(sc, [*init, MISS])
    b.apply("aim:red_0")
    b.apply("aim:red_0")
    b.apply(other)
    assert matches(last(b, "aim_lost"), {"type": "aim_lost", "actor": "blue_0", "target": "red_0"})
    assert "aim" not in b.attack_dms("blue_0", "red_0")
    _next_blue_turn(b)
    b.apply("attack:red_0")
    assert "aim" not in last(b, "attack")["dms"]
    dice.assert_used_up()


def test_r4_3_aim_broken_by_reload():
    sc = _with_weapon(_aim_scenario()[0], spare_magazines=2, range=300)
    sc["sides"][0]["combatants"][0]["weapon"] = "derringer"
    b, dice = scripted(sc, [*_aim_scenario()[1], MISS])
    b.apply("attack:red_0")
    b.apply("aim:red_0")  # legal with an empty magazine: the weapon is drawn
    assert b.by_id["blue_0"].ammo == 0 and b.by_id["blue_0"].aim_dm == 1
    _next_blue_turn(b)
    b.apply("reload")
    assert last(b, "aim_lost")["target"] == "red_0"
    assert b.by_id["blue_0"].aim_target is None
    dice.assert_used_up()


def test_r4_3_aim_broken_by_leadership():
    sc = _leader_scenario(n_allies=1)
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (1, 1)])
    b.apply("aim:red_0")
    b.apply("leadership")
    assert last(b, "aim_lost")["target"] == "red_0"
    assert b.by_id["blue_0"].aim_target is None
    dice.assert_used_up()


def test_r4_3_attack_on_another_target_breaks_aim():
    sc, init = _aim_scenario()
    b, dice = scripted(sc, [*init, MISS, MISS])
    b.apply("aim:red_0")
    b.apply("attack:red_1")
    assert "aim" not in last(b, "attack")["dms"]
    assert last(b, "aim_lost")["target"] == "red_0"
    _next_blue_turn(b)
    b.apply("attack:red_0")
    assert "aim" not in last(b, "attack")["dms"]
    dice.assert_used_up()


def test_r4_3_aiming_at_another_target_starts_again_at_plus_1():
    sc, init = _aim_scenario()
    b, dice = scripted(sc, [*init, MISS])
    b.apply("aim:red_0")
    b.apply("aim:red_0")
    b.apply("aim:red_1")
    assert last(b, "aim_lost")["target"] == "red_0"
    assert matches(last(b, "aim"), {"type": "aim", "actor": "blue_0", "target": "red_1", "aim": 1})
    assert "aim" not in b.attack_dms("blue_0", "red_0")
    _next_blue_turn(b)
    b.apply("aim:red_0")
    assert last(b, "aim")["aim"] == 1
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"]["aim"] == 1
    dice.assert_used_up()


def test_r4_3_aim_not_broken_by_end_turn_or_haste():
    sc, init = _aim_scenario(hastening=True)
    b, dice = scripted(sc, [*init, MISS])
    for _ in range(3):
        b.apply("haste:no")
    b.apply("aim:red_0")
    b.apply("aim:red_0")
    b.apply("end_turn")
    b.apply("end_turn")
    b.apply("end_turn")
    assert b.decision == ("haste", "blue_0")
    b.apply("haste:yes")
    b.apply("haste:no")
    b.apply("haste:no")
    assert not events(b, "aim_lost")
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"] == {"skill": 1, "DEX": 0, "range": 1, "aim": 2,
                                        "haste": -1}
    dice.assert_used_up()


def test_r4_3_aim_not_broken_by_direct():
    # blue_0 succeeds at Leadership, aims (its last Minor), hands a bonus to blue_1.
    sc = _leader_scenario(n_allies=1)
    b, dice = scripted(sc, [FIRST, (1, 1), (1, 2), (5, 5), MISS])
    b.apply("leadership")
    b.apply("aim:red_0")
    assert b.decision == ("turn", "blue_0")  # open: a bonus can still be handed out
    b.apply("direct:blue_1")
    assert not events(b, "aim_lost")
    assert (b.by_id["blue_0"].aim_target, b.by_id["blue_0"].aim_dm) == ("red_0", 1)
    _next_blue_turn(b)
    b.apply("attack:red_0")
    assert last(b, "attack")["dms"]["aim"] == 1
    dice.assert_used_up()


def test_r4_3_aim_needs_a_drawn_ranged_weapon_and_an_enemy():
    b, dice = scripted(duel(blue={"drawn": False}), [FIRST, SECOND])
    assert "not drawn" in b.why_illegal("aim:red_0")
    dice.assert_used_up()
    sc = scenario([fighter((2, 2), weapon="dagger", skills={"melee.blade": 1})],
                  [fighter((3, 2))])
    b, dice = scripted(sc, [FIRST, SECOND])
    assert "ranged" in b.why_illegal("aim:red_0")
    dice.assert_used_up()
    blue = [fighter((2, 2)), fighter((2, 4))]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [FIRST, SECOND, SECOND])
    assert b.why_illegal("aim:blue_1") is not None
    dice.assert_used_up()


def test_r4_4_change_stance_is_a_minor_action():
    b, dice = scripted(duel(), [FIRST, SECOND])
    assert b.why_illegal("stance:stand") is not None  # already standing
    b.apply("stance:crouch")
    assert matches(last(b, "stance"), {
        "type": "stance", "actor": "blue_0", "from": "stand", "to": "crouch"
    })
    assert b.budget_left("blue_0") == (True, 2)
    b.apply("stance:prone")
    assert b.by_id["blue_0"].stance == "prone"
    assert not is_legal(b, "stance:prone")
    b.apply("stance:stand")
    assert b.decision == ("turn", "red_0")
    assert [(e["from"], e["to"]) for e in events(b, "stance")] == [
        ("stand", "crouch"), ("crouch", "prone"), ("prone", "stand")]
    dice.assert_used_up()


def test_r4_5_draw_readies_a_weapon():
    b, dice = scripted(duel(blue={"drawn": False}, red={"drawn": True}), [FIRST, SECOND])
    assert not b.by_id["blue_0"].drawn and b.by_id["red_0"].drawn
    b.apply("draw")
    assert matches(last(b, "draw"), {
        "type": "draw", "actor": "blue_0", "weapon": "autorifle", "progress": 1, "needed": 1,
        "done": True
    })
    assert b.by_id["blue_0"].drawn
    assert "already drawn" in b.why_illegal("draw")
    assert b.budget_left("blue_0") == (True, 2)
    dice.assert_used_up()


def test_r4_5_melee_weapons_need_drawing_unarmed_does_not():
    sc = scenario([fighter((2, 2), weapon="dagger", skills={"melee.blade": 1}, drawn=False)],
                  [fighter((3, 2), weapon="unarmed", drawn=False)])
    b, dice = scripted(sc, [FIRST, SECOND, MISS])
    assert "not drawn" in b.why_illegal("attack:red_0")
    b.apply("draw")
    assert is_legal(b, "attack:red_0")
    b.apply("end_turn")
    assert b.by_id["red_0"].drawn
    assert b.why_illegal("draw") is not None
    b.apply("attack:blue_0")
    dice.assert_used_up()


def test_r4_5_rocket_launcher_needs_two_consecutive_draws():
    sc = duel(blue={"weapon": "rocket_launcher", "drawn": False,
                    "skills": {"heavy_weapons.portable": 1}})
    b, dice = scripted(sc, [FIRST, SECOND])
    b.apply("draw")
    assert matches(last(b, "draw"), {
        "type": "draw", "actor": "blue_0", "weapon": "rocket_launcher", "progress": 1,
        "needed": 2, "done": False
    })
    assert not b.by_id["blue_0"].drawn
    assert "not drawn" in b.why_illegal("attack:red_0")
    assert "not drawn" in b.why_illegal("aim:red_0")
    b.apply("draw")
    assert last(b, "draw")["progress"] == 2 and last(b, "draw")["done"]
    assert b.by_id["blue_0"].drawn
    assert b.why_illegal("draw") is not None
    dice.assert_used_up()


def test_r4_5_draw_progress_is_reset_by_another_action():
    sc = duel(blue={"weapon": "rocket_launcher", "drawn": False,
                    "skills": {"heavy_weapons.portable": 1}})
    b, dice = scripted(sc, [FIRST, SECOND])
    b.apply("draw")
    b.apply("stance:crouch")
    b.apply("draw")
    assert last(b, "draw")["progress"] == 1 and not b.by_id["blue_0"].drawn
    # The turn passed; the next Minor action of blue_0 is the consecutive second draw.
    _next_blue_turn(b)
    b.apply("draw")
    assert last(b, "draw")["progress"] == 2 and b.by_id["blue_0"].drawn
    dice.assert_used_up()


def test_r4_5_draw_progress_is_reset_by_a_significant_action():
    sc = _leader_scenario(n_allies=1)
    sc["sides"][0]["combatants"][0].update(weapon="rocket_launcher", drawn=False)
    b, dice = scripted(sc, [FIRST, (1, 1), (2, 2), (1, 1)])
    b.apply("draw")
    b.apply("leadership")  # fails: no bonuses to hand out, the turn passes
    _next_blue_turn(b)
    b.apply("draw")
    assert last(b, "draw")["progress"] == 1 and not b.by_id["blue_0"].drawn
    dice.assert_used_up()


def test_r4_5_reload_only_when_empty_and_a_spare_is_left():
    sc = _with_weapon(duel(blue={"weapon": "derringer"}), spare_magazines=1)
    b, dice = scripted(sc, [FIRST, SECOND, MISS, MISS])
    assert "not empty" in b.why_illegal("reload")
    b.apply("attack:red_0")
    assert is_legal(b, "reload")
    b.apply("reload")
    assert matches(last(b, "reload"), {
        "type": "reload", "actor": "blue_0", "weapon": "derringer", "progress": 1, "needed": 1,
        "done": True
    })
    c = b.by_id["blue_0"]
    assert (c.ammo, c.spares) == (1, 0)
    _next_blue_turn(b)
    b.apply("attack:red_0")
    assert "no spare" in b.why_illegal("reload")
    dice.assert_used_up()


def test_r4_5_reload_not_for_melee_weapons():
    sc = scenario([fighter((2, 2), weapon="blade", skills={"melee.blade": 1})],
                  [fighter((3, 2))])
    b, dice = scripted(sc, [FIRST, SECOND])
    assert b.why_illegal("reload") is not None
    dice.assert_used_up()


def test_r4_5_rocket_launcher_reload_takes_two_minor_actions():
    sc = duel(blue={"weapon": "rocket_launcher", "chars": {"STR": 12},
                    "skills": {"heavy_weapons.portable": 1}})
    b, dice = scripted(sc, [FIRST, SECOND, MISS])
    assert b.by_id["blue_0"].drawn
    b.apply("attack:red_0")
    c = b.by_id["blue_0"]
    assert (c.ammo, c.spares) == (0, 2)
    b.apply("reload")
    assert last(b, "reload")["progress"] == 1 and not last(b, "reload")["done"]
    assert (c.ammo, c.spares) == (0, 2)
    _next_blue_turn(b)
    assert "empty" in b.why_illegal("attack:red_0")
    b.apply("reload")
    assert last(b, "reload")["done"]
    assert (c.ammo, c.spares) == (1, 1)
    assert is_legal(b, "attack:red_0")
    dice.assert_used_up()


def test_r4_5_thrown_weapon_is_a_magazine_of_one_and_hits_one_target():
    red = [fighter((10, 2)), fighter((10, 3))]
    sc = scenario([fighter((2, 2), weapon="frag_grenade",
                           skills={"athletics.dexterity": 1})], red)
    b, dice = scripted(sc, [FIRST, SECOND, SECOND, (6, 6), (1, 1, 1, 1, 1)])
    c = b.by_id["blue_0"]
    assert (c.ammo, c.spares) == (1, 2)
    b.apply("attack:red_0")
    e = last(b, "attack")
    # 12 m against Range 20: band 0.
    assert e["dms"] == {"skill": 1, "DEX": 0, "range": 0}
    assert e["damage"] == 5 + 5
    assert b.by_id["red_0"].chars == {"STR": 4, "DEX": 7, "END": 0, "INT": 7, "EDU": 7,
                                      "SOC": 7}
    assert b.by_id["red_1"].chars == b.by_id["red_1"].max_chars  # no blast
    assert (c.ammo, c.spares) == (0, 2)
    b.apply("reload")
    assert (c.ammo, c.spares) == (1, 1)
    dice.assert_used_up()


def _mover(row: str, stance="stand", movement=None):
    blue = fighter((0, 0), stance=stance)
    if movement is not None:
        blue["movement"] = movement
    terrain = [row.ljust(12, "."), "." * 12, "." * 12]
    return scenario([blue], [fighter((11, 2))], width=12, height=3, terrain=terrain)


@pytest.mark.parametrize("row, stance, movement, squares, ok, metres", [
    ("", "stand", None, 1, True, 1.5),
    ("", "stand", None, 2, True, 3.0),          # stopping short
    ("", "stand", None, 4, True, 6.0),          # the full 6 m
    ("", "stand", None, 5, False, None),
    (".~~", "stand", None, 2, True, 6.0),       # difficult squares cost 3 m each
    (".~~", "stand", None, 3, False, None),     # 7.5 m
    (".~~~", "stand", None, 3, False, None),    # 9 m
    ("..~.", "stand", None, 3, True, 6.0),      # 1.5 + 3 + 1.5
    ("..~.", "stand", None, 4, False, None),    # 7.5 m
    ("~....", "stand", None, 4, True, 6.0),     # leaving difficult ground: budget not halved
    ("", "crouch", None, 4, True, 6.0),         # only prone limits movement
    ("", "prone", None, 1, True, 1.5),          # prone: 6 / 4 = 1.5 m
    ("", "prone", None, 2, False, None),
    (".~", "prone", None, 1, True, 3.0),        # one square is always possible
    (".~", "stand", 1.0, 1, True, 3.0),
    ("", "stand", 1.0, 1, True, 1.5),
    ("", "stand", 1.0, 2, False, None),
    ("", "stand", 3.0, 2, True, 3.0),
    ("", "stand", 3.0, 3, False, None),
])
def test_r4_6_move_cost_and_limits(row, stance, movement, squares, ok, metres):
    b, dice = scripted(_mover(row, stance, movement), [FIRST, SECOND])
    label = f"move:E:{squares}"
    assert is_legal(b, label) is ok, b.why_illegal(label)
    if ok:
        b.apply(label)
        assert matches(last(b, "move"), {
            "type": "move", "actor": "blue_0", "from": [0, 0], "to": [squares, 0],
            "metres": metres
        })
        assert b.by_id["blue_0"].pos == (squares, 0)
        assert b.budget_left("blue_0") == (True, 2)
    else:
        with pytest.raises(IllegalActionError):
            b.apply(label)
        assert b.by_id["blue_0"].pos == (0, 0)
    dice.assert_used_up()


def test_r4_6_diagonal_steps_and_labels():
    b, dice = scripted(_mover(""), [FIRST, SECOND])
    assert b.max_move_squares == 4
    moves = {a.label for a in b.candidate_actions() if a.kind == "move"}
    assert moves == {f"move:{d}:{n}" for d in ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
                     for n in (1, 2, 3, 4)}
    assert legal(b) & moves == {"move:E:1", "move:E:2", "move:E:3", "move:E:4",
                                "move:SE:1", "move:SE:2", "move:S:1", "move:S:2"}
    b.apply("move:SE:2")
    assert last(b, "move")["metres"] == 3.0 and b.by_id["blue_0"].pos == (2, 2)
    dice.assert_used_up()


def test_r4_6_move_is_a_minor_action_and_blocked_by_occupied_squares():
    sc = scenario([fighter((0, 0))], [fighter((3, 0))], width=12, height=3)
    b, dice = scripted(sc, [FIRST, SECOND])
    assert is_legal(b, "move:E:2") and not is_legal(b, "move:E:3")
    b.apply("move:S:1")
    b.apply("move:N:1")
    b.apply("move:E:1")
    assert b.decision == ("turn", "red_0")
    assert [e["to"] for e in events(b, "move")] == [[0, 1], [0, 0], [1, 0]]
    dice.assert_used_up()


def test_r4_7_end_turn_gives_up_the_rest_of_the_budget():
    b, dice = scripted(duel(), [FIRST, SECOND])
    assert is_legal(b, "end_turn")
    b.apply("end_turn")
    assert b.decision == ("turn", "red_0")
    assert last(b, "end_turn")["reason"] == "chosen"
    b.apply("aim:blue_0")
    b.apply("end_turn")
    assert b.round == 2 and b.decision == ("turn", "blue_0")
    assert b.budget_left("blue_0") == (True, 3)
    assert [(e["round"], e["actor"]) for e in events(b, "turn")] == [
        (1, "blue_0"), (1, "red_0"), (2, "blue_0")]
    dice.assert_used_up()


def test_r4_7_end_turn_not_possible_while_a_reaction_is_awaited():
    b, dice = scripted(_react_setup(), [FIRST, SECOND, MISS])
    b.apply("attack:red_0")
    assert b.why_illegal("end_turn") is not None
    with pytest.raises(IllegalActionError):
        b.apply("end_turn")
    b.apply("react:none")
    dice.assert_used_up()
