"""Scenario loading and validation: built-in scenarios, the three ways of loading, malformed
scenarios (each a ``ScenarioError`` naming the source, the field path and the bad value or the
allowed ones) and the equipment file."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml
from conftest import fighter, scenario

from traveller_env.rules.grid import WALL
from traveller_env.scenario import (
    ScenarioError,
    build_battle,
    builtin_scenarios,
    config_dir,
    load_equipment,
    load_scenario,
)

BUILTINS = builtin_scenarios()


def play_random(battle, seed: int, max_steps: int = 20_000) -> int:
    """Play random legal actions to the end, checking a few invariants on the way."""
    rng = random.Random(seed)
    steps = 0
    while not battle.done:
        legal = battle.legal_actions()
        assert legal, f"no legal action for {battle.decision}"
        battle.apply(rng.choice(legal))
        steps += 1
        assert steps < max_steps, "battle does not end"
        squares = [c.pos for c in battle.combatants if not c.out]
        assert len(squares) == len(set(squares)), "two combatants on one square"
        for c in battle.combatants:
            assert battle.grid.in_bounds(c.pos) and battle.grid.terrain(c.pos) != WALL
            assert all(v >= 0 for v in c.chars.values())
    return steps


# ---------------------------------------------------------------------------- built-ins
def test_builtin_scenarios_are_the_shipped_files():
    assert {"ambush", "duel", "melee", "squad"} <= set(BUILTINS)
    assert sorted(p.stem for p in (config_dir() / "scenarios").glob("*.yaml")) == BUILTINS


@pytest.mark.parametrize("name", BUILTINS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_builtin_scenario_plays_to_the_end_with_random_legal_actions(name, seed):
    battle = build_battle(name, seed=seed)
    play_random(battle, seed)
    assert battle.decision is None
    end = battle.events[-1]
    assert end["type"] == "end"
    if battle.truncated:
        assert battle.winner is None and end["reason"] == "max_rounds"
        assert battle.round == load_scenario(name).max_rounds
    else:
        assert end["winner"] == battle.winner
        sides_left = {battle.by_id[i].side for i in battle.able_ids()}
        assert len(sides_left) <= 1


@pytest.mark.parametrize("name", BUILTINS)
def test_loading_by_name_path_and_dict_give_the_same_scenario(name):
    path = config_dir() / "scenarios" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    by_name = load_scenario(name)
    assert load_scenario(path) == by_name
    assert load_scenario(str(path)) == by_name
    assert load_scenario(data) == by_name
    assert load_scenario(by_name) is by_name
    events = [build_battle(src, seed=7).events for src in (name, path, str(path), data)]
    assert all(e == events[0] for e in events)


# ---------------------------------------------------------------------------- malformed
def base() -> dict:
    return scenario([fighter((0, 0)), fighter((1, 0))], [fighter((5, 5))])


def _set(path: list, value):
    """Mutator setting ``sc[path...] = value``."""
    def mutate(sc):
        obj = sc
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return mutate


def _combatant(side: int, index: int, **changes):
    def mutate(sc):
        sc["sides"][side]["combatants"][index].update(changes)
    return mutate


def _weapon(**spec):
    def mutate(sc):
        sc["weapons"] = {"zap": spec}
    return mutate


def _terrain(rows):
    return _set(["map", "terrain"], rows)


OPEN_ROW = "." * 20
C01 = "sides[0].combatants[1]"

# (id, mutation, field path, substrings the message must contain)
MALFORMED = [
    ("unknown_top_level_key", _set(["colour"], "red"), "colour",
     ["unknown key 'colour'", "allowed keys", "max_rounds"]),
    ("unknown_nested_key", _combatant(0, 1, colour="red"), f"{C01}.colour",
     ["unknown key 'colour'", "weapon"]),
    ("unknown_option_key", _set(["options", "fog"], True), "options.fog",
     ["unknown key 'fog'", "comms_range_m"]),
    ("unknown_key_in_local_weapon", _weapon(skill="melee.blade", damage="2D", range="melee",
                                            sharp=True),
     "weapons.zap.sharp", ["unknown key 'sharp'", "magazine"]),
    ("max_rounds_not_int", _set(["max_rounds"], "many"), "max_rounds", ["'many'", "integer"]),
    ("map_width_not_int", _set(["map", "width"], "wide"), "map.width", ["'wide'"]),
    ("sides_not_list", _set(["sides"], "blue"), "sides", ["'blue'", "list"]),
    ("weapon_not_str", _combatant(0, 1, weapon=5), f"{C01}.weapon", ["5", "string"]),
    ("position_not_pair", _combatant(0, 1, position=[1, 2, 3]), f"{C01}.position",
     ["[1, 2, 3]"]),
    ("drawn_not_bool", _combatant(0, 1, drawn="maybe"), f"{C01}.drawn", ["'maybe'"]),
    ("unknown_weapon", _combatant(0, 1, weapon="phaser"), f"{C01}.weapon",
     ["'phaser'", "autorifle", "frag_grenade"]),
    ("unknown_armour", _combatant(0, 1, armour="plate"), f"{C01}.armour",
     ["'plate'", "flak_jacket", "combat_armour"]),
    ("position_off_map", _combatant(0, 1, position=[20, 3]), f"{C01}.position",
     ["[20, 3]", "off", "20x10"]),
    ("position_negative", _combatant(0, 1, position=[-1, 3]), f"{C01}.position",
     ["[-1, 3]", "off"]),
    ("position_in_wall", _terrain([".#" + OPEN_ROW[2:]] + [OPEN_ROW] * 9), f"{C01}.position",
     ["[1, 0]", "wall"]),
    ("two_on_one_square", _combatant(0, 1, position=[0, 0]), f"{C01}.position",
     ["[0, 0]", "blue_0"]),
    ("duplicate_side_names", _set(["sides", 1, "name"], "blue"), "sides[1].name",
     ["'blue'", "differ"]),
    ("bad_side_name", _set(["sides", 0, "name"], "blue team"), "sides[0].name", ["'blue team'"]),
    ("one_side", lambda sc: sc["sides"].pop(), "sides", ["at least 2"]),
    ("three_sides", lambda sc: sc["sides"].append(
        {"name": "green", "combatants": [fighter((9, 9))]}), "sides", ["at most 2"]),
    ("empty_combatants", _set(["sides", 1, "combatants"], []), "sides[1].combatants",
     ["at least 1", "[]"]),
    ("characteristic_0", _set(["sides", 0, "combatants", 0, "characteristics", "STR"], 0),
     "sides[0].combatants[0].characteristics.STR", ["got 0", "greater than or equal to 1"]),
    ("characteristic_16", _set(["sides", 0, "combatants", 1, "characteristics", "DEX"], 16),
     f"{C01}.characteristics.DEX", ["got 16", "less than or equal to 15"]),
    ("characteristic_bool", _set(["sides", 0, "combatants", 1, "characteristics", "DEX"], True),
     f"{C01}.characteristics.DEX", ["True", "1 to 15"]),
    ("characteristic_missing", lambda sc: sc["sides"][1]["combatants"][0]["characteristics"].pop(
        "SOC"), "sides[1].combatants[0].characteristics.SOC", ["missing"]),
    ("bad_terrain_char", _terrain([OPEN_ROW] * 2 + ["....X" + OPEN_ROW[5:]] + [OPEN_ROW] * 7),
     "map.terrain[2]", ["'X'", "'~'", "'#'"]),
    ("terrain_row_wrong_length", _terrain([OPEN_ROW, OPEN_ROW[1:]] + [OPEN_ROW] * 8),
     "map.terrain[1]", ["19 characters", "map.width is 20"]),
    ("terrain_wrong_number_of_rows", _terrain([OPEN_ROW] * 9), "map.terrain",
     ["9 rows", "map.height is 10"]),
    ("bad_dice_notation", _weapon(skill="gun_combat.energy", damage="3d6", range=10, magazine=5),
     "weapons.zap.damage", ["'3d6'", "'2D+2'"]),
    ("zero_dice", _weapon(skill="gun_combat.energy", damage="0D", range=10, magazine=5),
     "weapons.zap.damage", ["'0D'"]),
    ("ranged_weapon_without_magazine", _weapon(skill="gun_combat.energy", damage="3D", range=10),
     "weapons.zap", ["'magazine' is required"]),
    ("melee_weapon_with_magazine", _weapon(skill="melee.blade", damage="2D", range="melee",
                                           magazine=3),
     "weapons.zap", ["melee weapon has no 'magazine'"]),
    ("weapon_range_not_number", _weapon(skill="melee.blade", damage="2D", range="far"),
     "weapons.zap.range", ["'far'", "'melee'"]),
    ("weapon_range_nan", _weapon(skill="gun_combat.slug", damage="2D", range=float("nan"),
                                 magazine=3),
     "weapons.zap.range", ["nan", "positive"]),
    ("weapon_range_inf", _weapon(skill="gun_combat.slug", damage="2D", range=float("inf"),
                                 magazine=3),
     "weapons.zap.range", ["inf", "positive"]),
    ("bad_stance", _combatant(0, 1, stance="kneel"), f"{C01}.stance",
     ["'kneel'", "'crouch'", "'prone'"]),
    ("bad_skill_name", _combatant(0, 1, skills={"Gun Combat": 1}), f"{C01}.skills",
     ["'Gun Combat'", "gun_combat.slug"]),
    ("negative_skill_level", _combatant(0, 1, skills={"gun_combat.slug": -1}), f"{C01}.skills",
     ["'gun_combat.slug'", "-1", "0 to 6"]),
    ("bad_option_value", _set(["options", "illegal_action"], "ignore"), "options.illegal_action",
     ["'ignore'", "'raise'", "'penalize'"]),
    ("missing_name", lambda sc: sc.pop("name"), "name", ["missing"]),
]


@pytest.mark.parametrize(("mutate", "path", "expected"),
                         [pytest.param(m, p, e, id=i) for i, m, p, e in MALFORMED])
def test_malformed_scenario_raises_scenario_error(mutate, path, expected, tmp_path):
    sc = base()
    mutate(sc)
    # From a dict ...
    with pytest.raises(ScenarioError) as err:
        load_scenario(copy.deepcopy(sc))
    e = err.value
    assert (e.source, e.path) == ("<dict>", path)
    message = str(e)
    assert message.startswith(f"<dict>: {path}: ")
    for text in expected:
        assert text in message, f"{text!r} not in {message!r}"
    # ... and from a file, naming the file; build_battle fails the same way.
    file = tmp_path / "bad.yaml"
    file.write_text(yaml.safe_dump(sc, sort_keys=False), encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        build_battle(file, seed=0)
    assert (err.value.source, err.value.path) == (str(file), path)
    assert str(err.value).startswith(f"{file}: {path}: ")
    assert err.value.problem == e.problem


def test_at_least_twenty_malformed_cases():
    assert len(MALFORMED) >= 20


def test_base_of_malformed_cases_is_valid():
    load_scenario(base())


def test_unknown_builtin_name():
    with pytest.raises(ScenarioError) as err:
        load_scenario("no_such_scenario")
    assert err.value.source == "no_such_scenario"
    for name in BUILTINS:
        assert name in str(err.value)


def test_file_not_found(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ScenarioError) as err:
        load_scenario(missing)
    assert err.value.source == str(missing)
    assert str(missing) in str(err.value) and "cannot read" in str(err.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("name: [unclosed\n", "not valid YAML"),
     ("name: duel\n  bad: indent\n", "not valid YAML"),
     ("- a list\n- of things\n", "a scenario is a mapping"),
     ("", "a scenario is a mapping")],
)
def test_invalid_yaml(text, problem, tmp_path):
    file = tmp_path / "broken.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(file))
    assert err.value.source == str(file)
    assert problem in str(err.value)


@pytest.mark.parametrize("source", [5, None, ["duel"]])
def test_not_a_scenario_source(source):
    with pytest.raises(ScenarioError):
        load_scenario(source)


def test_scenario_error_is_a_value_error():
    assert issubclass(ScenarioError, ValueError)


def test_scenario_local_weapon_and_armour_are_usable():
    sc = base()
    sc["weapons"] = {"zap": {"skill": "gun_combat.energy", "damage": "2D+1", "range": 12,
                             "magazine": 4}}
    sc["armour"] = {"plate": {"protection": 7}}
    sc["sides"][0]["combatants"][0].update(weapon="zap", armour="plate")
    battle = build_battle(sc, seed=0)
    c = battle.by_id["blue_0"]
    assert (c.weapon.name, str(c.weapon.damage), c.weapon.range_m) == ("zap", "2D+1", 12.0)
    assert (c.ammo, c.armour.protection) == (4, 7)


# ---------------------------------------------------------------------------- equipment
WEAPONS = ["unarmed", "dagger", "blade", "cudgel", "autopistol", "revolver", "shotgun",
           "autorifle", "assault_rifle", "laser_rifle", "rocket_launcher", "frag_grenade"]
ARMOUR = ["none", "jack", "mesh", "flak_jacket", "cloth", "combat_armour"]


def test_equipment_file_has_every_named_weapon_and_armour():
    eq = load_equipment()
    assert set(WEAPONS) <= set(eq.weapons)
    assert set(ARMOUR) <= set(eq.armour)
    assert eq.armour["none"].protection == 0


@pytest.mark.parametrize("name", WEAPONS)
def test_equipment_weapons_build(name):
    spec = load_equipment().weapons[name]
    w = spec.to_weapon(name)
    assert w.damage.count >= 1
    if w.is_melee:
        assert w.magazine == 0
    else:
        assert w.range_m > 0 and w.magazine >= 1
    expected_skill = {"rocket_launcher": "heavy_weapons.portable",
                      "frag_grenade": "athletics.dexterity"}.get(name)
    if expected_skill:
        assert w.skill == expected_skill
    elif w.is_melee:
        assert w.skill.startswith("melee.")
    else:
        assert w.skill.startswith("gun_combat.")


def test_equipment_file_is_the_configs_one():
    assert (config_dir() / "equipment.yaml").is_file()
    assert Path(config_dir(), "scenarios").is_dir()
