"""The league the docs quote (``results/league/``, docs/league.md): users take its files as ready
opponents, so every member the manifest lists must be there, fit ``squad`` and play as its
committed rating says (re-measured on a small sample against rush, the ladder's next level and
its Elo neighbour), and the ladder must name policies a game can load."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

LEAGUE = Path(__file__).resolve().parents[2] / "results" / "league"


#: Battles per re-measured pairing (half from each side, seeds from SAMPLE_SEED, apart from the
#: tournament's and the ladder's): about 0.2-0.5 s a pair.
SAMPLE = 24
SAMPLE_SEED = 7


@pytest.fixture(scope="module")
def league():
    from traveller_rl.league import load_league

    return load_league(LEAGUE)


@pytest.fixture(scope="module")
def play(league):
    """``play(a, b)``: the row of ``a`` against ``b`` (member names, ladder files or scripted
    NPC names) on the sample's battles; each policy loaded once."""
    pytest.importorskip("onnxruntime")
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import evaluate_matchup

    loaded: dict = {}

    def policy(name: str):
        if name not in loaded:
            member = next((m for m in league["members"] if m["name"] == name), None)
            path = LEAGUE.parent.parent / name
            file = (str(LEAGUE / member["onnx"]) if member else
                    str(path) if path.is_file() else name)
            loaded[name] = make_policy(file, scenario="squad")
        return loaded[name]

    def run(a: str, b: str) -> dict:
        return evaluate_matchup(policy(a), policy(b), "squad", battles=SAMPLE,
                                seed=SAMPLE_SEED)
    return run


def _rating(league, name: str) -> dict:
    return next(m["rating"] for m in [*league["members"], *league["scripted"]]
                if m["name"] == name)


def test_every_listed_member_is_an_onnx_file_that_fits_squad(league):
    assert league["scenario"] == "squad" and len(league["members"]) >= 8
    names = [m["name"] for m in league["members"]]
    assert len(set(names)) == len(names)
    for m in league["members"]:
        onnx = LEAGUE / m["onnx"]
        assert onnx.is_file() and m["checkpoint"] is None, m["name"]
        assert m["rating"]["elo_ci95"][0] <= m["rating"]["elo"] <= m["rating"]["elo_ci95"][1]
    assert not [p for p in LEAGUE.glob("*.onnx") if p.name not in {m["onnx"]
                                                                    for m in league["members"]}]


def test_each_member_plays_rush_as_its_committed_rating_says(league, play):
    """Re-measured on 24 battles each: a member rated below rush (its Elo interval under
    rush's) loses most battles to it (measured 0-4 wins), one rated above wins most
    (measured 17-24), and the strongest (Elo interval over rush's by 200, about a 3:1 odds)
    win with a Wilson lower bound above 0.65 (measured 0.74 at least). Random weights, or
    files swapped between names, lose to rush every battle."""
    rush = _rating(league, "rush")["elo_ci95"]
    for m in league["members"]:
        lo, hi = m["rating"]["elo_ci95"]
        row = play(m["name"], "rush")
        assert row["battles"] == SAMPLE
        figures = f"{m['name']}: {row['wins']}-{row['draws']}-{row['losses']} against rush"
        if hi < rush[0]:
            assert row["win_ci95"][1] < 0.5, figures
        if lo > rush[1]:
            assert row["win_rate"] > 0.5, figures
        if lo > rush[1] + 200:
            assert row["win_ci95"][0] > 0.65, figures


def test_each_ladder_level_beats_the_one_below_as_committed(play):
    """Each step of ``ladder_squad.json`` re-measured on 24 other battles: the harder level
    wins most of them (measured 24, 24, 17 and 22) and the committed win rate (200 battles)
    lies inside the sample's 95% interval; the top level beats the bottom one every time."""
    levels = json.loads((LEAGUE / "ladder_squad.json").read_text())["levels"]
    for easy, hard in itertools.pairwise(levels):
        row = play(hard["file"], easy["file"])
        figures = (f"{hard['policy']} against {easy['policy']}: "
                   f"{row['wins']}-{row['draws']}-{row['losses']}")
        assert row["win_rate"] > 0.5, figures
        lo, hi = row["win_ci95"]
        assert lo <= easy["next_level_win_rate"] <= hi, figures
    top = play(levels[-1]["file"], levels[0]["file"])
    assert (top["wins"], top["battles"]) == (SAMPLE, SAMPLE)


def test_no_member_is_routed_by_the_member_rated_just_below_it(league, play):
    """Members side by side in Elo are close and their head-to-head is not transitive (the
    skirmisher, rated 217 above the private, draws most of their battles), so the order is
    not asserted pair by pair; but the higher-rated one scores (a draw a half) at least 0.3
    on the sample (measured 0.44 at least; a member with random weights scores about 0)."""
    ranked = sorted(league["members"], key=lambda m: m["rating"]["elo"])
    for lower, higher in itertools.pairwise(ranked):
        row = play(higher["name"], lower["name"])
        score = (row["wins"] + row["draws"] / 2) / row["battles"]
        assert score >= 0.3, (f"{higher['name']} against {lower['name']}: "
                              f"{row['wins']}-{row['draws']}-{row['losses']}")


def test_the_ladder_names_league_members_or_scripted_npcs_in_rising_elo(league):
    from traveller_agents.registry import make_policy

    ladder = json.loads((LEAGUE / "ladder_squad.json").read_text())
    known = {m["name"] for m in league["members"]} | {s["name"] for s in league["scripted"]}
    levels = ladder["levels"]
    assert [lv["level"] for lv in levels] == list(range(1, len(levels) + 1))
    assert all(lv["policy"] in known for lv in levels)
    assert [lv["elo"] for lv in levels] == sorted(lv["elo"] for lv in levels)
    for lv in levels:  # the file column loads as written (from the repository's root)
        file = lv["file"]
        path = LEAGUE.parent.parent / file
        make_policy(str(path) if path.is_file() else file, scenario="squad")
