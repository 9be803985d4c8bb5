"""experiments/select_pair.py: pairs of two runs' checkpoints ranked as ensembles on their own
selection seeds, the best written as an ensemble checkpoint."""

from __future__ import annotations

import json

import pytest
from conftest import view_checkpoint

from agents.ppo_policy import read_checkpoint
from experiments.select_pair import PAIR_SEED, main, ranked_checkpoints


@pytest.fixture
def two_runs(tmp_path):
    """Two 'runs' of two checkpoints each and their select_checkpoint-style rankings."""
    rankings = []
    for r, name in enumerate("ab"):
        pool = tmp_path / name / "pool"
        pool.mkdir(parents=True)
        rows = []
        for k in range(2):
            path = pool / f"ppo_u{10 * k:06d}.pt"
            view_checkpoint(path, seed=10 * r + k)
            rows.append({"checkpoint": str(path), "update": 10 * k, "win_rate": 0.5 - 0.1 * k})
        # a run's ppo.pt repeats its last pool checkpoint: counted once
        (tmp_path / name / "ppo.pt").write_bytes(path.read_bytes())
        rows.insert(1, {"checkpoint": str(tmp_path / name / "ppo.pt"), "update": 10,
                        "win_rate": 0.45})
        ranking = tmp_path / f"sel_{name}.json"
        ranking.write_text(json.dumps({"args": {}, "ranking": rows}))
        rankings.append(ranking)
    return tmp_path, rankings


def test_the_top_checkpoints_of_a_ranking_count_a_repeated_update_once(two_runs):
    tmp, (sel_a, _) = two_runs
    assert ranked_checkpoints(sel_a, 2) == [tmp / "a/pool/ppo_u000000.pt", tmp / "a/ppo.pt"]
    assert ranked_checkpoints(sel_a, 1) == [tmp / "a/pool/ppo_u000000.pt"]


def test_select_pair_ranks_every_pair_and_writes_the_best(two_runs, capsys):
    tmp, rankings = two_runs
    out, table = tmp / "best.pt", tmp / "pairs.json"
    assert main([*map(str, rankings), "--top", "2", "--vs", "rush", "--battles", "4",
                 "--envs", "2", "--json", str(table), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 pairs x 4 battles" in printed and f"seeds from {PAIR_SEED}" in printed
    ranking = json.loads(table.read_text())["ranking"]
    assert len(ranking) == 4
    assert {tuple(r["members"]) for r in ranking} == {
        (str(a), str(b)) for a in ranked_checkpoints(rankings[0], 2)
        for b in ranked_checkpoints(rankings[1], 2)}
    assert [r["win_rate"] for r in ranking] == sorted((r["win_rate"] for r in ranking),
                                                      reverse=True)
    assert all(r["wins"] + r["draws"] + r["losses"] == 4 for r in ranking)
    data = read_checkpoint(out)
    assert data["arch"] == "ensemble"
    assert [m["source"] for m in data["members"]] == ranking[0]["members"]


def test_select_pair_reports_bad_input_by_name(two_runs, tmp_path):
    _, (sel_a, sel_b) = two_runs
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(SystemExit, match=r"bad\.json: not a select_checkpoint --json ranking"):
        main([str(bad), str(sel_b)])
    with pytest.raises(SystemExit, match="share checkpoints; give one ranking per run"):
        main([str(sel_a), str(sel_a), "--vs", "rush"])
    with pytest.raises(SystemExit, match="--top must be at least 1, got 0"):
        main([str(sel_a), str(sel_b), "--top", "0"])
    with pytest.raises(SystemExit, match="--vs 'nobody': not a policy of the compiled core"):
        main([str(sel_a), str(sel_b), "--vs", "nobody"])
    gone = json.loads(sel_a.read_text())
    gone["ranking"][0]["checkpoint"] = str(tmp_path / "missing.pt")
    sel_a.write_text(json.dumps(gone))
    with pytest.raises(SystemExit, match=r"missing\.pt, which does not exist"):
        main([str(sel_a), str(sel_b)])
