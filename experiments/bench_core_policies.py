"""Microseconds per decision of the in-core scripted policies (``_core.Policy``) against their
Python versions, on the same battles.

Battles of each scenario are played for each matchup (default ``rush`` against ``marksman`` and
``tactician`` against ``marksman``; both side assignments, alternating with the seed), seeds
0, 1, ...; the in-core policies make exactly the Python policies' choices
(``tests/core/test_core_policies.py``), so both play identical battles and the ratio is like for
like. Time counted: inside ``act`` only (the core's is timed in C++ around ``CorePolicy::act`` by
``_core.play_policies``; the Python one around ``policy.act`` on the Python engine,
``Dice(seed, generator="pcg")``). The core's per-thread caches (path fields around walls, attack
outcomes) start cold in the first repeat, which is reported apart; the figure quoted is the
median over the later repeats.

    python -m experiments.bench_core_policies --battles 200 --python-battles 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main", "run"]

MATCHUPS = ("rush-marksman", "tactician-marksman")


def _matchup(text: str) -> tuple[str, str]:
    """``"rush-marksman"`` -> ``("rush", "marksman")``: two different in-core policies."""
    from traveller_env.core.vector import CORE_POLICIES

    parts = text.split("-")
    if len(parts) != 2 or parts[0] == parts[1] or any(p not in CORE_POLICIES for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a matchup is two different in-core policies joined by '-' (e.g. "
            f"rush-marksman); in-core policies: {', '.join(CORE_POLICIES)}")
    return parts[0], parts[1]


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="bench_core_policies", description=__doc__.split("\n\n")[0])
    p.add_argument("--battles", type=int, default=200,
                   help="core battles per scenario, matchup and repeat (default 200)")
    p.add_argument("--python-battles", type=int, default=20,
                   help="battles per scenario and matchup for the Python reference (default 20)")
    p.add_argument("--repeats", type=int, default=5, help="core repeats (default 5)")
    p.add_argument("--scenarios", nargs="+", default=["squad", "duel"])
    p.add_argument("--matchups", nargs="+", type=_matchup, default=[_matchup(m) for m in MATCHUPS],
                   help=f"policy pairs, e.g. rush-marksman (default: {' '.join(MATCHUPS)})")
    p.add_argument("--json", type=Path, default=Path("runs/bench_core_policies.json"))
    return p


def _sides(pair: tuple[str, str], seed: int) -> tuple[str, str]:
    return pair if seed % 2 == 0 else pair[::-1]


def _core_pass(name: str, pair: tuple[str, str], battles: int) -> dict[str, tuple[int, float]]:
    """One pass over the battles on the core: policy -> (decisions, seconds in act)."""
    from traveller_env import core
    from traveller_env.core.engine import CoreBattle
    from traveller_env.rules.rng import derive_seed

    c = core.require()
    out = {p: [0, 0.0] for p in pair}
    for seed in range(battles):
        cb = CoreBattle(name, seed, record_events=False)
        sides = _sides(pair, seed)
        side_of = [0 if a.startswith(cb.side_names[0] + "_") else 1 for a in cb.ids]
        names = [sides[s] for s in side_of]
        pols = [c.Policy(n, derive_seed(seed, 1 + i)) for i, n in enumerate(names)]
        decisions, seconds = c.play_policies(cb.handle, pols)
        for n, d, s in zip(names, decisions, seconds, strict=True):
            out[n][0] += d
            out[n][1] += s
    return {p: (int(d), float(s)) for p, (d, s) in out.items()}


def _python_pass(name: str, pair: tuple[str, str], battles: int) -> dict[str, tuple[int, float]]:
    """The same battles with the Python policies on the Python engine."""
    from traveller_agents.registry import make_policy
    from traveller_env.encoding import ActionCatalogue
    from traveller_env.rules.dice import Dice
    from traveller_env.rules.rng import derive_seed
    from traveller_env.scenario import build_battle, load_scenario
    from traveller_env.view import BattleView

    class _Env:
        def __init__(self, battle: Any, labels: list[str]) -> None:
            self.view = BattleView(battle)
            self.action_labels = labels

    sc = load_scenario(name)
    out = {p: [0, 0.0] for p in pair}
    for seed in range(battles):
        b = build_battle(sc, dice=Dice(seed, generator="pcg"))
        cat = ActionCatalogue(b)
        env = _Env(b, cat.labels)
        sides = _sides(pair, seed)
        ids = [c.id for c in b.combatants]
        pols = {a: (make_policy(sides[b.by_id[a].side], seed=derive_seed(seed, 1 + i)),
                    sides[b.by_id[a].side]) for i, a in enumerate(ids)}
        while not b.done:
            agent = b.current_agent
            mask = cat.mask(b)
            pol, n = pols[agent]
            t0 = time.perf_counter()
            i = int(pol.act(None, mask, agent, env))
            out[n][1] += time.perf_counter() - t0
            out[n][0] += 1
            b.apply(cat.actions[i])
    return {p: (int(d), float(s)) for p, (d, s) in out.items()}


def run(scenarios: list[str], battles: int, python_battles: int, repeats: int,
        matchups: list[tuple[str, str]] | None = None) -> dict:
    """Every figure, by scenario, matchup and policy."""
    matchups = matchups or [_matchup(m) for m in MATCHUPS]
    result: dict[str, Any] = {"battles": battles, "python_battles": python_battles,
                              "repeats": repeats, "scenarios": {}}
    for name in scenarios:
        by_matchup = {}
        for pair in matchups:
            passes = [_core_pass(name, pair, battles) for _ in range(max(2, repeats))]
            python = _python_pass(name, pair, python_battles)
            rows = {}
            for p in pair:
                us = [1e6 * s / d for d, s in (ps[p] for ps in passes[1:])]
                py_d, py_s = python[p]
                core_us = statistics.median(us)
                py_us = 1e6 * py_s / py_d
                rows[p] = {"decisions_per_pass": passes[0][p][0],
                           "core_us_per_act": round(core_us, 3),
                           "core_us_per_act_repeats": [round(u, 3) for u in us],
                           "core_us_per_act_cold": round(1e6 * passes[0][p][1] / passes[0][p][0],
                                                         3),
                           "core_decisions_per_s": round(1e6 / core_us),
                           "python_decisions": py_d, "python_us_per_act": round(py_us, 1),
                           "python_decisions_per_s": round(1e6 / py_us, 1),
                           "speedup": round(py_us / core_us, 1)}
            by_matchup["-".join(pair)] = rows
        result["scenarios"][name] = by_matchup
    return result


def main(argv: list[str] | None = None) -> dict:
    """Run and print the table; write the JSON."""
    args = build_parser().parse_args(argv)
    result = run(args.scenarios, args.battles, args.python_battles, args.repeats, args.matchups)
    print("| scenario | matchup | policy | core µs/act (median) | cold first pass "
          "| core decisions/s | Python µs/act | Python decisions/s | x |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, by_matchup in result["scenarios"].items():
        for matchup, rows in by_matchup.items():
            for p, r in rows.items():
                print(f"| {name} | {matchup} | {p} | {r['core_us_per_act']:.2f} "
                      f"| {r['core_us_per_act_cold']:.2f} | {r['core_decisions_per_s']:,} "
                      f"| {r['python_us_per_act']:.1f} | {r['python_decisions_per_s']:,.0f} "
                      f"| {r['speedup']:.0f} |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
