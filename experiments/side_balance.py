"""Does a scenario favour a side? One in-core scripted policy plays every seat of both sides.

With the same policy everywhere, a fair scenario gives each side the same win rate; a gap
larger than the intervals is the map's (or the rosters') doing, not a learner's. The battles
run inside the compiled core (``_core.play_policies``: the in-core policies choose exactly as
the Python ones, ``tests/test_core_policies.py``), battle seeds ``--seed``, ``--seed`` + 1, ...;
seat ``i`` of battle ``s`` plays with policy seed ``derive_seed(s, 1 + i)``.

    python -m experiments.side_balance --scenario squad --policy tactician --battles 1000 \\
        --seed 100000
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main", "side_balance"]


def side_balance(scenario: str, policy: str, battles: int, seed: int) -> dict[str, Any]:
    """Wins per side (and draws) of ``battles`` battles with ``policy`` on every seat, each
    with its share and Wilson 95% interval. ``ValueError`` naming the argument for a policy
    the core does not run or a battle count below 1."""
    from agents.evaluation import wilson_interval
    from traveller_env import core
    from traveller_env.core.engine import CoreBattle
    from traveller_env.core.vector import CORE_POLICIES
    from traveller_env.rules.rng import derive_seed

    if policy not in CORE_POLICIES:
        raise ValueError(f"--policy {policy!r}: an in-core policy is needed; in-core policies: "
                         f"{', '.join(CORE_POLICIES)}")
    if battles < 1:
        raise ValueError(f"--battles must be at least 1, got {battles}")
    c = core.require()
    counts: dict[str, int] = {}
    sides: list[str] = []
    for s in range(seed, seed + battles):
        battle = CoreBattle(scenario, s, record_events=False)
        sides = list(battle.side_names)
        pols = [c.Policy(policy, derive_seed(s, 1 + i)) for i in range(len(battle.ids))]
        c.play_policies(battle.handle, pols)
        key = battle.winner or "draw"
        counts[key] = counts.get(key, 0) + 1

    def share(k: int) -> dict[str, Any]:
        lo, hi = wilson_interval(k, battles)
        return {"count": k, "rate": k / battles, "ci95": [lo, hi]}

    return {"scenario": scenario, "policy": policy, "battles": battles, "seed": seed,
            "wins": {side: share(counts.get(side, 0)) for side in sides},
            "draws": share(counts.get("draw", 0))}


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(prog="side_balance", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="squad", help="scenario name or YAML (default: squad)")
    p.add_argument("--policy", default="tactician",
                   help="the in-core policy on every seat (default: tactician)")
    p.add_argument("--battles", type=int, default=1000, help="battles (default: 1000)")
    p.add_argument("--seed", type=int, default=100_000, help="first battle seed (default: "
                                                              "100000)")
    p.add_argument("--json", type=Path, default=None, help="write the result here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = build_parser().parse_args(argv)
    try:
        result = side_balance(args.scenario, args.policy, args.battles, args.seed)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    for side, w in result["wins"].items():
        lo, hi = w["ci95"]
        print(f"{side:<10} wins {w['count']:>6}  {w['rate']:.3f} ({lo:.3f}-{hi:.3f})")
    d = result["draws"]
    print(f"{'draws':<10}      {d['count']:>6}  {d['rate']:.3f}")
    if args.json:
        from experiments.train_common import write_json

        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
