"""``traveller eval MODEL --scenario duel --vs marksman,rush``: a trained model against
scripted policies, win/draw/loss with 95% intervals."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traveller_env.cli import PROG

__all__ = ["add_arguments", "run", "write_eval_replays"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traveller eval``."""
    p.add_argument("model", type=Path,
                   help="a trained policy: a MaskablePPO .zip, a train_ppo .pt, an exported "
                        ".onnx or an RLlib checkpoint folder")
    p.add_argument("--scenario", default="duel", help="scenario to play (default: duel)")
    p.add_argument("--vs", default="marksman",
                   help="opponent policies, comma-separated (default: marksman)")
    p.add_argument("--battles", type=int, default=200,
                   help="battles per opponent (default: 200)")
    p.add_argument("--seed", type=int, default=20_000, help="first battle seed (default: 20000)")
    p.add_argument("--json", type=Path, default=None,
                   help="write the results here (default: print only)")
    p.add_argument("--html-dir", type=Path, default=None, metavar="DIR",
                   help="write replay pages of the first --html-battles battles per opponent")
    p.add_argument("--html-battles", type=int, default=2, metavar="N",
                   help="battles per opponent written by --html-dir (default: 2, one per side)")


def run(args: argparse.Namespace) -> int:
    """Evaluate ``args.model`` against each ``--vs`` policy; print the table (exit 0), or the
    error on stderr (exit 2) for a model that does not fit the scenario or an unknown
    policy."""
    from agents.evaluation import evaluate_matchup, format_matchups
    from agents.registry import make_policy
    from agents.trained import load_policy

    try:
        if args.html_dir is not None and args.html_battles < 1:
            raise ValueError(f"--html-battles must be at least 1, got {args.html_battles}")
        learned = load_policy(args.model, args.scenario)
        opponents = [make_policy(name) for name in args.vs.split(",") if name]
        rows = [evaluate_matchup(learned, opponent, args.scenario,
                                 battles=args.battles, seed=args.seed)
                for opponent in opponents]
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(format_matchups(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if args.html_dir is not None:
        pages = write_eval_replays(learned, opponents, args.scenario, args.seed,
                                   args.html_battles, args.html_dir)
        print(f"Replay pages: {len(pages)} in {args.html_dir}")
    return 0


def write_eval_replays(policy: Any, opponents: Sequence[Any], scenario: str,
                       seed: int, battles: int, out_dir: str | Path) -> list[Path]:
    """Replay pages of the first ``battles`` battles of ``agents.evaluation.evaluate_matchup``
    against each opponent (same seeds and side assignment, so the same battles), as
    ``<scenario>_vs_<opponent>_<i>.html`` in ``out_dir``."""
    import traveller_env
    from agents.evaluation import play_battle
    from traveller_env.replay_html import safe_filename, write_battle_html

    env = traveller_env.raw_env(scenario)
    paths = []
    for opponent in opponents:
        name = getattr(opponent, "name", "opponent")
        for i in range(battles):
            mine = i % 2
            policies = {a: (policy if env.side_of(a) == mine else opponent)
                        for a in env.possible_agents}
            battle = play_battle(env, policies, seed + i)
            side = env.scenario.sides[mine].name
            title = (f"{scenario}, seed {seed + i}: evaluated policy ({side}) vs {name}")
            paths.append(write_battle_html(
                Path(out_dir) / f"{safe_filename(scenario)}_vs_{safe_filename(name)}_{i}.html",
                battle, env.scenario, seed=seed + i, title=title))
    return paths

