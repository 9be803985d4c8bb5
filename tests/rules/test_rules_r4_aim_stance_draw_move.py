"""Rules tests for the Minor actions and the end of a turn: R4.3 aim, R4.4 stance, R4.5
draw and reload, R4.6 move, R4.7 end turn.

Rule ids (``test_r4_3_...`` checks R4.3) refer to ``docs/rules.md`` (anchor ``#r4_3``).
Shared helpers and the conventions every rules test follows (exact dice, hastening and
reactions off unless asked for, the order of the dice at battle creation) are in
``rules_helpers``.
"""

from __future__ import annotations

import pytest
from conftest import fighter, scenario, scripted
from rules_helpers import (
    FIRST,
    MISS,
    SECOND,
    _leader_scenario,
    _react_setup,
    _with_weapon,
    duel,
    end_turns_until,
    events,
    is_legal,
    last,
    legal,
    matches,
)

from traveller_env.rules.battle import IllegalActionError


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
