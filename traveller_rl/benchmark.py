"""``traveller benchmark POLICY``: a versioned benchmark suite with a match record.

    traveller benchmark tactician                       # suite v1, table on stdout
    traveller benchmark results/league/stalker.onnx --out runs/benchmark/stalker.json
    traveller benchmark rush,cover,tactician --workers 2 --out results/benchmark_v1.json

A *suite* is ``configs/benchmarks/v<N>.yaml`` (``--suite v1``, or a path): scenario sets
(built-in scenarios, or a distribution's held-out seed range: ``gen:squad`` seeds 1000-1003)
x opponents (scripted NPCs, committed league members) x ``battles_per_cell`` battles, half with
the policy on each side. A version is never edited once published; ``load_suite("v1")`` keeps
reading it.

**Battles.** Battle ``i`` of a cell plays scenario ``i // 2 % len(set)`` of its set with the
policy on side ``i % 2`` and battle seed ``suite.seed + i`` (each side's policy is seeded from
the battle seed and its side, as in ``traveller tournament``): the record depends only on the
suite and the policies, not on ``--workers``.

**Scores.** Per cell: wins, draws, losses, the win rate and its Wilson 95% interval. The
aggregate is the mean over cells of the cell win rates, with a stratified bootstrap 95%
interval (battles resampled within each cell, ``BOOTSTRAP_SAMPLES`` times; rliable's
stratified bootstrap over the one run). Draws count as not won.

**Not playable.** A learned policy plays only scenarios of its observation and action layout
(its ONNX file is checked against each scenario: ``traveller_agents.onnx_policy``); one trained on a
fixed layout (``traveller_env.layout``) plays every scenario that fits it, and the loader names
the limit a scenario beyond it breaks. A battle whose
scenario the policy or the opponent cannot play is recorded as ``not_playable`` with the
reason (the loader's message, naming the sizes), not played; a cell with no playable battle
shows ``n/p``, and the aggregate is taken over the playable cells only and says how many of
the suite's cells it covers (``cells_used``). Aggregates over different numbers of cells are
not comparable: the leaderboard lists ``cells_used`` beside each score.

A battle in which a policy raises (a scripted policy made for other scenarios, such as
``optimal_aim`` outside the ``range_*`` scenarios) is recorded as ``error`` with the exception,
and counted with the not-playable ones, never as a result.

**Match record** (``--out``, JSON): the suite (version, file, SHA-256 of its text), the
command, and per policy every battle (set, scenario, opponent, side, seed, result, winner,
rounds), the cells and the aggregate; any number in the table can be recomputed from it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from traveller_agents.registry import make_policy, parse_policy_list
from traveller_env.generate import GENERATED_PREFIX
from traveller_env.scenario import ScenarioError, config_dir, shipped_path
from traveller_rl.commandline import examples_epilog, int_at_least
from traveller_rl.common import run_chunks
from traveller_rl.evaluation import wilson_interval

__all__ = ["BOOTSTRAP_SAMPLES", "Suite", "aggregate", "build_parser", "cell_summaries",
           "format_leaderboard", "format_table", "load_suite", "plan_battles", "policy_file",
           "run", "run_benchmark", "suite_path"]

#: Bootstrap resamples of the aggregate's interval.
BOOTSTRAP_SAMPLES = 2000


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its version, source file, text digest and contents."""

    version: int
    path: Path
    sha256: str
    description: str
    battles_per_cell: int
    seed: int
    scenario_sets: dict[str, tuple[str, ...]]  # set name -> scenario names
    opponents: tuple[str, ...]

    @property
    def name(self) -> str:
        """``v<version>``."""
        return f"v{self.version}"

    def cells(self) -> list[tuple[str, str]]:
        """Every (scenario set, opponent) pair, in file order."""
        return [(s, o) for s in self.scenario_sets for o in self.opponents]


def policy_file(name: str) -> str:
    """The policy ``name`` with a shipped file resolved: a suite's opponent such as
    ``results/league/understudy.onnx`` is the committed league's file, found from any current
    folder and in a wheel (``traveller_env.scenario.shipped_path``; a file of that name in the
    current folder is used first). Names that are not such paths are returned as given."""
    if not name.endswith((".onnx", ".pt", ".zip")):
        return name
    return str(shipped_path(name, prefer_cwd=True))


def suite_path(suite: str | Path) -> Path:
    """The file of ``suite``: ``"v1"`` is ``configs/benchmarks/v1.yaml``; anything else is a
    path."""
    text = str(suite)
    if text.startswith("v") and text[1:].isdigit():
        return config_dir() / "benchmarks" / f"{text}.yaml"
    return Path(suite)


def _fail(path: Path, problem: str) -> ValueError:
    return ValueError(f"{path}: {problem}")


def load_suite(suite: str | Path = "v1") -> Suite:
    """Read and check a suite file (``ValueError`` naming the file and the key)."""
    path = suite_path(suite)
    if not path.is_file():
        known = sorted(p.stem for p in (config_dir() / "benchmarks").glob("v*.yaml"))
        raise _fail(path, f"no such benchmark suite; versions: {', '.join(known)}")
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    allowed = {"version", "description", "battles_per_cell", "seed", "scenario_sets",
               "opponents"}
    if not isinstance(data, dict) or set(data) - allowed or "version" not in data:
        raise _fail(path, f"a suite is a mapping with keys {', '.join(sorted(allowed))}")
    if isinstance(suite, str) and suite_path(suite) != Path(suite) and \
            f"v{data['version']}" != suite:
        raise _fail(path, f"says version {data['version']}, not {suite}")
    n = data.get("battles_per_cell", 8)
    if not isinstance(n, int) or n < 2 or n % 2:
        raise _fail(path, f"battles_per_cell must be an even number >= 2, got {n!r}")
    sets: dict[str, tuple[str, ...]] = {}
    for name, spec in (data.get("scenario_sets") or {}).items():
        if isinstance(spec, dict) and set(spec) == {"scenarios"}:
            sets[name] = tuple(spec["scenarios"])
        elif isinstance(spec, dict) and set(spec) == {"distribution", "seeds"}:
            dist, (low, high) = spec["distribution"], spec["seeds"]
            if not str(dist).startswith(GENERATED_PREFIX) or high < low:
                raise _fail(path, f"scenario_sets.{name}: a gen:<name> distribution and seeds "
                            "[low, high] with low <= high")
            sets[name] = tuple(f"{dist}@{s}" for s in range(low, high + 1))
        else:
            raise _fail(path, f"scenario_sets.{name}: either {{scenarios: [...]}} or "
                        "{distribution: gen:<name>, seeds: [low, high]}")
    opponents = tuple(data.get("opponents") or ())
    if not sets or not opponents:
        raise _fail(path, "a suite needs at least one scenario set and one opponent")
    return Suite(version=int(data["version"]), path=path,
                 sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                 description=str(data.get("description", "")).strip(), battles_per_cell=n,
                 seed=int(data.get("seed", 0)), scenario_sets=sets, opponents=opponents)


def plan_battles(suite: Suite, policy: str) -> list[dict[str, Any]]:
    """Every battle of ``policy`` on ``suite`` (see the module docstring), unplayed."""
    out = []
    for set_name, opponent in suite.cells():
        scenarios = suite.scenario_sets[set_name]
        for i in range(suite.battles_per_cell):
            out.append({"set": set_name, "opponent": opponent,
                        "scenario": scenarios[i // 2 % len(scenarios)], "index": i,
                        "side": i % 2, "seed": suite.seed + i, "policy": policy})
    return out


_PLAYABLE: dict[tuple[str, str], str | None] = {}


def why_not_playable(policy: str, scenario: str) -> str | None:
    """``None`` when ``policy`` can play ``scenario``, else the loader's reason."""
    key = (policy, scenario)
    if key not in _PLAYABLE:
        try:
            make_policy(policy, scenario=scenario)
            _PLAYABLE[key] = None
        except (ValueError, ScenarioError) as exc:
            _PLAYABLE[key] = str(exc)
    return _PLAYABLE[key]


def play_one(battle: dict[str, Any]) -> dict[str, Any]:
    """Play one planned battle (``tournament.play_game``); its record."""
    from traveller_rl.tournament import Game, play_game

    policy, opponent = policy_file(battle["policy"]), policy_file(battle["opponent"])
    reason = (why_not_playable(policy, battle["scenario"])
              or why_not_playable(opponent, battle["scenario"]))
    if reason is not None:  # the record names the files as the suite and command line do
        for name, file in ((battle["policy"], policy), (battle["opponent"], opponent)):
            reason = reason.replace(file, name)
        return {**battle, "result": "not_playable", "reason": reason}
    players = (policy, opponent)
    side0, side1 = players if battle["side"] == 0 else players[::-1]
    try:
        game = play_game(Game(battle["scenario"], side0, side1, battle["index"],
                              battle["seed"]))
    except Exception as exc:  # a policy failing mid-battle: recorded, not scored
        return {**battle, "result": "error",
                "reason": f"the battle failed: {type(exc).__name__}: {exc}"}
    winner = game["winner"]
    result = "draw" if winner is None else "win" if winner == battle["side"] else "loss"
    return {**battle, "result": result, "winner": winner, "rounds": game["rounds"],
            "truncated": game["truncated"]}


def _play_chunk(battles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [play_one(b) for b in battles]


def run_benchmark(policies: Sequence[str], suite: Suite, workers: int = 1,
                  progress: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Every battle of every policy on ``suite``: policy -> battle records (plan order)."""
    plan = [b for p in policies for b in plan_battles(suite, p)]
    chunks = [plan[k:k + suite.battles_per_cell]
              for k in range(0, len(plan), suite.battles_per_cell)]
    from traveller_rl.benchmark import _play_chunk as worker  # by its importable name

    results = list(run_chunks(worker, chunks, workers, progress=progress, total=len(plan),
                              ordered=True))
    by_policy: dict[str, list[dict[str, Any]]] = {p: [] for p in policies}
    for part in results:
        for b in part:
            by_policy[b["policy"]].append({k: v for k, v in b.items() if k != "policy"})
    return by_policy


def cell_summaries(suite: Suite, battles: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: battles played, wins, draws, losses, win rate and Wilson 95% interval;
    ``not_playable`` battles are counted apart (with the first reason)."""
    cells = []
    for set_name, opponent in suite.cells():
        mine = [b for b in battles if b["set"] == set_name and b["opponent"] == opponent]
        played = [b for b in mine if b["result"] in ("win", "draw", "loss")]
        skipped = [b for b in mine if b["result"] not in ("win", "draw", "loss")]
        wins = sum(b["result"] == "win" for b in played)
        draws = sum(b["result"] == "draw" for b in played)
        n = len(played)
        lo, hi = wilson_interval(wins, n)
        cells.append({"set": set_name, "opponent": opponent, "battles": n, "wins": wins,
                      "draws": draws, "losses": n - wins - draws,
                      "win_rate": wins / n if n else None,
                      "win_ci95": [lo, hi] if n else None, "not_playable": len(skipped),
                      "reason": skipped[0]["reason"] if skipped else None})
    return cells


def aggregate(suite: Suite, battles: Sequence[dict[str, Any]],
              samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> dict[str, Any]:
    """The mean over playable cells of the cell win rates, with a stratified bootstrap 95%
    interval (battles resampled within each cell)."""
    outcomes = []
    for set_name, opponent in suite.cells():
        won = [b["result"] == "win" for b in battles if b["set"] == set_name
               and b["opponent"] == opponent and b["result"] in ("win", "draw", "loss")]
        if won:
            outcomes.append(np.asarray(won, dtype=float))
    total = len(suite.cells())
    if not outcomes:
        return {"metric": "mean cell win rate", "score": None, "ci95": None, "cells_used": 0,
                "cells": total}
    rng = np.random.default_rng(seed)
    boot = np.zeros(samples)
    for won in outcomes:
        picks = rng.integers(0, len(won), size=(samples, len(won)))
        boot += won[picks].mean(axis=1)
    boot /= len(outcomes)
    score = float(np.mean([w.mean() for w in outcomes]))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"metric": "mean cell win rate", "score": score, "ci95": [float(lo), float(hi)],
            "cells_used": len(outcomes), "cells": total}


def _rate(cell: dict[str, Any]) -> str:
    if not cell["battles"]:
        return "n/p"
    lo, hi = cell["win_ci95"]
    return f"{cell['win_rate']:.2f} [{lo:.2f}, {hi:.2f}]"


def format_table(policy: str, suite: Suite, record: dict[str, Any]) -> str:
    """One policy's table: a row per cell, then the aggregate."""
    width = max(len(s) for s in suite.scenario_sets) + 2
    owidth = max(len(Path(o).stem) for o in suite.opponents) + 2
    lines = [f"{policy} on benchmark {suite.name}",
             f"{'scenario set':<{width}}{'opponent':<{owidth}}{'W':>4}{'D':>4}{'L':>4}"
             f"{'n/p':>5}  win rate [95% Wilson]"]
    for c in record["cells"]:
        lines.append(f"{c['set']:<{width}}{Path(c['opponent']).stem:<{owidth}}{c['wins']:>4}"
                     f"{c['draws']:>4}{c['losses']:>4}{c['not_playable']:>5}  {_rate(c)}")
    agg = record["aggregate"]
    if agg["score"] is None:
        lines.append("aggregate: not playable on any cell")
    else:
        lo, hi = agg["ci95"]
        lines.append(f"aggregate ({agg['metric']}, {agg['cells_used']} of {agg['cells']} "
                     f"cells): {agg['score']:.3f} [{lo:.3f}, {hi:.3f}] (bootstrap 95%)")
    reasons = sorted({c["reason"] for c in record["cells"] if c["reason"]})
    lines += [f"not playable: {r}" for r in reasons[:3]]
    return "\n".join(lines)


def format_leaderboard(suite: Suite, records: dict[str, dict[str, Any]]) -> str:
    """A Markdown leaderboard: a row per policy, best aggregate first, a column per cell."""
    cells = suite.cells()
    head = ["policy", "score [95% CI]", "cells"] + [f"{s} vs {Path(o).stem}" for s, o in cells]
    rows = []
    for name, rec in records.items():
        agg = rec["aggregate"]
        score = ("n/p" if agg["score"] is None else
                 f"{agg['score']:.3f} [{agg['ci95'][0]:.2f}, {agg['ci95'][1]:.2f}]")
        row = [Path(name).stem if name.endswith(".onnx") else name, score,
               f"{agg['cells_used']}/{agg['cells']}"]
        row += [_rate(c) for c in rec["cells"]]
        key = (-agg["cells_used"], -(agg["score"] if agg["score"] is not None else -1))
        rows.append((key, row))
    rows.sort(key=lambda r: r[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for _, r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- command
def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of ``traveller benchmark``."""
    p = parser or argparse.ArgumentParser(prog="traveller benchmark", description=__doc__,
                                          allow_abbrev=False)
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = examples_epilog("""
        traveller benchmark tactician
        traveller benchmark results/league/understudy.onnx --suite v1 --out runs/understudy.json
        traveller benchmark rush,marksman,cover,tactician --workers 2 --markdown runs/board.md
    """)
    p.add_argument("policies", metavar="POLICY",
                   help="the policy to benchmark (a registry name, a .onnx/.pt file, ...) or "
                        "a comma-separated list of them (a leaderboard)")
    p.add_argument("--suite", default="v1",
                   help="suite version (v1 is configs/benchmarks/v1.yaml) or a suite file")
    p.add_argument("--workers", type=int_at_least(1), default=1,
                   help="processes playing battles (1)")
    p.add_argument("--out", type=Path, help="write the JSON match record to this file")
    p.add_argument("--markdown", type=Path, help="write the leaderboard table (Markdown)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``traveller benchmark``; 0 on success, 2 on a bad suite or policy name."""
    try:
        suite = load_suite(args.suite)
        policies = parse_policy_list(args.policies)
        for name in [*policies, *suite.opponents]:
            if not (name.endswith(".onnx") or name.endswith(".pt")):
                make_policy(name)  # an unknown name fails here, before any battle
            elif not Path(policy_file(name)).is_file():
                kind = "policy" if name in policies else f"{suite.name}'s opponent"
                raise ValueError(f"{kind} {name}: no such policy file")
    except (ValueError, ImportError) as exc:
        print(f"traveller benchmark: error: {exc}", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("traveller benchmark: error: --workers must be >= 1", file=sys.stderr)
        return 2
    started = time.time()
    played = run_benchmark(policies, suite, workers=args.workers,
                           progress=not args.no_progress)
    records = {}
    for name in policies:
        battles = played[name]
        records[name] = {"policy": name, "cells": cell_summaries(suite, battles),
                         "aggregate": aggregate(suite, battles), "battles": battles}
        print(format_table(name, suite, records[name]))
        print()
    if len(policies) > 1:
        print(format_leaderboard(suite, records))
    command = "traveller benchmark " + shlex.join(
        [args.policies, "--suite", str(args.suite), "--workers", str(args.workers)])
    payload = {"suite": {"version": suite.version, "name": suite.name,
                         "file": str(suite.path.relative_to(config_dir().parent))
                         if suite.path.is_relative_to(config_dir().parent) else str(suite.path),
                         "sha256": suite.sha256, "description": suite.description},
               "command": command, "seconds": round(time.time() - started, 1),
               "policies": records}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n",
                            encoding="utf-8")
        print(f"match record: {args.out}")
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(format_leaderboard(suite, records) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m traveller_rl.benchmark``."""
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

