"""Differential fuzzing of the compiled core against the Python engine.

Plays ``--battles`` fuzzed scenarios (the hypothesis strategy of ``tests/rules/test_fuzz.py``:
``valid_scenarios``, half of them crowded small maps with weak combatants so that battles see
knockouts, tied groups and leadership in use) plus every built-in scenario with several seeds,
each through both engines with the same seed and the same random legal actions
(``traveller_env.core.differential.play_both``), and counts divergences (any differing event,
mask, decider, dice state, refusal reason or result). Prints the first few divergences in full
and writes a JSON summary.

    python tests/diff_backends.py --battles 10000 --json runs/diff_backends.json

Needs the dev extra (hypothesis) and the compiled core.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main", "run"]



def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(allow_abbrev=False,
                                prog="diff_backends", description=__doc__.split("\n\n")[0])
    p.add_argument("--battles", type=int, default=10_000, help="fuzzed battles (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    p.add_argument("--builtin-seeds", type=int, default=20,
                   help="seeds per built-in scenario (default 20)")
    p.add_argument("--json", type=Path, default=Path("runs/diff_backends.json"),
                   help="summary file (default runs/diff_backends.json)")
    p.add_argument("--show", type=int, default=5, help="divergences printed in full (default 5)")
    return p


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Play the battles; return the summary."""
    from fuzz_scenarios import valid_scenarios  # tests/ is the script's folder, so on sys.path
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    from traveller_env.core.differential import Divergence, play_both
    from traveller_env.scenario import builtin_scenarios
    divergences: list[str] = []
    counts = {"battles": 0, "decisions": 0}

    def one(sc: Any, seed: int) -> None:
        try:
            counts["decisions"] += play_both(sc, seed)
        except Divergence as exc:
            divergences.append(str(exc) + f"\n  scenario: {json.dumps(sc, default=str)[:2000]}")
        counts["battles"] += 1

    start = time.perf_counter()
    for name in builtin_scenarios():
        for seed in range(args.builtin_seeds):
            one(name, seed)
    builtin = counts["battles"]
    common = dict(deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
    half = args.battles // 2

    @hypothesis_seed(args.seed)
    @settings(max_examples=args.battles - half, **common)
    @given(sc=valid_scenarios(), seed=st.integers(0, 2**64 - 1))
    def wide(sc: dict, seed: int) -> None:
        one(sc, seed)

    @hypothesis_seed(args.seed + 1)
    @settings(max_examples=half, **common)
    @given(sc=valid_scenarios(max_side=4, max_map=6, max_char=6), seed=st.integers(0, 2**64 - 1))
    def crowded(sc: dict, seed: int) -> None:
        one(sc, seed)

    wide()
    crowded()
    summary = {"builtin_battles": builtin, "fuzzed_battles": counts["battles"] - builtin,
               "decisions": counts["decisions"], "divergences": len(divergences),
               "seconds": round(time.perf_counter() - start, 1), "hypothesis_seed": args.seed,
               "first_divergences": divergences[:args.show]}
    return summary


def main(argv: list[str] | None = None) -> int:
    """Run and report; exit status 1 on any divergence."""
    args = build_parser().parse_args(argv)
    summary = run(args)
    for d in summary["first_divergences"]:
        print(d, "\n")
    print(f"{summary['builtin_battles']} built-in + {summary['fuzzed_battles']} fuzzed battles, "
          f"{summary['decisions']} decisions: {summary['divergences']} divergences "
          f"({summary['seconds']} s)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if summary["divergences"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
