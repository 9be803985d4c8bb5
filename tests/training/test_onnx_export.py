"""``traveller export`` and ``traveller_agents.onnx_policy.OnnxPolicy`` (export and playing without
torch).

Checkpoints with random weights stand in for trained ones (the export copies weights; what
they learned does not matter): a ``train_ppo`` ``.pt`` (64x64, as ``train_ppo``'s default)
and untrained ``MaskablePPO`` ``.zip`` files saved as the training scripts save them. The
exported policy must pick the same action as the PyTorch policy on 1,000 recorded decisions
of random legal squad battles, refuse a file that does not fit the scenario or is not an
export, play without importing torch, and work wherever a policy name is accepted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
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
from traveller_agents.registry import is_trained, make_policy, parse_policy_list  # noqa: E402
from traveller_cli import main as traveller  # noqa: E402
from traveller_env.env import TravellerEnv  # noqa: E402
from traveller_rl.evaluation import random_decisions  # noqa: E402
from traveller_rl.onnx_export import export_onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = 1000


def write_pt(path: Path, scenario: str = "squad", seed: int = 0) -> Path:
    """A ``train_ppo`` checkpoint of a 64x64 actor with random (initial) weights."""
    env = TravellerEnv(scenario)
    torch.manual_seed(seed)
    net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [64, 64])
    with torch.no_grad():  # spread the logits (the initial head's gain 0.01 makes them tiny)
        net.actor[-1].weight.mul_(100.0)
    path.write_bytes(checkpoint_bytes(net, scenario, env.relative_actions.labels,
                                      decisions=0, update=0, seed=seed))
    return path


def write_zip(path: Path, scenario: str, relative: bool = True, assist: str = "",
              focus: tuple[str, ...] = ()) -> Path:
    """An untrained ``MaskablePPO`` (``net_arch`` 64,64) saved as the training scripts save
    one (``traveller_rl.common.atomic_save_model``, with its ``.meta.json``)."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from traveller_env.integrations.sb3 import TravellerSB3Env
    from traveller_rl.common import atomic_save_model

    kwargs = {}
    if focus:
        kwargs = {"assist": make_policy(assist, seed=0), "focus": focus}
    env = TravellerSB3Env(scenario, learner="blue", relative_actions=relative, **kwargs)
    model = MaskablePPO("MlpPolicy", env, seed=0, policy_kwargs={"net_arch": [64, 64]},
                        device="cpu")
    with torch.no_grad():
        model.policy.action_net.weight.mul_(100.0)
    extra = {"action_targets": "relative" if relative else "absolute"}
    if focus:
        extra.update(assist=assist, focus=list(focus))
    atomic_save_model(model, path, scenario=scenario, **extra)
    return path


def play_decisions(scenario: str, policies: dict, n: int = DECISIONS, seed: int = 0):
    """Random legal battles of ``scenario``; at each of the first ``n`` decisions, every
    policy's action for the deciding seat. Returns ``(observations, relative masks, actions
    by policy name)``."""
    env = TravellerEnv(scenario)
    obs_rows, mask_rows, acts = [], [], {k: [] for k in policies}

    def reset_policies(battle_seed: int) -> None:
        for p in policies.values():
            p.reset(battle_seed)

    for agent, o, m in random_decisions(env, n, seed, on_battle=reset_policies):
        for k, p in policies.items():
            acts[k].append(p.act(o, m, agent, env))
        obs_rows.append(o.copy())
        mask_rows.append(env.relative_actions.mask(agent, m))
    return np.array(obs_rows), np.array(mask_rows), {k: np.array(v) for k, v in acts.items()}


@pytest.fixture(scope="module")
def squad(tmp_path_factory):
    """The squad ``.pt`` and its export."""
    folder = tmp_path_factory.mktemp("onnx")
    pt = write_pt(folder / "squad.pt")
    out = folder / "squad.onnx"
    export_onnx(pt, out)
    return pt, out


# ---------------------------------------------------------------------------- same actions
def test_onnx_and_pytorch_pick_the_same_action_on_1000_decisions(squad):
    pt, out = squad
    onnx_policy, ppo_policy = OnnxPolicy(out, "squad"), load_ppo_policy(pt, "squad")
    obs, masks, acts = play_decisions("squad", {"onnx": onnx_policy, "pt": ppo_policy})
    assert len(obs) == DECISIONS
    np.testing.assert_array_equal(acts["onnx"], acts["pt"])
    assert len(np.unique(acts["onnx"])) > 10  # the decisions are varied, not one action

    # the graph on the whole batch against the PyTorch network itself
    net = ActorCritic(obs.shape[1], masks.shape[1], [64, 64])
    data = torch.load(pt, weights_only=True)
    net.actor.load_state_dict(data["actor"])
    with torch.no_grad():
        want = net.logits(torch.as_tensor(obs), torch.as_tensor(masks.astype(bool))).numpy()
    logits, action = onnx_policy.run(obs, masks)
    np.testing.assert_array_equal(action, want.argmax(axis=1))
    legal = masks.astype(bool)
    np.testing.assert_allclose(logits[legal], want[legal], rtol=1e-5, atol=1e-5)
    assert (logits[~legal] == -1e9).all()


def test_sampling_is_seeded_and_legal(squad):
    _, out = squad
    a = OnnxPolicy(out, "squad", deterministic=False, seed=3)
    b = OnnxPolicy(out, "squad", deterministic=False, seed=3)
    _, _, acts = play_decisions("squad", {"a": a, "b": b, "det": OnnxPolicy(out, "squad")},
                                n=200)
    np.testing.assert_array_equal(acts["a"], acts["b"])
    assert (acts["a"] != acts["det"]).sum() > 20  # it samples, not only the argmax
    env = TravellerEnv("squad")
    env.reset(seed=0)
    agent = env.agent_selection
    o = env.observe(agent)
    assert o["action_mask"][a.act(o["observation"], o["action_mask"], agent, env)] == 1


@pytest.mark.parametrize(("scenario", "relative"), [("squad", True), ("duel", False)])
def test_maskable_ppo_zip_exports_and_plays_as_its_loader(tmp_path, scenario, relative):
    from traveller_agents.trained import TrainedPolicy, load_policy

    path = write_zip(tmp_path / "model.zip", scenario, relative=relative)
    out = tmp_path / "model.onnx"
    meta = export_onnx(path, out)
    assert meta["action_targets"] == ("relative" if relative else "absolute")
    trained = load_policy(path, scenario)
    assert isinstance(trained, TrainedPolicy)
    n = 300  # the 1,000-decision checks: the .pt above, the trained models below
    _, _, acts = play_decisions(scenario, {"onnx": OnnxPolicy(out, scenario), "zip": trained},
                                n=n)
    np.testing.assert_array_equal(acts["onnx"], acts["zip"])


def test_assisted_zip_exports_its_focus_and_assistant(tmp_path):
    from traveller_agents.trained import AssistedPolicy, load_policy

    scenario = "squad_commander"
    path = write_zip(tmp_path / "lead.zip", scenario, assist="never_lead",
                     focus=("leadership", "direct"))
    out = tmp_path / "lead.onnx"
    meta = export_onnx(path, out)
    assert json.loads(meta["focus"]) == ["leadership", "direct"]
    assert meta["assist"] == "never_lead"
    assert json.loads(meta["action_labels"])[-1] == "delegate"
    zipped = load_policy(path, scenario, seed=0)
    assert isinstance(zipped, AssistedPolicy)
    _, _, acts = play_decisions(scenario, {"onnx": OnnxPolicy(out, scenario, seed=0),
                                           "zip": zipped}, n=400)
    np.testing.assert_array_equal(acts["onnx"], acts["zip"])


@pytest.mark.parametrize(("model", "scenario"), [("aiming", "duel"),
                                                  ("leadership", "squad_commander")])
def test_the_committed_trained_models_export_exactly(tmp_path, model, scenario):
    """The docs' trained MaskablePPO models (``results/``): slot-relative 64x64, and the
    128x128 leadership model with ``assist``/``focus`` (trained on several scenarios)."""
    pytest.importorskip("sb3_contrib")
    from traveller_agents.trained import load_policy

    path = ROOT / "results" / model / "model.zip"
    out = tmp_path / f"{model}.onnx"
    assert traveller(["export", str(path), "--onnx", str(out)]) == 0
    _, _, acts = play_decisions(scenario, {"onnx": OnnxPolicy(out, scenario, seed=0),
                                           "zip": load_policy(path, scenario, seed=0)})
    np.testing.assert_array_equal(acts["onnx"], acts["zip"])
    assert len(np.unique(acts["zip"])) > 20


# ---------------------------------------------------------------------------- refusals
def test_a_policy_for_another_scenario_is_refused_at_construction(squad):
    _, out = squad
    with pytest.raises(ValueError) as err:
        OnnxPolicy(out, "duel")
    msg = str(err.value)
    assert str(out) in msg
    assert "observation [batch, 227]" in msg and "action_mask [batch, 72]" in msg
    assert "observation [batch, 59]" in msg and "action_mask [batch, 48]" in msg
    with pytest.raises(ValueError, match=r"squad\.onnx"):
        make_policy(str(out), scenario="duel")


def _graph(obs_dim: int, n_actions: int, inputs: tuple[str, ...] = ("observation",
                                                                      "action_mask"),
           metadata: dict | None = None) -> bytes:
    """A hand-made ONNX graph with the export's names (or not) and metadata."""
    from onnx import TensorProto, helper

    ins = [helper.make_tensor_value_info("observation", TensorProto.FLOAT, ["b", obs_dim]),
           helper.make_tensor_value_info("action_mask", TensorProto.FLOAT, ["b", n_actions])]
    ins = [i for i in ins if i.name in inputs]
    w = helper.make_tensor("W", TensorProto.FLOAT, [n_actions, obs_dim],
                           [0.0] * (n_actions * obs_dim))
    nodes = [helper.make_node("Gemm", ["observation", "W"], ["masked_logits"], transB=1),
             helper.make_node("ArgMax", ["masked_logits"], ["action"], axis=1, keepdims=0)]
    graph = helper.make_graph(
        nodes, "g", ins,
        [helper.make_tensor_value_info("masked_logits", TensorProto.FLOAT, ["b", n_actions]),
         helper.make_tensor_value_info("action", TensorProto.INT64, ["b"])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    if metadata:
        helper.set_model_props(model, metadata)
    return model.SerializeToString()


def test_malformed_files_get_a_clear_error_naming_the_file(squad, tmp_path):
    _, out = squad
    meta = dict(read_metadata(out, OnnxPolicy(out, "squad").session))
    raw = {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}

    cases = {
        "text.onnx": b"this is not an ONNX model\n",
        "empty.onnx": b"",
        "truncated.onnx": out.read_bytes()[: len(out.read_bytes()) // 2],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=r"cannot be read as an ONNX model") as err:
            OnnxPolicy(tmp_path / name, "squad")
        assert str(tmp_path / name) in str(err.value)

    (tmp_path / "foreign.onnx").write_bytes(_graph(227, 72))  # ONNX, but not an export
    with pytest.raises(ValueError, match="not a policy exported by `traveller export`"):
        OnnxPolicy(tmp_path / "foreign.onnx", "squad")

    (tmp_path / "nomask.onnx").write_bytes(_graph(227, 72, inputs=("observation",),
                                                  metadata=raw))
    with pytest.raises(ValueError) as err:
        OnnxPolicy(tmp_path / "nomask.onnx", "squad")
    msg = str(err.value)
    assert "nomask.onnx" in msg and "'action_mask' missing" in msg
    assert "expected inputs observation float32 [batch, 227] and action_mask float32 " \
           "[batch, 72]" in msg
    assert "found inputs observation tensor(float) [b, 227]" in msg

    (tmp_path / "narrow.onnx").write_bytes(_graph(100, 72, metadata=raw))  # metadata lies
    with pytest.raises(ValueError) as err:
        OnnxPolicy(tmp_path / "narrow.onnx", "squad")
    assert "[batch, 227]" in str(err.value) and "[b, 100]" in str(err.value)

    (tmp_path / "blind.onnx").write_bytes(_graph(227, 72, metadata=raw))  # ignores its mask
    blind = OnnxPolicy(tmp_path / "blind.onnx", "squad")  # it fits: refused when it errs
    mask = np.ones(72, np.int8)
    assert blind.choose(np.zeros(227, np.float32), mask) == 0
    mask[0] = 0
    with pytest.raises(ValueError, match="the graph chose action 0, which the mask does not"):
        blind.choose(np.zeros(227, np.float32), mask)

    with pytest.raises(FileNotFoundError, match=r"missing\.onnx"):
        OnnxPolicy(tmp_path / "missing.onnx", "squad")


def test_wrong_inputs_at_act_time_are_refused(squad):
    _, out = squad
    policy = OnnxPolicy(out, "squad")
    with pytest.raises(ValueError, match=r"observation of shape \(5,\)"):
        policy.choose(np.zeros(5, np.float32), np.ones(72, np.int8))
    with pytest.raises(ValueError, match="allows no action"):
        policy.choose(np.zeros(227, np.float32), np.zeros(72, np.int8))


# ---------------------------------------------------------------------------- no torch
def test_playing_an_onnx_policy_imports_no_torch(squad):
    _, out = squad
    code = textwrap.dedent(f"""
        import sys

        class NoTorch:  # any attempt to import torch (or SB3) is recorded and fails
            tried = []
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "stable_baselines3", "sb3_contrib"):
                    self.tried.append(name)
                    raise ImportError("torch is not available here")
                return None

        sys.meta_path.insert(0, NoTorch())
        from traveller_rl.evaluation import evaluate_matchup
        from traveller_agents.registry import make_policy
        from traveller_env.policy import resolve_policy

        policy = make_policy({str(out)!r}, scenario="squad")
        assert type(policy).__name__ == "OnnxPolicy"
        assert type(resolve_policy({str(out)!r}, scenario="squad")).__name__ == "OnnxPolicy"
        row = evaluate_matchup(policy, make_policy("random"), "squad", battles=2, seed=0)
        assert row["wins"] + row["draws"] + row["losses"] == 2
        # untrained, it never beats rush, which wins from each side
        rushed = evaluate_matchup(policy, make_policy("rush"), "squad", battles=2, seed=0)
        assert [(c["wins"], c["losses"]) for c in rushed["by_side"].values()] == [(0, 1)] * 2
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "torch")
        print("TRIED:" + ",".join(NoTorch.tried) + " LOADED:" + ",".join(loaded))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "TRIED: LOADED:"


# ---------------------------------------------------------------------------- command line
def test_export_command_round_trip(squad, tmp_path, capsys):
    pt, first = squad
    out = tmp_path / "again" / "squad.onnx"
    assert traveller(["export", str(pt), "--onnx", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}" in said and "scenario 'squad'" in said and "72 slot-relative" in said
    assert out.read_bytes() == first.read_bytes()  # same weights, same bytes
    meta = read_metadata(out)
    assert meta["format"] == "traveller-onnx-policy" and meta["format_version"] == 1
    assert (meta["scenario"], meta["obs_dim"], meta["n_actions"]) == ("squad", 227, 72)
    assert meta["action_labels"] == list(TravellerEnv("squad").relative_actions.labels)
    assert meta["source_format"] == "traveller-ppo" and meta["hidden"] == [64, 64]
    model = onnx.load(str(out))
    assert [i.name for i in model.graph.input] == ["observation", "action_mask"]
    assert [o.name for o in model.graph.output] == ["masked_logits", "action"]
    assert OnnxPolicy(out, "squad").run(np.zeros((4, 227)), np.ones((4, 72)))[1].shape == (4,)


def test_export_command_refusals(squad, tmp_path, capsys):
    pt, _ = squad
    out = tmp_path / "x.onnx"
    assert traveller(["export", str(pt), "--onnx", str(out), "--scenario", "duel"]) == 2
    assert "do not fit scenario 'duel'" in capsys.readouterr().err
    assert traveller(["export", str(tmp_path / "none.pt"), "--onnx", str(out)]) == 2
    assert "none.pt: no such trained-policy file" in capsys.readouterr().err
    (tmp_path / "policy.txt").write_text("hi")
    assert traveller(["export", str(tmp_path / "policy.txt"), "--onnx", str(out)]) == 2
    assert "expected a train_ppo .pt checkpoint or a MaskablePPO .zip" in capsys.readouterr().err
    (tmp_path / "bad.zip").write_bytes(b"PK\x03\x04 truncated")
    assert traveller(["export", str(tmp_path / "bad.zip"), "--onnx", str(out)]) == 2
    assert "bad.zip: cannot be read as a MaskablePPO checkpoint" in capsys.readouterr().err
    assert not out.exists()


def test_zip_without_meta_needs_the_scenario(tmp_path, capsys):
    path = write_zip(tmp_path / "m.zip", "duel", relative=False)
    path.with_suffix(".meta.json").unlink()
    out = tmp_path / "m.onnx"
    assert traveller(["export", str(path), "--onnx", str(out)]) == 2
    assert "records no scenario" in capsys.readouterr().err
    assert traveller(["export", str(path), "--onnx", str(out), "--scenario", "duel"]) == 0
    assert read_metadata(out)["action_targets"] == "absolute"


def test_eval_and_tournament_accept_an_onnx_policy(squad, tmp_path, capsys):
    _, out = squad
    assert is_trained(str(out)) and parse_policy_list(f"{out},random") == [str(out), "random"]
    assert traveller(["eval", str(out), "--scenario", "squad", "--vs", "random",
                      "--battles", "2"]) == 0
    assert "random" in capsys.readouterr().out
    assert traveller(["eval", str(out), "--scenario", "duel", "--vs", "random",
                      "--battles", "2"]) == 2
    assert "action_mask [batch, 48]" in capsys.readouterr().err

    from traveller_rl.tournament import main as tournament

    folder = tmp_path / "t"
    assert tournament(["--policies", f"{out},random", "--scenarios", "squad", "--battles", "1",
                       "--workers", "2", "--out", str(folder), "--no-progress",
                       "--bootstrap", "10"]) == 0
    results = json.loads((folder / "results.json").read_text())
    assert results["run"]["games"] == 2 and results["run"]["policies"] == [str(out), "random"]
    games = (folder / "games.csv").read_text().splitlines()
    assert len(games) == 3 and str(out) in games[1]
    capsys.readouterr()
    assert tournament(["--policies", f"{out},random", "--scenarios", "duel", "--battles", "1",
                       "--workers", "1", "--out", str(folder), "--no-progress"]) == 2
    assert "action_mask [batch, 48]" in capsys.readouterr().err


def test_benchmark_runs_and_writes_only_when_asked(tmp_path, capsys, monkeypatch):
    from experiments import bench_onnx

    assert bench_onnx.build_parser().parse_args([]).json is None
    monkeypatch.chdir(tmp_path)
    result = bench_onnx.main(["--decisions", "40", "--repeats", "1", "--batch", "16",
                              "--no-sb3", "--json", "out/bench.json"])
    assert result["onnx_agrees_with_pytorch"] == "40/40"
    assert "OnnxPolicy.act (onnxruntime)" in capsys.readouterr().out
    written = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert written["figures"].keys() == result["figures"].keys()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "PPOPolicy.act (.pt: NumPy float64)" in result["figures"]  # an MLP actor


def test_benchmark_names_how_an_entity_checkpoint_plays(tmp_path):
    from conftest import member_checkpoint

    from experiments import bench_onnx

    pt = tmp_path / "entity.pt"
    member_checkpoint(pt, "entity", seed=1)
    result = bench_onnx.main(["--policy", str(pt), "--decisions", "20", "--repeats", "1",
                              "--batch", "8", "--no-sb3"])
    assert "PPOPolicy.act (.pt: PyTorch)" in result["figures"]
    assert not any("NumPy" in label for label in result["figures"])


def test_another_librarys_absolute_action_mlp_exports_and_plays_both_sides(tmp_path):
    """``export_mlp`` with ``absolute_for``: a tanh MLP over ``blue_0``'s absolute actions (as
    BenchMARL or Tianshou learn one seat) becomes a slot-relative file whose choice, as blue,
    is the network's own argmax over blue's legal actions; as red it names the same kind of
    action on its own enemy."""
    from traveller_rl.onnx_export import export_mlp
    from traveller_rl.scenario_eval import load_learned, play_scenarios

    env = TravellerEnv("duel")
    env.reset(seed=3)
    obs_dim, n_abs = len(env.observation_labels), len(env.action_labels)
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(16, obs_dim)), rng.normal(size=16)),
              (rng.normal(size=(n_abs, 16)), rng.normal(size=n_abs))]
    out = tmp_path / "blue.onnx"
    meta = export_mlp(layers, out, "duel", "test-library", absolute_for="blue_0")
    assert meta["action_targets"] == "relative" and meta["source_format"] == "test-library"
    learned = load_learned(out)
    rel = env.relative_actions
    for _ in range(20):
        agent = env.agent_selection
        o = env.observe(agent)
        if agent == "blue_0":
            q = np.tanh(o["observation"] @ layers[0][0].T + layers[0][1]) @ layers[1][0].T \
                + layers[1][1]
            want = int(np.argmax(np.where(o["action_mask"] != 0, q, -np.inf)))
            got = learned.choose(o["observation"][None], rel.mask(agent, o["action_mask"])[None]
                                 .astype(bool), "blue")[0]
            assert rel.to_absolute(agent, int(got)) == want
        env.step(int(np.flatnonzero(o["action_mask"])[0]))
        if not env.agents:
            break
    records = play_scenarios(learned, ["duel"], opponent="rush")
    assert {r["side"] for r in records} == {"blue", "red"}
    with pytest.raises(ValueError, match="absolute actions"):
        export_mlp(layers, tmp_path / "x.onnx", "squad", "test-library", absolute_for="blue_0")


def test_maskable_ppo_on_a_distribution_keeps_its_layout(tmp_path):
    """A MaskablePPO trained on ``CoreVecEnv("gen:squad")`` (the 6v6 layout) records the layout
    in its ``.meta.json``; the export keeps it, and the file plays drawn scenarios through the
    layout, batched in the benchmark's vector path and one decision at a time alike. An
    unreadable layout is refused naming the metadata file."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from traveller_env import core
    from traveller_rl.common import atomic_save_model
    from traveller_rl.scenario_eval import load_learned

    if not core.available():
        pytest.skip("the compiled core is not built (make build)")
    from traveller_env.integrations.sb3_vector import CoreVecEnv

    venv = CoreVecEnv("gen:squad", num_envs=2, opponents={"red": "rush"}, relative_actions=True)
    model = MaskablePPO("MlpPolicy", venv, seed=0, policy_kwargs={"net_arch": [16]}, device="cpu")
    path = tmp_path / "gen.zip"
    atomic_save_model(model, path, "gen:squad", action_targets="relative",
                      layout=venv.venv.layout.to_dict())
    meta = export_onnx(path, tmp_path / "gen.onnx")
    assert json.loads(meta["layout"])["name"] == "6v6"
    learned = load_learned(tmp_path / "gen.onnx")
    assert learned.layout == venv.venv.layout and learned.obs_dim == venv.venv.obs_dim
    policy = OnnxPolicy(tmp_path / "gen.onnx", "gen:squad@1000")
    env = TravellerEnv("gen:squad@1000")
    env.reset(seed=0)
    agent = env.agent_selection
    o = env.observe(agent)
    assert o["action_mask"][policy.act(o["observation"], o["action_mask"], agent, env)] == 1

    meta_file = path.with_suffix(".meta.json")
    bad = json.loads(meta_file.read_text())
    bad["layout"] = {"name": "6v6", "allies": -1}
    meta_file.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"gen\.zip: the layout of its \.meta\.json"):
        export_onnx(path, tmp_path / "bad.onnx")
