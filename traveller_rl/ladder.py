"""A difficulty ladder from a rated league: N opponents at evenly spaced ratings.

    traveller ladder squad --levels 5 --league results/league --battles 200

From the league's rated population (``league.json`` after ``traveller league rate``: its
members and the scripted NPCs of its tournament), it picks ``--levels`` policies whose Elo lies
closest to evenly spaced targets from the weakest to the strongest (each policy used once),
plays every level against the next one up (``--battles`` battles, sides alternating, seeds from
``--seed``) and writes the named set (``--out``, default ``<league>/ladder_<scenario>.json``):
per level its name (``easy`` ... ``hard``), the policy (an ONNX file, a checkpoint or a
scripted name), its Elo, and the win rate of the next level against it with a 95% interval.
That is what a game ships as "easy ... hard".

``--tournament DIR`` takes the rated policies from a ``traveller tournament`` folder instead
(its ``ratings.csv``; the policies as the tournament named them), for instance the search NPC
at several budgets rated on generated squads (docs/search.md):

    traveller ladder gen:squad@1000 --tournament runs/search_ladder --levels 4 --battles 100
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.scenario import shipped_path
from traveller_rl.commandline import (
    UsageError,
    check_at_least,
    check_seed,
    examples_epilog,
    int_at_least,
    run_standalone,
    seed_type,
)

__all__ = ["LEVEL_NAMES", "build_parser", "level_names", "main", "pick_levels", "run"]

#: Level names by ladder length (longer ladders are numbered).
LEVEL_NAMES = {2: ["easy", "hard"], 3: ["easy", "medium", "hard"],
               4: ["easy", "medium", "hard", "very hard"],
               5: ["very easy", "easy", "medium", "hard", "very hard"]}


def level_names(n: int) -> list[str]:
    """``n`` level names, easiest first."""
    return LEVEL_NAMES.get(n, [f"level {k + 1}" for k in range(n)])


def pick_levels(rated: list[tuple[str, float]], levels: int) -> list[tuple[str, float]]:
    """``levels`` of ``rated`` ((name, Elo) pairs) nearest to evenly spaced Elo targets from
    the lowest to the highest, each used once, easiest first (``ValueError`` when there are
    fewer policies than levels)."""
    if levels < 2:
        raise ValueError(f"--levels must be at least 2, got {levels}")
    if len(rated) < levels:
        raise ValueError(f"--levels {levels}: the league has only {len(rated)} rated policies")
    elos = np.array([e for _, e in rated])
    targets = np.linspace(elos.min(), elos.max(), levels)
    free = list(range(len(rated)))
    chosen = []
    for t in targets:
        k = min(free, key=lambda i: (abs(elos[i] - t), i))
        free.remove(k)
        chosen.append(rated[k])
    return sorted(chosen, key=lambda x: x[1])


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``traveller ladder SCENARIO --levels N``."""
    parser = parser or argparse.ArgumentParser(prog="traveller ladder", allow_abbrev=False,
                                               description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog("""
        traveller ladder squad --league results/league
        traveller ladder squad --league runs/league --levels 3 --battles 100 --out runs/l.json""")
    parser.add_argument("scenario", help="the scenario (the league's)")
    parser.add_argument("--levels", type=int_at_least(1), default=5,
                        help="number of levels (default: 5)")
    parser.add_argument("--league", type=Path, default=Path("results/league"),
                        help="rated league folder (default: results/league, the committed "
                             "league, which the package ships)")
    parser.add_argument("--tournament", type=Path, default=None,
                        help="take the rated policies from this traveller tournament folder "
                             "(its ratings.csv) instead of --league")
    parser.add_argument("--battles", type=int_at_least(1), default=200,
                        help="battles of each level against the next (default: 200)")
    parser.add_argument("--seed", type=seed_type, default=90_000,
                        help="first battle seed (default: 90000)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the ladder JSON (default: runs/ladder_<scenario>.json)")
    return parser


def tournament_ratings(folder: Path) -> list[tuple[str, float]]:
    """(policy, Elo) of every policy a ``traveller tournament`` folder rated (``ValueError``
    naming the folder when it has no ratings)."""
    import csv

    path = folder / "ratings.csv"
    if not path.is_file():
        raise ValueError(f"--tournament {folder}: no ratings.csv (a traveller tournament "
                         "--out folder, once the tournament finished)")
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    try:
        return [(r["policy"], float(r["elo"])) for r in rows]
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{path}: not a tournament's ratings ({exc})") from None


def rated_policies(args: argparse.Namespace) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """The candidates ((name, Elo) pairs) and the file or name each plays as: from
    ``--tournament``, or from the rated league ``--league`` (which must play ``scenario``)."""
    if getattr(args, "tournament", None) is not None:
        rated = tournament_ratings(args.tournament)
        return rated, {name: name for name, _ in rated}
    from traveller_rl.league import load_league, policy_path

    folder = shipped_path(args.league, prefer_cwd=True)  # results/league from any folder
    league = load_league(folder)
    if league["scenario"] != args.scenario:
        raise ValueError(f"{args.league}: the league plays {league['scenario']!r}, not "
                         f"{args.scenario!r}")
    files: dict[str, str] = {}
    rated = []
    for m in league["members"]:
        if m.get("rating"):
            files[m["name"]] = policy_path(folder, m)
            rated.append((m["name"], m["rating"]["elo"]))
    for s in league.get("scripted", []):
        if s.get("rating"):
            files[s["name"]] = s["name"]
            rated.append((s["name"], s["rating"]["elo"]))
    if not rated:
        raise ValueError(f"{args.league}: the league is not rated (run `traveller league "
                         "rate` first)")
    return rated, files


def build_ladder(args: argparse.Namespace) -> dict[str, Any]:
    """Pick the levels, play each against the next, return the named set."""
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import evaluate_matchup

    rated, files = rated_policies(args)
    if args.battles < 1:
        raise ValueError("--battles must be at least 1")
    chosen = pick_levels(rated, args.levels)
    names = level_names(len(chosen))
    levels = []
    for k, (name, elo) in enumerate(chosen):
        levels.append({"level": k + 1, "name": names[k], "policy": name,
                       "file": files[name], "elo": elo})
    for k in range(len(levels) - 1):
        easy, hard = levels[k], levels[k + 1]
        row = evaluate_matchup(make_policy(hard["file"], scenario=args.scenario),
                               make_policy(easy["file"], scenario=args.scenario),
                               args.scenario, battles=args.battles, seed=args.seed)
        easy["next_level_win_rate"] = row["win_rate"]
        easy["next_level_win_ci95"] = list(row["win_ci95"])
    source = {"tournament": str(args.tournament)} if getattr(args, "tournament", None) \
        else {"league": str(args.league)}
    return {"scenario": args.scenario, **source,
            "battles_per_step": args.battles, "seed": args.seed, "levels": levels}


def format_ladder(ladder: dict[str, Any]) -> str:
    """The ladder as a Markdown table."""
    lines = ["| level | name | policy | Elo | next level's win rate against it (95% CI) |",
             "|---:|---|---|---:|---|"]
    for lv in ladder["levels"]:
        nxt = "-"
        if "next_level_win_rate" in lv:
            lo, hi = lv["next_level_win_ci95"]
            nxt = f"{lv['next_level_win_rate']:.2f} ({lo:.2f}-{hi:.2f})"
        lines.append(f"| {lv['level']} | {lv['name']} | {lv['policy']} | {lv['elo']:.0f} | "
                     f"{nxt} |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Build and write the ladder (a ``UsageError`` naming the flag on bad input)."""
    check_at_least("--levels", args.levels, 1)
    check_at_least("--battles", args.battles, 1)
    check_seed("--seed", args.seed)
    if args.out is not None and args.out.is_dir():
        raise UsageError(f"--out {args.out}: is a folder; give a file path (.json)")
    try:
        ladder = build_ladder(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = args.out or Path("runs") / f"ladder_{args.scenario}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(ladder, indent=2) + "\n")
    print(format_ladder(ladder))
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
