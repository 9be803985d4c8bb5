"""Exact aiming optimum for the ``range_*`` scenarios, checked against simulated battles.

For one rifleman against a passive target, value iteration over (target's STR/DEX/END, aim DM
held, actions used this round) gives the policy minimising the expected rounds to incapacitate
(see ``traveller_agents/aiming.py``). The script prints, per range band: the attack's DMs
without aim, the optimal number of aims before the first shot, the exact expected rounds, and
the mean rounds of ``--battles`` simulated battles played by that policy (with a 95% interval).

    python -m traveller_rl.recipes.optimum --battles 1000 --json runs/aiming_optimum.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import traveller_env
from traveller_agents.aiming import OptimalAimPolicy, problem_from_battle, solve
from traveller_env.policy import PassivePolicy
from traveller_rl.evaluation import play_battle

BANDS = ("short", "medium", "long", "extreme")


def simulate(scenario: str, battles: int, seed: int) -> list[float]:
    """Rounds to incapacitate in ``battles`` battles of the optimal shooter (NaN if never)."""
    env = traveller_env.raw_env(scenario)
    policies = {"blue_0": OptimalAimPolicy(), "red_0": PassivePolicy()}
    rounds = []
    for i in range(battles):
        battle = play_battle(env, policies, seed + i)
        rounds.append(float(battle.round) if battle.winner == "blue" else math.nan)
    return rounds


def optimum_table(battles: int = 0, seed: int = 0) -> list[dict]:
    """One row per band: exact optimum, and simulated check when ``battles > 0``."""
    rows = []
    for band in BANDS:
        scenario = f"range_{band}"
        battle = traveller_env.build_battle(scenario, seed=0)
        problem = problem_from_battle(battle, "blue_0", "red_0")
        sol = solve(problem)
        row = {"scenario": scenario, "distance_m": battle.distance_m("blue_0", "red_0"),
               "dm_without_aim": problem.base_dm,
               "optimal_aims_before_first_shot": sol.aims_before_first_shot(),
               "expected_rounds": sol.expected_rounds}
        if battles:
            r = np.array(simulate(scenario, battles, seed))
            ok = r[~np.isnan(r)]
            half = 1.96 * ok.std(ddof=1) / math.sqrt(len(ok))
            row.update(simulated_mean_rounds=float(ok.mean()), simulated_ci95=float(half),
                       simulated_battles=battles, never_incapacitated=int(np.isnan(r).sum()))
        rows.append(row)
    return rows


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1000,
                        help="simulated battles per band to check the exact values (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="first battle seed")
    parser.add_argument("--json", type=Path, default=None, help="write the table here")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Print the optimum table (and write it as JSON with ``--json``)."""
    args = build_parser().parse_args(argv)
    start = time.perf_counter()
    rows = optimum_table(args.battles, args.seed)
    print(f"{'band':<16}{'distance':>9}{'DM':>5}{'aims':>6}{'E[rounds]':>11}"
          f"{'simulated (95% CI)':>24}")
    for r in rows:
        sim = (f"{r['simulated_mean_rounds']:.3f} ± {r['simulated_ci95']:.3f}"
               if "simulated_mean_rounds" in r else "-")
        print(f"{r['scenario']:<16}{r['distance_m']:>8.1f}m{r['dm_without_aim']:>+5d}"
              f"{r['optimal_aims_before_first_shot']:>6d}{r['expected_rounds']:>11.3f}{sim:>24}")
    print(f"({time.perf_counter() - start:.1f} s)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
