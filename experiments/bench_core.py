"""Battles per second: the compiled core (one battle at a time, through CoreBattle) against the
Python engine, same scenarios, same seeds, same random legal actions.

Both engines play identical battles (``tests/core/test_core_engine.py`` proves it), so the ratio is
like for like. Time counted: inside the engine's step and mask calls only (the action sampler,
the same NumPy choice over the mask for both, is reported beside it). The core runs without its
event log (``record_events=False``), the Python engine keeps its log (it cannot switch it off).
Not the batched API (that is ``traveller_env.vector``): per-call Python overhead
is included here.

    python -m experiments.bench_core --battles 200

It also times one observation vector (``_core.Battle.observe``, timed inside C++ by
``bench_observe`` over the states of a played battle, every seat) against the Python
``ObservationBuilder.observe`` on the same states, on duel, squad and the 16 vs 16 of
``bench_common.big_scenario`` (``--observe-only`` for that table alone).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["build_parser", "main", "run"]


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="bench_core", description=__doc__.split("\n\n")[0])
    p.add_argument("--battles", type=int, default=200, help="battles per scenario (default 200)")
    p.add_argument("--scenarios", nargs="+", default=["duel", "squad", "squad_commander"])
    p.add_argument("--json", type=Path, default=Path("runs/bench_core.json"))
    p.add_argument("--observe-calls", type=int, default=1_000_000,
                   help="core observe calls per seat and state: this / (64 x seats) "
                        "(default 1,000,000)")
    p.add_argument("--observe-only", action="store_true", help="only the observation table")
    return p


def _observe_cases() -> dict[str, Any]:
    from experiments.bench_common import big_scenario

    return {"duel": "duel", "squad": "squad", "16v16": big_scenario(16)}


def _observe_ns(scenario: Any, calls: int, seed: int = 0) -> dict[str, Any]:
    """ns per observation vector, core (timed in C++) and Python, over the states every 8th
    decision of one battle (random legal actions), every seat observed at each."""
    from traveller_env.core.engine import CoreBattle
    from traveller_env.encoding import ActionCatalogue
    from traveller_env.observations import ObservationBuilder
    from traveller_env.rules.dice import Dice
    from traveller_env.scenario import build_battle, load_scenario

    sc = load_scenario(scenario)
    py = build_battle(sc, dice=Dice(seed, generator="pcg"))
    cb = CoreBattle(sc, seed, record_events=False)
    builder, cat = ObservationBuilder(py), ActionCatalogue(py)
    rng = np.random.default_rng(seed)
    n_seats = len(cb.ids)
    states = decisions = 0
    core_s = py_s = 0.0
    core_calls = py_calls = 0
    per_state = 0
    while not py.done:
        if decisions % 8 == 0:
            states += 1
            per_state = max(1, calls // (64 * n_seats))
            for seat, agent in enumerate(cb.ids):
                core_s += cb._b.bench_observe(seat, per_state)
                core_calls += per_state
                t0 = time.perf_counter()
                for _ in range(20):
                    builder.observe(py, agent)
                py_s += time.perf_counter() - t0
                py_calls += 20
        i = int(rng.choice(np.flatnonzero(cat.mask(py))))
        py.apply(cat.actions[i])
        cb.step(i)
        decisions += 1
    return {"seats": n_seats, "observation_size": cb.observation_size, "states": states,
            "core_calls": core_calls, "core_ns_per_observe": round(1e9 * core_s / core_calls, 1),
            "python_ns_per_observe": round(1e9 * py_s / py_calls),
            "speedup": round(py_s / py_calls / (core_s / core_calls), 1)}


def _play_python(name: str, seeds: range) -> tuple[float, float, int]:
    from traveller_env.encoding import ActionCatalogue
    from traveller_env.rules.dice import Dice
    from traveller_env.scenario import build_battle, load_scenario

    sc = load_scenario(name)
    engine = sample = 0.0
    decisions = 0
    for seed in seeds:
        t0 = time.perf_counter()
        b = build_battle(sc, dice=Dice(seed, generator="pcg"))
        cat = ActionCatalogue(b)
        engine += time.perf_counter() - t0
        rng = np.random.default_rng(seed)
        while not b.done:
            t0 = time.perf_counter()
            mask = cat.mask(b)
            t1 = time.perf_counter()
            i = int(rng.choice(np.flatnonzero(mask)))
            t2 = time.perf_counter()
            b.apply(cat.actions[i], validated=True)
            t3 = time.perf_counter()
            engine += (t1 - t0) + (t3 - t2)
            sample += t2 - t1
            decisions += 1
    return engine, sample, decisions


def _play_core(name: str, seeds: range) -> tuple[float, float, int]:
    from traveller_env.core.engine import CoreBattle
    from traveller_env.scenario import load_scenario

    sc = load_scenario(name)
    engine = sample = 0.0
    decisions = 0
    for seed in seeds:
        t0 = time.perf_counter()
        b = CoreBattle(sc, seed, record_events=False)
        raw, buf = b._b, np.zeros(b.n_actions, dtype=np.uint8)
        engine += time.perf_counter() - t0
        rng = np.random.default_rng(seed)
        while not raw.done:
            t0 = time.perf_counter()
            raw.mask(buf)
            t1 = time.perf_counter()
            i = int(rng.choice(np.flatnonzero(buf)))
            t2 = time.perf_counter()
            raw.step(i)
            t3 = time.perf_counter()
            engine += (t1 - t0) + (t3 - t2)
            sample += t2 - t1
            decisions += 1
    return engine, sample, decisions


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every scenario; return the table."""
    out: dict[str, Any] = {}
    for name in args.scenarios:
        seeds = range(args.battles)
        py_engine, py_sample, py_dec = _play_python(name, seeds)
        c_engine, c_sample, c_dec = _play_core(name, seeds)
        assert py_dec == c_dec, "the engines played different battles"
        out[name] = {
            "battles": args.battles, "decisions": py_dec,
            "python_decisions_per_s": round(py_dec / py_engine),
            "core_decisions_per_s": round(c_dec / c_engine),
            "python_battles_per_s": round(args.battles / py_engine, 1),
            "core_battles_per_s": round(args.battles / c_engine, 1),
            "speedup": round(py_engine / c_engine, 1),
            "sampler_us_per_decision": round(1e6 * (py_sample + c_sample) / (2 * py_dec), 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Run and print the table."""
    args = build_parser().parse_args(argv)
    table = {} if args.observe_only else run(args)
    for name, row in table.items():
        print(f"{name:16s} python {row['python_decisions_per_s']:>9,} dec/s  core "
              f"{row['core_decisions_per_s']:>10,} dec/s  x{row['speedup']}  "
              f"({row['core_battles_per_s']:,} battles/s; sampler "
              f"{row['sampler_us_per_decision']} us/decision)")
    observe = {name: _observe_ns(sc, args.observe_calls) for name, sc in _observe_cases().items()}
    for name, row in observe.items():
        print(f"observe {name:8s} ({row['observation_size']} entries) core "
              f"{row['core_ns_per_observe']} ns  python {row['python_ns_per_observe']:,} ns  "
              f"x{row['speedup']}  ({row['core_calls']:,} core calls over {row['states']} "
              "states, every seat)")
    table["observe"] = observe
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(table, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
