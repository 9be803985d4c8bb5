"""ONNX export of a policy trained on a fixed layout (``traveller_env.layout``).

A ``traveller train ppo`` checkpoint with a ``layout`` key (here an untrained 64x64 actor on
``6v6``, recorded as trained on the ``gen:squad`` distribution, as the trainer records one) is
exported with ``traveller export``; the file keeps the layout in its metadata, plays every
scenario that fits (``squad``, held-out ``gen:squad`` and ``gen:skirmish`` draws) with exactly
the PyTorch checkpoint policy's actions, and refuses one that does not (``duel``) naming the
limit, at load time and in the benchmark's record.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from traveller_agents.checkpoint import checkpoint_bytes  # noqa: E402
from traveller_agents.nets import ActorCritic  # noqa: E402
from traveller_agents.onnx_policy import OnnxPolicy, read_metadata  # noqa: E402
from traveller_agents.ppo_policy import load_ppo_policy  # noqa: E402
from traveller_agents.registry import make_policy  # noqa: E402
from traveller_cli import main as traveller  # noqa: E402
from traveller_env import raw_env  # noqa: E402
from traveller_env.env import TravellerEnv  # noqa: E402
from traveller_env.layout import LAYOUTS  # noqa: E402
from traveller_rl.benchmark import build_parser, play_one, run, why_not_playable  # noqa: E402
from traveller_rl.evaluation import random_decisions  # noqa: E402

FITS = ("squad", "gen:squad@1000", "gen:skirmish@1000")
DUEL_LIMIT = r"trained on a fixed layout; scenario 'duel' does not fit layout '6v6'.*40x40 " \
             r"\(map_size\)"


def write_layout_pt(path: Path, move_view: bool = False, seed: int = 0) -> Path:
    """A checkpoint of an untrained 64x64 actor on the ``6v6`` layout, as the trainer saves
    one for ``--scenario gen:squad``."""
    env = raw_env("squad", backend="python", layout="6v6", move_view=move_view)
    torch.manual_seed(seed)
    net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [64, 64])
    with torch.no_grad():  # spread the logits (the initial head's gain 0.01 makes them tiny)
        net.actor[-1].weight.mul_(100.0)
    views = {"move_view": True} if move_view else {}
    path.write_bytes(checkpoint_bytes(net, "gen:squad", env.relative_actions.labels,
                                      decisions=0, update=0, seed=seed,
                                      layout=LAYOUTS["6v6"].to_dict(), **views))
    return path


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "move_view"])
def exported(request, tmp_path_factory):
    """A layout ``.pt`` (without and with the move view) and its export by the command."""
    folder = tmp_path_factory.mktemp("onnx_layout")
    pt = write_layout_pt(folder / "layout.pt", move_view=request.param)
    out = folder / "layout.onnx"
    assert traveller(["export", str(pt), "--onnx", str(out)]) == 0
    return pt, out


def test_the_export_keeps_the_layout(exported, capsys):
    pt, out = exported
    meta = read_metadata(out)
    props = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert json.loads(props["layout"]) == LAYOUTS["6v6"].to_dict()
    assert meta["layout"] == LAYOUTS["6v6"].to_dict()
    assert meta["action_labels"] == LAYOUTS["6v6"].action_labels()
    # a distribution is checked against its first training draw
    assert meta["scenario"] == "gen:squad@0"
    assert OnnxPolicy(out, "squad").layout == LAYOUTS["6v6"]
    again = out.with_name("again.onnx")
    assert traveller(["export", str(pt), "--onnx", str(again), "--scenario", "squad"]) == 0
    said = capsys.readouterr().out
    assert "scenario 'squad'" in said and "layout 6v6" in said
    assert read_metadata(again)["layout"] == meta["layout"]


def decisions(scenario: str, policies: dict, n: int, layout: str | None, seed: int = 0):
    """Random legal battles of ``scenario`` (its env laid out by ``layout``, or its own);
    every policy's action for the deciding seat at each of the first ``n`` decisions."""
    env = TravellerEnv(scenario, **({"layout": layout} if layout else {}))
    acts = {k: [] for k in policies}
    for agent, o, m in random_decisions(env, n, seed):
        for k, p in policies.items():
            action = p.act(o, m, agent, env)
            assert m[action], f"{k} chose an illegal action"
            acts[k].append(action)
    return {k: np.array(v) for k, v in acts.items()}


@pytest.mark.parametrize("scenario", FITS)
@pytest.mark.parametrize("layout", [None, "6v6"], ids=["own_env", "layout_env"])
def test_onnx_plays_every_fitting_scenario_as_the_checkpoint(exported, scenario, layout):
    pt, out = exported
    acts = decisions(scenario, {"onnx": OnnxPolicy(out, scenario),
                                "pt": load_ppo_policy(pt, scenario)}, n=120, layout=layout)
    np.testing.assert_array_equal(acts["onnx"], acts["pt"])
    assert len(np.unique(acts["onnx"])) > 3  # varied decisions, not one action


def test_a_scenario_beyond_the_layout_is_refused_naming_the_limit(exported, capsys):
    pt, out = exported
    with pytest.raises(ValueError, match=r"layout\.onnx: " + DUEL_LIMIT):
        OnnxPolicy(out, "duel")
    with pytest.raises(ValueError, match=DUEL_LIMIT):
        make_policy(str(out), scenario="duel")
    with pytest.raises(ValueError, match=r"layout\.pt: " + DUEL_LIMIT):  # as the checkpoint
        load_ppo_policy(pt, "duel")
    bad = out.with_name("duel.onnx")
    assert traveller(["export", str(pt), "--onnx", str(bad), "--scenario", "duel"]) == 2
    err = capsys.readouterr().err
    assert "trained on a fixed layout" in err and "(map_size)" in err and not bad.exists()


def test_the_benchmark_plays_fitting_scenarios_and_names_the_limit_otherwise(exported,
                                                                            tmp_path):
    _, out = exported
    name = str(out)
    assert all(why_not_playable(name, s) is None for s in FITS)
    reason = why_not_playable(name, "duel")
    assert reason is not None and "40x40 (map_size)" in reason
    battle = {"set": "skirmish", "opponent": "passive", "scenario": "gen:skirmish@1000",
              "index": 0, "side": 0, "seed": 3, "policy": name}
    assert play_one(battle)["result"] in ("win", "draw", "loss")
    suite = tmp_path / "layout.yaml"
    suite.write_text("version: 9\nbattles_per_cell: 2\nseed: 1\nscenario_sets:\n"
                     "  duel:\n    scenarios: [duel]\n"
                     "  gen-squad:\n    distribution: gen:squad\n    seeds: [1000, 1000]\n"
                     "opponents: [passive]\n")
    record = tmp_path / "record.json"
    assert run(build_parser().parse_args([name, "--suite", str(suite), "--out", str(record),
                                          "--no-progress"])) == 0
    battles = json.loads(record.read_text())["policies"][name]["battles"]
    by_set = {b["set"]: b for b in battles}
    assert by_set["duel"]["result"] == "not_playable"
    assert "(map_size)" in by_set["duel"]["reason"]
    assert by_set["gen-squad"]["result"] in ("win", "draw", "loss")


def test_malformed_layout_metadata_is_named(exported, tmp_path):
    _, out = exported
    model = onnx.load(str(out))
    for prop in model.metadata_props:
        if prop.key == "layout":
            prop.value = json.dumps({**LAYOUTS["6v6"].to_dict(), "map_size": 0})
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(model.SerializeToString())
    with pytest.raises(ValueError,
                       match=r"bad\.onnx: metadata layout cannot be read: .*map_size must be"):
        OnnxPolicy(bad, "squad")


def test_an_ensemble_of_layout_checkpoints_keeps_the_layout(tmp_path):
    """An ensemble (and a by-side checkpoint) of checkpoints trained on a layout is on that
    layout: it plays any fitting scenario, exports to ONNX with the layout in its metadata
    and the same actions, refuses a scenario beyond it, and a member without the layout is
    refused naming it."""
    from traveller_agents.checkpoint import by_side_bytes, ensemble_bytes, read_checkpoint

    members = [write_layout_pt(tmp_path / f"m{seed}.pt", seed=seed) for seed in (0, 1)]
    datas = [read_checkpoint(p) for p in members]
    ens = tmp_path / "ensemble.pt"
    ens.write_bytes(ensemble_bytes(datas, [str(p) for p in members]))
    assert read_checkpoint(ens)["layout"] == LAYOUTS["6v6"].to_dict()
    out = tmp_path / "ensemble.onnx"
    assert traveller(["export", str(ens), "--onnx", str(out)]) == 0
    assert read_metadata(out)["layout"] == LAYOUTS["6v6"].to_dict()
    acts = decisions("gen:skirmish@1000", {"onnx": OnnxPolicy(out, "gen:skirmish@1000"),
                                           "pt": load_ppo_policy(ens, "gen:skirmish@1000")},
                     n=80, layout=None)
    np.testing.assert_array_equal(acts["onnx"], acts["pt"])
    with pytest.raises(ValueError, match=DUEL_LIMIT):
        load_ppo_policy(ens, "duel")
    sides = tmp_path / "by_side.pt"
    sides.write_bytes(by_side_bytes(dict(zip(("blue", "red"), datas, strict=True)),
                                    {"blue": str(members[0]), "red": str(members[1])}))
    assert load_ppo_policy(sides, "squad").layout == LAYOUTS["6v6"]

    plain = dict(datas[1])
    del plain["layout"]
    with pytest.raises(ValueError, match=r"m1\.pt: trained on no layout, .*m0\.pt on layout "
                                         r"6v6"):
        ensemble_bytes([datas[0], plain], [str(members[0]), str(members[1])])
