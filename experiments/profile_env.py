"""Where an AEC step's time goes: the split by component, and optionally cProfile.

Plays the same random legal loop as ``bench_env.py`` on ``env()`` and times, with
``time.perf_counter`` around each call, the observation vector (``ObservationBuilder.observe``),
the action mask (``ActionCatalogue.mask``), the engine's ``Battle.apply``, and the
environment's ``step`` and ``last`` as a whole; the rest of the step is the environment's
bookkeeping and the benchmark loop. The timers add about half a microsecond per call, so the
total is a little above ``bench_env.py``'s figure. ``--cprofile`` prints the functions with the
most own time instead (cProfile inflates pure-Python code; use it to rank, not to measure).

    python -m experiments.profile_env --scenario squad --steps 20000
    python -m experiments.profile_env --scenario duel --cprofile
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import pstats
import time
from typing import Any

import traveller_env
from experiments.bench_common import big_scenario
from experiments.bench_env import run_aec
from traveller_env.encoding import ActionCatalogue
from traveller_env.observations import ObservationBuilder
from traveller_env.rules.battle import Battle

env_module = importlib.import_module("traveller_env.env")  # the module, not env()

COMPONENTS = [
    (ObservationBuilder, "observe", "observation vector"),
    (ActionCatalogue, "mask", "action mask"),
    (Battle, "apply", "engine apply"),
    (env_module.TravellerEnv, "last", "env.last (obs + mask + lookups)"),
    (env_module.TravellerEnv, "step", "env.step (apply + bookkeeping)"),
    (env_module.TravellerEnv, "reset", "env.reset"),
]


def timed(totals: dict[str, float], label: str, fn: Any) -> Any:
    """``fn`` with its wall time added to ``totals[label]``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] = totals.get(label, 0.0) + time.perf_counter() - start

    return wrapper


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    parser = argparse.ArgumentParser(allow_abbrev=False,
                                     description="where the AEC step's time goes")
    parser.add_argument("--scenario", default="duel",
                        help="built-in scenario name or path, or 16v16 (generated)")
    parser.add_argument("--steps", type=int, default=20_000,
                        help="AEC steps to time (default: %(default)s)")
    parser.add_argument("--cprofile", action="store_true", help="print a cProfile listing")
    parser.add_argument("--top", type=int, default=25, help="functions listed by --cprofile")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Print the per-component split of an AEC step (or a cProfile listing)."""
    args = build_parser().parse_args(argv)
    scenario = big_scenario(16) if args.scenario == "16v16" else args.scenario

    env = traveller_env.env(scenario=scenario)
    run_aec(env, min(3000, args.steps))  # warm the caches
    if args.cprofile:
        profile = cProfile.Profile()
        profile.runcall(run_aec, env, args.steps)
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
        return 0

    totals: dict[str, float] = {}
    originals = [(cls, name, getattr(cls, name)) for cls, name, _ in COMPONENTS]
    try:
        for cls, name, label in COMPONENTS:
            setattr(cls, name, timed(totals, label, getattr(cls, name)))
        start = time.perf_counter()
        run_aec(env, args.steps)
        wall = time.perf_counter() - start
    finally:
        for cls, name, fn in originals:
            setattr(cls, name, fn)
    per_step = 1e6 / args.steps
    print(f"{args.scenario}: {wall * per_step:.1f} us per AEC step (timers included)")
    for _, _, label in COMPONENTS:
        print(f"  {label:<34}{totals.get(label, 0.0) * per_step:>8.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
