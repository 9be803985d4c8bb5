"""traveller_rl/checkpoints/select.py: a run's checkpoints ranked on selection seeds (apart from
the result scripts' evaluation seeds), half the battles from each side."""

from __future__ import annotations

import json
import shutil

import pytest
from test_result_scripts import random_checkpoint

from traveller_rl.checkpoints.select import SELECTION_SEED, candidates, main, score


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


def test_without_forbidden_clears_the_actions_only_where_another_stays_legal():
    import numpy as np

    from traveller_rl.ppo.rollout import without_forbidden

    mask = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1]], dtype=bool)
    forbid = np.array([False, True, False])
    out = without_forbidden(mask, forbid)
    assert out.tolist() == [[True, False, False],   # another action stays legal
                            [False, True, False],   # the forbidden one is all it has
                            [True, False, True]]
    assert mask[0, 1]  # the caller's mask is not changed


def test_forbid_is_an_ablation_on_the_same_battles(tmp_path, capsys):
    """An action the greedy policy chooses is never chosen once forbidden (unless it is all
    that is legal), the ablated score is reproducible, and a label the checkpoint lacks is
    refused naming the flag."""
    import numpy as np
    import torch

    from agents.ppo_policy import network_from_checkpoint, read_checkpoint
    from traveller_rl.ppo.rollout import greedy_actions, without_forbidden
    from traveller_rl.checkpoints.select import forbidden_actions
    from traveller_env import vector

    ckpt = random_checkpoint(tmp_path / "duel.pt", "duel")
    data = read_checkpoint(ckpt)
    labels = list(data["action_labels"])
    net = network_from_checkpoint(data)
    venv = vector.make("duel", num_envs=8, seed=0, backend="core", relative_actions=True,
                       opponents={"red": "rush"})
    obs, mask, _ = venv.reset(seed=3)
    chosen = set()
    for _ in range(60):
        a = greedy_actions(net.actor(torch.from_numpy(obs[:, :net.obs_dim])),
                           torch.from_numpy(mask)).numpy()
        chosen.update(labels[i] for i in a)
        obs, mask, *_ = venv.step(a)
    label = sorted(chosen - {"end_turn"})[0]   # something the untrained policy plays
    banned = forbidden_actions(labels, [label])
    assert banned.sum() == 1 and labels[int(np.flatnonzero(banned)[0])] == label
    obs, mask, _ = venv.reset(seed=3)
    for _ in range(60):
        m = without_forbidden(mask, banned)
        a = greedy_actions(net.actor(torch.from_numpy(obs[:, :net.obs_dim])),
                           torch.from_numpy(m)).numpy()
        assert all(labels[i] != label or mask[r].sum() == mask[r, banned].sum()
                   for r, i in enumerate(a))
        obs, mask, *_ = venv.step(a)
    ablated = score(ckpt, "duel", "rush", 40, SELECTION_SEED, 8, {}, forbid=[label])
    assert ablated["wins"] + ablated["draws"] + ablated["losses"] == 40
    assert ablated == score(ckpt, "duel", "rush", 40, SELECTION_SEED, 8, {}, forbid=[label])
    with pytest.raises(SystemExit, match="--forbid react:nap: not an action"):
        main([str(ckpt), "--scenario", "duel", "--vs", "rush", "--battles", "4",
              "--envs", "2", "--forbid", "react:nap"])
