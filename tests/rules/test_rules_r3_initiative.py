"""Rules tests for R3.1-R3.5, Initiative: R3.1 the roll, R3.2 ambush, R3.3 Tactics,
R3.4 dynamic Initiative, R3.5 hastening. Reactions and recoil (R3.6, R3.7) are in
``test_rules_r3_reactions_recoil.py``.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

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
    blue = [fighter((2, 2), skills={"tactics.military": 1}, chars={"INT": 9}),
            fighter((2, 4), skills={"tactics.military": 1}, chars={"INT": 9})]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [(3, 3), (3, 4), (4, 4), (4, 4)])
    assert last(b, "tactics")["actor"] == "blue_0"
    dice.assert_used_up()


def test_r3_3_only_tactics_military_counts():
    """R3.3 ruling: the naval specialty alone makes no Tactics check in personal combat; the
    base skill (level 0) does."""
    blue = [fighter((2, 2), skills={"tactics.naval": 3}, chars={"INT": 12})]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [(3, 3), (3, 4)])
    assert events(b, "tactics") == []
    dice.assert_used_up()
    blue = [fighter((2, 2), skills={"tactics.naval": 3}),
            fighter((2, 4), skills={"tactics": 0})]
    b, dice = scripted(scenario(blue, [fighter((10, 2))]), [(3, 3), (3, 4), (4, 4), (4, 4)])
    t = last(b, "tactics")
    assert t["actor"] == "blue_1" and t["dms"] == {"skill": 0, "INT": 0}
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
