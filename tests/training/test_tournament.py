"""The tournament (traveller_rl/tournament.py) and its statistics (traveller_rl/stats.py)."""

from __future__ import annotations

import csv
import json

import pytest

from traveller_rl.evaluation import wilson_interval
from traveller_rl.stats import bootstrap_elo, elo_ratings, openskill_ratings
from traveller_rl.tournament import build_games, main, run_tournament, summarise

POLICIES = ["rush", "marksman", "random"]


# ============================================================================ statistics
@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (57, 200)])
def test_wilson_interval_contains_the_estimate_and_stays_in_0_1(k, n):
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert hi - lo < 1.0


def test_wilson_interval_known_value_and_edge_cases():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_elo_and_openskill_rank_the_stronger_policy_first():
    # 0 beats 1 eight times in ten; 1 beats 2 eight times in ten; one draw.
    games = ([(0, 1, 1.0)] * 8 + [(0, 1, 0.0)] * 2 + [(1, 2, 1.0)] * 8 + [(2, 1, 1.0)] * 2
             + [(0, 2, 0.5)])
    names = ["a", "b", "c"]
    elo = elo_ratings(names, games)
    assert elo[0] > elo[1] > elo[2]
    assert elo.mean() == pytest.approx(1500)
    point, lo, hi = bootstrap_elo(names, games, resamples=50, seed=1)
    assert (lo <= point).all() and (point <= hi).all()
    skill = openskill_ratings(names, games)
    assert skill[0]["mu"] > skill[1]["mu"] > skill[2]["mu"]


# ============================================================================ a tiny tournament
@pytest.fixture(scope="module")
def tiny():
    results = run_tournament(POLICIES, ["duel", "ambush"], battles=3, seed=11, workers=1,
                             progress=False)
    return results, summarise(results, POLICIES, ["duel", "ambush"], bootstrap=20)


def test_every_pairing_plays_both_sides_with_the_same_seeds():
    games = build_games(["a", "b", "c"], ["duel"], battles=2, seed=5)
    assert len(games) == 3 * 2 * 2
    ab = [(g.side0, g.side1, g.seed) for g in games if {g.side0, g.side1} == {"a", "b"}]
    assert sorted(ab) == [("a", "b", 5), ("a", "b", 6), ("b", "a", 5), ("b", "a", 6)]


def test_pairings_split_by_side_recount_the_games(tiny):
    """Each pairing's per-side columns are the games the policy played on that side, and the
    two sides add up to the pairing's total."""
    results, summary = tiny
    for p in summary["pairings"]:
        for side in (0, 1):
            games = [r for r in results
                     if p["scenario"] in ("all", r["scenario"])
                     and r[f"side{side}"] == p["policy"] and r[f"side{1 - side}"] == p["opponent"]]
            wins = sum(1 for r in games if r["winner"] == side)
            assert (p[f"n_side{side}"], p[f"wins_side{side}"]) == (len(games), wins)
            assert p[f"win_rate_side{side}"] == pytest.approx(wins / len(games))
        assert p["n_side0"] + p["n_side1"] == p["n"]
        assert p["wins_side0"] + p["wins_side1"] == p["wins"]


def test_counts_add_up_and_intervals_contain_the_estimates(tiny):
    results, summary = tiny
    assert len(results) == 2 * 3 * 2 * 3  # scenarios x pairs x sides x battles
    by_key = {(p["scenario"], p["policy"], p["opponent"]): p for p in summary["pairings"]}
    for (sc, a, b), p in by_key.items():
        assert p["wins"] + p["draws"] + p["losses"] == p["n"]
        assert p["n"] == (6 if sc != "all" else 12)
        mirror = by_key[(sc, b, a)]
        assert (p["wins"], p["draws"], p["losses"]) == (mirror["losses"], mirror["draws"],
                                                        mirror["wins"])
        for key in ("win", "draw", "loss"):
            assert p[f"{key}_lo"] <= p[f"{key}_rate"] <= p[f"{key}_hi"]
        assert p["win_rate"] == pytest.approx(p["wins"] / p["n"])
    for r in summary["ratings"]:
        assert r["n"] == 2 * 2 * 2 * 3
        assert r["elo_lo"] <= r["elo"] <= r["elo_hi"]
    total = sum(r["wins"] for r in summary["ratings"])
    assert total == sum(1 for g in results if g["winner"] is not None)
    assert summary["ratings"][-1]["policy"] == "random"


def test_the_same_seeds_give_the_same_table(tiny):
    results, summary = tiny
    again = run_tournament(POLICIES, ["duel", "ambush"], battles=3, seed=11, workers=1,
                           progress=False)
    assert again == results
    assert summarise(again, POLICIES, ["duel", "ambush"], bootstrap=20) == summary


def test_a_different_worker_count_gives_the_same_table(tiny):
    results, summary = tiny
    parallel = run_tournament(POLICIES, ["duel", "ambush"], battles=3, seed=11, workers=2,
                              progress=False, chunk_size=2)
    assert parallel == results
    assert summarise(parallel, POLICIES, ["duel", "ambush"], bootstrap=20) == summary


def test_main_writes_csv_json_and_heatmap(tmp_path, capsys):
    out = tmp_path / "t"
    status = main(["--policies", "rush,random", "--scenarios", "duel", "--battles", "2",
                   "--workers", "1", "--out", str(out), "--no-progress", "--bootstrap", "5"])
    assert status == 0
    data = json.loads((out / "results.json").read_text())
    assert data["run"]["games"] == 4 and data["run"]["battles"] == 2
    assert {r["policy"] for r in data["ratings"]} == {"rush", "random"}
    with (out / "pairings.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["scenario"], r["policy"]) for r in rows} == {
        ("duel", "rush"), ("duel", "random"), ("all", "rush"), ("all", "random")}
    assert (out / "winrate_heatmap.png").read_bytes()[:4] == b"\x89PNG"
    assert "| rush |" in capsys.readouterr().out


def test_main_rejects_an_unknown_policy(tmp_path, capsys):
    assert main(["--policies", "rush,sniper", "--out", str(tmp_path)]) == 2
    assert "unknown policy 'sniper'" in capsys.readouterr().err


# ============================================================================ resuming
RESUMABLE = ["--policies", "rush,marksman,random", "--scenarios", "duel", "--battles", "3",
             "--seed", "4", "--workers", "1", "--no-progress", "--bootstrap", "10"]
TABLES = ("pairings.csv", "ratings.csv", "summary.md", "games.csv")


def _tables(out):
    """The tournament's outputs that must not depend on an interruption (timings left out)."""
    data = json.loads((out / "results.json").read_text())
    del data["run"]["elapsed_s"]
    return {name: (out / name).read_text() for name in TABLES} | {"results.json": data}


def test_a_killed_tournament_resumes_to_the_uninterrupted_tables(tmp_path):
    """SIGKILL a tournament after some games are recorded; ``--resume`` keeps them, plays the
    rest and writes the tables of a run that was never interrupted."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    out = tmp_path / "t"
    assert main([*RESUMABLE, "--out", str(out)]) == 0
    expected = _tables(out)
    recorded = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(recorded) == 1 + 6 * 3 and "tournament" in recorded[0]
    for child in out.iterdir():
        child.unlink()
    out.rmdir()

    script = textwrap.dedent(f"""
        import time
        from traveller_rl import tournament
        play = tournament.play_game
        def slow(game):
            time.sleep(0.15)  # slow enough to be killed half-way
            return play(game)
        tournament.play_game = slow
        tournament.main({[*RESUMABLE, "--out", str(out)]!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    log = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("\n") >= 1 + 6:  # two chunks recorded
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()
    lines = log.read_text().count("\n")
    assert 1 + 6 <= lines < 1 + 18 and not (out / "results.json").exists()

    assert main([*RESUMABLE, "--out", str(out), "--resume"]) == 0
    assert _tables(out) == expected
    assert log.read_text().count("\n") == 1 + 18  # no game lost or played twice


def test_resume_refuses_changed_arguments_naming_the_flag(tmp_path, capsys):
    out = tmp_path / "t"
    assert main([*RESUMABLE, "--out", str(out)]) == 0
    capsys.readouterr()
    changed = [*RESUMABLE, "--out", str(out), "--resume"]
    changed[changed.index("--seed") + 1] = "5"
    assert main(changed) == 2
    assert "--seed (recorded: 4, now: 5)" in capsys.readouterr().err
    assert main([*RESUMABLE, "--out", str(out)]) == 2  # a used folder without --resume
    assert "--overwrite to write over its files, or --resume" in capsys.readouterr().err
    assert main([*RESUMABLE, "--out", str(tmp_path / "none"), "--resume"]) == 2
    assert "no tournament to resume" in capsys.readouterr().err


def test_a_policy_joins_a_tournament_without_replaying_the_others(tmp_path, capsys):
    """``--resume`` with ``--policies`` grown plays only the new pairings; the tables are those
    of the whole tournament played at once, and the log's header names every policy."""
    grown = [*RESUMABLE]
    grown[grown.index("--policies") + 1] = "rush,marksman,random,cover"
    whole = tmp_path / "whole"
    assert main([*grown, "--out", str(whole)]) == 0
    out = tmp_path / "t"
    assert main([*RESUMABLE, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*grown, "--out", str(out), "--resume"]) == 0
    assert "resumed: 18 battles were recorded, 18 played" in capsys.readouterr().out
    header = json.loads((out / "results.jsonl").read_text().splitlines()[0])["tournament"]
    assert header["policies"] == "rush,marksman,random,cover"
    def tables(folder):  # the command line (--out, --resume) aside
        return {n: t.split("\n", 1)[1] if n == "summary.md" else t
                for n, t in _tables(folder).items() if n != "results.json"}

    assert tables(out) == tables(whole)
    shrunk = [*RESUMABLE]
    shrunk[shrunk.index("--policies") + 1] = "rush,marksman"
    assert main([*shrunk, "--out", str(out), "--resume"]) == 2
    assert "--policies (recorded: 'rush,marksman,random,cover'" in capsys.readouterr().err
