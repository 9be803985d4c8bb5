"""Before/after in one run: the same AEC step benchmark on two checkouts of the project.

Give it another checkout (``git worktree add --detach ../before <commit>``); it times random
legal AEC steps on ``duel`` and ``squad`` with each tree's own code, alternating the trees
round by round so that machine noise hits both alike, and reports the medians and the ratio
(after / before). Both trees run in this interpreter's environment (``PYTHONPATH`` points at
each tree in turn)::

    python -m experiments.bench_trees --before ../before [--rounds 7] [--steps 20000]

On a machine shared with other jobs the timings swing by tens of percent from one run to the
next. ``--instructions`` counts instead the machine instructions the same loop executes
(valgrind's callgrind, counting only inside the loop; ``PYTHONHASHSEED=0``): the same count
on every run whatever the load, though blind to cache and memory effects. It needs
``valgrind`` and a libpython with its symbols (the usual builds). ``--warmup N`` plays ``N``
steps before measuring, for the steady state once the map caches are filled (default 0: the
first steps of a fresh process, caches filling as they go).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs inside a subprocess with PYTHONPATH set to one tree: steps/s of random legal AEC steps
# (argv: scenario, steps, warm-up steps). The measured loop runs inside ``operator.call``, a C
# entry point that callgrind's --toggle-collect counts from (``--instructions``).
_PROBE = '''
import inspect, operator, sys, time
import numpy as np
import traveller_env
scenario, steps, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# The Python engine in both trees (a tree that has the compiled core defaults to it).
python = {"backend": "python"} if "backend" in inspect.signature(traveller_env.env).parameters \
    else {}
env = traveller_env.env(scenario, **python)
rng = np.random.default_rng(0)
env.reset(seed=0)
LOOP = compile("""
done = 0
while done < steps:
    if not env.agents:
        env.reset(seed=done)
    agent = env.agent_selection
    obs, _, term, trunc, _ = env.last()
    if term or trunc:
        env.step(None)
    else:
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.integers(len(legal))]))
    done += 1
""", "loop", "exec")
exec(LOOP, {"env": env, "np": np, "rng": rng, "steps": warmup})
t0 = time.perf_counter()
operator.call(exec, LOOP, {"env": env, "np": np, "rng": rng, "steps": steps})
print(steps / (time.perf_counter() - t0))
'''


def probe(tree: Path, scenario: str, steps: int, warmup: int = 0) -> float:
    """Steps per second of ``tree``'s environment on ``scenario``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _PROBE, scenario, str(steps), str(warmup)],
                         env=env, check=True, capture_output=True, text=True, cwd=tree)
    return float(out.stdout.strip().splitlines()[-1])


def count(tree: Path, scenario: str, steps: int, warmup: int = 0) -> float:
    """Machine instructions per step of ``tree``'s environment on ``scenario`` (callgrind,
    counting inside the measured loop only)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
           "--toggle-collect=_operator_call", "--callgrind-out-file=/dev/null",
           sys.executable, "-c", _PROBE, scenario, str(steps), str(warmup)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=tree)
    found = re.search(r"Collected\s*:\s*([\d,]+)", out.stderr)
    total = int(found.group(1).replace(",", "")) if found else 0
    if not total:
        raise SystemExit("--instructions: callgrind counted nothing inside the loop (needs "
                         "a libpython with its symbols, where _operator_call is visible)")
    return total / steps


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True, help="the other checkout")
    p.add_argument("--after", type=Path, default=HERE, help="default: this checkout")
    p.add_argument("--scenarios", default="duel,squad")
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds (median)")
    p.add_argument("--steps", type=int, default=20_000, help="AEC steps per measurement")
    p.add_argument("--warmup", type=int, default=0,
                   help="steps played before measuring (default 0: from a fresh process)")
    p.add_argument("--instructions", action="store_true",
                   help="count machine instructions per step under valgrind instead of "
                        "timing (deterministic; one count per tree)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print a table."""
    args = build_parser().parse_args(argv)
    for tree in (args.before, args.after):
        if not (tree / "traveller_env" / "__init__.py").is_file():
            raise SystemExit(f"--before/--after: {tree} is not a checkout of this project")
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH (Debian: apt install valgrind)")
    for name in ("rounds", "steps"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.warmup < 0:
        raise SystemExit(f"--warmup must be 0 or more, got {args.warmup}")
    result = {}
    for scenario in args.scenarios.split(","):
        if args.instructions:
            per_step = {k: count(tree.resolve(), scenario, args.steps, args.warmup)
                        for k, tree in (("before", args.before), ("after", args.after))}
            ratio = per_step["before"] / per_step["after"]
            result[scenario] = {"instructions_per_step": per_step, "ratio": ratio}
            print(f"{scenario:8s} before {per_step['before']:9.0f}  after "
                  f"{per_step['after']:9.0f} instructions/step  speed after/before "
                  f"{ratio:.3f}")
            continue
        runs: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            runs["before"].append(probe(args.before.resolve(), scenario, args.steps,
                                        args.warmup))
            runs["after"].append(probe(args.after.resolve(), scenario, args.steps,
                                       args.warmup))
        med = {k: statistics.median(v) for k, v in runs.items()}
        result[scenario] = {**med, "ratio": med["after"] / med["before"], "runs": runs}
        print(f"{scenario:8s} before {med['before']:9.0f}  after {med['after']:9.0f} steps/s  "
              f"after/before {med['after'] / med['before']:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
