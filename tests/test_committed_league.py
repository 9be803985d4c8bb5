"""The league the docs quote (``results/league/``, docs/league.md): users take its files as ready
opponents, so every member the manifest lists must be there, fit ``squad`` and play, and the
ladder must name policies a game can load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

LEAGUE = Path(__file__).resolve().parent.parent / "results" / "league"


def test_every_listed_member_is_an_onnx_file_that_plays_squad():
    pytest.importorskip("onnxruntime")
    from agents.evaluation import evaluate_matchup
    from agents.registry import make_policy
    from traveller_rl.league import load_league

    league = load_league(LEAGUE)
    assert league["scenario"] == "squad" and len(league["members"]) >= 8
    names = [m["name"] for m in league["members"]]
    assert len(set(names)) == len(names)
    for m in league["members"]:
        onnx = LEAGUE / m["onnx"]
        assert onnx.is_file() and m["checkpoint"] is None, m["name"]
        assert m["rating"]["elo_ci95"][0] <= m["rating"]["elo"] <= m["rating"]["elo_ci95"][1]
        row = evaluate_matchup(make_policy(str(onnx), scenario="squad"), make_policy("rush"),
                               "squad", battles=2, seed=7)
        assert row["wins"] + row["draws"] + row["losses"] == 2, m["name"]
    assert not [p for p in LEAGUE.glob("*.onnx") if p.name not in {m["onnx"]
                                                                    for m in league["members"]}]


def test_the_ladder_names_league_members_or_scripted_npcs_in_rising_elo():
    from agents.registry import make_policy
    from traveller_rl.league import load_league

    ladder = json.loads((LEAGUE / "ladder_squad.json").read_text())
    league = load_league(LEAGUE)
    known = {m["name"] for m in league["members"]} | {s["name"] for s in league["scripted"]}
    levels = ladder["levels"]
    assert [lv["level"] for lv in levels] == list(range(1, len(levels) + 1))
    assert all(lv["policy"] in known for lv in levels)
    assert [lv["elo"] for lv in levels] == sorted(lv["elo"] for lv in levels)
    for lv in levels:  # the file column loads as written (from the repository's root)
        file = lv["file"]
        path = LEAGUE.parent.parent / file
        make_policy(str(path) if path.is_file() else file, scenario="squad")
