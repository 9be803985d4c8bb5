"""Speed of the batched API (``traveller_env.vector``) with random legal actions.

Each case steps ``vector.make(scenario, num_envs=N, backend=...)`` (the compiled core and the
Python engine; the core also with ``--threads`` threads at N = 1024) with actions from one
vectorised NumPy sampler over the mask (``vector.random_legal_actions``: the same sampler for
every row) and reports decisions per second counting only the time inside ``step`` (automatic
resets, opponents and dead steps included), with the sampler's own time per decision beside it.
Cases: ``duel``, ``squad`` and a generated 16-vs-16 (``bench_common.big_scenario``), N in
{1, 64, 1024}. Every case runs about ``--decisions`` decisions per repeat (at least
``MIN_STEPS`` steps, so N = 1024 runs more), after ``WARMUP_STEPS`` untimed steps; the median of
``--repeats`` repeats is reported, on one thread. Times are CPU time (``time.process_time``), as
in ``bench_rng``: on this shared 2-core machine other workers' load inflates wall-clock times by
several times, and by different amounts from one case to the next (the clock is read twice per
step). Memory per battle: what ``make`` + ``reset`` of 64 rows allocate (``tracemalloc``), divided
by 64.

With ``reference=True`` (the default when run alone, and in ``bench_env``) each case also runs
its reference right before it, in every repeat (this machine's load drifts within minutes):
``raw_env()`` playing the very same battles with the very same actions (``run_raw_env``; per-
battle costs vary too much for any other mix to compare), counting the time inside ``last()``
(which builds the observation and mask) and ``step()``, dead steps and automatic resets
included, the sampler excluded; a case's ratio is the median of its per-repeat ratios. No
timing is asserted anywhere.

    python -m experiments.bench_vector --decisions 20000 --repeats 3 --json runs/bench_vector.json

``experiments.bench_env`` runs the same cases and writes them under its JSON's ``vector`` key.
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

from traveller_env import vector
from traveller_env.rules.rng import battle_seed

#: The row counts measured.
SIZES = (1, 64, 1024)
#: Untimed steps before each timed repeat; at least this many timed steps per repeat.
WARMUP_STEPS = 2
MIN_STEPS = 5


def scenarios() -> dict[str, Any]:
    """The scenarios measured: duel, squad, and the generated 16 vs 16 of ``bench_env``."""
    from experiments.bench_common import big_scenario

    return {"duel": "duel", "squad": "squad", "16v16": big_scenario(16)}


def run_vector(scenario: Any, num_envs: int, decisions: int, seed: int = 0,
               backend: str = "python", threads: int = 1,
               opponents: dict[str, str] | None = None,
               relative_actions: bool | None = False, wall: bool = False,
               warmup: int = WARMUP_STEPS, **make_kw: Any) -> dict[str, float]:
    """One timed run: decisions per second inside ``step``, the sampler's time per decision,
    how many steps, decisions and finished battles it covered, and the share of ``step``'s
    time inside the backend's own step (the rest is the ``VectorEnv``'s Python around it,
    which no thread count shortens). With ``threads`` > 1 (or ``wall``) the time is
    wall-clock (CPU time would add the threads up). ``warmup`` steps are played first,
    untimed. ``opponents``, ``relative_actions`` and ``make_kw``
    (``layout``, ``seeds``) as for ``vector.make`` (the trainer's vectors: in-core opponents,
    relative actions, scenario sets)."""
    v = vector.make(scenario, num_envs=num_envs, seed=seed, backend=backend, threads=threads,
                    opponents=opponents, relative_actions=relative_actions, **make_kw)
    rng = np.random.default_rng(seed)
    _, mask, _ = v.reset()
    clock = time.process_time if threads == 1 and not wall else time.perf_counter
    inner, in_backend = v._backend.step, [0.0]

    def timed_backend_step(*args: Any, **kwargs: Any) -> None:
        t0 = clock()
        inner(*args, **kwargs)
        in_backend[0] += clock() - t0

    for _ in range(warmup):
        _, mask, *_ = v.step(vector.random_legal_actions(mask, rng))
    steps = max(MIN_STEPS, decisions // num_envs)
    in_step = in_sampler = 0.0
    ended = 0
    v._backend.step = timed_backend_step
    t = clock()
    for _ in range(steps):
        actions = vector.random_legal_actions(mask, rng)
        t1 = clock()
        in_sampler += t1 - t
        _, mask, _, terminated, truncated, _ = v.step(actions)
        t = clock()
        in_step += t - t1
        ended += int(terminated.sum() + truncated.sum())
    n = steps * num_envs
    return {"decisions_per_s": n / in_step, "step_us_per_decision": 1e6 * in_step / n,
            "sampler_us_per_decision": 1e6 * in_sampler / n, "steps": steps, "decisions": n,
            "battles_ended": ended, "backend_share": in_backend[0] / in_step}


def memory_per_battle_kib(scenario: Any, num_envs: int = 64, backend: str = "python") -> float:
    """Memory per row after ``make`` + ``reset``, in KiB: for the Python backend what Python
    allocated (``tracemalloc``: the battles, their observation caches, the buffers); for the
    core what its rows hold by its own count (``VecBattles.memory_bytes``: battles, reward
    bookkeeping, policies; tracemalloc does not see C++ allocations) plus the vector's buffers
    (obs, mask, rewards and the per-row arrays)."""
    gc.collect()
    if backend == "core":
        v = vector.make(scenario, num_envs=num_envs, seed=0, backend=backend)
        v.reset()
        buffers = sum(a.nbytes for a in vars(v._buf).values() if a is not None)
        return (v._backend._vec.memory_bytes + buffers) / 1024 / num_envs
    tracemalloc.start()
    v = vector.make(scenario, num_envs=num_envs, seed=0, backend=backend)
    v.reset()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del v
    return current / 1024 / num_envs


def run_raw_env(scenario: Any, num_envs: int, decisions: int, seed: int = 0) -> dict[str, float]:
    """The reference for the case ``(scenario, num_envs)``: the very battles and actions of
    ``run_vector`` with the same arguments, through one ``raw_env()``, row after row.

    Row ``r`` plays battles ``battle_seed(seed, r, 0), (.., 1), ...``, and its action at step
    ``s`` is the legal action the vector's sampler picks with the same uniform draw (the draws
    are made up front from the same generator), so every trajectory is the vector's (the
    tests prove the engines agree step by step; ``battles_ended`` is checked equal). Untimed:
    each row's first reset and ``WARMUP_STEPS`` decisions; timed (CPU time): ``last()`` (which
    builds the observation and mask) and ``step()``, dead steps and resets included, the
    sampler not."""
    import traveller_env

    env = traveller_env.raw_env(scenario=scenario, backend="python")
    steps = max(MIN_STEPS, decisions // num_envs)
    rng = np.random.default_rng(seed)
    draws = np.stack([rng.random(num_envs) for _ in range(WARMUP_STEPS + steps)])
    clock = time.process_time
    inside = 0.0
    ended = 0
    for r in range(num_envs):
        episode = 0
        env.reset(seed=battle_seed(seed, r, episode))
        t = clock()
        for s in range(WARMUP_STEPS + steps):
            if s == WARMUP_STEPS:
                t = clock()
            while True:
                if not env.agents:
                    episode += 1
                    env.reset(seed=battle_seed(seed, r, episode))
                obs, _, term, trunc, _ = env.last()
                if not (term or trunc):
                    break
                env.step(None)
            t1 = clock()
            if s >= WARMUP_STEPS:
                inside += t1 - t
            legal = np.flatnonzero(obs["action_mask"])  # the vector's sampler, one row
            k = min(int(draws[s, r] * len(legal)), len(legal) - 1)
            t = clock()
            env.step(int(legal[k]))
            if s >= WARMUP_STEPS and env.battle.done:  # as the vector counts it: this step
                ended += 1
        inside += clock() - t
    return {"decisions_per_s": steps * num_envs / inside, "battles_ended": ended}


def thread_scaling(scenario: Any, opponent: str, num_envs: int, decisions: int,
                   threads: list[int], repeats: int = 3,
                   relative_actions: bool = False) -> dict[str, Any]:
    """The core vector with the opponent ``opponent`` inside (red), stepped with each thread
    count in turn (alternating, ``repeats`` rounds; wall-clock time): the median decisions
    per second per thread count, and its fraction of linear scaling from one thread. Also
    the share of a one-thread step spent in Python outside the core (``python_share``, the
    median) and the fraction of linear that share alone allows at each count (Amdahl's
    ``1 / (f + (1 - f) / k) / k``: the ceiling for a machine with those cores)."""
    runs: dict[int, list[float]] = {k: [] for k in threads}
    shares: list[float] = []
    for r in range(repeats):
        for k in threads:
            got = run_vector(scenario, num_envs, decisions, seed=r, backend="core", threads=k,
                             opponents={"red": opponent}, relative_actions=relative_actions,
                             wall=True)
            runs[k].append(got["decisions_per_s"])
            if k == 1:
                shares.append(1.0 - got["backend_share"])
    rates = {k: statistics.median(v) for k, v in runs.items()}
    base = rates[threads[0]] / threads[0]
    out = {"num_envs": num_envs, "opponent": opponent, "relative_actions": relative_actions,
           "clock": "wall", "repeats": {str(k): v for k, v in runs.items()},
           "decisions_per_s": {str(k): v for k, v in rates.items()},
           "fraction_of_linear": {str(k): v / (base * k) for k, v in rates.items()}}
    if shares:
        f = statistics.median(shares)
        out["python_share"] = f
        out["amdahl_fraction_of_linear"] = {str(k): 1.0 / (f + (1.0 - f) / k) / k
                                            for k in (*threads, 16)}
    return out


#: The scenario set measured against the fixed squad (``set_vs_fixed``): a distribution, its
#: seed range (both included) and the layout.
SET_CASE = ("gen:squad", (0, 999), "6v6")


def set_vs_fixed(num_envs: int, decisions: int, repeats: int = 3,
                 opponent: str = "tactician", warmup: int = WARMUP_STEPS) -> dict[str, Any]:
    """The core vector over the scenario set ``SET_CASE`` (every battle's scenario drawn from
    its seed: a row rebuilds its battle, bookkeeping and policies when the scenario changes)
    against the fixed squad, both with ``opponent`` inside (red) and slot-relative actions
    (the trainer's vectors): the fixed squad as is and on the set's layout. The three run in
    turn in each of ``repeats`` rounds (CPU time, one thread); the medians and each one's ratio
    to the fixed squad's, round by round. Building the set (its scenarios drawn) and the first
    ``warmup`` steps are not timed; the maps' line-of-sight tables fill as battles use them,
    so a short window after a short warm-up meets most of the set's maps for the first time."""
    source, seeds, layout = SET_CASE
    cases = {"fixed squad": ("squad", {"relative_actions": True}),
             f"fixed squad layout {layout}": ("squad", {"relative_actions": True,
                                                         "layout": layout}),
             f"set {source}@{seeds[0]}-{seeds[1]} layout {layout}":
                 (source, {"relative_actions": None, "layout": layout, "seeds": seeds})}
    runs: dict[str, list[dict]] = {name: [] for name in cases}
    for r in range(repeats):
        for name, (sc, kw) in cases.items():
            runs[name].append(run_vector(sc, num_envs, decisions, seed=r, backend="core",
                                         opponents={"red": opponent}, warmup=warmup, **kw))
    base = [x["decisions_per_s"] for x in runs["fixed squad"]]
    out: dict[str, Any] = {"num_envs": num_envs, "opponent": opponent, "clock": "cpu",
                           "repeats": repeats, "warmup_steps": warmup, "cases": {}}
    for name, case_runs in runs.items():
        rates = [x["decisions_per_s"] for x in case_runs]
        out["cases"][name] = {
            "decisions_per_s": statistics.median(rates), "repeats": rates,
            "battles_ended_per_repeat": [x["battles_ended"] for x in case_runs],
            "ratio_to_fixed_squad": statistics.median(v / w for v, w in zip(rates, base,
                                                                             strict=True))}
    return out


def run_all(decisions: int, repeats: int, backends: tuple[str, ...] = ("python",),
            sizes: tuple[int, ...] = SIZES, reference: bool = False,
            threads: int = 1) -> dict[str, Any]:
    """Every case (printing a line per case as it finishes); the ``vector`` section of
    ``bench_env``'s JSON. ``reference``: also measure ``raw_env()``, interleaved, and give the
    ratios. ``threads`` > 1: also the core with that many threads at the largest N (wall-clock
    time, reported separately)."""
    cases: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    variants = [(b, 1) for b in backends]
    if threads > 1 and "core" in backends:
        variants.append(("core", threads))
    for name, sc in scenarios().items():
        runs: dict[tuple, list] = {}
        ref: dict[int, list] = {n: [] for n in sizes}
        for r in range(repeats):
            for n in sizes:
                if reference:
                    ref[n].append(run_raw_env(sc, n, decisions, seed=r))
                for backend, k in variants:
                    if k > 1 and n != max(sizes):
                        continue
                    run = run_vector(sc, n, decisions, seed=r, backend=backend, threads=k)
                    runs.setdefault((backend, k, n), []).append(run)
                    if reference and ref[n][-1]["battles_ended"] != run["battles_ended"]:
                        raise RuntimeError(f"{name} N={n}: the reference ended "
                                           f"{ref[n][-1]['battles_ended']} battles, the {backend} "
                                           f"vector {run['battles_ended']}: not the same battles")
        for (backend, k, n), case_runs in runs.items():
            rates = [x["decisions_per_s"] for x in case_runs]
            median = statistics.median(rates)
            sampler = statistics.median(x["sampler_us_per_decision"] for x in case_runs)
            label = backend if k == 1 else f"{backend} {k} threads"
            key = f"{label} {name} N={n}"
            cases[key] = {"decisions_per_s": median, "repeats": rates,
                          "step_us_per_decision": 1e6 / median,
                          "sampler_us_per_decision": sampler,
                          "steps_per_repeat": case_runs[0]["steps"],
                          "decisions_per_repeat": case_runs[0]["decisions"],
                          "battles_ended_per_repeat": [x["battles_ended"] for x in case_runs],
                          "clock": "cpu" if k == 1 else "wall"}
            extra = ""
            if reference:
                ref_rates = [x["decisions_per_s"] for x in ref[n]]
                ratio = statistics.median(v / w for v, w in zip(rates, ref_rates, strict=True))
                raw[f"{name} N={n}"] = {"decisions_per_s": statistics.median(ref_rates),
                                        "repeats": ref_rates}
                cases[key]["ratio_to_raw_env"] = ratio
                extra = f"; raw_env() {statistics.median(ref_rates):,.0f}/s: {ratio:.2f}x"
            print(f"vector {key:<34}{median:>12,.0f} decisions/s  "
                  f"({1e6 / median:,.2f} us in step + {sampler:,.2f} us sampling per decision; "
                  f"{case_runs[0]['steps']} steps x {n}{extra})", flush=True)
    memory = {f"{b} {name}": memory_per_battle_kib(sc, backend=b)
              for b in backends for name, sc in scenarios().items()}
    for name, kib in memory.items():
        print(f"vector memory per battle {name:<20}{kib:>12,.1f} KiB")
    section = {"backends": list(backends), "decisions_target": decisions, "repeats": repeats,
               "min_steps": MIN_STEPS, "warmup_steps": WARMUP_STEPS, "cases": cases,
               "memory_kib_per_battle": memory}
    if reference:
        section["raw_env_reference"] = raw
    return section


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description="vector API speed benchmark")
    parser.add_argument("--decisions", type=int, default=20_000,
                        help="decisions per repeat and case (at least MIN_STEPS steps)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (median is reported)")
    parser.add_argument("--backend", action="append", choices=sorted(vector.BACKENDS),
                        help="a backend to measure (repeatable; default: core and python)")
    parser.add_argument("--threads", type=int, default=2,
                        help="also the core with this many threads at the largest N (1: no)")
    parser.add_argument("--scaling", default="",
                        help="instead of the cases: the core vector's thread scaling with "
                        "in-core opponents (duel vs rush, squad vs tactician) at these thread "
                        "counts, comma-separated, e.g. 1,2 (wall-clock, alternating)")
    parser.add_argument("--scaling-envs", type=int, default=4096,
                        help="rows of the --scaling vectors (default: %(default)s)")
    parser.add_argument("--set", action="store_true",
                        help="instead of the cases: the core vector over the scenario set "
                        f"{SET_CASE[0]} seeds {SET_CASE[1][0]}-{SET_CASE[1][1]} (layout "
                        f"{SET_CASE[2]}) against the fixed squad, red = tactician in both, "
                        "and their ratio")
    parser.add_argument("--set-envs", type=int, default=256,
                        help="rows of the --set vectors (default: %(default)s)")
    parser.add_argument("--set-warmup", type=int, default=WARMUP_STEPS,
                        help="--set: steps played untimed before each measurement (default: "
                        "%(default)s; the maps' tables fill as battles use them)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every case, print the table (and JSON with ``--json``)."""
    args = build_parser().parse_args(argv)
    if args.decisions < 1 or args.repeats < 1:
        raise SystemExit("--decisions and --repeats must be at least 1")
    if args.set_warmup < 0:
        raise SystemExit("--set-warmup must be at least 0")
    backends = tuple(args.backend or ("core", "python"))
    if args.set:
        section = {"set_vs_fixed": set_vs_fixed(args.set_envs, args.decisions, args.repeats,
                                                warmup=args.set_warmup)}
        for name, case in section["set_vs_fixed"]["cases"].items():
            print(f"vector core {name} vs tactician N={args.set_envs}: "
                  f"{case['decisions_per_s']:>10,.0f} decisions/s, "
                  f"{case['ratio_to_fixed_squad']:.2f}x the fixed squad", flush=True)
    elif args.scaling:
        counts = [int(k) for k in args.scaling.split(",")]
        section = {}
        for scenario, opponent in (("duel", "rush"), ("squad", "tactician")):
            section[scenario] = s = thread_scaling(scenario, opponent, args.scaling_envs,
                                                   args.decisions, counts, args.repeats)
            print(f"vector core {scenario} vs {opponent} N={args.scaling_envs}: " + ", ".join(
                f"{k} threads {s['decisions_per_s'][str(k)]:,.0f}/s "
                f"({s['fraction_of_linear'][str(k)]:.0%} of linear)" for k in counts),
                flush=True)
            if "python_share" in s:
                print(f"    Python outside the core: {s['python_share']:.1%} of a one-thread "
                      "step; that alone allows " + ", ".join(
                          f"{v:.0%} of linear on {k}"
                          for k, v in s["amdahl_fraction_of_linear"].items()), flush=True)
    else:
        section = run_all(args.decisions, args.repeats, backends, reference=True,
                          threads=args.threads)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"machine": {"python": platform.python_version(),
                               "processor": platform.processor() or platform.machine()},
                   "vector": section}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
