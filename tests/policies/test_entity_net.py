"""The entity actor (traveller_agents/entity_net.py, ``train_ppo --arch entity``): its layout read
from the labels, the same weights scoring every slot, and its checkpoints as NPC policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import squad_labels

from traveller_agents.checkpoint import checkpoint_bytes, network_from_checkpoint, read_checkpoint
from traveller_agents.entity_net import POINTER_KINDS, EntityActor, EntityLayout
from traveller_agents.nets import ActorCritic
from traveller_agents.ppo_policy import PPOPolicy, load_ppo_policy
from traveller_agents.registry import make_policy
from traveller_cli import main as cli_main
from traveller_env import vector


def test_the_layout_reads_slots_squares_and_actions_from_the_labels():
    obs, actions = squad_labels(move_view=True, aim_view=True, attack_view=True)
    lay = EntityLayout.from_labels(obs, actions)
    assert lay.slot_names == ("ally0", "ally1", "ally2", "enemy0", "enemy1", "enemy2", "enemy3")
    assert lay.slot_enemy == (0, 0, 0, 1, 1, 1, 1)
    # a slot token: its 27 fields, the aim view's entry and the attack view's two
    assert [obs[i] for i in lay.slot_cols[4]][:2] == ["enemy1.present", "enemy1.in_play"]
    assert [obs[i] for i in lay.slot_cols[4]][-3:] == ["aim.enemy1.on_me", "attack.enemy1.hit",
                                                       "attack.enemy1.hits_me"]
    # squares: the seat's own, then one per move action; each token its move and attack views
    assert lay.square_names[:2] == ("here", "N:1") and len(lay.square_names) == 33
    assert [obs[i] for i in lay.square_cols[1]] == [
        "move.N:1.seen_by", "move.N:1.covered_from", "move.N:1.clear_shots",
        "attack.N:1.best_hit", "attack.N:1.threat"]
    assert lay.square_geometry[0] == (0.0, 0.0, 1.0)
    assert all(obs[i].startswith("self.") for i in lay.global_cols)
    # every column belongs to exactly one token or to the global vector
    used = [*lay.global_cols, *(c for s in lay.slot_cols for c in s),
            *(c for q in lay.square_cols for c in q)]
    assert sorted(used) == list(range(len(obs)))
    # every action reads its own output
    assert len(set(lay.action_source)) == len(actions)
    n_base = len(lay.base_actions)
    k = POINTER_KINDS.index("attack")
    assert lay.action_source[actions.index("attack:enemy2")] == n_base + 5 * 4 + k
    assert lay.action_source[actions.index("move:N:1")] == n_base + 7 * 4 + 1
    assert [actions[a] for a in lay.base_actions][:3] == ["end_turn", "stance:stand",
                                                          "stance:crouch"]


def test_the_layout_refuses_an_action_aimed_at_a_slot_the_observation_lacks():
    obs, actions = squad_labels()
    with pytest.raises(ValueError, match="'attack:enemy9' aims at slot 'enemy9'"):
        EntityLayout.from_labels(obs, [*actions, "attack:enemy9"])
    with pytest.raises(ValueError, match="unknown direction"):
        EntityLayout.from_labels(obs, [*actions, "move:UP:1"])


def _swap_slots(x: np.ndarray, labels: list[str], a: str, b: str) -> np.ndarray:
    """``x`` with every column of slot ``a`` exchanged with slot ``b``'s (views too)."""
    index = {lab: i for i, lab in enumerate(labels)}

    def partner(label: str) -> str:
        return ".".join({a: b, b: a}.get(part, part) for part in label.split("."))

    return x[..., [index[partner(lab)] for lab in labels]]


@pytest.mark.parametrize("attention", [0, 1])
def test_the_same_weights_score_every_enemy(attention):
    """Exchanging two enemies in the observation exchanges the logits of every action aimed
    at them and leaves every other logit as it was (with slot attention too: it treats the
    slots as a set)."""
    obs_labels, actions = squad_labels(move_view=True, aim_view=True, attack_view=True)
    torch.manual_seed(0)
    actor = EntityActor(obs_labels, actions, [32, 32], embed=16, attention=attention)
    with torch.no_grad():  # spread the logits so that equality is not trivial
        for p in actor.parameters():
            p.mul_(20.0)
    venv = vector.make("squad", num_envs=4, seed=3, relative_actions=True, move_view=True,
                       aim_view=True, attack_view=True)
    obs, mask, _ = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(6):
        obs, mask, *_ = venv.step(vector.random_legal_actions(mask, rng))
    swapped = _swap_slots(obs, obs_labels, "enemy0", "enemy2")
    assert not np.array_equal(swapped, obs)
    with torch.no_grad():
        z = actor(torch.from_numpy(obs)).numpy()
        zs = actor(torch.from_numpy(swapped)).numpy()
    perm = list(range(len(actions)))
    for kind in POINTER_KINDS:
        i, j = actions.index(f"{kind}:enemy0"), actions.index(f"{kind}:enemy2")
        perm[i], perm[j] = j, i
    assert np.allclose(zs, z[:, perm], atol=1e-4)
    assert not np.allclose(zs, z, atol=1e-4)


def test_an_entity_checkpoint_round_trips_and_plays_as_the_network_does(tmp_path):
    obs_labels, actions = squad_labels(move_view=True)
    torch.manual_seed(1)
    net = ActorCritic(len(obs_labels), len(actions), [32, 32], arch="entity",
                      observation_labels=obs_labels, action_labels=actions, embed=16)
    path = tmp_path / "entity.pt"
    path.write_bytes(checkpoint_bytes(net, "squad", actions, decisions=0, update=0, seed=1,
                                      move_view=True))
    data = read_checkpoint(path)
    assert (data["arch"], data["embed"]) == ("entity", 16)
    back = network_from_checkpoint(data)
    policy = load_ppo_policy(path, "squad")
    assert isinstance(policy, PPOPolicy) and policy.obs_dim == len(obs_labels)
    venv = vector.make("squad", num_envs=8, seed=9, relative_actions=True, move_view=True)
    obs, mask, _ = venv.reset()
    with torch.no_grad():
        want = net.actor(torch.from_numpy(obs)).numpy()
        assert np.array_equal(back.actor(torch.from_numpy(obs)).numpy(), want)
        assert np.array_equal(back.critic(torch.from_numpy(obs)).numpy(),
                              net.critic(torch.from_numpy(obs)).numpy())
    threads = torch.get_num_threads()
    for i in range(len(obs)):
        assert np.allclose(policy.logits(obs[i]), want[i], atol=1e-5)
        assert torch.get_num_threads() == threads  # one thread per call, the caller's restored
        legal = np.flatnonzero(mask[i])
        assert policy.choose(obs[i], mask[i]) == legal[np.argmax(want[i][legal])]
    # an NPC anywhere a policy name is accepted, in an env without the move view too
    from traveller_rl.evaluation import evaluate_matchup

    row = evaluate_matchup(make_policy(str(path), scenario="squad"), make_policy("rush"),
                           "squad", battles=2, seed=4)
    assert row["wins"] + row["draws"] + row["losses"] == 2
    # untrained, it never beats rush: rush wins the battle from each side (counted as losses
    # of the checkpoint, one a side)
    assert {s: (c["wins"], c["losses"]) for s, c in row["by_side"].items()} == {
        "blue": (0, 1), "red": (0, 1)}


def test_the_twin_of_a_network_is_an_independent_copy():
    obs_labels, actions = squad_labels()
    net = ActorCritic(len(obs_labels), len(actions), [16], arch="entity",
                      observation_labels=obs_labels, action_labels=actions, embed=8)
    twin = net.twin()
    x = torch.rand(3, len(obs_labels))
    assert torch.equal(twin.actor(x), net.actor(x))
    with torch.no_grad():
        next(twin.actor.parameters()).add_(1.0)
    assert not torch.equal(twin.actor(x), net.actor(x))


def test_an_entity_network_needs_the_labels_and_a_known_arch():
    with pytest.raises(ValueError, match="actor architecture must be one of mlp, entity"):
        ActorCritic(4, 2, [8], arch="transformer")
    with pytest.raises(ValueError, match="needs the observation labels"):
        ActorCritic(4, 2, [8], arch="entity")


TINY_ENTITY = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "1024",
               "--seed", "5", "--num-envs", "16", "--num-steps", "32", "--eval-every", "0",
               "--eval-vs", "rush", "--eval-battles", "2", "--eval-envs", "2",
               "--final-eval-battles", "0", "--threads", "1", "--no-progress",
               "--arch", "entity", "--embed", "8", "--hidden", "16"]


def test_train_ppo_arch_entity_trains_reproducibly_and_saves_an_npc(tmp_path):
    from traveller_rl.ppo.trainer import build_parser, run

    a, b = tmp_path / "a", tmp_path / "b"
    assert run(build_parser().parse_args([*TINY_ENTITY, "--out", str(a)])) == 0
    assert run(build_parser().parse_args([*TINY_ENTITY, "--out", str(b)])) == 0
    assert (a / "ppo.pt").read_bytes() == (b / "ppo.pt").read_bytes()
    data = read_checkpoint(a / "ppo.pt")
    assert data["arch"] == "entity" and data["decisions"] == 1024
    assert cli_main(["eval", str(a / "ppo.pt"), "--scenario", "duel", "--vs", "random",
                     "--battles", "2"]) == 0
    # a pool run freezes entity copies of itself
    pool = tmp_path / "pool"
    args = [*TINY_ENTITY, "--out", str(pool)]
    args[args.index("--opponents"):args.index("--opponents") + 2] = ["--pool", "--pool-every",
                                                                     "1"]
    assert run(build_parser().parse_args(args)) == 0
    assert read_checkpoint(sorted((pool / "pool").glob("*.pt"))[-1])["arch"] == "entity"


@pytest.mark.parametrize(("flags", "message"), [
    (["--arch", "cnn"], "--arch must be one of mlp, entity, got 'cnn'"),
    (["--embed", "0"], "--embed must be at least 1, got 0"),
])
def test_bad_arch_flags_give_clear_errors(flags, message, capsys, tmp_path):
    status = cli_main(["train", "ppo", "--backend", "python", "--out", str(tmp_path / "never"),
                       *flags])
    assert status == 2
    assert message in capsys.readouterr().err


def test_widening_refuses_an_entity_checkpoint_by_name_and_the_export_traces_it(tmp_path):
    from traveller_rl.checkpoints.widen import widen_checkpoint
    from traveller_rl.onnx_export import read_ppo_checkpoint

    obs_labels, actions = squad_labels()
    net = ActorCritic(len(obs_labels), len(actions), [16], arch="entity",
                      observation_labels=obs_labels, action_labels=actions, embed=8)
    path = tmp_path / "e.pt"
    path.write_bytes(checkpoint_bytes(net, "squad", actions))
    # exported by tracing (tests/policies/test_onnx_entity.py), not layer by layer
    exported = read_ppo_checkpoint(path)
    assert exported.layers == [] and exported.traced is not None
    assert exported.traced.arch == "entity" and exported.n_actions == len(actions)
    with pytest.raises(ValueError, match=r"e\.pt: its actor is the 'entity' architecture"):
        widen_checkpoint(path, [32], tmp_path / "w.pt")


def _random_tokens_batch(obs_labels: list[str], rows: int, seed: int) -> torch.Tensor:
    """Random observations whose ``present`` fields are 0 or 1 (each slot present with
    probability 0.6), the first two rows with no slot present at all."""
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, len(obs_labels), generator=gen)
    present = [i for i, label in enumerate(obs_labels) if label.endswith(".present")]
    obs[:, present] = (torch.rand(rows, len(present), generator=gen) < 0.6).float()
    obs[:2, present] = 0.0
    return obs


@pytest.mark.parametrize(("attention", "views"), [
    (0, {"move_view": True, "attack_view": True}),
    (1, {"move_view": True, "aim_view": True, "attack_view": True}),
    (0, {}),
])
def test_the_restructured_network_computes_what_the_reference_does(attention, views):
    """The package's entity actor (one gather per token kind, fixed columns folded into a bias,
    the heads on ``h`` fused) gives the logits, values and gradients of the straightforward
    reference kept in ``experiments/bench_train.py``, on random weights and observations with
    absent slots and rows with none present."""
    from experiments.bench_train import reference_actor_forward, reference_encode

    obs_labels, actions = squad_labels(**views)
    torch.manual_seed(attention)
    net = ActorCritic(len(obs_labels), len(actions), [32, 16], arch="entity",
                      observation_labels=obs_labels, action_labels=actions, embed=16,
                      critic="entity", attention=attention)
    with torch.no_grad():  # non-zero biases and larger pointer weights than the initialisation
        for p in net.parameters():
            p.add_(0.3 * torch.randn_like(p))
    obs = _random_tokens_batch(obs_labels, 64, seed=attention)
    actor, critic = net.actor, net.critic
    new_logits, new_value = actor(obs), critic(obs)
    new_grads = torch.autograd.grad(new_logits.square().sum() + new_value.sum(),
                                    list(net.parameters()))
    ref_logits = reference_actor_forward(actor, obs)
    ref_value = critic.value_head(reference_encode(critic, obs)[0])
    ref_grads = torch.autograd.grad(ref_logits.square().sum() + ref_value.sum(),
                                    list(net.parameters()))
    torch.testing.assert_close(new_logits, ref_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(new_value, ref_value, rtol=1e-5, atol=1e-5)
    for (name, _), new, ref in zip(net.named_parameters(), new_grads, ref_grads, strict=True):
        torch.testing.assert_close(new, ref, rtol=1e-5, atol=1e-6 * float(ref.abs().max()),
                                   msg=name)


def test_bench_train_recipe_compares_the_reference_and_the_package(tmp_path):
    """``experiments.bench_train --recipe`` at a tiny budget: a run of each path and their
    ratio in the JSON."""
    import json

    from experiments import bench_train

    out = tmp_path / "recipe.json"
    assert bench_train.main(["--recipe", "--recipe-decisions", "160", "--recipe-num-envs", "20",
                             "--recipe-num-steps", "8", "--recipe-seeds", "0-3",
                             "--json", str(out)]) == 0
    figures = json.loads(out.read_text())["recipe"]
    assert [r["reference"] for r in figures["runs"]] == [True, False]
    assert figures["ratio"] == pytest.approx(figures["after"] / figures["before"])
    assert all(r["steady_decisions_per_second"] > 0 for r in figures["runs"])


def test_bench_train_recipe_compile_adds_a_compiled_path(monkeypatch, capsys):
    """``--recipe-compile``: a third path per round, trained with ``--compile``, and its ratios
    to the reference over whole runs and second halves (the runs faked: compiling the entity
    network takes a minute; ``--compile`` itself is tested with the trainer)."""
    from experiments import bench_train

    calls = []

    def fake(decisions, num_envs, num_steps, seeds, reference, compiled=False):
        calls.append((reference, compiled))
        rate = 100.0 if reference else (300.0 if compiled else 110.0)
        return {"reference": reference, "compiled": compiled, "decisions_per_second": rate,
                "steady_decisions_per_second": 2 * rate, "env_share": 0.1,
                "inference_share": 0.2, "update_share": 0.7, "others_cpu": None}

    monkeypatch.setattr(bench_train, "recipe_figures", fake)
    args = bench_train.build_parser().parse_args(["--recipe", "--recipe-compile",
                                                  "--recipe-repeats", "2"])
    figures = bench_train.recipe_comparison(args)
    assert calls == [(True, False), (False, False), (False, True)] * 2
    assert figures["ratio"] == pytest.approx(1.1)
    assert figures["compiled_ratio_decisions_per_second"] == pytest.approx(3.0)
    assert figures["compiled_ratio_steady_decisions_per_second"] == pytest.approx(3.0)
    assert "with --compile" in capsys.readouterr().out
