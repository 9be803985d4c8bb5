"""Smoke tests of the benchmarks in ``experiments/`` at tiny budgets: each runs as its docs say
(``python -m experiments.X``), finishes, and writes the JSON its figures come from. (The
benchmarks with tests of their own: bench_env, bench_train, bench_onnx, bench_pool,
bench_replay, profile_env and soak, in the test files of what they measure.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", f"experiments.{module}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def test_bench_core(tmp_path):
    out = tmp_path / "core.json"
    _run("bench_core", "--battles", "2", "--scenarios", "duel", "--observe-calls", "200",
         "--json", str(out))
    figures = json.loads(out.read_text())
    duel = figures["duel"]
    assert duel["battles"] == 2 and duel["decisions"] > 0
    assert duel["core_decisions_per_s"] > 0 and duel["python_decisions_per_s"] > 0
    assert duel["speedup"] == pytest.approx(
        duel["core_decisions_per_s"] / duel["python_decisions_per_s"], rel=0.05)
    for name, row in figures["observe"].items():
        assert row["core_ns_per_observe"] > 0 and row["python_ns_per_observe"] > 0, name
        assert row["observation_size"] > 0 and row["seats"] >= 2, name


def test_bench_core_policies(tmp_path):
    out = tmp_path / "policies.json"
    _run("bench_core_policies", "--battles", "2", "--python-battles", "1", "--repeats", "1",
         "--scenarios", "duel", "--json", str(out))
    assert json.loads(out.read_text())


def test_bench_sb3_measures_the_bridge_and_the_core(tmp_path):
    pytest.importorskip("sb3_contrib")
    out = tmp_path / "sb3.json"
    _run("bench_sb3", "--timesteps", "256", "--n-envs", "2", "--env-steps", "50",
         "--json", str(out))
    figures = json.loads(out.read_text())
    rates = [figures[k] for k in ("bridge_env_only_per_s", "bridge_maskable_ppo_per_s",
                                  "core_env_only_per_s", "core_maskable_ppo_per_s")]
    assert all(r > 0 for r in rates)
    assert figures["maskable_ppo_speedup"] == pytest.approx(rates[3] / rates[1])


def test_bench_rng(tmp_path):
    out = tmp_path / "rng.json"
    _run("bench_rng", "--calls", "200", "--repeats", "1", "--battles", "1", "--json", str(out))
    figures = json.loads(out.read_text())
    assert (figures["calls"], figures["repeats"], figures["battles"]) == (200, 1, 1)
    ns = figures["ns_per_d6"]
    assert ns and all(v > 0 for v in ns.values())
    reference = ns["random.Random.randint(1, 6)"]
    assert figures["ratio_to_randint"] == pytest.approx({k: v / reference for k, v in ns.items()})
    assert set(figures["squad_decisions_per_s"]) == {"mt", "pcg"}
    assert all(v > 0 for v in figures["squad_decisions_per_s"].values())


def test_bench_vector(tmp_path):
    out = tmp_path / "vector.json"
    _run("bench_vector", "--decisions", "500", "--repeats", "1", "--json", str(out))
    vector = json.loads(out.read_text())["vector"]
    cases = vector["cases"]
    for scenario in ("duel", "squad"):
        for n in (1, 64, 1024):
            row = cases[f"core {scenario} N={n}"]
            assert row["decisions_per_s"] > 0 and row["ratio_to_raw_env"] > 0
            assert row["decisions_per_repeat"] >= min(n, 500)
    assert all(v > 0 for v in vector["memory_kib_per_battle"].values())


def test_bench_vector_set_against_the_fixed_squad(tmp_path):
    out = tmp_path / "vector_set.json"
    _run("bench_vector", "--set", "--set-envs", "4", "--decisions", "40", "--repeats", "1",
         "--set-warmup", "3", "--json", str(out))
    section = json.loads(out.read_text())["vector"]["set_vs_fixed"]
    cases = section["cases"]
    assert cases["fixed squad"]["ratio_to_fixed_squad"] == 1.0
    assert any(name.startswith("set gen:squad@0-999") for name in cases)
    assert section["warmup_steps"] == 3


def test_bench_trees_compares_a_checkout_with_itself(tmp_path):
    out = tmp_path / "trees.json"
    _run("bench_trees", "--before", str(ROOT), "--after", str(ROOT), "--scenarios", "duel",
         "--rounds", "1", "--steps", "200", "--json", str(out))
    assert "duel" in json.loads(out.read_text())


def test_bench_rllib_measures_both_paths(tmp_path):
    """Both RLlib paths with the local env runner, one round each (about 15 s, most of it
    Ray's start): sampling and training rates, and the core's ratio to the AEC path."""
    pytest.importorskip("ray.rllib")
    out = tmp_path / "rllib.json"
    _run("bench_rllib", "--runners", "0", "--rounds", "1", "--sample-steps", "256",
         "--train-batch-size", "256", "--reference-seconds", "0.2", "--json", str(out))
    figures = json.loads(out.read_text())
    rows = {row["env"]: row for row in figures["rows"]}
    assert set(rows) == {"aec", "core"} and figures["reference_steps_per_s"] > 0
    for row in rows.values():
        assert row["sample_steps_per_s"] > 0 and row["train_steps_per_s"] > 0
    core = rows["core"]
    assert core["sample_x_aec"] == pytest.approx(
        core["sample_steps_per_s"] / rows["aec"]["sample_steps_per_s"])


def test_generalisation_writes_every_battle_and_the_cells(tmp_path):
    out = tmp_path / "gap.json"
    done = _run("generalisation", "results/league/understudy.onnx", "--battles", "4",
                "--out", str(out))
    data = json.loads(out.read_text())
    row = data["policies"]["understudy"]
    assert row["squad"]["battles"] == 4 and len(row["squad"]["records"]) == 4
    # a 4 v 4 policy without a layout cannot play 1-6 a side draws: recorded, not lost
    assert row["gen:skirmish (test seeds)"]["not_playable"] == 4
    assert "| `understudy` |" in done.stdout


def test_generalisation_select_takes_every_kth_checkpoint_and_the_latest(tmp_path):
    from experiments.generalisation import candidates

    for u in (10, 20, 30, 40, 50, 60, 70, 80, 85):
        (tmp_path / f"ppo_u{u:06d}.pt").write_bytes(b"")
    names = [p.name for p in candidates(tmp_path, 3, 20)]
    assert names == ["ppo_u000060.pt", "ppo_u000080.pt", "ppo_u000085.pt"]


@pytest.mark.parametrize("split, first", [("validation", 5000), ("training", 0)])
def test_generalisation_select_plays_the_split_it_names(tmp_path, monkeypatch, split, first):
    """``--split training`` ranks checkpoints on the draws they trained on, the default on the
    validation seeds: the memorisation check of docs/generalisation.md."""
    import experiments.generalisation as gen

    (tmp_path / "ppo_u000010.pt").write_bytes(b"")
    played: list[str] = []
    monkeypatch.setattr(gen, "load_learned", lambda path: path)
    monkeypatch.setattr(gen, "play_scenarios", lambda learned, scenarios, *a, **k:
                        played.extend(scenarios) or [])
    out = tmp_path / "ranked.json"
    assert gen.main(["--select", str(tmp_path), "--split", split, "--battles", "6",
                     "--out", str(out)]) == 0
    assert played == [f"gen:squad@{first + i}" for i in range(3)]
    assert set(json.loads(out.read_text())) == {f"{split}_seeds", "ranked"}


def test_generalisation_select_refuses_more_battles_than_the_split_holds(tmp_path):
    done = subprocess.run([sys.executable, "-m", "experiments.generalisation", "--select",
                           str(tmp_path), "--split", "training", "--battles", "2002"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--battles 2002: the training seeds 0-999 hold 2000 battles" in done.stderr


def test_every_experiment_has_a_smoke_test():
    """Each script in experiments/ is run by some test (the rule for experiments/): a module
    with a ``main`` is invoked by a test, as ``_run("<name>", ...)`` here, as ``python -m
    experiments.<name>`` in a subprocess, or imported and its ``main``/``run`` called (a
    mention in a string or a comment does not count)."""
    import ast

    invoked: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}  # local name -> experiments module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "experiments":
                aliases.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "experiments."):
                module = node.module.split(".")[1]
                aliases.update({a.asname or a.name: module for a in node.names})
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name.split(".")[1] for a in node.names
                                if a.name.startswith("experiments.") and a.asname})
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "_run" and node.args and isinstance(
                    node.args[0], ast.Constant):
                invoked.add(str(node.args[0].value))
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                    func.value.id in aliases):
                invoked.add(aliases[func.value.id])
            elif isinstance(func, ast.Name) and func.id in aliases:
                invoked.add(aliases[func.id])
            for arg in node.args:  # ["python", "-m", "experiments.X", ...] or f"experiments.{x}"
                if isinstance(arg, (ast.List, ast.Tuple)):
                    invoked.update(str(e.value).split(".", 1)[1] for e in arg.elts
                                   if isinstance(e, ast.Constant) and isinstance(e.value, str)
                                   and e.value.startswith("experiments."))
    scripts = [p.stem for p in (ROOT / "experiments").glob("*.py")
               if "def main(" in p.read_text(encoding="utf-8")]
    assert len(scripts) >= 15
    untested = sorted(name for name in scripts if name not in invoked)
    assert not untested, f"experiments without a smoke test: {untested}"


def test_bench_env_compares_the_aec_env_with_tictactoe(tmp_path):
    out = tmp_path / "env.json"
    _run("bench_env", "--steps", "200", "--repeats", "1", "--only", "aec", "--json", str(out))
    figures = json.loads(out.read_text())
    results = figures["results"]
    assert {"tictactoe_v3 env()", "traveller env() duel core"} <= set(results)
    assert all(row["steps_per_s"] > 0 and row["cpu_steps_per_s"] > 0 for row in results.values())
    reference = results["tictactoe_v3 env()"]["steps_per_s"]
    assert figures["ratios"]["duel env() core / tictactoe env()"] == pytest.approx(
        results["traveller env() duel core"]["steps_per_s"] / reference)


def test_profile_env_splits_a_step_by_component():
    out = _run("profile_env", "--scenario", "duel", "--steps", "300").stdout
    assert "us per AEC step" in out
    for part in ("env.last", "env.step", "env.reset"):
        assert part in out, out


def test_bench_replay_times_the_page_in_chromium(tmp_path):
    """Needs Debian's chromium and chromium-driver, as the browser tests (``make browser``)."""
    out = tmp_path / "replay.json"
    _run("bench_replay", "--seeds", "1-2", "--speeds", "256", "--jumps", "5",
         "--out", str(tmp_path / "page"), "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures, "bench_replay wrote no figures"
    numbers = [v for v in _leaves(figures) if isinstance(v, (int, float))
               and not isinstance(v, bool)]
    assert numbers and all(v >= 0 for v in numbers)


def _leaves(value):
    """Every non-container value of a JSON document."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def test_bench_contention_runs_the_trainer_busy_and_quiet(tmp_path):
    out = tmp_path / "contention.json"
    _run("bench_contention", "--seconds", "1", "--repeats", "1", "--hog", "1",
         "--configs", "default,update_threads_1", "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["hog_processes"] == 1
    for load in ("busy", "quiet"):
        medians = figures["loads"][load]["median_decisions_per_second"]
        assert set(medians) == {"default", "update_threads_1"}
        assert all(v > 0 for v in medians.values())
        ratios = figures["loads"][load]["ratio_to_update_threads_1"]
        assert ratios["update_threads_1"] == 1.0
        assert ratios["default"] == pytest.approx(
            medians["default"] / medians["update_threads_1"], abs=0.001)


def test_bench_distributed_times_the_plain_trainer(tmp_path):
    out = tmp_path / "distributed.json"
    _run("bench_distributed", "--procs", "0", "--decisions", "8192", "--num-envs", "16",
         "--json", str(out))
    figures = json.loads(out.read_text())
    (run,) = figures["runs"]
    assert (run["processes"], run["torchrun"], run["decisions"]) == (1, False, 8192)
    assert run["decisions_per_second"] > 0 and run["speed_vs_first"] == 1.0


def test_baselines_trains_scores_resumes_and_tabulates(tmp_path, capsys):
    """experiments/baselines.py: a row trains (a tiny budget), is scored through `traveller
    benchmark`, is skipped when rerun, and the table gives the mean over seeds with the
    t-interval; a scripted row is scored once."""
    import json

    from experiments.baselines import main, over_seeds

    res, runs = tmp_path / "results", tmp_path / "runs"
    common = ["--results", str(res), "--runs", str(runs)]
    assert main(["run", "duel-rush", "ppo-mlp", "random", "--seeds", "0", "--budget", "512",
                 *common]) == 0
    first = json.loads((res / "duel-rush" / "ppo-mlp" / "seed0.json").read_text())
    assert first["budget"] == 512 and first["train_command"].startswith("traveller train ppo")
    assert first["benchmark_command"] == ("traveller benchmark "
                                          f"{runs}/duel-rush/ppo-mlp/seed0/ppo.pt --suite "
                                          "duel-rush --no-progress")
    assert 0 <= first["ci95"][0] <= first["score"] <= first["ci95"][1] <= 1
    assert main(["run", "duel-rush", "random", "--seeds", "0,1", *common]) == 0
    assert not (res / "duel-rush" / "random" / "seed1.json").exists()  # scripted: one run
    capsys.readouterr()
    assert main(["run", "duel-rush", "ppo-mlp", "--seeds", "0", *common]) == 0
    assert "done before" in capsys.readouterr().out
    assert main(["table", "--results", str(res)]) == 0
    text = capsys.readouterr().out
    assert "| ppo-mlp | 1 |" in text and "| random | 1 |" in text
    assert "| benchmarl-mappo | - | not run: its environment plays one AEC battle" in text
    assert main(["run", "duel-rush", "nobody", *common]) == 2
    mean, lo, hi = over_seeds([0.5, 0.6, 0.7])
    assert mean == pytest.approx(0.6) and hi - mean == pytest.approx(4.303 * 0.1 / 3 ** 0.5)
    assert mean - lo == pytest.approx(hi - mean)
