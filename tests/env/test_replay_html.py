"""The Python side of the replay viewer: headers, replay files, event checks, the
page's embedded data and escaping, and the commands that write pages (the page itself is
tested in a real browser in ``test_replay_browser.py``)."""

from __future__ import annotations

import csv
import json
import random
import re
import shutil
import subprocess
from importlib import resources

import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_agents.registry import make_policy
from traveller_cli.env_commands import main
from traveller_env.replay.html import (
    SCRIPTS,
    VIEWER_FIELDS,
    ReplayError,
    build_payload,
    check_events,
    read_replay_jsonl,
    render_html,
    replay_header,
    safe_filename,
    viewer_script,
    write_replay_jsonl,
)
from traveller_env.rules.narrate import EVENT_TYPES, narrate
from traveller_env.scenario import build_battle, load_scenario
from traveller_env.simulate import play_random
from traveller_rl.evaluation import play_battle

HOSTILE = "<img src=x onerror=alert(1)>"
DATA_RE = re.compile(r'<script id="replay-data" type="application/json">(.*?)</script>', re.S)


def played(name, seed: int):
    battle = build_battle(name, seed=seed)
    play_random(battle, random.Random(seed))
    return battle


def payload_of(page: str) -> dict:
    found = DATA_RE.findall(page)
    assert len(found) == 1
    return json.loads(found[0])


def hostile_scenario() -> dict:
    sc = scenario([fighter([2, 2], name=HOSTILE),
                   fighter([2, 4], name="<script>window.__pwned=1</script>")],
                  [fighter([8, 3], name="</script><b>x</b>&amp; \u2028 <!--")], width=12,
                  height=7)
    sc["name"] = "<i>evil</i></title><script>window.__pwned=2</script>"
    sc["description"] = "</SCRIPT><script>window.__pwned=3</script><!-- -->"
    return sc


# ---------------------------------------------------------------------------- events
def test_the_viewer_reads_every_event_type_the_engine_emits():
    assert set(VIEWER_FIELDS) == set(EVENT_TYPES)


@pytest.mark.parametrize("name", ["squad", "ambush", "melee", "duel", "squad_commander"])
def test_engine_logs_have_no_problem_for_the_viewer(name):
    seen = set()
    for seed in range(3):
        battle = played(name, seed)
        assert check_events(battle.events, replay_header(name, battle)) == []
        seen |= {e["type"] for e in battle.events}
    assert {"initiative", "round", "turn", "attack", "end"} <= seen


def test_scripted_leadership_battles_have_no_problem():
    env = traveller_env.raw_env("squad_commander")
    pols = {a: make_policy("leader" if env.side_of(a) == 0 else "tactician")
            for a in env.possible_agents}
    types = set()
    for seed in range(3):
        battle = play_battle(env, pols, seed)
        assert check_events(battle.events, replay_header(env.unwrapped.scenario, battle)) == []
        types |= {e["type"] for e in battle.events}
    assert {"leadership", "bonus_granted", "bonus_used"} <= types


def test_check_events_names_the_event_and_the_field():
    battle = played("squad", 1)
    header = replay_header("squad", battle)
    events = [dict(e) for e in battle.events[:200]]
    attack = next(i for i, e in enumerate(events) if e["type"] == "attack")
    move = next(i for i, e in enumerate(events) if e["type"] == "move")
    turn = next(i for i, e in enumerate(events) if e["type"] == "turn")
    events[attack]["dms"] = "lots"
    events[move]["to"] = [99, 2]
    events[turn]["actor"] = "green_7"
    events[3] = {"type": "teleport", "actor": "blue_0"}
    events[4] = ["not", "an", "object"]
    del events[5]["type"]
    events[6] = {k: v for k, v in events[6].items() if k != "actor"} | {"type": "out"}
    problems = {p["index"]: p["message"] for p in check_events(events, header)}
    assert sorted(problems) == sorted({3, 4, 5, 6, attack, move, turn})
    # Messages count events from 1, as the page does.
    assert problems[3].startswith('event 4 has an unknown type "teleport": this viewer knows')
    assert problems[4] == 'event 5 is not a JSON object (["not", "an", "object"])'
    assert problems[5].startswith("event 6 has an unknown type null")
    assert problems[6] == "event 7 (out): field 'actor' is missing"
    assert problems[attack] == (f"event {attack + 1} (attack): field 'dms' expected an object "
                                'of whole numbers, got "lots"')
    assert problems[move] == (f"event {move + 1} (move): field 'to' [99, 2] is off the 30x16 "
                              "map")
    assert problems[turn] == (f"event {turn + 1} (turn): field 'actor' 'green_7' is not a "
                              "combatant of this scenario")


# ---------------------------------------------------------------------------- header
def test_header_holds_the_scenario_start_state():
    battle = played("squad", 2)
    h = replay_header("squad", battle, seed=2)
    assert json.loads(json.dumps(h)) == h
    sc = load_scenario("squad")
    assert (h["type"], h["format"], h["version"]) == ("header", "traveller-replay", 1)
    assert h["map"] == {"width": 30, "height": 16, "terrain": list(sc.map.terrain)}
    assert h["sides"] == ["blue", "red"] and h["max_rounds"] == 20 and h["seed"] == 2
    assert [c["id"] for c in h["combatants"]] == sc.agent_ids
    specs = [c for side in sc.sides for c in side.combatants]
    for c, spec in zip(h["combatants"], specs, strict=True):
        assert c["name"] == spec.name and c["position"] == list(spec.position)
        assert c["characteristics"] == spec.characteristics.model_dump()
        assert c["weapon"]["name"] == spec.weapon and c["armour"]["name"] == spec.armour
    # Starting values, not the values at the end of the battle.
    assert any(c.chars != c.max_chars for c in battle.combatants)


def test_header_takes_the_options_the_battle_used_and_refuses_another_battle():
    env = traveller_env.raw_env("duel", max_rounds=3)
    env.reset(seed=0)
    assert replay_header(env.scenario, env.battle)["max_rounds"] == 3
    with pytest.raises(ValueError, match="are not those of scenario 'duel'"):
        replay_header("duel", played("squad", 0))


# ---------------------------------------------------------------------------- files
def test_jsonl_round_trip_keeps_the_events_byte_for_byte(tmp_path):
    battle = played("melee", 4)
    header = replay_header("melee", battle, seed=4)
    path = write_replay_jsonl(header, battle.events, tmp_path / "b.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1:] == [json.dumps(e) for e in battle.events]
    h, events, problems = read_replay_jsonl(path)
    assert h == header and events == battle.events and problems == []


def test_reading_a_bad_replay_file_names_the_line_or_field(tmp_path):
    battle = played("duel", 1)
    header = replay_header("duel", battle)
    path = tmp_path / "x.jsonl"
    write_replay_jsonl(header, battle.events, path)
    lines = path.read_text().splitlines()
    # An unreadable event line: kept as a problem naming the line, the rest is read.
    path.write_text("\n".join([*lines[:5], "{oops", *lines[5:]]) + "\n")
    _, events, problems = read_replay_jsonl(path)
    assert len(events) == len(battle.events) + 1 and events[4] is None
    assert problems == [{"index": 4, "message": "event 5 (line 6 of x.jsonl) is not valid "
                         "JSON (Expecting property name enclosed in double quotes at column 2)"}]
    path.write_text("\n".join([*lines[:3], '{"type": "move", "metres": NaN}', *lines[3:]]) + "\n")
    _, events, problems = read_replay_jsonl(path)
    assert problems == [{"index": 2, "message": "event 3 (line 4 of x.jsonl) is not valid JSON "
                         "(NaN is not a JSON number)"}]
    # A header that is not first.
    path.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(ReplayError, match=r"x\.jsonl:2: a header line must be the first line"):
        read_replay_jsonl(path)
    # A header with a bad field.
    bad = {**header, "map": {**header["map"], "terrain": ["..."]}}
    path.write_text(json.dumps(bad) + "\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(ReplayError, match=r"x\.jsonl:1: map\.terrain: 5 strings of 240"):
        read_replay_jsonl(path)
    # Nothing readable.
    path.write_text("not json\n")
    with pytest.raises(ReplayError, match="no readable event"):
        read_replay_jsonl(path)
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ReplayError, match="not a UTF-8 text file"):
        read_replay_jsonl(path)


# ---------------------------------------------------------------------------- the page
def test_page_embeds_the_log_unchanged_with_the_narrators_lines():
    battle = played("squad", 3)
    header = replay_header("squad", battle, seed=3)
    page = render_html(header, battle.events)
    data = payload_of(page)
    assert data["events"] == battle.events and data["header"] == header
    assert data["narration"] == [narrate(e) for e in battle.events]
    assert data["problems"] == []


def test_page_is_self_contained_with_a_no_network_policy():
    battle = played("duel", 2)
    page = render_html(replay_header("duel", battle), battle.events)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp and "default-src 'none'" in csp.group(1) and "img-src data:" in csp.group(1)
    assert not re.search(r"https?://|//cdn|\bsrc=\"(?!data:)|<link rel=\"stylesheet", page)
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|import\()\b", page)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # data + code only


def test_a_20_round_squad_battle_page_is_under_1_mb():
    battle = played("squad", 5)  # 20 rounds, 1,021 events (experiments/bench_replay.py)
    assert battle.round == 20
    page = render_html(replay_header("squad", battle), battle.events)
    assert len(page.encode("utf-8")) < 1_000_000


def test_hostile_strings_stay_data():
    sc = hostile_scenario()
    battle = build_battle(sc, seed=3)
    play_random(battle, random.Random(3))
    page = render_html(replay_header(sc, battle), battle.events)
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and "<!--" not in page and "<b>" not in page
    data = payload_of(page)
    names = [c["name"] for c in data["header"]["combatants"]]
    assert names[0] == HOSTILE and names[1] == "<script>window.__pwned=1</script>"
    assert data["header"]["description"] == sc["description"]


def test_malformed_events_are_listed_in_the_payload():
    battle = played("squad", 1)
    header = replay_header("squad", battle)
    events = [*battle.events[:20], {"type": "teleport"}, None, *battle.events[20:40]]
    data = build_payload(header, events, [{"index": 21, "message": "line 22 is not JSON"}])
    assert data["problems"] == [
        {"index": 20, "message": data["problems"][0]["message"]},
        {"index": 21, "message": "line 22 is not JSON"}]
    assert "unknown type \"teleport\"" in data["problems"][0]["message"]
    assert data["narration"][21] is None and data["narration"][20].startswith("[teleport]")


def test_viewer_assets_are_package_data():
    folder = resources.files("traveller_env.replay").joinpath("viewer")
    assert SCRIPTS == ("state.js", "render.js", "controls.js")
    for name in (*SCRIPTS, "viewer.css"):
        text = folder.joinpath(name).read_text(encoding="utf-8").lower()
        assert text and "</script" not in text and "</style" not in text
    template = folder.joinpath("template.html").read_text(encoding="utf-8")
    assert all(template.count(m) == 1 for m in ("/*@CSS@*/", "/*@JS@*/", "@DATA@"))


def test_the_page_inlines_the_scripts_in_order_in_one_element():
    battle = played("duel", 2)
    page = render_html(replay_header("duel", battle), battle.events)
    code = page[page.rindex("<script>") + len("<script>"):page.rindex("</script>")]
    assert code.strip() == viewer_script().strip()
    starts = [code.index(f"replay viewer, part {k} of 3") for k in (1, 2, 3)]
    assert starts == sorted(starts)


def test_the_state_reducer_has_no_dom():
    """state.js is the pure part: it names no page object (render.js and controls.js do)."""
    folder = resources.files("traveller_env.replay").joinpath("viewer")
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", folder.joinpath("state.js").read_text())
    assert not re.search(r"\b(document|window|navigator|requestAnimationFrame|performance"
                         r"|setTimeout|setInterval|localStorage)\b", code)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (the browser "
                    "tests run state.js too: test_replay_browser.py)")
def test_the_state_reducer_runs_under_node(tmp_path):
    """state.js under node (``require``): its final state is the engine's at the end."""
    battle = played("ambush", 0)
    data = tmp_path / "replay.json"
    data.write_text(json.dumps({"header": replay_header("ambush", battle),
                                "events": battle.events}))
    state_js = resources.files("traveller_env.replay").joinpath("viewer", "state.js")
    script = ("const S = require(process.argv[1]);"
              "const d = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));"
              "const s = S.stateAfter(d.header, d.events, d.events.length - 1);"
              "console.log(JSON.stringify(s.cs.map(c => [c.pos, c.stance, c.chars, c.ammo,"
              " c.spares, c.out])));")
    out = subprocess.run(["node", "-e", script, str(state_js), str(data)], check=True,
                         capture_output=True, text=True, timeout=30).stdout
    assert json.loads(out) == [
        [list(c.pos), c.stance, {k: c.chars[k] for k in ("STR", "DEX", "END")}, c.ammo,
         c.spares, c.out] for c in battle.combatants]


def test_safe_filename():
    assert safe_filename("runs/a b/model.zip") == "model.zip"
    assert safe_filename("rush") == "rush" and safe_filename("../..") == "x"
    assert safe_filename("a<b>:c") == "a_b_c"


# ---------------------------------------------------------------------------- commands
def test_simulate_html_writes_the_battle_it_played(tmp_path, capsys):
    page = tmp_path / "out" / "b.html"
    assert main(["simulate", "--scenario", "melee", "--seed", "2", "--quiet",
                 "--html", str(page)]) == 0
    assert f"Replay page: {page}" in capsys.readouterr().out
    data = payload_of(page.read_text(encoding="utf-8"))
    assert data["events"] == json.loads(json.dumps(played("melee", 2).events))
    assert data["header"]["seed"] == 2 and data["header"]["scenario"] == "melee"


def test_replay_command(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    assert main(["simulate", "--scenario", "squad", "--seed", "4", "--quiet",
                 "--json", str(log)]) == 0
    capsys.readouterr()
    page = tmp_path / "r.html"
    # A plain log: the scenario must be named.
    assert main(["replay", str(log), "--html", str(page)]) == 2
    err = capsys.readouterr().err
    assert "no header line" in err and "--scenario" in err and not page.exists()
    assert main(["replay", str(log), "--scenario", "duel", "--html", str(page)]) == 2
    assert "are not those of scenario 'duel'" in capsys.readouterr().err
    assert main(["replay", str(log), "--scenario", "squad", "--html", str(page)]) == 0
    assert "Replay: " in capsys.readouterr().out
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert payload_of(page.read_text())["events"] == events
    # A log with its header: no --scenario needed; --title replaces the title.
    headed = write_replay_jsonl(replay_header("squad", seed=4), events, tmp_path / "h.jsonl")
    assert main(["replay", str(headed), "--html", str(page), "--title", "<b>t</b>"]) == 0
    assert payload_of(page.read_text())["header"]["title"] == "<b>t</b>"
    # A malformed log still gives a page, with a warning.
    headed.write_text(headed.read_text() + '{"type": "teleport"}\n')
    capsys.readouterr()
    assert main(["replay", str(headed), "--html", str(page)]) == 0
    assert "warning: 1 of" in capsys.readouterr().err
    assert len(payload_of(page.read_text())["problems"]) == 1
    # Missing file: a usage error (exit 2) naming it.
    assert main(["replay", str(tmp_path / "nope.jsonl"), "--html", str(page)]) == 2
    err = capsys.readouterr().err
    assert "traveller replay: error: " in err and "nope.jsonl: no such file" in err


def test_eval_replays_are_the_evaluated_battles(tmp_path):
    from traveller_rl.evaluation import evaluate_matchup

    learned, opponent = make_policy("marksman"), make_policy("rush")
    from traveller_cli.evaluate import write_eval_replays

    paths = write_eval_replays(learned, [opponent], "duel", 100, 2, tmp_path)
    assert [p.name for p in paths] == ["duel_vs_rush_0.html", "duel_vs_rush_1.html"]
    rows = evaluate_matchup(make_policy("marksman"), make_policy("rush"), "duel", battles=2,
                            seed=100)
    winners = [payload_of(p.read_text())["events"][-1]["winner"] for p in paths]
    sides = ["blue", "red"]  # battle i: the evaluated policy plays side i % 2
    assert sum(w == sides[i] for i, w in enumerate(winners)) == rows["wins"]


def test_eval_command_html_dir(tmp_path, capsys, monkeypatch):
    # The model loading has its own tests (test_misuse, test_training); here a scripted
    # policy stands in for the loaded model so that only the --html-dir plumbing is timed.
    import traveller_agents.trained
    from traveller_cli import main as traveller

    monkeypatch.setattr(traveller_agents.trained, "load_policy",
                        lambda path, scenario: make_policy("marksman", seed=0))
    (tmp_path / "m.zip").write_bytes(b"")
    out = tmp_path / "pages"
    assert traveller(["eval", str(tmp_path / "m.zip"), "--scenario", "melee", "--vs", "rush,random",
                 "--battles", "1", "--html-dir", str(out)]) == 0
    assert "Replay pages: 4" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "melee_vs_random_0.html", "melee_vs_random_1.html", "melee_vs_rush_0.html",
        "melee_vs_rush_1.html"]
    data = payload_of((out / "melee_vs_rush_1.html").read_text())
    assert data["header"]["title"] == "melee, seed 20001: evaluated policy (red) vs rush"
    with pytest.raises(SystemExit) as exc:  # refused by the parser, before any battle
        traveller(["eval", str(tmp_path / "m.zip"), "--scenario", "melee", "--html-dir",
                   str(out), "--html-battles", "0"])
    assert exc.value.code == 2
    assert ("traveller eval: error: argument --html-battles: must be an integer >= 1, got '0'"
            in capsys.readouterr().err)


def test_tournament_writes_one_replay_per_pairing(tmp_path, capsys):
    from traveller_rl.tournament import main as tournament

    out = tmp_path / "t"
    assert tournament(["--policies", "rush,random,marksman", "--scenarios", "duel,melee",
                       "--battles", "1", "--workers", "1", "--no-progress", "--bootstrap",
                       "5", "--out", str(out), "--replays", str(out / "replays")]) == 0
    assert "Replay pages: 6" in capsys.readouterr().out
    names = sorted(p.name for p in (out / "replays").iterdir())
    assert names == sorted(f"{sc}__{a}_vs_{b}.html" for sc in ("duel", "melee")
                           for a, b in (("rush", "random"), ("rush", "marksman"),
                                        ("random", "marksman")))
    with (out / "games.csv").open() as fh:
        games = list(csv.DictReader(fh))
    data = payload_of((out / "replays" / "melee__rush_vs_random.html").read_text())
    row = next(g for g in games if (g["scenario"], g["side0"], g["side1"], g["index"])
               == ("melee", "rush", "random", "0"))
    winner = data["events"][-1]["winner"]
    assert row["winner"] == ("" if winner is None else str(["blue", "red"].index(winner)))
    assert row["rounds"] == str(data["events"][-1]["round"])
    assert data["header"]["title"] == "melee, seed 0: rush (blue) vs random (red)"
