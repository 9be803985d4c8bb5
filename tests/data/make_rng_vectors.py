"""Write tests/data/rng_vectors.json, the dice generator's shared test vectors.

Both implementations (``traveller_env/rules/rng.py`` and ``csrc/include/traveller/rng.hpp``) are
checked against this file by ``tests/core/test_core_rng.py``. Regenerate it only when the generator
is changed on purpose (which changes every seeded figure of a battle on it):
``python tests/data/make_rng_vectors.py``. The ``reference`` section is not generated: it holds
published outputs of PCG32 and SplitMix64 that anchor both implementations.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from traveller_env.rules.rng import Pcg32, battle_seed, derive_seed, mix64

OUT = Path(__file__).with_name("rng_vectors.json")

SEEDS = [0, 1, 2, 42, 123456789, 2**32, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]
N_U32, N_D6 = 8, 64
# Bounded draws (Pcg32.below / boundedrand): bounds with no rejection (powers of two), a tiny
# threshold (6, 2**32 - 1) and one where almost half the words are rejected (2**31 + 1).
BELOW_SEEDS = [0, 1, 42, 2**64 - 1]
BELOW_BOUNDS = [1, 2, 3, 6, 7, 10, 1000, 2**31, 2**31 + 1, 2**32 - 1]
N_BELOW = 16


def _hex(x: int) -> str:
    return f"0x{x:016x}"


def vectors() -> dict:
    """Every vector, computed by the Python implementation."""
    per_seed = []
    for seed in SEEDS:
        state, inc = Pcg32(seed).getstate()
        words = Pcg32(seed)
        per_seed.append({"seed": str(seed), "state": _hex(state), "inc": _hex(inc),
                         "u32": [f"0x{words.next_u32():08x}" for _ in range(N_U32)],
                         "d6": Pcg32(seed).roll_d6(N_D6)})
    # From state 0 the first output is 0, below the d6 threshold 4: that draw is rejected.
    inc = 1442695040888963407  # PCG's default increment
    words = Pcg32.from_state(0, inc)
    rejection = {"state": _hex(0), "inc": _hex(inc),
                 "u32": [f"0x{words.next_u32():08x}" for _ in range(5)],
                 "d6": Pcg32.from_state(0, inc).roll_d6(4)}
    below = [{"seed": str(seed), "n": str(n), "values": [g.below(n) for _ in range(N_BELOW)]}
             for seed in BELOW_SEEDS for n in BELOW_BOUNDS for g in [Pcg32(seed)]]
    # Seed 1, bound 2**31 + 1: the threshold (2**32 - n) % n is 2**31 - 1, so words below it
    # are rejected; the raw words and the values show which.
    n = 2**31 + 1
    words = Pcg32(1)
    below_rejection = {"seed": "1", "n": str(n), "threshold": str((2**32 - n) % n),
                       "u32": [f"0x{words.next_u32():08x}" for _ in range(12)],
                       "values": [g.below(n) for g in [Pcg32(1)] for _ in range(4)]}
    mixed = [0, 1, 2, 0x9E3779B97F4A7C15, 2**63 + 1, 2**64 - 1, 0x0123456789ABCDEF]
    return {
        "about": ("Shared test vectors of the dice generator (PCG-XSH-RR 64/32 seeded through "
                  "SplitMix64; d6 and below(n) by pcg32_boundedrand_r). 64-bit words are "
                  "strings: decimal for seeds and indices, hex for states and outputs. Written by "
                  "tests/data/make_rng_vectors.py; checked in both languages by "
                  "tests/core/test_core_rng.py."),
        "reference": {
            "pcg32_srandom_r_42_54_u32": {
                "about": ("pcg32_srandom_r(42, 54), then pcg32_random_r: the first outputs "
                          "printed by pcg-c-basic's pcg32-demo"),
                "initstate": "42", "initseq": "54",
                "u32": ["0xa15c02b7", "0x7b47f409", "0xba1d3330", "0x83d2f293", "0xbfa4784b",
                        "0xcbed606e"]},
            "splitmix64_1234567": {
                "about": "SplitMix64 (Vigna's splitmix64.c) seeded with 1234567: first outputs",
                "seed": "1234567",
                "outputs": ["6457827717110365317", "3203168211198807973", "9817491932198370423",
                            "4593380528125082431", "16408922859458223821"]},
        },
        "seeds": per_seed,
        "rejection": rejection,
        "below": below,
        "below_rejection": below_rejection,
        "mix64": [[_hex(w), _hex(mix64(w))] for w in mixed],
        "derive_seed": [[str(s), str(i), _hex(derive_seed(s, i))]
                        for s in (0, 1, 2**63 + 1, 2**64 - 1) for i in (0, 1, 2, 1000, 2**64 - 1)],
        "battle_seed": [[str(s), str(r), str(e), _hex(battle_seed(s, r, e))]
                        for s in (0, 7, 2**63 + 1) for r in (0, 1, 1023) for e in (0, 1, 5)],
    }


def dumps(data: dict) -> str:
    """JSON with each innermost list on one line."""
    text = json.dumps(data, indent=1)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: re.sub(r"\s*\n\s*", " ", m.group(0))
                  .replace("[ ", "[").replace(" ]", "]"), text)


if __name__ == "__main__":
    OUT.write_text(dumps(vectors()) + "\n")
    print(f"wrote {OUT}")
