"""``traveller eval MODEL --scenario duel --vs marksman,rush``: a trained model against
scripted policies, win/draw/loss with 95% intervals."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from traveller_env.cli import PROG

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traveller eval``."""
    p.add_argument("model", type=Path, help="a MaskablePPO .zip saved by a training script")
    p.add_argument("--scenario", default="duel", help="scenario to play (default: duel)")
    p.add_argument("--vs", default="marksman",
                   help="opponent policies, comma-separated (default: marksman)")
    p.add_argument("--battles", type=int, default=200,
                   help="battles per opponent (default: 200)")
    p.add_argument("--seed", type=int, default=20_000, help="first battle seed (default: 20000)")
    p.add_argument("--json", type=Path, default=None,
                   help="write the results here (default: print only)")


def run(args: argparse.Namespace) -> int:
    """Evaluate ``args.model`` against each ``--vs`` policy; print the table (exit 0), or the
    error on stderr (exit 2) for a model that does not fit the scenario or an unknown
    policy."""
    from agents.evaluation import evaluate_matchup, format_matchups
    from agents.registry import make_policy
    from agents.trained import load_policy

    try:
        learned = load_policy(args.model, args.scenario)
        rows = [evaluate_matchup(learned, make_policy(name), args.scenario,
                                 battles=args.battles, seed=args.seed)
                for name in args.vs.split(",") if name]
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(format_matchups(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0
