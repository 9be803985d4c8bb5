"""experiments/widen_checkpoint.py: a wider network that computes exactly what the checkpoint
did, and that train_ppo continues from."""

from __future__ import annotations

import pytest
import torch
from test_result_scripts import random_checkpoint

from agents.ppo_policy import network_from_checkpoint, read_checkpoint
from experiments.widen_checkpoint import main, widen


def test_the_wider_network_gives_the_same_logits_and_values(tmp_path):
    src = random_checkpoint(tmp_path / "duel.pt", "duel")
    out = tmp_path / "wide.pt"
    assert main([str(src), "--hidden", "40", "--out", str(out), "--seed", "3"]) == 0
    old, new = (network_from_checkpoint(read_checkpoint(p)) for p in (src, out))
    assert new.hidden == [40] and old.hidden == [16]
    x = torch.randn(256, old.obs_dim)
    with torch.no_grad():
        # equal up to float summation order (a wider product adds zeros in another order)
        assert torch.allclose(old.actor(x), new.actor(x), rtol=0, atol=1e-6)
        assert torch.allclose(old.value(x), new.value(x), rtol=0, atol=1e-6)
        # the new units compute something (their incoming weights are not zero) ...
        assert new.actor[0].weight[16:].abs().sum() > 0
        # ... and training can reach them: the head's gradient on their weights is not zero.
    new.actor(x).sum().backward()
    assert new.actor[2].weight.grad[:, 16:].abs().sum() > 0
    data = read_checkpoint(out)
    assert data["widened_from"] == str(src) and data["scenario"] == "duel"


def test_a_deeper_layer_list_is_widened_layer_by_layer():
    from agents.ppo_policy import ActorCritic

    torch.manual_seed(0)
    net = ActorCritic(7, 5, [4, 3])
    wide = widen(net, [6, 9], seed=1)
    x = torch.randn(32, 7)
    with torch.no_grad():
        assert torch.allclose(net.actor(x), wide.actor(x), rtol=0, atol=1e-6)
        assert torch.allclose(net.value(x), wide.value(x), rtol=0, atol=1e-6)


@pytest.mark.parametrize("hidden, message", [
    ("8", "give as many layers, none smaller"),
    ("16,16", "give as many layers, none smaller"),
    ("0", "comma-separated positive layer sizes"),
    ("a", "comma-separated positive layer sizes"),
])
def test_bad_sizes_are_refused_naming_the_flag(hidden, message, tmp_path, capsys):
    src = random_checkpoint(tmp_path / "duel.pt", "duel")
    with pytest.raises(SystemExit) as exc:
        main([str(src), "--hidden", hidden, "--out", str(tmp_path / "w.pt")])
    assert message in str(exc.value) + capsys.readouterr().err
    assert not (tmp_path / "w.pt").exists()


def test_a_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no such trained-policy file"):
        main([str(tmp_path / "nope.pt"), "--hidden", "32", "--out", str(tmp_path / "w.pt")])


def test_aim_view_inputs_are_added_with_zero_weights_and_train_ppo_takes_them(tmp_path):
    """``--aim-view``: one new input per slot (the aim view's size), read by nothing yet, so
    the network computes the same on any aim view; ``train_ppo --aim-view --init`` takes it."""
    import traveller_env
    from experiments import train_ppo

    src = random_checkpoint(tmp_path / "squad.pt", "squad")
    out = tmp_path / "aim.pt"
    assert main([str(src), "--hidden", "16", "--aim-view", "--out", str(out)]) == 0
    old, new = (network_from_checkpoint(read_checkpoint(p)) for p in (src, out))
    plain = len(traveller_env.raw_env("squad").observation_labels)
    assert (old.obs_dim, new.obs_dim) == (plain, len(
        traveller_env.raw_env("squad", aim_view=True).observation_labels))
    x = torch.randn(64, old.obs_dim)
    tail = torch.rand(64, new.obs_dim - old.obs_dim)
    with torch.no_grad():
        assert torch.allclose(old.actor(x), new.actor(torch.cat([x, tail], 1)), atol=1e-6)
        assert torch.allclose(old.value(x), new.value(torch.cat([x, tail], 1)), atol=1e-6)
    assert read_checkpoint(out)["aim_view"] is True
    train_ppo.prepare(train_ppo.Args(scenario="squad", aim_view=True, init=str(out),
                                     out=str(tmp_path / "run"), progress=False))
    with pytest.raises(SystemExit, match="already reads the aim view"):
        main([str(out), "--hidden", "16", "--aim-view", "--out", str(tmp_path / "again.pt")])
