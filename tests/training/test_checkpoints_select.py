"""traveller_rl/checkpoints/select.py: a run's checkpoints ranked on selection seeds (apart from
the result scripts' evaluation seeds), half the battles from each side."""

from __future__ import annotations

import json
import shutil

import pytest
from checkpoint_helpers import random_checkpoint

from traveller_rl.checkpoints.select import SELECTION_SEED, candidates, main, score

#: How the tool names itself in its error messages.
PROG = "python -m traveller_rl.checkpoints.select"

#: A tiny duel run against rush, in pool mode so that it saves a checkpoint before its first
#: update (pool/ppo_u000000.pt, untrained: it never beats rush) and every 8 updates after it;
#: its final ppo.pt beats rush about two battles in three on the selection seeds (~5 s).
TRAINING = ["--scenario", "duel", "--pool", "--pool-scripted", "rush",
            "--pool-scripted-share", "0.75", "--pool-every", "8", "--total-timesteps", "32768",
            "--num-envs", "64", "--num-steps", "32", "--threads", "1", "--eval-every", "0",
            "--eval-vs", "", "--final-eval-battles", "0", "--no-progress", "--seed", "1"]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A run folder whose checkpoints differ in strength: pool/ppo_u000000.pt (untrained),
    pool/ppo_u000008.pt, pool/ppo_u000016.pt and the final ppo.pt."""
    from traveller_rl.ppo.trainer import main as train

    run = tmp_path_factory.mktemp("select") / "run"
    assert train([*TRAINING, "--out", str(run)]) == 0
    return run


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


def test_score_plays_half_the_battles_from_each_side_the_same_every_time(trained_run):
    ckpt = trained_run / "ppo.pt"
    vectors: dict = {}
    first = score(ckpt, "duel", "marksman", 40, SELECTION_SEED, 8, vectors)
    assert first["wins"] + first["draws"] + first["losses"] == 40
    assert 0.0 <= first["ci95"][0] <= first["win_rate"] <= first["ci95"][1] <= 1.0
    # the total is the two sides' 20 battles each, counted for the checkpoint, not its opponent
    assert first["win_rate"] == pytest.approx((first["win_rate_blue"] + first["win_rate_red"]) / 2)
    again = score(ckpt, "duel", "marksman", 40, SELECTION_SEED, 8, vectors)
    assert again == first
    assert len(vectors) == 1  # both calls share the vectors of one view set
    # another opponent plays other battles: the trained checkpoint beats rush more often
    # than marksman (measured 27/40 against 9/40), from each side
    other = score(ckpt, "duel", "rush", 40, SELECTION_SEED, 8, {})
    assert other["wins"] + other["draws"] + other["losses"] == 40
    assert other["wins"] > first["wins"]
    assert min(other["win_rate_blue"], other["win_rate_red"]) >= 0.5
    # passive never shoots: the trained checkpoint wins every battle from both sides, and the
    # untrained one (which never shoots either) draws every battle
    assert score(ckpt, "duel", "passive", 20, SELECTION_SEED, 8, {})["wins"] == 20
    untrained = score(trained_run / "pool" / "ppo_u000000.pt", "duel", "passive", 20,
                      SELECTION_SEED, 8, {})
    assert (untrained["wins"], untrained["draws"], untrained["losses"]) == (0, 20, 0)


def test_the_ranking_is_written_best_first(trained_run, tmp_path, capsys):
    """The run's checkpoints differ in strength: the untrained one (update 0, never a win
    against rush) ranks last, the trained ones (measured 0.66-0.67 on these 64 battles)
    first, far above it."""
    out = tmp_path / "rank.json"
    assert main([str(trained_run), "--scenario", "duel", "--vs", "rush", "--battles", "64",
                 "--every", "8", "--envs", "32", "--json", str(out)]) == 0
    ranking = json.loads(out.read_text())["ranking"]
    assert len(ranking) == 4  # updates 0, 8, 16 and ppo.pt
    rates = [r["win_rate"] for r in ranking]
    assert rates == sorted(rates, reverse=True)
    assert ranking[-1]["update"] == 0 and ranking[-1]["wins"] == 0
    assert ranking[-1]["checkpoint"].endswith("ppo_u000000.pt")
    assert rates[0] >= 0.5  # a gap no noise on 64 battles closes: 0 wins against 32+
    assert ranking[0]["ci95"][0] > ranking[-1]["ci95"][1]
    assert "seeds from 300000" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--battles", "1"], "--battles must be at least 2"),
    (["--every", "0"], "--every must be at least 1"),
    (["--vs", "nobody"], "--vs 'nobody'"),
])
def test_bad_arguments_are_refused_naming_the_flag(argv, message, tmp_path, capsys):
    run = _run_folder(tmp_path)
    assert main([str(run), "--scenario", "duel", *argv]) == 2
    assert f"{PROG}: error: {message}" in capsys.readouterr().err


def test_a_missing_run_is_named(tmp_path, capsys):
    assert main([str(tmp_path / "nothing")]) == 2
    assert "neither a train_ppo run folder" in capsys.readouterr().err


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


def test_forbid_is_an_ablation_on_the_same_battles(trained_run, tmp_path, capsys):
    """An action the greedy policy chooses is never chosen once forbidden (unless it is all
    that is legal), the ablated score is reproducible, and a label the checkpoint lacks is
    refused naming the flag."""
    import numpy as np
    import torch

    from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
    from traveller_env import vector
    from traveller_rl.checkpoints.select import forbidden_actions
    from traveller_rl.ppo.rollout import greedy_actions, without_forbidden

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
    # the ablation is played: a trained checkpoint that may not attack (where anything else is
    # legal) no longer wins (measured 27/40 wins with the attack, 0 without it)
    trained = trained_run / "ppo.pt"
    assert score(trained, "duel", "rush", 40, SELECTION_SEED, 8, {})["wins"] >= 20
    assert score(trained, "duel", "rush", 40, SELECTION_SEED, 8, {},
                 forbid=["attack:enemy0"])["wins"] == 0
    capsys.readouterr()
    assert main([str(ckpt), "--scenario", "duel", "--vs", "rush", "--battles", "4",
                 "--envs", "2", "--forbid", "react:nap"]) == 2
    assert f"{PROG}: error: --forbid react:nap: not an action" in capsys.readouterr().err
