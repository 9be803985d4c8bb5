"""experiments/select_checkpoint.py: a run's checkpoints ranked on selection seeds (apart from
the result scripts' evaluation seeds), half the battles from each side."""

from __future__ import annotations

import json
import shutil

import pytest
from test_result_scripts import random_checkpoint

from experiments.select_checkpoint import SELECTION_SEED, candidates, main, score


def _run_folder(tmp_path):
    run = tmp_path / "run"
    (run / "pool").mkdir(parents=True)
    src = random_checkpoint(tmp_path / "duel.pt", "duel")
    for u in (0, 10, 20, 30, 40):
        shutil.copyfile(src, run / "pool" / f"ppo_u{u:06d}.pt")
    shutil.copyfile(src, run / "ppo.pt")
    return run


def test_candidates_take_every_kth_pool_checkpoint_then_the_final_one(tmp_path):
    run = _run_folder(tmp_path)
    names = [p.name for p in candidates(run, every=20, since=10)]
    assert names == ["ppo_u000020.pt", "ppo_u000040.pt", "ppo.pt"]
    assert candidates(run / "ppo.pt", 1, 0) == [run / "ppo.pt"]
    with pytest.raises(ValueError, match="no checkpoints"):
        candidates(tmp_path / "run" / "pool", 10, 0)  # a folder without pool/ or ppo.pt
    with pytest.raises(ValueError, match="no such checkpoint"):
        candidates(tmp_path / "missing.pt", 10, 0)


def test_score_plays_half_the_battles_from_each_side_the_same_every_time(tmp_path):
    ckpt = random_checkpoint(tmp_path / "duel.pt", "duel")
    vectors: dict = {}
    first = score(ckpt, "duel", "marksman", 40, SELECTION_SEED, 8, vectors)
    assert first["wins"] + first["draws"] + first["losses"] == 40
    assert 0.0 <= first["ci95"][0] <= first["win_rate"] <= first["ci95"][1] <= 1.0
    again = score(ckpt, "duel", "marksman", 40, SELECTION_SEED, 8, vectors)
    assert again == first
    assert len(vectors) == 1  # both calls share the vectors of one view set
    # another seed plays other battles
    other = score(ckpt, "duel", "rush", 40, SELECTION_SEED, 8, {})
    assert other["wins"] + other["draws"] + other["losses"] == 40


def test_the_ranking_is_written_best_first(tmp_path, capsys):
    run = _run_folder(tmp_path)
    out = tmp_path / "rank.json"
    assert main([str(run), "--scenario", "duel", "--vs", "rush", "--battles", "8",
                 "--every", "20", "--envs", "4", "--json", str(out)]) == 0
    ranking = json.loads(out.read_text())["ranking"]
    assert len(ranking) == 4  # updates 0, 20, 40 and ppo.pt
    rates = [r["win_rate"] for r in ranking]
    assert rates == sorted(rates, reverse=True)
    assert "seeds from 300000" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--battles", "1"], "--battles must be at least 2"),
    (["--every", "0"], "--every must be at least 1"),
    (["--vs", "nobody"], "--vs 'nobody'"),
])
def test_bad_arguments_are_refused_naming_the_flag(argv, message, tmp_path):
    run = _run_folder(tmp_path)
    with pytest.raises(SystemExit, match=message):
        main([str(run), "--scenario", "duel", *argv])


def test_a_missing_run_is_named(tmp_path):
    with pytest.raises(SystemExit, match="neither a train_ppo run folder"):
        main([str(tmp_path / "nothing")])
