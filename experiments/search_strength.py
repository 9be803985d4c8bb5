"""The search NPC's strength and cost against ``tactician`` on held-out ``gen:squad`` battles.

For each policy named (e.g. ``search-4 search-16``), battle ``i`` plays the scenario
``gen:squad@<first + i // 2>`` with battle seed ``first + i // 2``, the searching policy on
side ``i % 2`` (so every scenario is played from both sides) and the opponent (default
``tactician``) on the other; every seat gets its own policy seed. Battles are played in the
compiled core (``_core.play_policies``, one thread), which also times each seat's ``act``: the
ms per decision reported is the searching side's time inside ``act`` over its decisions (the
cost on one core; a decision where every candidate agrees costs almost nothing, so it is the
mean over all of the side's decisions, with the searched decisions' share beside it). The win
rate counts a draw as half, with its Wilson 95% interval.

Resumable: each policy's battles are appended to ``<out>`` (JSON, rewritten after every
``--chunk`` battles); a rerun with the same ``--first``/``--opponent`` continues where it
stopped and plays only the missing battles, up to ``--battles``.

    python -m experiments.search_strength --policies search-1 search-4 search-16 \
        --battles 200 --out results/search_pilot.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main", "play_battle", "run", "summarise"]


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="search_strength", description=__doc__.split("\n\n")[0])
    p.add_argument("--policies", nargs="+", required=True,
                   help="in-core policies to measure (e.g. search-4 search-16)")
    p.add_argument("--opponent", default="tactician", help="the in-core opponent (tactician)")
    p.add_argument("--battles", type=int, default=200, help="battles per policy (default 200)")
    p.add_argument("--first", type=int, default=1000,
                   help="the first gen:squad seed (default 1000: the benchmark's held-out range)")
    p.add_argument("--chunk", type=int, default=10, help="battles between saves (default 10)")
    p.add_argument("--out", type=Path, default=Path("runs/search_strength.json"))
    return p


def play_battle(policy: str, opponent: str, first: int, index: int) -> dict[str, Any]:
    """Battle ``index`` of ``policy`` against ``opponent`` (see the module docstring)."""
    from traveller_env.core import require
    from traveller_env.core.engine import CoreBattle
    from traveller_env.rules.rng import derive_seed
    from traveller_env.scenario import load_scenario

    core = require()
    seed = first + index // 2
    side = index % 2
    battle = CoreBattle(load_scenario(f"gen:squad@{seed}"), seed=seed, record_events=False)
    sides = [battle.side_names.index(cid.rsplit("_", 1)[0]) for cid in battle.ids]
    policies = [core.Policy(policy if s == side else opponent, derive_seed(seed, 1 + k))
                for k, s in enumerate(sides)]
    decisions, seconds = core.play_policies(battle.handle, policies)
    winner = battle.handle.winner
    return {"index": index, "seed": seed, "side": side,
            "result": 0.5 if winner < 0 else float(winner == side),
            "decisions": sum(d for d, s in zip(decisions, sides, strict=True) if s == side),
            "seconds": sum(t for t, s in zip(seconds, sides, strict=True) if s == side),
            "rounds": battle.handle.round}


def summarise(games: list[dict[str, Any]]) -> dict[str, Any]:
    """Win rate (draws half) with its Wilson 95% interval, and ms per decision."""
    from traveller_rl.evaluation import wilson_interval

    n = len(games)
    score = sum(g["result"] for g in games)
    low, high = wilson_interval(score, n)
    decisions = sum(g["decisions"] for g in games)
    seconds = sum(g["seconds"] for g in games)
    return {"battles": n, "win_rate": score / n if n else 0.0, "ci95": [low, high],
            "wins": sum(g["result"] == 1.0 for g in games),
            "draws": sum(g["result"] == 0.5 for g in games),
            "ms_per_decision": 1000.0 * seconds / decisions if decisions else 0.0,
            "decisions": decisions}


def run(policies: list[str], opponent: str, battles: int, first: int, chunk: int,
        out: Path) -> dict[str, Any]:
    """Play what ``out`` lacks, saving as it goes; returns the results written."""
    data: dict[str, Any] = {"opponent": opponent, "first": first, "scenarios": "gen:squad",
                            "policies": {}}
    if out.is_file():
        old = json.loads(out.read_text())
        if old.get("opponent") != opponent or old.get("first") != first:
            raise SystemExit(f"--out {out}: written with another --opponent/--first "
                             f"({old.get('opponent')}, {old.get('first')}); use another --out")
        data["policies"] = old.get("policies", {})
    out.parent.mkdir(parents=True, exist_ok=True)
    for policy in policies:
        entry = data["policies"].setdefault(policy, {"games": []})
        games = entry["games"]
        t0 = time.time()
        while len(games) < battles:
            for _ in range(min(chunk, battles - len(games))):
                games.append(play_battle(policy, opponent, first, len(games)))
            entry["summary"] = summarise(games)
            out.write_text(json.dumps(data, indent=1) + "\n")
        entry["summary"] = summarise(games)
        s = entry["summary"]
        print(f"{policy} vs {opponent}: {s['battles']} battles, win rate {s['win_rate']:.3f} "
              f"({s['ci95'][0]:.3f}-{s['ci95'][1]:.3f}), {s['ms_per_decision']:.2f} ms/decision "
              f"[{time.time() - t0:.0f} s this run]", flush=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    """Run the measurement (module docstring)."""
    args = build_parser().parse_args(argv)
    from traveller_env.core import require

    for flag, names in (("--policies", args.policies), ("--opponent", [args.opponent])):
        for name in names:
            try:
                require().Policy(name, 0)
            except ValueError as exc:
                raise SystemExit(f"{flag}: {exc}") from None
    if args.battles < 1 or args.chunk < 1:
        raise SystemExit("--battles and --chunk must be at least 1")
    run(args.policies, args.opponent, args.battles, args.first, args.chunk, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
