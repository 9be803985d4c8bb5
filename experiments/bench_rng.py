"""How fast the shared dice generator rolls, against Python's own generators, in one run.

Measures nanoseconds per d6 for: ``random.Random.randint(1, 6)`` (the reference), the engine's
current Mersenne Twister ``Dice.roll``, the shared generator in pure Python (``Pcg32``: one die
per call, and in bulk) and through ``Dice(seed, generator="pcg")``, and the compiled core's
``rng_fill`` when it is built. Then whole battles (random legal actions) on each generator, to
show what switching the engine would cost. Medians of ``--repeats`` timings of this process's
CPU time (``time.process_time_ns``), so that other work on a shared machine inflates them less
than wall-clock time would.

    python experiments/bench_rng.py [--json runs/bench_rng.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from traveller_env import core
from traveller_env.rules.dice import Dice
from traveller_env.rules.rng import Pcg32
from traveller_env.scenario import build_battle


def per_die_ns(fn: Callable[[], object], dice_per_call: int, calls: int, repeats: int) -> float:
    """Median nanoseconds per die of ``calls`` calls of ``fn`` (each rolling ``dice_per_call``)."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time_ns()
        for _ in range(calls):
            fn()
        times.append((time.process_time_ns() - t0) / (calls * dice_per_call))
    return statistics.median(times)


def battle_steps_per_s(generator: str, battles: int, repeats: int) -> float:
    """Median decisions per second over ``battles`` squad battles with random legal actions."""
    rates = []
    for _ in range(repeats):
        steps, t0 = 0, time.process_time()
        for seed in range(battles):
            battle = build_battle("squad", dice=Dice(seed, generator=generator))
            pick = random.Random(seed)
            while not battle.done:
                battle.apply(pick.choice(battle.legal_actions()))
                steps += 1
        rates.append(steps / (time.process_time() - t0))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    """Time the generators, print the table, write ``--json``."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m experiments.bench_rng",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings per figure (median)")
    parser.add_argument("--battles", type=int, default=30, help="squad battles per timing")
    parser.add_argument("--json", type=Path, default=Path("runs/bench_rng.json"),
                        help="where to write the figures")
    args = parser.parse_args(argv)
    n, r = args.calls, args.repeats

    rnd = random.Random(1)
    mt, pcg_dice, pcg = Dice(1, generator="mt"), Dice(1, generator="pcg"), Pcg32(1)
    ns = {
        "random.Random.randint(1, 6)": per_die_ns(lambda: rnd.randint(1, 6), 1, n, r),
        "Dice(generator='mt').roll(1)": per_die_ns(lambda: mt.roll(1), 1, n, r),
        "Dice(generator='mt').roll(2)": per_die_ns(lambda: mt.roll(2), 2, n, r),
        "Pcg32.d6()": per_die_ns(pcg.d6, 1, n, r),
        "Pcg32.roll_d6(1)": per_die_ns(lambda: pcg.roll_d6(1), 1, n, r),
        "Pcg32.roll_d6(1000)": per_die_ns(lambda: pcg.roll_d6(1000), 1000, max(n // 1000, 1), r),
        "Dice(generator='pcg').roll(1)": per_die_ns(lambda: pcg_dice.roll(1), 1, n, r),
        "Dice(generator='pcg').roll(2)": per_die_ns(lambda: pcg_dice.roll(2), 2, n, r),
    }
    if core.available():
        c = core.require()
        seeds = np.arange(1024, dtype=np.uint64)
        out = np.empty((1024, 1024), dtype=np.int8)
        ns["_core.rng_fill (1024 x 1024)"] = per_die_ns(lambda: c.rng_fill(seeds, out),
                                                        out.size, 5, r)
    ref = ns["random.Random.randint(1, 6)"]
    print(f"{'ns per d6':>10}  {'vs randint':>10}  generator")
    for name, v in ns.items():
        print(f"{v:10.1f}  {v / ref:10.3f}  {name}")

    rates = {g: battle_steps_per_s(g, args.battles, max(r // 2, 1)) for g in ("mt", "pcg")}
    print(f"\nsquad battles, random legal actions: mt {rates['mt']:,.0f} decisions/s, "
          f"pcg {rates['pcg']:,.0f} decisions/s (pcg/mt = {rates['pcg'] / rates['mt']:.3f})")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "ns_per_d6": ns, "ratio_to_randint": {k: v / ref for k, v in ns.items()},
        "squad_decisions_per_s": rates, "pcg_over_mt": rates["pcg"] / rates["mt"],
        "calls": n, "repeats": r, "battles": args.battles,
        "core": core.status()}, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
