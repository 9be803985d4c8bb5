"""``traveller behaviour --scenario squad --policies rush,marksman --vs marksman``: behaviour
statistics per policy (``traveller_rl.behaviour``), one table row per policy (``--by-side``: per
policy and side played)."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from traveller_rl.commandline import PROG, UsageError, int_at_least, seed_type

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traveller behaviour``."""
    p.add_argument("--scenario", default="squad", help="scenario to play (default: squad)")
    p.add_argument("--policies", required=True,
                   help="policies to describe, comma-separated: scripted names, MaskablePPO "
                        ".zip or train_ppo .pt paths")
    p.add_argument("--vs", default="marksman",
                   help="opponents, comma-separated (default: marksman); the descriptors are "
                        "summed over them")
    p.add_argument("--battles", type=int_at_least(1), default=200,
                   help="battles per side and opponent (default: 200, so 400 per opponent)")
    p.add_argument("--seed", type=seed_type, default=1000,
                   help="first battle seed (default: 1000); battle i has seed SEED + i")
    p.add_argument("--backend", choices=("core", "python"), default=None,
                   help="engine (default: the environment's default, the compiled core)")
    p.add_argument("--json", type=Path, default=None,
                   help="write the results here (default: print only)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--by-side", action="store_true",
                   help="one row per policy and side it played (the JSON always holds "
                        "by_side)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


EXAMPLES = """
traveller behaviour --policies rush,marksman,tactician --scenario squad
traveller behaviour --policies runs/squad/ppo.pt --vs tactician --battles 100 --markdown"""


def _plain(value: Any) -> Any:
    """``value`` with NaN as ``None`` (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _policies(flag: str, text: str) -> list[str]:
    """The policy names of ``flag`` (a usage error naming it for an unknown one)."""
    from traveller_agents.registry import parse_policy_list

    try:
        return parse_policy_list(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Describe each ``--policies`` entry against the ``--vs`` opponents; print the table
    (exit 0), or the error on stderr (exit 2) for bad input."""
    from traveller_rl.behaviour import DESCRIPTORS, behaviour_stats, format_behaviour

    bar = None
    start = time.perf_counter()
    from traveller_env.scenario import load_scenario

    load_scenario(args.scenario)
    policies, opponents = (_policies(flag, text) for flag, text in
                           (("--policies", args.policies), ("--vs", args.vs)))
    if args.json is not None and args.json.is_dir():
        raise UsageError(f"--json {args.json}: is a folder; give a file path")
    try:
        if not args.no_progress:
            from tqdm import tqdm

            bar = tqdm(total=len(policies) * len(opponents) * 2 * args.battles,
                       unit="battle", file=sys.stderr)
        rows = []
        for name in policies:
            if bar is not None:
                bar.set_description(name)
            rows.append(behaviour_stats(name, args.scenario, opponents, args.battles,
                                        args.seed, backend=args.backend,
                                        on_battle=None if bar is None else bar.update))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - start
    shown = [{**part, "policy": f"{r['policy']} as {side}"}
             for r in rows for side, part in r["by_side"].items()] if args.by_side else rows
    print(format_behaviour(shown, markdown=args.markdown))
    if args.json:
        from traveller_env.env import DEFAULT_BACKEND

        command = shlex.join([PROG, "behaviour", "--scenario", args.scenario, "--policies",
                              args.policies, "--vs", args.vs, "--battles", str(args.battles),
                              "--seed", str(args.seed)])
        out = {"command": command, "scenario": args.scenario, "vs": opponents,
               "battles_per_side": args.battles, "seed": args.seed,
               "backend": args.backend or DEFAULT_BACKEND, "seconds": round(seconds, 1),
               "descriptors": list(DESCRIPTORS), "policies": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(_plain(out), indent=2) + "\n")
    return 0
