"""Scenario generators (``traveller_env.generate``): named, seeded distributions.

A (distribution, seed) pair names one scenario forever (golden hashes), every draw is a valid
scenario whose combatants can all reach each other, the distributions cover what they say
(team sizes, placements, weapons), and a written file replays exactly."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import yaml

import traveller_env
from traveller_cli.env_commands import main
from traveller_cli.generate import check_scenario, parse_seed_range, scenario_yaml
from traveller_env.generate import (
    Distribution,
    GeneratorError,
    distribution_names,
    draw_scenario,
    load_distribution,
    parse_generated_name,
    scenario_hash,
)
from traveller_env.scenario import (
    ScenarioError,
    build_battle,
    config_dir,
    load_equipment,
    load_scenario,
)
from traveller_env.simulate import play_random

DISTRIBUTIONS = ["gen:ambush", "gen:duel", "gen:skirmish", "gen:squad"]

#: Pinned draws: a change that moves one changes what the name means (a new distribution
#: name is needed instead).
GOLDEN = {
    "gen:skirmish@0": "05f482ab688d75dc",
    "gen:skirmish@7": "d6edd4c098a7ecb9",
    "gen:squad@0": "66d2ec164c2f3a55",
    "gen:squad@4": "852a29b2733e197d",
    "gen:duel@2": "7d0025c2f158bce5",
    "gen:ambush@3": "0c87a5ddb03e6148",
}


def _hash(name: str) -> str:
    return scenario_hash(load_scenario(name).model_dump(mode="json"))


def test_the_shipped_distributions():
    assert distribution_names(config_dir()) == DISTRIBUTIONS


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_generated_name_names_one_scenario_forever(name):
    assert _hash(name) == GOLDEN[name]


def test_the_draw_depends_on_the_distribution_and_the_seed():
    hashes = {_hash(f"{d}@{s}") for d in DISTRIBUTIONS for s in range(5)}
    assert len(hashes) == 20
    dist = load_distribution("skirmish", config_dir())
    equipment = load_equipment().model_dump()
    assert draw_scenario(dist, 11, equipment) == draw_scenario(dist, 11, equipment)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_every_draw_holds_the_guarantees(dist):
    for seed in range(60):
        sc = load_scenario(f"{dist}@{seed}")
        assert sc.name == f"{dist}@{seed}"
        assert check_scenario(sc) == [], (sc.name, check_scenario(sc))


def test_skirmish_covers_sizes_placements_weapons_and_leaders():
    sizes, placements, weapons, leaders, uneven = Counter(), Counter(), set(), 0, 0
    for seed in range(200):
        sc = load_scenario(f"gen:skirmish@{seed}")
        a, b = (len(s.combatants) for s in sc.sides)
        sizes.update((a, b))
        uneven += a != b
        placements[sc.description.split(": ")[1].split(",")[0]] += 1
        for side in sc.sides:
            for c in side.combatants:
                weapons.add(c.weapon)
                leaders += "leadership" in c.skills
    assert set(sizes) == set(range(1, 7))
    assert 40 < uneven < 160
    assert set(placements) == {"lines", "corners", "scattered", "ambush"}
    dist = load_distribution("gen:skirmish", config_dir())
    assert weapons == set(dist.roster.weapons)  # melee, pistols, shotgun, rifles, heavy
    assert leaders > 50


def test_an_ambush_has_one_prepared_side_and_one_holstered():
    for seed in range(20):
        sc = load_scenario(f"gen:ambush@{seed}")
        prepared = [s.prepared for s in sc.sides]
        assert sorted(prepared) == [False, True]
        victims = sc.sides[prepared.index(False)]
        assert not any(c.drawn for c in victims.combatants)
        battle = build_battle(sc, seed=0)
        assert all(c.prepared == sc.sides[c.side].prepared for c in battle.combatants)


def test_a_written_file_replays_exactly(tmp_path):
    out = tmp_path / "x.yaml"
    assert main(["scenarios", "generate", "gen:skirmish", "--seed", "7",
                 "--out", str(out)]) == 0
    from_file = load_scenario(out)
    assert from_file == load_scenario("gen:skirmish@7")
    logs = []
    for source in (out, "gen:skirmish@7"):
        battle = build_battle(source, seed=3)
        play_random(battle, random.Random(3))
        logs.append(battle.events)
    assert logs[0] == logs[1] and len(logs[0]) > 10


def test_the_cli_checks_a_seed_range(capsys, tmp_path):
    assert main(["scenarios", "generate", "gen:squad", "--seeds", "0-9", "--check"]) == 0
    out = capsys.readouterr().out
    assert out.count(" ok") == 10 and "10 of 10 scenarios hold every guarantee" in out
    assert main(["scenarios", "generate", "gen:duel", "--seeds", "3-4",
                 "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["duel_3.yaml", "duel_4.yaml"]
    capsys.readouterr()
    assert main(["scenarios", "generate", "gen:duel", "--seed", "1"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["name"] == "gen:duel@1"


@pytest.mark.parametrize("argv, words", [
    (["gen:nope", "--seed", "1"], "no scenario distribution of that name"),
    ([], "name a distribution"),
    (["gen:duel"], "exactly one of --seed"),
    (["gen:duel", "--seeds", "9-2"], "the range must run upwards"),
    (["gen:duel", "--seeds", "x"], "not a seed range"),
    (["gen:duel@3", "--seed", "3"], "not in the name"),
])
def test_the_cli_names_what_is_wrong(capsys, argv, words):
    assert main(["scenarios", "generate", *argv]) == 2
    assert words in capsys.readouterr().err


def test_names_and_seeds():
    assert parse_generated_name("gen:skirmish@7") == ("skirmish", 7)
    assert parse_generated_name("gen:skirmish") == ("skirmish", None)
    for bad in ("gen:Skirmish@1", "gen:skirmish@-1", "gen:skirmish@x", f"gen:a@{2**64}"):
        with pytest.raises(GeneratorError):
            parse_generated_name(bad)
    with pytest.raises(ScenarioError, match="name a seed"):
        load_scenario("gen:skirmish")
    with pytest.raises(ScenarioError, match="no scenario distribution"):
        load_scenario("gen:nothing@1")
    assert parse_seed_range("3-5") == range(3, 6) and parse_seed_range("4") == range(4, 5)


def test_the_env_plays_a_generated_scenario():
    env = traveller_env.raw_env("gen:squad@2", backend="python")
    env.reset(seed=1)
    assert env.scenario.name == "gen:squad@2" and len(env.possible_agents) == 8


def test_a_distribution_file_is_checked():
    base = yaml.safe_load((config_dir() / "generators" / "duel.yaml").read_text())
    for key, value, words in (("placements", {"everywhere": 1}, "unknown placement"),
                              ("max_rounds", 0, "greater than or equal"),
                              ("surprise", 1, "Extra inputs")):
        with pytest.raises(ValueError, match=words):
            Distribution.model_validate({**base, key: value})
    bad = {**base, "map": {**base["map"], "width": [9, 3]}}
    with pytest.raises(ValueError, match="low <= high"):
        Distribution.model_validate(bad)
    tiny = {**base, "map": {**base["map"], "width": [6, 6], "height": [6, 6]},
            "sides": {"size": [6, 6]}}
    with pytest.raises(ValueError, match="too small"):
        Distribution.model_validate(tiny)
    dist = Distribution.model_validate({**base, "roster": {**base["roster"],
                                                           "weapons": ["phaser"]}})
    with pytest.raises(GeneratorError, match="phaser"):
        draw_scenario(dist, 0, load_equipment().model_dump())


def test_a_file_form_is_an_ordinary_scenario():
    text = scenario_yaml(load_scenario("gen:ambush@1"))
    assert "gen:" in yaml.safe_load(text)["name"]
    assert load_scenario(yaml.safe_load(text)) == load_scenario("gen:ambush@1")
