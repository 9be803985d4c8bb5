"""The entity critic and slot attention (``train_ppo --critic entity --attention N``): what
they compute, how checkpoints record them, and the flags' errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import squad_labels

from traveller_agents.checkpoint import (
    checkpoint_bytes,
    ensemble_bytes,
    network_from_checkpoint,
    read_checkpoint,
)
from traveller_agents.entity_net import EntityActor, EntityCritic, SlotAttention
from traveller_agents.nets import ActorCritic
from traveller_agents.ppo_policy import load_ppo_policy
from traveller_cli import main as cli_main
from traveller_env import vector
from traveller_rl.common import checkpoint_provenance


def _squad_batch(n: int = 6, steps: int = 5, **views: bool) -> np.ndarray:
    venv = vector.make("squad", num_envs=n, seed=11, relative_actions=True, **views)
    obs, mask, _ = venv.reset()
    rng = np.random.default_rng(1)
    for _ in range(steps):
        obs, mask, *_ = venv.step(vector.random_legal_actions(mask, rng))
    return obs


def _network(critic: str = "entity", attention: int = 1, seed: int = 2) -> ActorCritic:
    obs_labels, actions = squad_labels(move_view=True)
    torch.manual_seed(seed)
    return ActorCritic(len(obs_labels), len(actions), [32, 32], arch="entity",
                       observation_labels=obs_labels, action_labels=actions, embed=16,
                       critic=critic, attention=attention)


def test_the_entity_critic_reads_the_tokens_into_one_value_per_observation():
    net = _network(attention=0)
    assert isinstance(net.critic, EntityCritic)
    obs = torch.from_numpy(_squad_batch(move_view=True))
    with torch.no_grad():
        values = net.value(obs)
        # the same tokens and trunk as its encode(), then the value head
        h = net.critic.encode(obs)[0]
        assert torch.equal(values, net.critic.value_head(h).squeeze(-1))
    assert values.shape == (obs.shape[0],) and torch.isfinite(values).all()
    # its own weights: the actor's encoder is another module
    assert net.critic.slot_enc is not net.actor.slot_enc


def test_slot_attention_ignores_absent_slots():
    """What an absent slot's columns hold changes no token of a present slot."""
    torch.manual_seed(0)
    block = SlotAttention(8)
    tokens = torch.randn(3, 5, 8)
    present = torch.tensor([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    changed = tokens.clone()
    changed[~present] = torch.randn(int((~present).sum()), 8) * 10
    with torch.no_grad():
        a, b = block(tokens, present), block(changed, present)
    assert torch.allclose(a[present], b[present], atol=1e-5)
    assert not torch.allclose(a, b)
    # a row with no slot present still gives finite tokens
    with torch.no_grad():
        assert torch.isfinite(block(tokens, torch.zeros(3, 5, dtype=torch.bool))).all()


def test_attention_needs_heads_that_divide_the_token_width():
    obs_labels, actions = squad_labels()
    with pytest.raises(ValueError,
                       match=r"token width \(--embed\) 10 must be a multiple of the 4 att"):
        EntityActor(obs_labels, actions, [16], embed=10, attention=1)
    with pytest.raises(ValueError, match="attention blocks must be >= 0, got -1"):
        EntityActor(obs_labels, actions, [16], embed=8, attention=-1)


def test_the_network_refuses_an_unknown_critic_or_an_mlp_actor_with_entity_parts():
    with pytest.raises(ValueError, match="critic architecture must be one of mlp, entity, "
                                         "got 'gru'"):
        ActorCritic(4, 2, [8], critic="gru")
    with pytest.raises(ValueError, match="need the entity actor"):
        ActorCritic(4, 2, [8], critic="entity")
    with pytest.raises(ValueError, match="need the entity actor"):
        ActorCritic(4, 2, [8], attention=1)


def test_a_checkpoint_records_the_critic_and_attention_and_loads_them_back(tmp_path):
    net = _network()
    path = tmp_path / "ea.pt"
    path.write_bytes(checkpoint_bytes(net, "squad", squad_labels(move_view=True)[1],
                                      move_view=True, decisions=0, update=0, seed=2))
    data = read_checkpoint(path)
    assert (data["arch"], data["critic_arch"], data["attention"]) == ("entity", "entity", 1)
    back = network_from_checkpoint(data)
    obs = torch.from_numpy(_squad_batch(move_view=True))
    net.eval()  # loaded networks are in eval mode (attention's fused path: equal to ~1e-6)
    with torch.no_grad():
        assert torch.allclose(back.actor(obs), net.actor(obs), atol=1e-5)
        assert torch.equal(back.value(obs), net.value(obs))
    info = checkpoint_provenance(path)
    assert (info["critic_arch"], info["attention"]) == ("entity", 1)
    # it plays as an NPC, in an env without the move view too
    policy = load_ppo_policy(path, "squad")
    o = _squad_batch(n=1, steps=0, move_view=True)[0]
    assert np.allclose(policy.logits(o), net.actor(torch.from_numpy(o[None])).detach()[0],
                       atol=1e-5)
    assert cli_main(["eval", str(path), "--scenario", "squad", "--vs", "rush",
                     "--battles", "1"]) == 0


def test_the_defaults_write_no_new_keys_and_unknown_values_are_refused(tmp_path):
    plain = _network(critic="mlp", attention=0)
    data = torch.load(__import__("io").BytesIO(
        checkpoint_bytes(plain, "squad", squad_labels(move_view=True)[1])), weights_only=True)
    assert "critic_arch" not in data and "attention" not in data
    for key, value, message in (("critic_arch", "gru", "checkpoint critic architecture 'gru'"),
                                ("attention", "two", "checkpoint attention 'two'")):
        with pytest.raises(ValueError, match=message):
            network_from_checkpoint({**data, key: value})


def test_an_ensemble_keeps_each_members_critic_and_attention(tmp_path):
    members = [_network(critic="entity", attention=1, seed=3),
               _network(critic="mlp", attention=0, seed=4)]
    actions = squad_labels(move_view=True)[1]
    paths = []
    for i, net in enumerate(members):
        paths.append(tmp_path / f"m{i}.pt")
        paths[-1].write_bytes(checkpoint_bytes(net, "squad", actions, move_view=True))
    ens = network_from_checkpoint(torch.load(__import__("io").BytesIO(ensemble_bytes(
        [read_checkpoint(p) for p in paths], [str(p) for p in paths])), weights_only=True))
    obs = torch.from_numpy(_squad_batch(move_view=True))
    with torch.no_grad():
        want = (members[0].actor(obs) + members[1].actor(obs)) / 2
        assert torch.allclose(ens.actor(obs), want, atol=1e-5)
        assert torch.allclose(ens.value(obs), (members[0].value(obs) + members[1].value(obs))
                              / 2, atol=1e-5)


TINY = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "1024",
        "--seed", "5", "--num-envs", "16", "--num-steps", "32", "--eval-every", "0",
        "--eval-vs", "rush", "--eval-battles", "2", "--eval-envs", "2",
        "--final-eval-battles", "0", "--threads", "1", "--no-progress",
        "--arch", "entity", "--embed", "8", "--hidden", "16", "--critic", "entity",
        "--attention", "1"]


def test_train_ppo_trains_an_entity_critic_with_attention_reproducibly(tmp_path):
    from traveller_rl.ppo.trainer import build_parser, run

    a, b = tmp_path / "a", tmp_path / "b"
    assert run(build_parser().parse_args([*TINY, "--out", str(a)])) == 0
    assert run(build_parser().parse_args([*TINY, "--out", str(b)])) == 0
    assert (a / "ppo.pt").read_bytes() == (b / "ppo.pt").read_bytes()
    data = read_checkpoint(a / "ppo.pt")
    assert (data["critic_arch"], data["attention"], data["decisions"]) == ("entity", 1, 1024)
    # the critic saved is an EntityCritic (token encoder, trunk, value head), without attention
    assert {k.split(".")[0] for k in data["critic"]} == {"slot_enc", "square_enc", "trunk",
                                                         "value_head"}
    assert any(k.startswith("slot_attn.0.attn") for k in data["actor"])


@pytest.mark.parametrize(("flags", "message"), [
    (["--critic", "gru"], "--critic must be one of mlp, entity, got 'gru'"),
    (["--critic", "entity"], "--critic entity and --attention need --arch entity"),
    (["--attention", "1"], "--critic entity and --attention need --arch entity"),
    (["--arch", "entity", "--attention", "-1"], "--attention must be at least 0, got -1"),
    (["--arch", "entity", "--attention", "1", "--embed", "6"],
     "--attention: --embed must be a multiple of the 4 attention heads, got 6"),
    (["--arch", "entity", "--critic", "entity", "--init", "x.pt"],
     "--critic and --attention shape a new network; with --init the network is the "
     "checkpoint's"),
])
def test_bad_critic_and_attention_flags_give_clear_errors(flags, message, capsys, tmp_path):
    status = cli_main(["train", "ppo", "--backend", "python", "--out", str(tmp_path / "never"),
                       *flags])
    assert status == 2
    assert message in capsys.readouterr().err
