"""Data-parallel training speed: ``traveller train ppo`` in one process beside the same run
under ``torchrun --nproc-per-node N`` (``traveller_rl.ppo.distributed``), on the same machine
in one invocation.

Every run trains ``duel`` against ``rush`` in the core for ``--decisions`` learner decisions
with the same total batch (``--num-envs`` battles x 64 steps per update, shared out over the
processes), no evaluation; the cores are split between the processes (``--env-threads`` and
``--update-threads`` = cores / N each). The figure is the run's own decisions per second
(``evaluation.json``: every rank's decisions over rank 0's training seconds), and the wall
time of the whole command (torch starting in each process included).

    python -m experiments.bench_distributed --procs 1,2 --json runs/bench_distributed.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from traveller_rl.common import write_json

__all__ = ["build_parser", "main", "timed_run"]


def timed_run(procs: int, decisions: int, num_envs: int, seed: int,
              cores: int | None = None) -> dict[str, Any]:
    """One run on ``procs`` processes (0: the plain command, no torchrun) in a temporary
    folder, ``cores`` (default: every one) split between them: its decisions per second and
    wall time."""
    cores = cores or os.cpu_count() or 1
    per = max(1, cores // max(1, procs))
    flags = ["--scenario", "duel", "--opponents", "red=rush", "--backend", "core",
             "--total-timesteps", str(decisions), "--num-envs", str(num_envs // max(1, procs)),
             "--num-steps", "64", "--seed", str(seed), "--eval-battles", "0",
             "--final-eval-battles", "0", "--eval-every", "0", "--no-progress",
             "--threads", "1", "--env-threads", str(per), "--update-threads", str(per)]
    launcher = ([] if procs == 0 else
                ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs)])
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, *launcher, "-m", "traveller_cli", "train", "ppo", *flags,
               "--out", str(Path(tmp) / "run")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True,
                       env={**os.environ, "OMP_NUM_THREADS": str(per)})
        wall = time.perf_counter() - t
        result = json.loads((Path(tmp) / "run" / "evaluation.json").read_text())
    return {"processes": procs or 1, "torchrun": procs > 0, "threads_per_process": per,
            "decisions": result["decisions"],
            "decisions_per_second": round(result["decisions_per_second"]),
            "time_shares": result["time_shares"], "wall_seconds": round(wall, 1)}


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's flags."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="0,1,2",
                        help="process counts, comma-separated (0: the plain command)")
    parser.add_argument("--decisions", type=int, default=262_144)
    parser.add_argument("--num-envs", type=int, default=64,
                        help="battles per update over all the processes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default="", help="write the results here too")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run each process count in turn and print a table (and ``--json``)."""
    args = build_parser().parse_args(argv)
    rows = []
    for procs in (int(p) for p in args.procs.split(",")):
        row = timed_run(procs, args.decisions, args.num_envs, args.seed)
        rows.append(row)
        print(f"{'plain' if not row['torchrun'] else 'torchrun':>8} x{row['processes']}: "
              f"{row['decisions_per_second']:>8,} decisions/s  ({row['wall_seconds']} s wall, "
              f"{row['threads_per_process']} threads per process)")
    base = rows[0]["decisions_per_second"]
    for row in rows:
        row["speed_vs_first"] = round(row["decisions_per_second"] / base, 3)
    if args.json:
        write_json(Path(args.json), {"machine": {"cores": os.cpu_count(),
                                                 "platform": platform.platform()},
                                     "decisions": args.decisions, "num_envs": args.num_envs,
                                     "runs": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
