"""``traveller export`` of actors that are traced rather than written layer by layer
(``traveller_rl.onnx_trace``): the entity actor (``train_ppo --arch entity``, with and without slot
attention) and an ensemble of checkpoints.

Small untrained entity checkpoints on the ``6v6`` layout with the move and attack views (as a
``gen:squad`` run saves one, its logits spread so that the argmax is never a near tie) stand in
for a trained one. The exported file must have the MLP export's inputs, outputs and metadata
(plus the architecture), load through the unchanged loader, pick the PyTorch policy's action
on recorded decisions of ``squad`` and a held-out ``gen:squad`` draw, and give the same
bytes for the same weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from traveller_agents.checkpoint import checkpoint_bytes, ensemble_bytes, read_checkpoint  # noqa: E402
from traveller_agents.nets import ActorCritic  # noqa: E402
from traveller_agents.onnx_policy import OnnxPolicy, read_metadata  # noqa: E402
from traveller_agents.ppo_policy import load_ppo_policy  # noqa: E402
from traveller_agents.registry import make_policy  # noqa: E402
from traveller_cli import main as traveller  # noqa: E402
from traveller_env import raw_env  # noqa: E402
from traveller_env.layout import LAYOUTS  # noqa: E402
from traveller_rl.evaluation import random_decisions  # noqa: E402
from traveller_rl.onnx_export import export_onnx  # noqa: E402

VIEWS = {"move_view": True, "attack_view": True}
SCENARIOS = ("squad", "gen:squad@1000")
DECISIONS = 60


def write_entity_pt(path: Path, attention: int = 0, seed: int = 0,
                    observation_labels: list[str] | None = None,
                    layout: str | None = "6v6") -> ActorCritic:
    """An untrained entity checkpoint (embed 8, trunk 16) on ``layout`` with the move and
    attack views, recorded as trained on ``gen:squad`` (on ``squad`` without a layout);
    return its network."""
    env = raw_env("squad", backend="python", layout=layout, **VIEWS)
    obs, actions = list(env.observation_labels), list(env.relative_actions.labels)
    torch.manual_seed(seed)
    net = ActorCritic(len(obs), len(actions), [16], arch="entity", observation_labels=obs,
                      action_labels=actions, embed=8, attention=attention)
    with torch.no_grad():  # spread the logits (the heads' initial gain 0.01 makes them tiny)
        for head in (net.actor.base_head, net.actor.slot_query, net.actor.slot_bias,
                     net.actor.square_query, net.actor.square_bias):
            head.weight.mul_(100.0)
    if observation_labels is not None:
        net.observation_labels = observation_labels
    laid_out = {"layout": LAYOUTS[layout].to_dict()} if layout else {}
    path.write_bytes(checkpoint_bytes(net, "gen:squad" if layout else "squad", actions,
                                      decisions=0, update=0, seed=seed, **laid_out, **VIEWS))
    return net


@pytest.fixture(scope="module", params=[0, 1], ids=["entity", "attention"])
def exported(request, tmp_path_factory):
    """An entity ``.pt`` (without and with a slot-attention block) and its export by the
    command."""
    folder = tmp_path_factory.mktemp("onnx_entity")
    pt = folder / "entity.pt"
    net = write_entity_pt(pt, attention=request.param)
    out = folder / "entity.onnx"
    assert traveller(["export", str(pt), "--onnx", str(out), "--scenario", "squad"]) == 0
    return pt, out, net, request.param


def decisions(scenario: str, policies: dict, n: int, seed: int = 0,
              layout: str | None = "6v6"):
    """Random legal battles of ``scenario`` laid out by ``layout`` with the views; at each of
    the first ``n`` decisions every policy's action, and the observations and relative
    masks."""
    env = raw_env(scenario, backend="python", layout=layout, **VIEWS)
    acts = {k: [] for k in policies}
    obs_rows, masks = [], []
    for agent, o, m in random_decisions(env, n, seed):
        for k, p in policies.items():
            action = p.act(o, m, agent, env)
            assert m[action], f"{k} chose an illegal action"
            acts[k].append(action)
        obs_rows.append(o)
        masks.append(env.relative_actions.mask(agent, m))
    return (np.array(obs_rows, np.float32), np.array(masks, np.float32),
            {k: np.array(v) for k, v in acts.items()})


def test_the_file_has_the_mlp_exports_inputs_outputs_and_metadata(exported, capsys):
    pt, out, _, attention = exported
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    n_obs, n_act = session.get_inputs()[0].shape[1], session.get_inputs()[1].shape[1]
    shapes = [(a.name, a.type, a.shape) for a in (*session.get_inputs(),
                                                   *session.get_outputs())]
    assert shapes == [("observation", "tensor(float)", ["batch", n_obs]),
                      ("action_mask", "tensor(float)", ["batch", n_act]),
                      ("masked_logits", "tensor(float)", ["batch", n_act]),
                      ("action", "tensor(int64)", ["batch"])]
    meta = read_metadata(out)
    assert meta["layout"] == LAYOUTS["6v6"].to_dict() and meta["scenario"] == "squad"
    assert meta["move_view"] and meta["attack_view"] and not meta["aim_view"]
    assert (meta["arch"], meta["embed"], meta["attention"]) == ("entity", "8", str(attention))
    assert meta["hidden"] == [16] and meta["source_format"] == "traveller-ppo"
    mlp_keys = {"format", "format_version", "scenario", "obs_dim", "n_actions", "action_labels",
                "action_targets", "observation_labels", "focus", "assist", "masked_logit",
                "source_format", "source", "hidden", "activation", "training", "move_view",
                "attack_view", "layout"}
    props = {p.key for p in onnx.load(str(out)).metadata_props}
    assert props == mlp_keys | {"arch", "embed", "attention"}
    assert OnnxPolicy(out, "squad").layout == LAYOUTS["6v6"]  # the loader's graph checks pass
    # the same weights give the same bytes
    again = out.with_name("again.onnx")
    assert traveller(["export", str(pt), "--onnx", str(again), "--scenario", "squad"]) == 0
    assert again.read_bytes() == out.read_bytes()
    assert "entity actor (traced; embed 8" in capsys.readouterr().out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_onnx_and_pytorch_pick_the_same_action(exported, scenario):
    pt, out, net, _ = exported
    onnx_policy = make_policy(str(out), scenario=scenario)
    assert isinstance(onnx_policy, OnnxPolicy)
    obs, masks, acts = decisions(scenario, {"onnx": onnx_policy,
                                            "pt": load_ppo_policy(pt, scenario)}, DECISIONS)
    np.testing.assert_array_equal(acts["onnx"], acts["pt"])
    assert len(np.unique(acts["onnx"])) > 3  # varied decisions, not one action
    # the graph on the whole batch (and on one row) against the PyTorch network
    with torch.no_grad():
        want = net.logits(torch.as_tensor(obs), torch.as_tensor(masks != 0)).numpy()
    logits, action = onnx_policy.run(obs, masks)
    np.testing.assert_array_equal(action, want.argmax(axis=1))
    legal = masks != 0
    np.testing.assert_allclose(logits[legal], want[legal], rtol=1e-4, atol=1e-4)
    assert (logits[~legal] == -1e9).all()
    one, first = onnx_policy.run(obs[:1], masks[:1])
    np.testing.assert_allclose(one, logits[:1], rtol=1e-5, atol=1e-5)
    assert first[0] == action[0]


def test_an_ensemble_of_an_entity_and_an_mlp_checkpoint_exports(tmp_path):
    write_entity_pt(tmp_path / "entity.pt", seed=1, layout=None)
    env = raw_env("squad", backend="python", **VIEWS)
    torch.manual_seed(2)
    mlp = ActorCritic(len(env.observation_labels), env.relative_actions.n, [16])
    with torch.no_grad():
        mlp.actor[-1].weight.mul_(100.0)
    (tmp_path / "mlp.pt").write_bytes(checkpoint_bytes(mlp, "squad", env.relative_actions.labels,
                                                       **VIEWS))
    members = [read_checkpoint(tmp_path / f"{m}.pt") for m in ("entity", "mlp")]
    pt = tmp_path / "ens.pt"
    pt.write_bytes(ensemble_bytes(members, ["entity.pt", "mlp.pt"]))
    out = tmp_path / "ens.onnx"
    meta = export_onnx(pt, out)
    assert (meta["arch"], json.loads(meta["members"])) == ("ensemble", ["entity", "mlp"])
    assert meta["hidden"] == "[]"
    _, _, acts = decisions("squad", {"onnx": OnnxPolicy(out, "squad"),
                                     "pt": load_ppo_policy(pt, "squad")}, 40, layout=None)
    np.testing.assert_array_equal(acts["onnx"], acts["pt"])


def test_observation_labels_that_differ_from_the_scenarios_are_refused(tmp_path, capsys):
    env = raw_env("squad", backend="python", layout="6v6", **VIEWS)
    labels = list(env.observation_labels)
    labels[0], labels[1] = labels[1], labels[0]  # two global columns swapped
    pt = tmp_path / "swapped.pt"
    write_entity_pt(pt, observation_labels=labels)
    out = tmp_path / "swapped.onnx"
    assert traveller(["export", str(pt), "--onnx", str(out), "--scenario", "squad"]) == 2
    err = capsys.readouterr().err
    assert "its observation labels differ from scenario 'squad''s at entry 0" in err
    assert not out.exists()
