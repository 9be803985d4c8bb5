"""Before/after in one run: the same AEC step benchmark on two checkouts of the project.

Give it another checkout (``git worktree add --detach ../before <commit>``); it times random
legal AEC steps on ``duel`` and ``squad`` with each tree's own code, alternating the trees
round by round so that machine noise hits both alike, and reports the medians and the ratio
(after / before). Both trees run in this interpreter's environment (``PYTHONPATH`` points at
each tree in turn)::

    python -m experiments.bench_trees --before ../before [--rounds 7] [--steps 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs inside a subprocess with PYTHONPATH set to one tree: steps/s of random legal AEC steps.
_PROBE = """
import inspect, sys, time
import numpy as np
import traveller_env
scenario, steps = sys.argv[1], int(sys.argv[2])
# The Python engine in both trees (a tree that has the compiled core defaults to it).
python = {"backend": "python"} if "backend" in inspect.signature(traveller_env.env).parameters \
    else {}
env = traveller_env.env(scenario, **python)
rng = np.random.default_rng(0)
env.reset(seed=0)
done, t0 = 0, time.perf_counter()
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
print(done / (time.perf_counter() - t0))
"""


def probe(tree: Path, scenario: str, steps: int) -> float:
    """Steps per second of ``tree``'s environment on ``scenario``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _PROBE, scenario, str(steps)], env=env,
                         check=True, capture_output=True, text=True, cwd=tree)
    return float(out.stdout.strip().splitlines()[-1])


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True, help="the other checkout")
    p.add_argument("--after", type=Path, default=HERE, help="default: this checkout")
    p.add_argument("--scenarios", default="duel,squad")
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds (median)")
    p.add_argument("--steps", type=int, default=20_000, help="AEC steps per measurement")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print a table."""
    args = build_parser().parse_args(argv)
    for tree in (args.before, args.after):
        if not (tree / "traveller_env" / "__init__.py").is_file():
            raise SystemExit(f"--before/--after: {tree} is not a checkout of this project")
    result = {}
    for scenario in args.scenarios.split(","):
        runs: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            runs["before"].append(probe(args.before.resolve(), scenario, args.steps))
            runs["after"].append(probe(args.after.resolve(), scenario, args.steps))
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
