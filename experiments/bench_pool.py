"""Pool training speed: ``train_ppo --pool`` with the frozen copies stacked into one forward
pass (``--pool-stack``, the default) beside one pass per copy (``--no-pool-stack``), in the same
run on the same machine.

Both runs are the squad recipe in shape (the entity actor, 256x256, token width 64, the
move and attack views, 256 battles x 64 steps, 30% of the rows against ``rush``, ``marksman``
and ``cover`` in the core) with ``--pool-every 1 --pool-size 30``, so that the pool holds its
30 copies from update 30 on. Each trains ``--updates`` updates from the same seed; the figure
is the learner decisions per second over the updates after ``--full-from`` (the pool full,
from ``training.jsonl``), and the run's own inference share (all updates).

    python -m experiments.bench_pool --updates 45 --json runs/bench_pool.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import tempfile
from pathlib import Path
from typing import Any

from traveller_rl.common import write_json

__all__ = ["build_parser", "main", "pool_run"]


def pool_run(stack: bool, updates: int, full_from: int, seed: int, num_envs: int = 256,
             num_steps: int = 64) -> dict[str, Any]:
    """One pool run of ``updates`` updates (temporary folder): its speed with a full pool."""
    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.trainer import train

    with tempfile.TemporaryDirectory() as tmp:
        args = Args(scenario="squad", pool=True, pool_every=1, pool_size=30,
                    pool_scripted="rush,marksman,cover", pool_scripted_share=0.3,
                    pool_stack=stack, move_view=True, attack_view=True, arch="entity",
                    embed=64, hidden="256,256", num_envs=num_envs, num_steps=num_steps, epochs=4,
                    minibatches=8, total_timesteps=10**9, stop_after_updates=updates,
                    seed=seed, out=tmp, eval_every=0, eval_battles=0, final_eval_battles=0,
                    progress=False, threads=1)
        with contextlib.redirect_stdout(io.StringIO()):
            train(args)
        rows = [json.loads(line) for line in (Path(tmp) / "training.jsonl").open()]
        result = json.loads((Path(tmp) / "evaluation.json").read_text())
    start = next(r for r in rows if r["update"] == full_from)
    end = rows[-1]
    return {"pool_stack": stack, "updates": end["update"],
            "full_pool_decisions": end["decisions"] - start["decisions"],
            "full_pool_seconds": round(end["seconds"] - start["seconds"], 2),
            "full_pool_decisions_per_second": round(
                (end["decisions"] - start["decisions"]) / (end["seconds"] - start["seconds"])),
            "decisions_per_second": result["decisions_per_second"],
            "time_shares": result["time_shares"]}


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="bench_pool", description=__doc__.split("\n\n")[0])
    p.add_argument("--updates", type=int, default=45, help="updates per run (default: 45)")
    p.add_argument("--full-from", type=int, default=30,
                   help="measure from this update on, the pool full (default: 30)")
    p.add_argument("--seed", type=int, default=0, help="training seed of both runs (default: 0)")
    p.add_argument("--num-envs", type=int, default=256,
                   help="battles per rollout (default: 256, the recipe's)")
    p.add_argument("--num-steps", type=int, default=64,
                   help="steps per rollout (default: 64, the recipe's)")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Both runs; print the figures and their ratio (and write ``--json``)."""
    args = build_parser().parse_args(argv)
    if not 1 <= args.full_from < args.updates:
        raise SystemExit(f"bench_pool: --full-from must lie in [1, --updates), got "
                         f"{args.full_from} with --updates {args.updates}")
    runs = {}
    for stack in (True, False):
        key = "stacked" if stack else "one_pass_per_copy"
        runs[key] = pool_run(stack, args.updates, args.full_from, args.seed, args.num_envs,
                             args.num_steps)
        r = runs[key]
        print(f"{key:18s} {r['full_pool_decisions_per_second']:>7,} decisions/s with the pool "
              f"full (all updates: {r['decisions_per_second']:,.0f}; inference "
              f"{r['time_shares']['inference']:.0%}, environment {r['time_shares']['env']:.0%})",
              flush=True)
    ratio = (runs["stacked"]["full_pool_decisions_per_second"]
             / runs["one_pass_per_copy"]["full_pool_decisions_per_second"])
    print(f"stacked / one pass per copy: {ratio:.2f}x")
    out = {"machine": platform.machine(), "python": platform.python_version(),
           "updates": args.updates, "full_from": args.full_from, "seed": args.seed,
           "num_envs": args.num_envs, "num_steps": args.num_steps,
           "runs": runs, "speedup": round(ratio, 3)}
    if args.json:
        write_json(args.json, out, with_versions=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
