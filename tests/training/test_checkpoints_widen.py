"""traveller_rl/checkpoints/widen.py: a wider network that computes exactly what the checkpoint
did, and that train_ppo continues from."""

from __future__ import annotations

import pytest
import torch
from checkpoint_helpers import random_checkpoint

from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
from traveller_rl.checkpoints.widen import main, widen


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
    from traveller_agents.nets import ActorCritic

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
    try:  # a malformed list is refused by the parser (it exits), a bad one by the command
        status = main([str(src), "--hidden", hidden, "--out", str(tmp_path / "w.pt")])
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "w.pt").exists()


def test_a_missing_checkpoint_is_named(tmp_path, capsys):
    assert main([str(tmp_path / "nope.pt"), "--hidden", "32", "--out",
                 str(tmp_path / "w.pt")]) == 2
    err = capsys.readouterr().err
    assert "python -m traveller_rl.checkpoints.widen: error: " in err
    assert "no such trained-policy file" in err


def test_aim_view_inputs_are_added_with_zero_weights_and_train_ppo_takes_them(tmp_path,
                                                                             capsys):
    """``--aim-view``: one new input per slot (the aim view's size), read by nothing yet, so
    the network computes the same on any aim view; ``train_ppo --aim-view --init`` takes it."""
    import traveller_env
    from traveller_rl.ppo import trainer as train_ppo

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
    capsys.readouterr()
    assert main([str(out), "--hidden", "16", "--aim-view", "--out",
                 str(tmp_path / "again.pt")]) == 2
    assert "already reads the aim view" in capsys.readouterr().err


def _views_checkpoint(path, scenario, **views):
    """An untrained checkpoint for ``scenario`` reading ``views``."""
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic
    from traveller_env import vector

    venv = vector.make(scenario, num_envs=1, seed=0, backend="python", relative_actions=True,
                       **views)
    torch.manual_seed(0)
    net = ActorCritic(venv.obs_dim, venv.n_actions, [16])
    path.write_bytes(checkpoint_bytes(net, scenario, venv.action_labels, **views))
    return path


@pytest.mark.parametrize("have, add", [
    ({"move_view": True, "attack_view": True}, "--aim-view"),   # in the middle
    ({"move_view": True}, "--attack-view"),                     # at the end
    ({"aim_view": True}, "--move-view"),                        # before another view
])
def test_a_view_is_added_where_the_observation_puts_it(tmp_path, have, add, capsys):
    """The widened network on the env's observation with every view it now reads computes
    what the old one did on the observation without the added view (the layout:
    the views follow the plain observation in the order move, aim, attack)."""
    import numpy as np

    import traveller_env
    from traveller_agents.views import complete_observation

    src = _views_checkpoint(tmp_path / "src.pt", "squad", **have)
    out = tmp_path / "wide.pt"
    assert main([str(src), "--hidden", "24", add, "--out", str(out)]) == 0
    added = add[2:].replace("-", "_")
    data = read_checkpoint(out)
    assert data[added] is True and all(data[v] is True for v in have)
    old, new = (network_from_checkpoint(read_checkpoint(p)) for p in (src, out))
    env = traveller_env.raw_env("squad", move_view=True, aim_view=True, attack_view=True)
    env.reset(seed=5)
    rows_old, rows_new = [], []
    for _ in range(40):   # observations from a few turns of play
        agent = env.agent_selection
        obs = env.observe(agent)["observation"]
        rows_old.append(complete_observation(obs, env, agent, have))
        rows_new.append(complete_observation(obs, env, agent, {**have, added: True}))
        mask = env.observe(agent)["action_mask"]
        env.step(int(np.flatnonzero(mask)[-1]))
        if not env.agents:
            break
    x_old, x_new = (torch.from_numpy(np.stack(r)) for r in (rows_old, rows_new))
    assert x_old.shape[1] == old.obs_dim and x_new.shape[1] == new.obs_dim
    with torch.no_grad():
        assert torch.allclose(old.actor(x_old), new.actor(x_new), atol=1e-5)
        assert torch.allclose(old.value(x_old), new.value(x_new), atol=1e-5)
    capsys.readouterr()
    assert main([str(out), "--hidden", "24", add, "--out", str(tmp_path / "again.pt")]) == 2
    assert "already reads the" in capsys.readouterr().err
