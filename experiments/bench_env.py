"""Environment speed, side by side with PettingZoo references.

Plays uniformly random legal actions (the same sampler everywhere: ``np.flatnonzero(mask)``
then a seeded choice, ``legal[rng.integers(len(legal))]``: the draws of ``rng.choice(legal)``
without its 4 us of overhead, which would otherwise weigh on every environment's figure)
for a fixed number of AEC steps in each environment, in one process, and prints the median
steps per second over several repeats, by wall-clock and by CPU time (``time.process_time``).
The repeats are interleaved (repeat 1 of every environment, then repeat 2, ...) so that a
change of load on a shared machine falls on every environment alike:

* PettingZoo's ``tictactoe_v3.env()`` and ``connect_four_v3.env()`` (references users know);
* our ``env()`` and ``raw_env()`` on the Python engine (``backend="python"``) on ``duel``,
  ``squad`` and a generated 16-vs-16 scenario, and ``env(backend="core")`` (the compiled core,
  the default) on the same;
* a do-nothing AEC environment (fixed observation, two agents alternating) with and without
  PettingZoo's ``OrderEnforcingWrapper``, and with the order enforcement our ``env()`` uses
  (the same guarantees, without ``__getattr__`` on the hot path): the ceiling of any AEC
  environment in CPython, with each wrapping.

It also reports the engine alone (legal actions + apply, no PettingZoo) in actions per second
and the memory of one environment instance, and the batched API (``experiments.bench_vector``:
``traveller_env.vector`` on both backends, on duel, squad and 16v16, N in {1, 64, 1024}, in
decisions per second inside ``step``, the core also with 2 threads; under the JSON's ``vector``
key; ``--vector-decisions 0`` skips it). No timing is asserted anywhere.

    python -m experiments.bench_env --steps 20000 --repeats 5 --json runs/bench_env.json
    python -m experiments.bench_env --only aec   # tictactoe and env() on the core only
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

import traveller_env
from experiments.bench_common import big_scenario
from traveller_env.encoding import ActionCatalogue
from traveller_env.env import _OrderEnforcing  # env()'s wrapper, for the like-for-like ceiling
from traveller_env.scenario import build_battle, load_scenario


class DoNothingEnv(AECEnv):
    """Two agents alternate forever; the observation is fixed. The AEC ceiling."""

    metadata = {"name": "do_nothing_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self._obs = {"observation": np.zeros(8, dtype=np.float32),
                     "action_mask": np.ones(4, dtype=np.int8)}
        self._obs_space = spaces.Dict({
            "observation": spaces.Box(-1, 1, (8,), np.float32),
            "action_mask": spaces.Box(0, 1, (4,), np.int8)})
        self._act_space = spaces.Discrete(4)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = {"a": 0.0, "b": 0.0}
        self._cumulative_rewards = {"a": 0.0, "b": 0.0}
        self.terminations = {"a": False, "b": False}
        self.truncations = {"a": False, "b": False}
        self.infos = {"a": {}, "b": {}}
        self.agent_selection = "a"

    def observe(self, agent: str) -> dict:
        return self._obs

    def step(self, action: int) -> None:
        self.agent_selection = "b" if self.agent_selection == "a" else "a"


def run_aec(env: Any, steps: int, seed: int = 0) -> float:
    """Steps per second of random legal play for ``steps`` AEC steps (resets included)."""
    return run_aec_timed(env, steps, seed)[0]


def run_aec_timed(env: Any, steps: int, seed: int = 0) -> tuple[float, float]:
    """``run_aec``'s loop, timed twice: steps per second of wall-clock time and of this
    process's CPU time (``time.process_time``: the time other processes hold the CPU is not
    counted, so it moves less with the machine's load)."""
    rng = np.random.default_rng(seed)
    episode = 0
    env.reset(seed=seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(steps):
        if not env.agents:
            episode += 1
            env.reset(seed=seed + episode)
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.integers(len(legal))]))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return steps / wall, steps / max(cpu, 1e-9)


def run_engine(scenario: Any, actions: int, seed: int = 0) -> float:
    """Engine alone: legal-action mask + apply, in actions per second."""
    rng = np.random.default_rng(seed)
    scenario = load_scenario(scenario)  # parsed and validated once, as the environment does
    battle = build_battle(scenario, seed=seed)
    cat = ActionCatalogue(battle)
    episode = 0
    start = time.perf_counter()
    for _ in range(actions):
        if battle.done:
            episode += 1
            battle = build_battle(scenario, seed=seed + episode)
        legal = np.flatnonzero(cat.mask(battle))
        battle.apply(cat.actions[int(legal[rng.integers(len(legal))])])
    return actions / (time.perf_counter() - start)


def instance_memory_kib(factory: Any) -> float:
    """Memory allocated by creating and resetting one environment instance."""
    gc.collect()
    tracemalloc.start()
    env = factory()
    env.reset(seed=0)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del env
    return current / 1024


def _core_ratios(results: dict[str, dict], with_python: bool) -> dict[str, float]:
    """env() on the core against tictactoe_v3 env() (the AEC speed targets), by wall-clock
    and by CPU time (medians of the interleaved repeats), and against env() on the Python
    engine when it ran."""
    ratios: dict[str, float] = {}
    ttt = results["tictactoe_v3 env()"]
    for name in ("duel", "squad", "16v16"):
        core = results[f"traveller env() {name} core"]
        ratios[f"{name} env() core / tictactoe env()"] = (
            core["steps_per_s"] / ttt["steps_per_s"])
        ratios[f"{name} env() core / tictactoe env() (CPU time)"] = (
            core["cpu_steps_per_s"] / ttt["cpu_steps_per_s"])
        if with_python:
            ratios[f"{name} env() core / {name} env() python"] = (
                core["steps_per_s"] / results[f"traveller env() {name}"]["steps_per_s"])
    return ratios


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False,
                                     description="AEC environment speed benchmark")
    parser.add_argument("--steps", type=int, default=20_000, help="AEC steps per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (median is reported)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--vector-decisions", type=int, default=20_000,
                        help="decisions per repeat of each vector case (0: skip the vector API)")
    parser.add_argument("--vector-repeats", type=int, default=3,
                        help="repeats of each vector case (median is reported)")
    parser.add_argument("--only", choices=("all", "aec"), default="all",
                        help="aec: only tictactoe_v3 env() and env() on the core (duel, squad, "
                             "16v16), for a quick check of the AEC speed targets (no engine, "
                             "memory or vector cases)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every benchmark and print the table (and JSON with ``--json``)."""
    args = build_parser().parse_args(argv)

    from pettingzoo.classic import connect_four_v3, tictactoe_v3

    big = big_scenario(16)
    cases: dict[str, Any] = {
        "tictactoe_v3 env()": tictactoe_v3.env,
        "connect_four_v3 env()": connect_four_v3.env,
        "do-nothing + OrderEnforcingWrapper": lambda: wrappers.OrderEnforcingWrapper(
            DoNothingEnv()),
        "do-nothing + our order enforcement": lambda: _OrderEnforcing(DoNothingEnv()),
        "do-nothing raw": DoNothingEnv,
    }
    only_aec = args.only == "aec"
    if only_aec:
        if not traveller_env.core_available():
            raise SystemExit("--only aec times env() on the core, which is not built here")
        cases = {"tictactoe_v3 env()": tictactoe_v3.env}
    for name, sc in (("duel", "duel"), ("squad", "squad"), ("16v16", big)):
        if not only_aec:
            cases[f"traveller env() {name}"] = lambda sc=sc: traveller_env.env(
                scenario=sc, backend="python")
            cases[f"traveller raw_env() {name}"] = lambda sc=sc: traveller_env.raw_env(
                scenario=sc, backend="python")
        if traveller_env.core_available():
            cases[f"traveller env() {name} core"] = lambda sc=sc: traveller_env.env(
                scenario=sc, backend="core")
    # The repeats are interleaved (repeat r of every case, then repeat r + 1), so that a change
    # of the machine's load during the run falls on every case alike, not on a few of them.
    envs = {name: factory() for name, factory in cases.items()}
    for env in envs.values():
        run_aec(env, min(2000, args.steps))  # warm-up (caches, imports)
    timed: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
    for r in range(args.repeats):
        for name, env in envs.items():
            timed[name].append(run_aec_timed(env, args.steps, seed=r))
    results: dict[str, dict] = {}
    for name, runs in timed.items():
        rates, cpu_rates = [w for w, _ in runs], [c for _, c in runs]
        results[name] = {"steps_per_s": statistics.median(rates), "repeats": rates,
                         "cpu_steps_per_s": statistics.median(cpu_rates),
                         "cpu_repeats": cpu_rates}
        print(f"{name:<38}{statistics.median(rates):>12,.0f} steps/s "
              f"({statistics.median(cpu_rates):,.0f} per CPU second)", flush=True)
    if only_aec:
        ratios = _core_ratios(results, with_python=False)
        print()
        for k, v in ratios.items():
            print(f"{k:<50}{v:>8.2f}x")
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"only": "aec", "steps": args.steps,
                                             "repeats": args.repeats, "results": results,
                                             "ratios": ratios}, indent=2) + "\n")
            print(f"wrote {args.json}")
        return 0
    for name, sc in (("duel", "duel"), ("squad", "squad"), ("16v16", big)):
        rates = [run_engine(sc, args.steps, seed=r) for r in range(args.repeats)]
        results[f"engine alone {name}"] = {"actions_per_s": statistics.median(rates),
                                           "repeats": rates}
        print(f"{'engine alone ' + name:<38}{statistics.median(rates):>12,.0f} actions/s")
    memory = {name: instance_memory_kib(lambda sc=sc: traveller_env.env(scenario=sc,
                                                                     backend="python"))
              for name, sc in (("duel", "duel"), ("squad", "squad"), ("16v16", big))}
    for name, kib in memory.items():
        print(f"{'memory per env() ' + name:<38}{kib:>12,.0f} KiB")

    def rate(key: str) -> float:
        return results[key]["steps_per_s"]

    ratios = {
        "duel env() / tictactoe env()": rate("traveller env() duel") / rate("tictactoe_v3 env()"),
        "duel env() / do-nothing+OrderEnforcing": rate("traveller env() duel")
        / rate("do-nothing + OrderEnforcingWrapper"),
        "duel env() / do-nothing+our order enforcement": rate("traveller env() duel")
        / rate("do-nothing + our order enforcement"),
        "squad env() / tictactoe env()": rate("traveller env() squad")
        / rate("tictactoe_v3 env()"),
        "16v16 env() / duel env()": rate("traveller env() 16v16") / rate("traveller env() duel"),
    }
    if traveller_env.core_available():
        ratios.update(_core_ratios(results, with_python=True))
    vector_section = None
    if args.vector_decisions > 0:
        from experiments.bench_vector import run_all

        # With its own raw_env() reference, interleaved, in learner decisions per second.
        backends = ("core", "python") if traveller_env.core_available() else ("python",)
        vector_section = run_all(args.vector_decisions, args.vector_repeats, backends,
                                 reference=True, threads=2)
        cases_v = vector_section["cases"]
        for b in backends:
            for name in ("duel", "squad", "16v16"):
                ratios[f"vector {b} {name} N=1024 / raw_env() (same battles)"] = (
                    cases_v[f"{b} {name} N=1024"]["ratio_to_raw_env"])
        if "core" in backends:
            ratios["vector core 16v16 / duel N=1024"] = (
                cases_v["core 16v16 N=1024"]["decisions_per_s"]
                / cases_v["core duel N=1024"]["decisions_per_s"])
    print()
    for k, v in ratios.items():
        print(f"{k:<50}{v:>8.2f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"machine": {"python": platform.python_version(),
                               "processor": platform.processor() or platform.machine()},
                   "steps": args.steps, "repeats": args.repeats, "results": results,
                   "memory_kib": memory, "ratios": ratios}
        if vector_section is not None:
            payload["vector"] = vector_section
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
