"""Ensemble checkpoints (traveller_rl/checkpoints/ensemble.py,
traveller_agents.nets.EnsembleNet): several train_ppo checkpoints played as one policy, the
mean of their logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import member_checkpoint, plain_checkpoint

from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
from traveller_agents.nets import EnsembleNet
from traveller_agents.ppo_policy import PPOPolicy, load_ppo_policy
from traveller_agents.registry import make_policy
from traveller_env import vector
from traveller_rl.checkpoints import ensemble as ens
from traveller_rl.common import checkpoint_provenance


@pytest.fixture
def members(tmp_path):
    a = member_checkpoint(tmp_path / "a.pt", "entity", 1)
    b = member_checkpoint(tmp_path / "b.pt", "mlp", 2, imitation="tactician")
    return tmp_path, a, b


def test_an_ensemble_plays_the_mean_of_its_members_logits(members):
    tmp, a, b = members
    out = ens.ensemble_checkpoints([tmp / "a.pt", tmp / "b.pt"], tmp / "e.pt")
    data = read_checkpoint(out)
    assert data["arch"] == "ensemble" and data["hidden"] == [] and data["move_view"]
    assert [m["arch"] for m in data["members"]] == ["entity", "mlp"]
    assert [m["source"] for m in data["members"]] == [str(tmp / "a.pt"), str(tmp / "b.pt")]
    assert data["imitation"] == "tactician"  # a member's imitation start stays on record
    assert data["decisions"] == 300
    net = network_from_checkpoint(data)
    assert isinstance(net, EnsembleNet)
    venv = vector.make("squad", num_envs=6, seed=3, relative_actions=True, move_view=True)
    obs, mask, _ = venv.reset()
    x = torch.from_numpy(obs)
    with torch.no_grad():
        want = (a.actor(x) + b.actor(x)) / 2
        assert torch.allclose(net.actor(x), want, atol=1e-6)
        assert torch.allclose(net.value(x), (a.value(x) + b.value(x)) / 2, atol=1e-6)
        # the mean of logits is the mean of log-probabilities up to a constant per row
        logp = (torch.log_softmax(a.actor(x), -1) + torch.log_softmax(b.actor(x), -1)) / 2
        assert torch.allclose(torch.softmax(want, -1), torch.softmax(logp, -1), atol=1e-6)
    # it plays as an NPC: greedy on the mean logits, anywhere a policy name is accepted
    policy = load_ppo_policy(out, "squad")
    assert isinstance(policy, PPOPolicy)
    for i in range(len(obs)):
        legal = np.flatnonzero(mask[i])
        assert policy.choose(obs[i], mask[i]) == legal[np.argmax(want[i].numpy()[legal])]
    from traveller_rl.evaluation import evaluate_matchup

    row = evaluate_matchup(make_policy(str(out), scenario="squad"), make_policy("rush"),
                           "squad", battles=2, seed=4)
    assert row["wins"] + row["draws"] + row["losses"] == 2
    # untrained, it never beats rush: rush wins the battle from each side (counted as losses
    # of the checkpoint, one a side)
    assert {s: (c["wins"], c["losses"]) for s, c in row["by_side"].items()} == {
        "blue": (0, 1), "red": (0, 1)}
    prov = checkpoint_provenance(out)
    assert prov["arch"] == "ensemble" and [m["seed"] for m in prov["members"]] == [1, 2]


def test_select_checkpoint_ranks_an_ensemble(members, capsys):
    from traveller_rl.checkpoints import select as select_checkpoint

    tmp, _, _ = members
    ens.main([str(tmp / "a.pt"), str(tmp / "b.pt"), "--out", str(tmp / "e.pt")])
    assert select_checkpoint.main([str(tmp / "e.pt"), "--vs", "rush", "--battles", "4",
                                   "--envs", "2"]) == 0
    assert "e.pt" in capsys.readouterr().out


@pytest.mark.parametrize(("case", "message"), [
    ("one", "at least 2 checkpoints"),
    ("twice", "listed twice"),
    ("views", "its observation size differ"),
    ("nested", "an ensemble already"),
    ("missing", "no such trained-policy file"),
])
def test_bad_members_are_refused_naming_the_file(members, case, message, capsys):
    tmp, _, _ = members
    a, b = str(tmp / "a.pt"), str(tmp / "b.pt")
    ens.main([a, b, "--out", str(tmp / "e.pt")])
    plain_checkpoint(tmp / "plain.pt")
    argv = {"one": [a], "twice": [a, a], "views": [a, str(tmp / "plain.pt")],
            "nested": [a, str(tmp / "e.pt")], "missing": [a, str(tmp / "nope.pt")]}[case]
    capsys.readouterr()
    assert ens.main([*argv, "--out", str(tmp / "f.pt")]) == 2
    err = capsys.readouterr().err
    assert "python -m traveller_rl.checkpoints.ensemble: error: " in err and message in err
    assert not (tmp / "f.pt").exists()


def test_training_refuses_to_start_from_an_ensemble(members, capsys):
    from traveller_rl.ppo import trainer as train_ppo

    tmp, _, _ = members
    ens.main([str(tmp / "a.pt"), str(tmp / "b.pt"), "--out", str(tmp / "e.pt")])
    status = train_ppo.main(["--scenario", "squad", "--move-view", "--init", str(tmp / "e.pt"),
                             "--total-timesteps", "64", "--num-envs", "2", "--num-steps", "4",
                             "--out", str(tmp / "run"), "--no-progress"])
    assert status == 2
    assert "is an ensemble of checkpoints" in capsys.readouterr().err


def test_widening_refuses_an_ensemble_by_name_and_the_export_traces_it(members):
    from traveller_rl.checkpoints.widen import widen_checkpoint
    from traveller_rl.onnx_export import read_ppo_checkpoint

    tmp, _, _ = members
    ens.main([str(tmp / "a.pt"), str(tmp / "b.pt"), "--out", str(tmp / "e.pt")])
    # exported by tracing (tests/policies/test_onnx_entity.py), not layer by layer
    exported = read_ppo_checkpoint(tmp / "e.pt")
    assert exported.layers == [] and exported.traced is not None
    assert exported.traced.arch == "ensemble" and exported.hidden == []
    with pytest.raises(ValueError, match=r"e\.pt: its actor is the 'ensemble' architecture"):
        widen_checkpoint(tmp / "e.pt", [32], tmp / "w.pt")
