"""Narrator, renderers and the ``traveller`` command line."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from traveller_cli import main
from traveller_env.replay.render import (
    DOWN_COLOUR,
    HIT_COLOUR,
    MISS_COLOUR,
    SIDE_COLOURS,
    auto_cell,
    glyph,
    render_ansi,
    render_rgb,
    write_gif,
)
from traveller_env.rules.events import EVENT_KINDS
from traveller_env.rules.narrate import EVENT_TYPES, generic, narrate, narrate_log
from traveller_env.scenario import build_battle, builtin_scenarios
from traveller_env.simulate import play_random

RULES = Path(__file__).resolve().parents[2] / "traveller_env" / "rules"


def _played(name: str, seed: int):
    battle = build_battle(name, seed=seed)
    play_random(battle, random.Random(seed))
    return battle


def _has_colour(img: np.ndarray, colour) -> bool:
    return bool((img == np.array(colour, dtype=np.uint8)).all(axis=-1).any())


# ---------------------------------------------------------------------------- narrator
def test_event_types_are_those_the_engine_emits():
    source = "".join(p.read_text(encoding="utf-8") for p in RULES.glob("*.py")
                     if p.name not in ("events.py", "narrate.py"))
    emitted = set(re.findall(r'"type":\s*"([a-z_]+)"', source))
    emitted |= {"draw", "reload"}  # emitted through _ready_step(kind)
    assert emitted == set(EVENT_KINDS)
    assert set(EVENT_TYPES) == set(EVENT_KINDS)


@pytest.mark.parametrize("name", ["squad", "ambush", "melee", "duel"])
def test_narrator_has_a_sentence_for_every_event_of_random_battles(name):
    for seed in range(3):
        battle = _played(name, seed)
        for event in battle.events:
            assert event["type"] in EVENT_TYPES
            text = narrate(event)
            assert isinstance(text, str) and text
            assert text != generic(event), event
            assert not text.startswith("["), text
        assert len(narrate_log(battle.events)) == len(battle.events)


_CHECK = {"roll": [4, 3], "dms": {"skill": 1, "INT": 1}, "total": 9, "effect": 1}
SAMPLES = {
    "initiative": {"actor": "a_0", "roll": None, "dms": {"DEX": 1}, "initiative": 13,
                   "ambush": True},
    "tactics": {**_CHECK, "actor": "a_0", "unit": "a", "added": 1},
    "round": {"round": 3},
    "simultaneous": {"group": ["a_0", "b_1"], "initiative": 9, "DEX": 7},
    "haste": {"actor": "a_0", "haste": True, "initiative": 11},
    "turn": {"actor": "a_0", "initiative": 11, "round": 3},
    "move": {"actor": "a_0", "from": [1, 1], "to": [2, 2], "metres": 1.5},
    "stance": {"actor": "a_0", "from": "stand", "to": "prone"},
    "draw": {"actor": "a_0", "weapon": "rocket_launcher", "progress": 1, "needed": 2,
             "done": False},
    "reload": {"actor": "a_0", "weapon": "shotgun", "progress": 1, "needed": 1, "done": True},
    "aim": {"actor": "a_0", "target": "b_0", "aim": 1},
    "aim_lost": {"actor": "a_0", "target": "b_0"},
    "attack": {"roll": [6, 6], "dms": {"skill": 1, "STR": 1, "parry": -2}, "total": 12,
               "effect": 4, "actor": "a_0", "target": "b_0", "weapon": "blade", "melee": True,
               "range_m": 1.5, "reaction": "parry", "hit": True, "damage_roll": [1, 2],
               "damage": 6, "protection": 1, "target_after": {"STR": 7, "DEX": 7, "END": 1}},
    "reaction": {"actor": "b_0", "reaction": "parry", "attacker": "a_0"},
    "leadership": {**_CHECK, "actor": "a_0", "bonuses": 1, "penalties": 0},
    "bonus_granted": {"actor": "a_0", "target": "a_1"},
    "penalty_imposed": {"actor": "b_0", "target": "a_1", "leader": "a_0"},
    "bonus_used": {"actor": "a_1", "check": "attack"},
    "penalty_used": {"actor": "a_1", "check": "leadership"},
    "lapse": {"actor": "a_0", "kind": "bonus", "count": 2, "reason": "leader's next turn"},
    "initiative_change": {"actor": "a_0", "change": -2, "reason": "reaction",
                          "applies_to": "next_round"},
    "incapacitated": {"actor": "b_0", "by": "a_0", "state": "dead",
                      "stays_until_group_ends": True},
    "out": {"actor": "b_0"},
    "end_turn": {"actor": "a_0", "reason": "illegal action"},
    "illegal_action": {"actor": "a_0", "label": "reload", "reason": "the magazine is not empty"},
    "end": {"round": 20, "winner": None, "reason": "max_rounds"},
}


def test_every_event_type_has_its_own_sentence():
    assert set(SAMPLES) == set(EVENT_TYPES)
    for kind, fields in SAMPLES.items():
        event = {"type": kind, **fields}
        text = narrate(event)
        assert text != generic(event) and text.endswith("."), (kind, text)
    melee = narrate({"type": "attack", **SAMPLES["attack"]})
    assert melee == ("a_0 attacks b_0 in melee with blade: 2D [6, 6] +1 skill +1 STR -2 parry "
                     "= 12, Effect +4: hit, 2D [1, 2] +4 Effect -1 armour = 6 damage; b_0 now "
                     "STR 7 DEX 7 END 1.")


def test_narrate_examples():
    attack = {"type": "attack", "actor": "blue_0", "target": "red_0", "weapon": "autorifle",
              "melee": False, "range_m": 343.5, "reaction": "none", "roll": [3, 5],
              "dms": {"skill": 1, "DEX": 0, "range": -2, "aim": 2}, "total": 9, "effect": 1,
              "hit": True, "damage_roll": [4, 2, 6], "damage": 13, "protection": 0,
              "target_after": {"STR": 7, "DEX": 8, "END": 0}}
    assert narrate(attack) == (
        "blue_0 attacks red_0 with autorifle: 2D [3, 5] +1 skill +0 DEX -2 range +2 aim = 9, "
        "Effect +1: hit, 3D [4, 2, 6] +1 Effect = 13 damage; red_0 now STR 7 DEX 8 END 0.")
    # A weapon modifier (3D-3) and armour are shown; a miss has no damage part.
    pistol = {**attack, "weapon": "autopistol", "damage_roll": [6, 5, 4], "damage": 10,
              "protection": 3, "effect": 1}
    assert "3D [6, 5, 4] -3 +1 Effect -3 armour = 10 damage" in narrate(pistol)
    miss = {**attack, "hit": False, "total": 6, "effect": -2, "damage_roll": None, "damage": 0}
    assert narrate(miss).endswith("= 6, Effect -2: miss.")
    assert narrate({"type": "round", "round": 2}) == "Round 2."
    assert narrate({"type": "aim", "actor": "blue_0", "target": "red_0", "aim": 2}) == (
        "blue_0 aims at red_0 (+2).")
    assert narrate({"type": "end", "round": 7, "winner": "blue", "reason": "victory"}) == (
        "Battle over after 7 rounds: victory for blue.")


def test_narrate_never_raises():
    odd = {"type": "teleport", "actor": "blue_0", "to": [1, 2]}
    assert narrate(odd) == generic(odd) == '[teleport] actor="blue_0" to=[1, 2]'
    broken = {"type": "attack", "actor": "blue_0"}  # fields missing
    assert narrate(broken) == generic(broken)
    assert narrate({}) == "[?]"
    assert narrate({"type": "move", "from": object()}).startswith("[move]")
    assert narrate("not an event") is None  # type: ignore[arg-type]
    assert narrate_log([{"type": "round", "round": 1}, 3, odd]) == ["Round 1.", generic(odd)]


# ---------------------------------------------------------------------------- text render
def test_ansi_shows_terrain_every_glyph_and_the_legend():
    battle = build_battle("squad", seed=1)
    text = render_ansi(battle, last_events=3)
    lines = text.splitlines()
    grid = battle.grid
    expected = [list(row) for row in grid.rows]
    for c in battle.combatants:
        expected[c.pos[1]][c.pos[0]] = glyph(battle, c)
    ywidth = len(str(grid.height - 1))
    for y in range(grid.height):
        line = lines[2 + y]
        assert line.startswith(f"{y:>{ywidth}} ")
        assert line[ywidth + 1::2] == "".join(expected[y]).rstrip()
    glyphs = [glyph(battle, c) for c in battle.combatants]
    assert glyphs == ["A", "B", "C", "D", "0", "1", "2", "3"]
    for c in battle.combatants:
        assert re.search(rf"^\s+{glyph(battle, c)}\s+{c.id}\s", text, re.M)
    assert "STR 7/7 DEX 8/8 END 8/8" in text and "ammo 20/20 +3 spare" in text
    assert text.rstrip().splitlines()[-3:] == ["  " + t for t in
                                                narrate_log(battle.events[-3:])]


def test_ansi_marks_prone_and_down():
    battle = build_battle("melee", seed=1)
    standing, prone, down = battle.combatants[0], battle.combatants[1], battle.combatants[2]
    prone.stance = "prone"
    down.down = True
    text = render_ansi(battle, last_events=0)
    assert f"{glyph(battle, standing)} " in text
    assert f"{glyph(battle, prone)}_" in text
    assert f"{glyph(battle, down)}x" in text
    assert "unconscious" in text and "Last events" not in text
    coloured = render_ansi(battle, color=True)
    assert "\x1b[1;34m" in coloured and "\x1b[1;31m" in coloured


# ---------------------------------------------------------------------------- images
def test_rgb_shape_dtype_and_side_colours():
    battle = build_battle("squad", seed=1)
    img = render_rgb(battle)
    cell = auto_cell(battle.grid.width, battle.grid.height)
    assert img.dtype == np.uint8
    assert img.shape == (battle.grid.height * cell, battle.grid.width * cell, 3)
    assert _has_colour(img, SIDE_COLOURS[0]) and _has_colour(img, SIDE_COLOURS[1])
    assert not _has_colour(img, DOWN_COLOUR)
    small = render_rgb(battle, cell=10, caption="Round 1")
    assert small.shape[1] == 300 and small.shape[0] > 160


def test_rgb_wide_map_down_combatants_and_attack_lines():
    battle = build_battle("duel", seed=1)
    img = render_rgb(battle)
    assert img.shape[1] <= 1600 and img.shape[0] == battle.grid.height * auto_cell(240, 5)
    assert not _has_colour(img, HIT_COLOUR) and not _has_colour(img, MISS_COLOUR)
    blue, red = battle.combatants
    red.down = True
    hit = {"type": "attack", "actor": blue.id, "target": red.id, "hit": True}
    miss = {"type": "attack", "actor": red.id, "target": blue.id, "hit": False,
            "actor_pos": [100, 0], "target_pos": list(blue.pos)}
    img = render_rgb(battle, attacks=[hit, miss])
    assert _has_colour(img, DOWN_COLOUR) and not _has_colour(img, SIDE_COLOURS[1])
    assert _has_colour(img, HIT_COLOUR) and _has_colour(img, MISS_COLOUR)


def test_write_gif(tmp_path):
    from PIL import Image

    battle = build_battle("melee", seed=2)
    frames = [render_rgb(battle, cell=12)]
    battle.combatants[0].pos = (0, 0)
    frames.append(render_rgb(battle, cell=12))
    path = tmp_path / "sub" / "replay.gif"
    write_gif(frames, path, fps=2)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == 2 and im.size == (120, 96)
        assert im.info["duration"] == 500
    with pytest.raises(ValueError):
        write_gif([], tmp_path / "empty.gif")


# ---------------------------------------------------------------------------- command line
def test_cli_simulate_prints_log_and_result(capsys):
    assert main(["simulate", "--scenario", "melee", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "Round 1." in out and "rolls Initiative" in out
    assert re.search(r"^(Winner: \S+|Draw:|Truncated:) .*rounds", out, re.M)
    for cid in ("blue_0", "blue_1", "red_0", "red_1"):
        assert re.search(rf"^\s+\S\s+{cid}\s", out, re.M)
    assert main(["simulate", "--scenario", "melee", "--seed", "3", "--quiet"]) == 0
    quiet = capsys.readouterr().out
    assert "Round 1." not in quiet and re.search(r"^(Winner|Draw|Truncated):", quiet, re.M)


def test_cli_json_equals_the_battle_events(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    assert main(["simulate", "--scenario", "squad", "--seed", "5", "--quiet",
                 "--json", str(path)]) == 0
    capsys.readouterr()
    logged = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    battle = _played("squad", 5)
    assert logged == json.loads(json.dumps(battle.events))
    assert logged[-1]["type"] == "end"


def test_cli_gif(tmp_path, capsys):
    from PIL import Image

    path = tmp_path / "replay.gif"
    assert main(["simulate", "--scenario", "duel", "--seed", "0", "--quiet",
                 "--gif", str(path)]) == 0
    assert "Replay:" in capsys.readouterr().out
    battle = _played("duel", 0)
    turns_ended = sum(1 for e in battle.events if e["type"] == "end_turn")
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames > 1
        assert im.n_frames <= 1 + turns_ended + 1  # start, one per turn, the end


def test_cli_bad_scenario_exits_2_without_traceback(tmp_path, capsys):
    assert main(["simulate", "--scenario", "no_such_scenario"]) == 2
    err = capsys.readouterr().err
    assert "no built-in scenario of that name" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmap: {width: 5, height: 5}\nsides: []\n", encoding="utf-8")
    assert main(["simulate", "--scenario", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "sides" in err


def test_cli_scenarios_lists_builtins(capsys):
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for name in builtin_scenarios():
        assert re.search(rf"^{name}\s+\d+x\d+, ", out, re.M)
    assert "Four against four" in out


def test_cli_without_command_shows_help(capsys):
    assert main([]) == 2
    assert "simulate" in capsys.readouterr().err
