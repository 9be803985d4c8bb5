"""Soak test: many random-legal steps on every built-in scenario, invariants on.

Plays battles round-robin over the built-in scenarios through
``traveller_env.raw_env(scenario, check_invariants=True)``, so that after every step the
battle's state and new events are checked (``traveller_env.invariants``), and each agent's
action is drawn uniformly from its mask (dead steps take ``None``). Battle *i* uses seed
``--seed + i``. Any exception is a failure: it is printed with the scenario, the seed and the
step, and the soak goes on with the next battle. The exit status is 1 when anything failed.

    python -m experiments.soak --steps 1000000 --json runs/soak.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

import traveller_env
from traveller_env.scenario import builtin_scenarios
from traveller_rl.common import write_json


def play_battle(env: Any, seed: int, budget: int, counter: list[int]) -> dict:
    """Play one battle (at most ``budget`` steps) with uniformly random legal actions,
    counting steps in ``counter[0]`` (kept when an exception propagates to the caller).
    Returns a summary of the battle."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    while env.agents and counter[0] < budget:
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
        else:
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        counter[0] += 1
    b = env.battle
    return {"done": b.done, "winner": b.winner, "truncated": b.truncated, "rounds": b.round}


def soak(total_steps: int, seed: int = 0, scenarios: list[str] | None = None,
         progress_every: float = 60.0) -> dict:
    """Run the soak; returns the report (see ``main``)."""
    names = scenarios or builtin_scenarios()
    envs = {name: traveller_env.raw_env(name, check_invariants=True) for name in names}
    per = {name: {"battles": 0, "steps": 0, "wins": {}, "draws": 0, "failures": 0}
           for name in names}
    failures: list[dict] = []
    steps = battles = 0
    start = last_report = time.perf_counter()
    i = 0
    while steps < total_steps:
        name = names[i % len(names)]
        battle_seed = seed + i
        i += 1
        counter = [0]
        try:
            summary = play_battle(envs[name], battle_seed, total_steps - steps, counter)
        except Exception as exc:  # every exception is a finding: record it and go on
            failure = {"scenario": name, "seed": battle_seed,
                       "error": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=6)}
            failures.append(failure)
            per[name]["failures"] += 1
            print(f"FAILURE scenario={name} seed={battle_seed}: {failure['error']}",
                  file=sys.stderr, flush=True)
            steps += max(1, counter[0])
            per[name]["steps"] += counter[0]
            envs[name] = traveller_env.raw_env(name, check_invariants=True)
            continue
        steps += counter[0]
        per[name]["steps"] += counter[0]
        if summary["done"]:
            battles += 1
            per[name]["battles"] += 1
            if summary["winner"] is None:
                per[name]["draws"] += 1
            else:
                wins = per[name]["wins"]
                wins[summary["winner"]] = wins.get(summary["winner"], 0) + 1
        now = time.perf_counter()
        if now - last_report >= progress_every:
            last_report = now
            print(f"{steps:,} steps, {battles:,} battles, {len(failures)} failures, "
                  f"{steps / (now - start):,.0f} steps/s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    return {"steps": steps, "battles": battles, "failures": len(failures),
            "seconds": round(seconds, 1), "steps_per_s": round(steps / seconds, 1),
            "seed": seed, "scenarios": names, "per_scenario": per,
            "failure_details": failures,
            "python": platform.python_version(), "machine": platform.processor() or
            platform.machine()}


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000,
                        help="AEC steps in all (dead steps included; default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="battle i uses seed + i")
    parser.add_argument("--scenarios", default="",
                        help="comma-separated scenario names (default: every built-in one)")
    parser.add_argument("--json", default="", help="write the report to this file")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--steps``, ``--seed``, ``--scenarios``, ``--json``."""
    args = build_parser().parse_args(argv)
    names = [s for s in args.scenarios.split(",") if s] or None
    report = soak(args.steps, args.seed, names)
    report["command"] = "python -m experiments.soak " + " ".join(
        sys.argv[1:] if argv is None else argv)
    print(f"steps {report['steps']:,}  battles {report['battles']:,}  "
          f"failures {report['failures']}  time {report['seconds']:,.1f} s  "
          f"{report['steps_per_s']:,.0f} steps/s")
    if args.json:
        write_json(Path(args.json), report, with_versions=True)
    else:
        print(json.dumps({k: v for k, v in report.items() if k != "failure_details"},
                         indent=2))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
