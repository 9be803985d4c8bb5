"""The trainer on the whole machine: battles stepped in several threads (``--env-threads``,
the core's ``VecBattles`` with its persistent ``RowWorkers``) give the very same run as one
thread, and the learner runs on ``--device cpu|cuda|auto`` with its rollout there (the CUDA
tests skip where torch sees no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import run_log_lines

from traveller_env import core, vector

needs_core = pytest.mark.skipif(not core.available(), reason="the compiled core is not built")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no GPU")



def _train(out: Path, *extra: str) -> Path:
    from traveller_rl.ppo import trainer

    assert trainer.main(["--scenario", "squad", "--opponents", "red=tactician", "--seed", "5",
                         "--total-timesteps", "1536", "--num-envs", "24", "--num-steps", "16",
                         "--threads", "1", "--eval-every", "1", "--eval-vs", "rush",
                         "--eval-battles", "4", "--eval-envs", "4",
                         "--final-eval-battles", "0", "--no-progress", "--backend", "core",
                         "--out", str(out), *extra]) == 0
    return out



@needs_core
def test_env_threads_give_the_same_run_byte_for_byte(tmp_path):
    from traveller_rl.ppo.update import update_threads

    one = _train(tmp_path / "one", "--env-threads", "1")
    two = _train(tmp_path / "two", "--env-threads", "2")
    assert (one / "ppo.pt").read_bytes() == (two / "ppo.pt").read_bytes()
    for name in ("progress.jsonl", "training.jsonl"):
        assert run_log_lines(one / name) == run_log_lines(two / name), name
    assert len(run_log_lines(one / "training.jsonl")) >= 3
    config = json.loads((two / "config.json").read_text())
    assert config["args"]["env_threads"] == 2 and config["args"]["device"] == "cpu"
    # the thread counts the run used, the update's default resolved
    assert config["threads"] == {"env": 2, "update": update_threads(0), "choose": 1}


@needs_core
@pytest.mark.parametrize("scenario,opponent", [("squad", "tactician"), ("duel", "rush")])
def test_the_core_vector_is_the_same_on_any_number_of_threads(scenario, opponent):
    """Relative actions (the mask the core publishes per seat), opponents with per-thread
    caches, and more threads than rows in a chunk's worth: every output equal, step by step,
    whatever the thread count (the worker threads persist across steps)."""
    made = [vector.make(scenario, num_envs=13, seed=4, backend="core",
                        opponents={"red": opponent}, relative_actions=True, threads=k)
            for k in (1, 2, 5, 13)]
    outs = [v.reset() for v in made]
    rng = np.random.default_rng(0)
    for _ in range(120):
        for got in outs[1:]:
            for a, b in zip(outs[0], got, strict=True):
                if isinstance(a, dict):
                    for key in a:
                        np.testing.assert_array_equal(a[key], b[key])
                else:
                    np.testing.assert_array_equal(a, b)
        actions = vector.random_legal_actions(outs[0][1], rng)
        outs = [v.step(actions) for v in made]
    assert len({v.battles_skipped for v in made}) == 1


@needs_core
def test_relative_masks_agree_between_the_backends_and_refuse_illegal_actions():
    kw = {"num_envs": 6, "seed": 2, "opponents": {"red": "rush"}, "relative_actions": True}
    core_v = vector.make("squad", backend="core", threads=2, **kw)
    py_v = vector.make("squad", backend="python", **kw)
    (_, core_mask, _), (_, py_mask, _) = core_v.reset(), py_v.reset()
    np.testing.assert_array_equal(core_mask, py_mask)
    illegal = np.argmin(core_mask, axis=1)  # a False column of each row
    core_mask[:] = True  # the published mask is the caller's copy: legality is unchanged
    with pytest.raises(ValueError, match=r"row 0: illegal action .*nothing was applied"):
        core_v.step(illegal)
    with pytest.raises(ValueError, match=r"row 0: illegal action .*nothing was applied"):
        py_v.step(illegal)


def test_env_threads_flag_resolves_and_refuses_bad_values():
    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.rows import MAX_AUTO_ENV_THREADS, available_cores, env_threads

    assert env_threads(Args(env_threads=3)) == 3
    assert env_threads(Args()) == min(available_cores(), MAX_AUTO_ENV_THREADS)
    with pytest.raises(ValueError, match="--env-threads"):
        env_threads(Args(env_threads=-1))


def test_update_threads_flag_resolves_and_refuses_bad_values():
    from traveller_rl.ppo.rows import available_cores
    from traveller_rl.ppo.update import MAX_AUTO_UPDATE_THREADS, update_threads

    assert update_threads(3) == 3
    assert update_threads(0) == min(available_cores(), MAX_AUTO_UPDATE_THREADS)
    for bad in (-1, 257, 1.5, True):
        with pytest.raises(ValueError, match="--update-threads"):
            update_threads(bad)


def test_torch_threads_are_widened_inside_the_block_only():
    from traveller_rl.ppo.update import torch_threads

    before = torch.get_num_threads()
    with torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(before + 2):
        raise RuntimeError("an update that fails")
    assert torch.get_num_threads() == before


def test_the_update_runs_on_update_threads_and_the_rollouts_on_threads(monkeypatch, tmp_path):
    """--update-threads widens torch's threads for the PPO update only: the policy's choices
    (the rollouts, beside the battle threads) stay on --threads."""
    import traveller_rl.ppo.rollout as rollout_module
    from traveller_rl.ppo import trainer

    seen: dict[str, set[int]] = {"update": set(), "choose": set()}
    real_update, real_sample = trainer.ppo_update, rollout_module.sample_masked

    def update(*a, **k):
        seen["update"].add(torch.get_num_threads())
        return real_update(*a, **k)

    def sample(*a, **k):
        seen["choose"].add(torch.get_num_threads())
        return real_sample(*a, **k)

    monkeypatch.setattr(trainer, "ppo_update", update)
    monkeypatch.setattr(rollout_module, "sample_masked", sample)
    _duel_run(tmp_path / "run", "--update-threads", "2")
    assert seen == {"update": {2}, "choose": {1}}
    assert torch.get_num_threads() == 1


def _duel_run(out: Path, *extra: str, seed: int = 3, timesteps: int = 1024,
              num_envs: int = 16, num_steps: int = 16) -> Path:
    """A tiny duel run against ``rush`` (on the core where it is built), no evaluations unless
    ``extra`` asks for them (a later flag overrides an earlier one): this file's runs."""
    from traveller_rl.ppo import trainer

    backend = "core" if core.available() else "python"
    assert trainer.main(["--scenario", "duel", "--opponents", "red=rush", "--seed", str(seed),
                         "--total-timesteps", str(timesteps), "--num-envs", str(num_envs),
                         "--num-steps", str(num_steps), "--threads", "1", "--eval-every", "0",
                         "--eval-battles", "0", "--final-eval-battles", "0",
                         "--backend", backend, "--no-progress", "--out", str(out),
                         *extra]) == 0
    return out


def test_update_threads_give_a_reproducible_run(tmp_path):
    """The same --update-threads count gives the same ppo.pt byte for byte."""
    runs = [_duel_run(tmp_path / f"run{i}", "--update-threads", "2") for i in range(2)]
    assert (runs[0] / "ppo.pt").read_bytes() == (runs[1] / "ppo.pt").read_bytes()
    config = json.loads((runs[0] / "config.json").read_text())
    assert config["args"]["update_threads"] == 2
    assert config["threads"]["update"] == 2 and config["threads"]["choose"] == 1


def test_device_flag():
    from traveller_rl.ppo.update import resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="--device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="--device cuda"):
            resolve_device("cuda")


def _learn(out: Path, device: str) -> dict:
    """A tiny duel run against ``rush`` (the budget ``test_learning`` uses, halved)."""
    _duel_run(out, "--eval-vs", "rush", "--eval-battles", "100", "--device", device, seed=1,
              timesteps=32768, num_envs=64, num_steps=32)
    return json.loads((out / "evaluation.json").read_text())


def _assert_learned(result: dict) -> None:
    before, after = result["eval_before"]["rush"], result["eval_after"]["rush"]
    assert after["win_rate"] >= before["win_rate"] + 0.2, (before, after)


def test_the_learner_learns_on_the_cpu(tmp_path):
    _assert_learned(_learn(tmp_path / "cpu", "cpu"))


@needs_cuda
def test_the_learner_learns_on_cuda_and_its_checkpoint_loads_on_the_cpu(tmp_path):
    from traveller_agents.trained import load_policy

    _assert_learned(_learn(tmp_path / "cuda", "cuda"))
    data = torch.load(tmp_path / "cuda" / "ppo.pt", map_location="cpu", weights_only=False)
    tensors = [v for v in data.values() if isinstance(v, dict)]
    assert all(t.device.type == "cpu" for d in tensors for t in d.values()
               if isinstance(t, torch.Tensor))
    load_policy(tmp_path / "cuda" / "ppo.pt", "duel")


@needs_cuda
def test_a_cuda_runs_resume_checkpoint_reads_on_the_cpu_and_resumes(tmp_path):
    """resume.ckpt of a --device cuda run holds CUDA weights; it reads back onto the CPU and
    the run resumes on the GPU to its end."""
    from traveller_rl.ppo import resume, trainer

    flags = ["--scenario", "duel", "--opponents", "red=rush", "--seed", "4",
             "--total-timesteps", "1024", "--num-envs", "16", "--num-steps", "16",
             "--eval-every", "0", "--eval-battles", "0", "--final-eval-battles", "0",
             "--device", "cuda", "--no-progress"]
    out = tmp_path / "run"
    assert trainer.main([*flags, "--out", str(out), "--checkpoint-every", "1",
                         "--stop-after-updates", "2"]) == 0
    state = resume.read_checkpoint(out)
    assert all(t.device.type == "cpu" for t in state["net"].values())
    assert trainer.main([*flags, "--resume", str(out), "--checkpoint-every", "1"]) == 0


@needs_cuda
def test_cuda_sampling_never_draws_an_illegal_action():
    from traveller_rl.ppo.rollout import sample_masked

    gen = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(512, 20, device="cuda") * 30
    mask = torch.rand(512, 20, device="cuda") < 0.3
    mask[:, 7] = True
    actions, _ = sample_masked(logits, mask, gen)
    assert mask.gather(1, actions[:, None]).all()


@needs_core
def test_bench_machine_smoke(tmp_path):
    """``experiments/bench_machine.py --small`` runs here (CPU only) and writes its JSON."""
    from experiments import bench_machine

    out = tmp_path / "machine.json"
    assert bench_machine.main(["--small", "--max-threads", "2", "--devices", "cpu",
                               "--parts", "vector,train", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["thread_counts"] == [1, 2]
    assert set(result["vector"]) == {"duel", "squad"}
    for case in result["vector"].values():
        assert case["fraction_of_linear"]["1"] == pytest.approx(1.0)
        assert all(rate > 0 for rate in case["decisions_per_s"].values())
        # the Python outside the core, and the ceiling it sets (Amdahl): 1.0 on one thread
        assert 0.0 <= case["python_share"] < 1.0
        ceiling = case["amdahl_fraction_of_linear"]
        assert ceiling["1"] == pytest.approx(1.0) and ceiling["16"] <= ceiling["2"] <= 1.0
    assert [(r["env_threads"], r["threads"], r["update_threads"], r["device"], r["overlap"])
            for r in result["train"]] == [(1, 1, 1, "cpu", False), (2, 1, 2, "cpu", False),
                                          (2, 2, 2, "cpu", False), (2, 1, 2, "cpu", True)]
    assert result["complete"] is True
    assert all(r["decisions"] >= 256 for r in result["train"])


@needs_core
def test_bench_machine_records_a_failing_run_and_goes_on(tmp_path, monkeypatch):
    """One run on borrowed hardware: a training configuration that raises is recorded with its
    error, the others still run, and the JSON on disk holds every figure taken so far."""
    from experiments import bench_machine, bench_train

    real = bench_train.train_ppo_figures

    def flaky(*args, **kwargs):
        if kwargs.get("overlap"):
            raise RuntimeError("CUDA error: out of memory")
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_train, "train_ppo_figures", flaky)
    out = tmp_path / "machine.json"
    assert bench_machine.main(["--small", "--max-threads", "1", "--devices", "cpu",
                               "--parts", "vector,train", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    failed = [r for r in result["train"] if "error" in r]
    assert [r["overlap"] for r in failed] == [True]
    assert failed[0]["error"] == "RuntimeError: CUDA error: out of memory"
    assert len(result["train"]) == 2 and result["complete"] is True
    for bad in (["--devices", "cpu,tpu"], ["--parts", "vector,gpu"]):
        with pytest.raises(SystemExit) as refused:
            bench_machine.main(["--small", *bad, "--json", str(out)])
        assert refused.value.code == 2


@needs_core
def test_bench_machine_times_torchrun_and_rllib_on_the_core(tmp_path):
    """The data-parallel trainer (plain, then ``torchrun`` with 2 processes) and RLlib on the
    core (the AEC path's one runner beside the core's 1) at tiny sizes: every figure taken."""
    pytest.importorskip("ray.rllib")
    from experiments import bench_machine

    out = tmp_path / "machine.json"
    assert bench_machine.main(["--small", "--max-threads", "2", "--devices", "cpu",
                               "--parts", "distributed,rllib", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["complete"] is True and result["train"] == [] and result["vector"] == {}
    assert [(r["processes"], r["torchrun"]) for r in result["distributed"]] == [
        (1, False), (2, True)]
    assert all(r["decisions_per_second"] > 0 for r in result["distributed"])
    assert [(r["env"], r["env_runners"]) for r in result["rllib"]] == [("aec", 1),
                                                                       ("core", 1)]
    assert all(r["sample_steps_per_s"] > 0 and r["train_steps_per_s"] > 0
               for r in result["rllib"])
    core = result["rllib"][1]
    assert core["sample_x_aec_one_runner"] == pytest.approx(
        core["sample_steps_per_s"] / result["rllib"][0]["sample_steps_per_s"])


@needs_core
def test_bench_train_takes_a_list_of_update_threads(tmp_path):
    """``experiments.bench_train --ppo-update-threads 1,2``: a row per count, in order."""
    from experiments import bench_train

    out = tmp_path / "bench.json"
    assert bench_train.main(["--skip-maskable", "--skip-free", "--ppo-scenarios", "squad",
                             "--ppo-backends", "core", "--ppo-fast-num-envs", "16",
                             "--ppo-fast-num-steps", "8", "--ppo-fast-decisions", "256",
                             "--ppo-env-threads", "2", "--ppo-update-threads", "1,2",
                             "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["train_ppo"]
    assert [(r["env_threads"], r["update_threads"]) for r in rows] == [(2, 1), (2, 2)]
    assert rows[0]["ratio_to_first"] == 1.0 and rows[1]["decisions_per_second"] > 0


# ---------------------------------------------------------------- where the rollout lives
def _rollouts_of(monkeypatch, out: Path, device: str, *extra: str) -> list:
    """The ``SeatRollout``s a tiny duel run against ``rush`` made, each with the devices its
    advantages came back on."""
    from traveller_rl.ppo import rollout as rollout_module

    made = []

    class Recorded(rollout_module.SeatRollout):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.gae_devices: set[str] = set()
            made.append(self)

        def advantages(self, gamma: float, lam: float):
            got = super().advantages(gamma, lam)
            self.gae_devices |= {t.device.type for t in got}
            return got

    monkeypatch.setattr(rollout_module, "SeatRollout", Recorded)
    _duel_run(out, "--eval-vs", "rush", "--eval-battles", "2", "--eval-envs", "2", "--device",
              device, *extra, seed=2, timesteps=256, num_envs=8)
    return made


@pytest.mark.parametrize("device", ["cpu", "auto", pytest.param("cuda", marks=needs_cuda)])
def test_the_rollout_lives_on_the_learners_device(device, monkeypatch, tmp_path):
    from traveller_rl.ppo.update import resolve_device

    expected = resolve_device(device).type
    (rollout,) = _rollouts_of(monkeypatch, tmp_path / "run", device)
    for name in rollout.DEVICE_ARRAYS:
        tensor = getattr(rollout, name)
        assert isinstance(tensor, torch.Tensor) and tensor.device.type == expected, name
    assert rollout.gae_devices == {expected}
    assert rollout.size > 0


@needs_cuda
@needs_core
def test_pool_and_overlap_runs_keep_their_rollout_on_cuda(monkeypatch, tmp_path):
    """The pool's frozen seats play on the CPU and the halves' rows are gathered into the
    pinned staging buffers: the learner's rollout is on CUDA all the same, and the checkpoint
    loads on the CPU."""
    from traveller_agents.trained import load_policy

    (rollout,) = _rollouts_of(monkeypatch, tmp_path / "run", "cuda", "--opponents", "",
                              "--pool", "--pool-scripted", "rush", "--overlap")
    assert {getattr(rollout, n).device.type for n in rollout.DEVICE_ARRAYS} == {"cuda"}
    assert rollout.gae_devices == {"cuda"}
    load_policy(tmp_path / "run" / "ppo.pt", "duel")


@needs_cuda
def test_step_upload_copies_the_rows_it_is_given_to_cuda():
    """``StepUpload`` on CUDA: every row, or some rows gathered, through its pinned buffers;
    calls in a row never see each other's data."""
    from traveller_rl.ppo.rollout import StepUpload

    rng = np.random.default_rng(0)
    full = rng.random((6, 5), dtype=np.float32)
    obs = full[:, :3]  # the learner's prefix: a strided view, as the trainer passes it
    mask = rng.random((6, 4)) < 0.5
    upload = StepUpload(6, 3, 4, "cuda")
    for rows in (None, np.array([4, 1]), None, np.array([5, 0, 2])):
        o, m = upload(obs, mask, rows)
        assert o.device.type == m.device.type == "cuda"
        want = slice(None) if rows is None else rows
        np.testing.assert_array_equal(o.cpu().numpy(), obs[want])
        np.testing.assert_array_equal(m.cpu().numpy(), mask[want])
        obs[:] += 1.0  # the next step's observations


def test_step_upload_on_the_cpu_is_the_host_arrays():
    """On the CPU every row is a view of the host arrays (no copy); some rows are gathered."""
    from traveller_rl.ppo.rollout import StepUpload

    obs = np.arange(12, dtype=np.float32).reshape(4, 3)
    mask = np.eye(4, dtype=bool)
    o, m = StepUpload(4, 3, 4, "cpu")(obs, mask)
    assert o.data_ptr() == obs.ctypes.data and m.data_ptr() == mask.ctypes.data
    o, m = StepUpload(4, 3, 4, "cpu")(obs, mask, np.array([2, 0]))
    np.testing.assert_array_equal(o.numpy(), obs[[2, 0]])
    np.testing.assert_array_equal(m.numpy(), mask[[2, 0]])
