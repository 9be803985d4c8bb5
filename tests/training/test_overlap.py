"""``traveller train ppo --overlap``: the rows in two halves that take turns (one half's
battles stepped in a background thread while the policy chooses the other half's actions).
A run is reproducible for a seed and independent of the battle threads; it trains as the
plain run does (the same rollouts, updates and bookkeeping), its first half playing the plain
run's battles; bad combinations are refused naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_log_lines

from traveller_cli import main as cli_main
from traveller_env import core

needs_core = pytest.mark.skipif(not core.available(), reason="the compiled core is not built")

#: 24 battles of squad against the in-core tactician, 16 steps a rollout, 4 updates.
RUN = ["--scenario", "squad", "--opponents", "red=tactician", "--seed", "5",
       "--total-timesteps", "1536", "--num-envs", "24", "--num-steps", "16", "--threads", "1",
       "--eval-every", "2", "--eval-vs", "rush", "--eval-battles", "4", "--eval-envs", "4",
       "--final-eval-battles", "0", "--no-progress", "--backend", "core"]


def _train(out: Path, *flags: str) -> Path:
    from traveller_rl.ppo.trainer import build_parser, run

    assert run(build_parser().parse_args([*flags, "--out", str(out)])) == 0
    return out



@needs_core
def test_an_overlapped_run_is_reproducible_on_any_number_of_battle_threads(tmp_path):
    one = _train(tmp_path / "one", *RUN, "--overlap", "--env-threads", "1")
    two = _train(tmp_path / "two", *RUN, "--overlap", "--env-threads", "2")
    assert (one / "ppo.pt").read_bytes() == (two / "ppo.pt").read_bytes()
    for name in ("progress.jsonl", "training.jsonl"):
        assert run_log_lines(one / name) == run_log_lines(two / name), name
    assert json.loads((one / "config.json").read_text())["args"]["overlap"] is True


@needs_core
def test_an_overlapped_run_trains_as_the_plain_run_does(tmp_path):
    """The same updates of the same size, decisions and log fields; other numbers (half the
    battles are others, the decisions come half by half)."""
    plain = run_log_lines(_train(tmp_path / "plain", *RUN) / "training.jsonl")
    halves = run_log_lines(_train(tmp_path / "halves", *RUN, "--overlap") / "training.jsonl")
    assert [r["update"] for r in halves] == [r["update"] for r in plain] == [1, 2, 3, 4]
    assert [r["decisions"] for r in halves] == [r["decisions"] for r in plain]
    assert [set(r) for r in halves] == [set(r) for r in plain]
    # battles ended and were counted in the training win rate, as in the plain run
    assert any(r["train_win_rate"] is not None for r in halves)
    for run in ("plain", "halves"):
        result = json.loads((tmp_path / run / "evaluation.json").read_text())
        assert result["updates"] == 4 and result["decisions"] == 1536, run
    assert ((tmp_path / "plain" / "ppo.pt").read_bytes()
            != (tmp_path / "halves" / "ppo.pt").read_bytes())


@needs_core
def test_the_first_half_plays_the_plain_runs_battles():
    """Half 0 of each group is made with the group's vector seed (its rows play the very
    battles those rows play without --overlap); half 1 has its own seed."""
    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.overlap import HalvedBatch, HalvedVector, halved_vector
    from traveller_rl.ppo.rows import RowBatch, build_groups

    common = dict(scenario="squad", opponents="red=tactician", num_envs=9, seed=3,
                  backend="core", eval_battles=0, progress=False)
    plain = build_groups(Args(**common))
    halved = build_groups(Args(**common, overlap=True), halved_vector)
    assert isinstance(halved[0].venv, HalvedVector)
    assert [p.num_envs for p in halved[0].venv.parts] == [5, 4]
    a, b = RowBatch(plain, plain[0].venv.obs_dim), HalvedBatch(halved, plain[0].venv.obs_dim)
    a.reset()
    b.reset()
    np.testing.assert_array_equal(b.rows[0], np.arange(5))
    np.testing.assert_array_equal(b.rows[1], np.arange(5, 9))
    seeds_plain = plain[0].venv.info["battle_seed"]
    seeds_half = [p.info["battle_seed"] for p in halved[0].venv.parts]
    np.testing.assert_array_equal(seeds_half[0], seeds_plain[:5])
    assert not set(seeds_half[1].tolist()) & set(seeds_plain.tolist())
    np.testing.assert_array_equal(b.obs[:5], a.obs[:5])
    # a step of half 0 changes only its rows
    before = b.obs[5:].copy()
    rng = np.random.default_rng(0)
    from traveller_env.vector import random_legal_actions

    b.step_half(0, random_legal_actions(b.mask, rng))
    np.testing.assert_array_equal(b.obs[5:], before)


@needs_core
def test_a_pool_run_overlaps_too(tmp_path):
    """The pool's frozen seats and the scripted rows (groups of one row stay whole), with
    style shaping read before each half's step: reproducible."""
    flags = [*[f for f in RUN if f not in ("--opponents", "red=tactician")], "--pool",
             "--pool-every", "1", "--pool-scripted", "rush", "--pool-scripted-share", "0.1",
             "--style", "shots=0.01", "--overlap"]
    one = _train(tmp_path / "one", *flags)
    two = _train(tmp_path / "two", *flags)
    assert (one / "ppo.pt").read_bytes() == (two / "ppo.pt").read_bytes()
    assert run_log_lines(one / "training.jsonl") == run_log_lines(two / "training.jsonl")


@needs_core
def test_an_overlapped_run_resumes_exactly(tmp_path):
    whole = _train(tmp_path / "whole", *RUN, "--overlap")
    out = _train(tmp_path / "stopped", *RUN, "--overlap", "--checkpoint-every", "1",
                 "--stop-after-updates", "2")
    _train(out, *RUN, "--overlap", "--resume", str(out))
    assert (out / "ppo.pt").read_bytes() == (whole / "ppo.pt").read_bytes()


@pytest.mark.parametrize(("flags", "message"), [
    (["--backend", "python"], "--overlap needs --backend core (got 'python')"),
    (["--threads", "2"], "--overlap needs --threads 1 (got 2)"),
    (["--num-envs", "1"], "--overlap splits the rows in two halves: --num-envs must be at "
                          "least 2, got 1"),
])
def test_bad_overlap_flags_give_clear_errors(flags, message, capsys, tmp_path):
    if "--backend" not in flags and not core.available():
        pytest.skip("the compiled core is not built")
    status = cli_main(["train", "ppo", "--overlap", "--backend", "core",
                       "--out", str(tmp_path / "never"), *flags])
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "never").exists()


@needs_core
def test_every_group_of_one_row_leaves_no_second_half(capsys, tmp_path):
    status = cli_main(["train", "ppo", "--overlap", "--backend", "core", "--num-envs", "2",
                       "--scenario", "range_short,range_long", "--opponents", "red=rush",
                       "--out", str(tmp_path / "never")])
    assert status == 2
    assert "--overlap: every group has a single row" in capsys.readouterr().err


def test_credit_and_rewarded_on_some_rows_match_the_whole_batch():
    """``SeatRollout.credit`` and ``BattleStats.rewarded`` on the rows of each half, one after
    the other, give what one call on every row gives."""
    from traveller_rl.ppo.progress import BattleStats
    from traveller_rl.ppo.rollout import SeatRollout

    n, seats = 6, 3
    out = []
    for split in (None, [np.array([0, 2, 4]), np.array([1, 3, 5])]):
        roll = SeatRollout(n, seats, 2, 4, steps=4)
        stats = BattleStats(n, 1, np.array([0, 0, 1]), 2)
        gen = np.random.default_rng(7)
        for _ in range(3):
            rows = np.arange(n)
            roll.add(rows, gen.integers(seats, size=n), gen.random((n, 2), dtype=np.float32),
                     np.ones((n, 4), bool), np.zeros(n, np.int64), np.zeros(n, np.float32),
                     np.zeros(n, np.float32))
            rewards = gen.random((n, seats), dtype=np.float32)
            ended = gen.random(n) < 0.3
            side = np.array([0, 1, -1, 0, 1, 0])
            if split is None:
                roll.credit(rewards, ended)
                stats.rewarded(rewards, side)
            else:
                for part in split:
                    roll.credit(rewards, ended, part)
                    stats.rewarded(rewards, side, part)
        out.append((roll.reward[:roll.size].copy(), roll.done[:roll.size].copy(),
                    roll.pending.copy(), stats.ret.copy()))
    for a, b in zip(*out, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@needs_core
def test_the_benchmark_compares_plain_and_overlapped_rows(tmp_path, capsys):
    """``experiments.bench_train --ppo-overlap off,on --ppo-repeats 2``: a row per mode, each
    with its rounds, the other processes' cores and its ratio to the first row."""
    from experiments import bench_train

    out = tmp_path / "bench.json"
    assert bench_train.main(["--skip-maskable", "--skip-free", "--ppo-scenarios", "squad",
                             "--ppo-backends", "core", "--ppo-opponents", "red=tactician",
                             "--ppo-fast-num-envs", "16", "--ppo-fast-num-steps", "8",
                             "--ppo-fast-decisions", "256", "--ppo-env-threads", "1",
                             "--ppo-overlap", "off,on", "--ppo-repeats", "2",
                             "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["train_ppo"]
    assert [r["overlap"] for r in rows] == [False, True]
    assert rows[0]["ratio_to_first"] == 1.0 and rows[1]["ratio_to_first"] > 0
    assert all(len(r["rounds"]) == 2 and len(r["rounds_others_cpu"]) == 2 for r in rows)
    assert "overlap" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--ppo-overlap"):
        bench_train.main(["--skip-maskable", "--ppo-scenarios", "", "--ppo-overlap", "maybe"])
