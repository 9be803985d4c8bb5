"""The rule functions (one home per rule): each pure function against the rule it states,
including the hypothetical questions agents ask (another square, stance, aim or haste).

Rule ids refer to docs/rules.md.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario

from traveller_env.rules.attack import (
    AIM_MAX,
    BEYOND_RANGE_DM,
    attack_dms,
    damage_on_hit,
    held_dms,
    in_attack_reach,
    next_aim_dm,
    range_dm,
)
from traveller_env.rules.budget import Budget
from traveller_env.rules.damage import apply_damage, damage_to_incapacitate, is_incapacitated
from traveller_env.rules.events import EVENT_KINDS, check_event
from traveller_env.rules.leadership import can_communicate, leadership_dms
from traveller_env.rules.movement import move_budget_m, squares_per_move
from traveller_env.rules.reactions import can_parry, parry_skill, reaction_dm, recoil_cost
from traveller_env.scenario import build_battle
from traveller_env.view import BattleView


# ---------------------------------------------------------------------------- R2.1
@pytest.mark.parametrize(("minors", "sig", "sig_left", "minors_left", "spent"), [
    (0, False, True, 3, False), (1, False, True, 2, False), (2, False, False, 1, False),
    (3, False, False, 0, True), (0, True, False, 1, False), (1, True, False, 0, True),
])
def test_r2_1_budget(minors, sig, sig_left, minors_left, spent):
    b = Budget(minors, sig)
    assert (b.significant_left, b.minors_left, b.spent) == (sig_left, minors_left, spent)


@pytest.mark.parametrize(("minors", "sig", "minor_ok", "sig_ok"), [
    (0, False, True, True), (2, False, True, False), (3, False, False, False),
    (0, True, True, False), (1, True, False, False)])
def test_r2_1_budget_allows_each_cost(minors, sig, minor_ok, sig_ok):
    b = Budget(minors, sig)
    assert (b.allows("minor"), b.allows("significant")) == (minor_ok, sig_ok)
    assert b.allows("free") and b.allows("end") and b.allows("answer")


def test_r2_1_budget_after_each_cost():
    assert Budget().after("minor") == Budget(1, False)
    assert Budget(1).after("significant") == Budget(1, True)
    assert Budget(1).after("free") == Budget(1)


@pytest.mark.parametrize(("used", "more", "ok"), [(0, 0, True), (0, 1, True), (0, 2, False),
                                                  (1, 2, True), (2, 1, True), (2, 2, True)])
def test_r2_1_a_significant_action_after_more_minors_over_several_turns(used, more, ok):
    assert Budget.significant_after_minors(used, more) is ok


# ---------------------------------------------------------------------------- R4.1, R5
def _battle(blue, red, **kw):
    return build_battle(scenario(blue, red, **kw), seed=1)


def test_r5_1_range_bands():
    assert [range_dm(d, 20) for d in (5, 5.01, 20, 40, 80, 80.01)] == [1, 0, 0, -2, -4, None]


def test_r5_attack_dms_now_and_in_hypothetical_positions_stances_aims():
    b = _battle([fighter((0, 0), skills={"gun_combat.slug": 2}, chars={"DEX": 9})],
                [fighter((6, 0))], width=40,
                terrain=["." * 5 + "c" + "." * 34] + ["." * 40] * 9)
    a, t, grid = b.by_id["blue_0"], b.by_id["red_0"], b.grid
    assert attack_dms(a, t, grid) == {"skill": 2, "DEX": 1, "range": 1}
    assert b.attack_dms("blue_0", "red_0") == attack_dms(a, t, grid)
    # The target prone behind the low cover at (5, 0): cover and prone (R5.3).
    assert attack_dms(a, t, grid, tstance="prone") == {"skill": 2, "DEX": 1, "range": 1,
                                                       "cover": -2, "prone": -1}
    assert attack_dms(a, t, grid, aim=3, hasty=True) == {"skill": 2, "DEX": 1, "range": 1,
                                                         "aim": 3, "haste": -1}
    # The band follows the hypothetical square (R5.1), past 4x Range too.
    short = {"skill": "gun_combat.slug", "damage": "1D", "range": 3, "magazine": 5}
    sc = scenario([fighter((0, 0), weapon="short")], [fighter((10, 0))], width=40)
    sc["weapons"] = {"short": short}
    b2 = build_battle(sc, seed=1)
    a2, t2 = b2.by_id["blue_0"], b2.by_id["red_0"]
    bands = [attack_dms(a2, t2, b2.grid, apos=(x, 0))["range"] for x in (10, 8, 7, 3, 0)]
    assert bands == [1, 0, -2, -4, BEYOND_RANGE_DM]  # 0, 3, 4.5, 10.5 and 15 m
    assert in_attack_reach(a.weapon, grid, a.pos, t.pos)
    view = BattleView(b)
    assert view.attack_dms("blue_0", "red_0", tstance="prone") == attack_dms(
        a, t, grid, tstance="prone")
    assert view.attack_in_reach("blue_0", "red_0")


def test_r4_1_melee_reach_is_adjacency_and_dms_the_better_of_str_and_dex():
    b = _battle([fighter((0, 0), weapon="blade", skills={"melee.blade": 1},
                         chars={"STR": 12, "DEX": 9})], [fighter((1, 1))])
    a, t = b.by_id["blue_0"], b.by_id["red_0"]
    assert in_attack_reach(a.weapon, b.grid, (0, 0), (1, 1))
    assert not in_attack_reach(a.weapon, b.grid, (0, 0), (2, 1))
    assert attack_dms(a, t, b.grid) == {"skill": 1, "STR": 2}


def test_r7_3_held_dms():
    class Holder:
        bonus, penalty = True, True
    assert held_dms(Holder()) == {"leadership_bonus": 1, "leadership_penalty": -1}
    Holder.penalty = False
    assert held_dms(Holder()) == {"leadership_bonus": 1}


def test_r4_3_next_aim_dm():
    assert next_aim_dm(None, 0, "red_0") == 1
    assert next_aim_dm("red_0", 2, "red_0") == 3
    assert next_aim_dm("red_0", AIM_MAX, "red_0") == AIM_MAX
    assert next_aim_dm("red_1", 4, "red_0") == 1


# ---------------------------------------------------------------------------- R6
@pytest.mark.parametrize(("dice", "mod", "effect", "protection", "damage"), [
    (10, 0, 2, 3, 9), (3, 0, 0, 5, 0), (7, 2, 1, 0, 10), (2, -1, 0, 4, 0)])
def test_r6_1_damage_on_hit(dice, mod, effect, protection, damage):
    assert damage_on_hit(dice, mod, effect, protection) == damage


@pytest.mark.parametrize("chars", [(7, 7, 7), (9, 4, 2), (3, 8, 5), (1, 1, 1), (0, 5, 0)])
def test_r6_3_damage_to_incapacitate_is_the_least_damage_that_does(chars):
    need = damage_to_incapacitate(*chars)
    if is_incapacitated(*chars):
        assert need == 0
        return
    assert is_incapacitated(*apply_damage(*chars, need))
    assert not is_incapacitated(*apply_damage(*chars, need - 1))


# ---------------------------------------------------------------------------- R3.6, R3.7
def _combatant(weapon, drawn, skills):
    b = _battle([fighter((0, 0), weapon=weapon, drawn=drawn, skills=skills)], [fighter((3, 0))])
    return b.by_id["blue_0"]


def test_r3_6_reaction_dms_and_parry():
    c = _combatant("dagger", True, {"melee.blade": 2, "athletics.dexterity": 3})
    assert reaction_dm(c, "dodge") == -3 and reaction_dm(c, "parry") == -2
    assert reaction_dm(c, "none") == 0
    assert can_parry(c, True) and not can_parry(c, False)
    rifle = _combatant("autorifle", True, {"melee.unarmed": 2})
    assert not can_parry(rifle, True)  # a drawn ranged weapon
    holstered = _combatant("autorifle", False, {"melee.unarmed": 2})
    assert can_parry(holstered, True) and parry_skill(holstered) == "melee.unarmed"
    assert reaction_dm(holstered, "parry") == -2
    assert reaction_dm(_combatant("autorifle", False, {}), "dodge") == -1  # minimum 1


@pytest.mark.parametrize(("req", "str_", "cost"), [(0, 3, 0), (9, 7, 1), (12, 4, 3),
                                                  (9, 12, 0)])
def test_r3_7_recoil_cost(req, str_, cost):
    assert recoil_cost(req, str_) == cost


# ---------------------------------------------------------------------------- R4.6, R4.2, R7.2
def test_r4_6_move_budget_and_squares():
    assert move_budget_m(6.0, "stand") == 6.0 == move_budget_m(6.0, "crouch")
    assert move_budget_m(6.0, "prone") == 1.5
    assert squares_per_move(6.0) == 4 and squares_per_move(1.5) == 1
    assert squares_per_move(1.0) == 1  # a Move may always enter one square


def test_r4_2_leadership_dms_take_the_best_of_int_edu_soc():
    b = _battle([fighter((0, 0), skills={"leadership": 2},
                         chars={"INT": 9, "EDU": 12, "SOC": 12})], [fighter((3, 0))])
    c = b.by_id["blue_0"]
    assert leadership_dms(c) == {"skill": 2, "EDU": 2}  # ties: INT, EDU, SOC order
    assert leadership_dms(c, hasty=True) == {"skill": 2, "EDU": 2, "haste": -1}


def test_r7_2_can_communicate():
    b = _battle([fighter((0, 0)), fighter((30, 0))], [fighter((3, 0))], width=40)
    a, far = b.by_id["blue_0"], b.by_id["blue_1"]
    assert not can_communicate(a, far, b.grid, 30.0)  # 45 m
    assert can_communicate(a, far, b.grid, 50.0)


# ---------------------------------------------------------------------------- events
def test_every_event_of_a_played_battle_matches_its_kind():
    import json

    from golden_playthroughs import GOLDEN_DIR
    seen = set()
    for path in GOLDEN_DIR.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            assert check_event(event) is None, (path.name, event)
            seen.add(event["type"])
    assert seen <= set(EVENT_KINDS)


def test_check_event_names_what_is_wrong():
    assert "unknown event type" in check_event({"type": "teleport"})
    assert "fields" in check_event({"type": "out"})
    assert "not an event" in check_event(["type"])


def test_versions_move_on_with_every_change_and_stamp_the_combatants_touched():
    b = _battle([fighter((0, 0))], [fighter((8, 0))])
    v0 = b.version
    actor = b.current_agent
    b.apply("stance:crouch")
    assert b.version > v0 and b.by_id[actor].version == b.version
    other = next(c for c in b.combatants if c.id != actor)
    assert other.version < b.version
    before = b.version
    b.apply(f"attack:{other.id}")  # reactions off: declared and resolved in one step
    assert b.version > before and other.version == b.version
