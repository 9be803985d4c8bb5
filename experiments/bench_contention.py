"""The trainer's default thread settings on a busy machine: ``traveller train ppo`` at its
defaults (``--update-threads 0``: one per core) against ``--update-threads 1``, with every
core kept busy by other processes (one spinning Python process per core: the "hog") and
without them, in alternating rounds so a busy spell of a shared machine falls on every
configuration alike.

A third configuration, ``spinning``, is the default thread count with ``libgomp``'s own
default wait (``GOMP_SPINCOUNT=300000``: idle OpenMP threads spin before they sleep), which
is what the trainer ran before ``traveller_rl.openmp`` made them wait passively: the
collapse it fixes.

Each run is ``python -m traveller_rl.ppo.trainer --scenario squad --opponents
red=tactician`` bounded by ``--max-train-seconds`` (no evaluation), in a subprocess; its
figure is ``evaluation.json``'s decisions per second (training time only). The report gives
the median per configuration and load, the ratios to ``--update-threads 1`` at the same
load, the load average at each run's start and the CPU seconds other processes (the hog
included) used during it (``/proc/stat``).

    python -m experiments.bench_contention --seconds 20 --repeats 2 \\
        --json results/bench_contention.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.bench_train import busy_seconds

#: Configuration name -> (extra trainer flags, extra environment).
CONFIGS: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": ([], {}),
    "update_threads_1": (["--update-threads", "1"], {}),
    "spinning": ([], {"GOMP_SPINCOUNT": "300000"}),
}


def start_hog(n: int) -> list[subprocess.Popen]:
    """``n`` processes that each keep one core busy."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_hog(hog: list[subprocess.Popen]) -> None:
    """Stop the hog's processes (those this script started)."""
    for proc in hog:
        proc.kill()
    for proc in hog:
        proc.wait()


def train_once(flags: list[str], env: dict[str, str], seconds: float,
               workdir: Path) -> dict[str, Any]:
    """One bounded trainer run; its decisions per second, time shares, the load average at
    its start and the CPU seconds the machine's other processes used during it."""
    out = Path(tempfile.mkdtemp(dir=workdir))
    cmd = [sys.executable, "-m", "traveller_rl.ppo.trainer", "--scenario", "squad",
           "--opponents", "red=tactician", "--max-train-seconds", str(seconds),
           "--total-timesteps", "100000000", "--eval-battles", "0", "--final-eval-battles",
           "0", "--no-progress", "--checkpoint-every", "0", "--out", str(out), *flags]
    load = os.getloadavg()[0]
    busy, t = busy_seconds(), time.perf_counter()
    own = os.times()
    subprocess.run(cmd, env={**os.environ, **env}, check=True, capture_output=True)
    wall = time.perf_counter() - t
    child = os.times()
    mine = (child.children_user + child.children_system
            - own.children_user - own.children_system)
    result = json.loads((out / "evaluation.json").read_text())
    return {"decisions_per_second": result["decisions_per_second"],
            "time_shares": result["time_shares"], "load_at_start": load,
            "others_cpu_seconds": (None if busy is None
                                   else round(busy_seconds() - busy - mine, 1)),
            "wall_seconds": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="training seconds per run (default: 20)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds (default: 2)")
    parser.add_argument("--hog", type=int, default=os.cpu_count() or 1,
                        help="busy processes under contention (default: one per core)")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help=f"configurations, comma-separated (default: {','.join(CONFIGS)})")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args(argv)
    names = [n for n in args.configs.split(",") if n]
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown:
        parser.error(f"--configs: unknown {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    runs: dict[str, dict[str, list[dict]]] = {"busy": {n: [] for n in names},
                                               "quiet": {n: [] for n in names}}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeats):
            for load in ("busy", "quiet"):
                hog = start_hog(args.hog if load == "busy" else 0)
                try:
                    for name in names:
                        flags, env = CONFIGS[name]
                        run = train_once(flags, env, args.seconds, Path(tmp))
                        runs[load][name].append(run)
                        print(f"round {round_ + 1} {load:5} {name:17} "
                              f"{run['decisions_per_second']:>8,.0f} decisions/s  (load "
                              f"{run['load_at_start']:.1f}, others' CPU "
                              f"{run['others_cpu_seconds']} s)", flush=True)
                finally:
                    stop_hog(hog)
    report: dict[str, Any] = {"command": "python -m experiments.bench_contention "
                                         + " ".join(argv if argv is not None else sys.argv[1:]),
                              "cores": os.cpu_count(), "hog_processes": args.hog,
                              "seconds": args.seconds, "repeats": args.repeats, "loads": {}}
    for load, by_name in runs.items():
        medians = {n: statistics.median(r["decisions_per_second"] for r in rs)
                   for n, rs in by_name.items()}
        one = medians.get("update_threads_1")
        report["loads"][load] = {
            "median_decisions_per_second": {n: round(v) for n, v in medians.items()},
            "ratio_to_update_threads_1": ({n: round(v / one, 3) for n, v in medians.items()}
                                          if one else None),
            "runs": by_name}
        print(f"{load}: " + ", ".join(f"{n} {v:,.0f}" for n, v in medians.items())
              + (f"; default / one thread {medians['default'] / one:.2f}"
                 if one and "default" in medians else ""))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
