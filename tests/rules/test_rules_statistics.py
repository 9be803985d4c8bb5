"""Statistical tests: many seeded battles and checks through the engine's real code paths,
compared with the exact 2D6 probabilities.

Tolerance: every observed frequency must lie within ``TOL_SE`` = 4 standard errors
(sqrt(p(1-p)/N)) of the exact probability, and every observed mean within 4 standard errors of
the exact mean. The seeds are fixed, so the tests are deterministic; a correct engine would fail a
single 4-SE comparison with probability about 6e-5.

What they can detect: a shift of 1/36 alone is not enough near p = 1/2, where it is only 3.0 SE
at N = 3000 (the checks) and 3.5 SE at N = 4000 (the attacks). But a target number or DM off by
one moves P(2D >= t) by the 2D probability of the boundary sum, which is large where p is near
1/2 (5/36 or 6/36: 15-18 SE) and small only where p is small too: the smallest shift, 1/36
between p = 1/36 and 0 (or 35/36 and 1), is 9.3 SE at N = 3000 (at the attacks' bands the
smallest is 2/36 at p = 3/36, 12.7 SE). Every off-by-one that changes the probability at all is
therefore over 9 SE away, and a wrong range band (a DM off by 1 or 2) too. Off-by-ones that
change nothing cannot be seen: a check at DM -6 (2D >= 14, impossible either way), one step
harder at DM -5, one step easier at DM +6.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from conftest import fighter, scenario

from traveller_env.rules.checks import roll_check
from traveller_env.rules.dice import Dice
from traveller_env.scenario import build_battle, load_scenario

TOL_SE = 4.0

# Exact distribution of 2D.
PMF_2D = {s: sum(1 for a in range(1, 7) for b in range(1, 7) if a + b == s) / 36
          for s in range(2, 13)}
MEAN_2D, SD_2D = 7.0, math.sqrt(35 / 6)


def p_2d_at_least(target: int) -> float:
    """Exact P(2D >= target)."""
    return sum(p for s, p in PMF_2D.items() if s >= target)


def within(observed: float, expected: float, n: int) -> bool:
    se = math.sqrt(max(expected * (1 - expected), 1e-12) / n)
    return abs(observed - expected) <= TOL_SE * se


# autopistol: Range 10 m. Every distance (in 1.5 m squares) of each band is used in turn:
# 1 sq = 1.5 m (<= 2.5: DM +1); 2-6 sq = 3-9 m (<= 10: +0); 7-13 sq = 10.5-19.5 m (<= 20: -2);
# 14-26 sq = 21-39 m (<= 40: -4). The hit probability is the same throughout a band.
BANDS = {1: range(1, 2), 0: range(2, 7), -2: range(7, 14), -4: range(14, 27)}
N_ATTACKS = 4000


def _hit_rate(dm: int, aim: int = 0) -> tuple[float, int]:
    scs = [load_scenario(scenario([fighter((0, 0), weapon="autopistol")],
                                  [fighter((squares, 0))], width=28, height=3))
           for squares in BANDS[dm]]
    hits = 0
    for seed in range(N_ATTACKS):
        b = build_battle(scs[seed % len(scs)], seed=1000 + seed)
        if b.decision.agent != "blue_0":
            b.apply("end_turn")
        for _ in range(aim):
            b.apply("aim:red_0")
        b.apply("attack:red_0")
        e = next(e for e in reversed(b.events) if e["type"] == "attack")
        assert e["dms"]["range"] == dm, e["range_m"]
        assert e["total"] == sum(e["roll"]) + sum(e["dms"].values())
        assert e["hit"] is (e["total"] >= 8)
        if e["hit"]:
            assert len(e["damage_roll"]) == 3
            assert e["damage"] == max(0, sum(e["damage_roll"]) - 3 + e["effect"])
        hits += e["hit"]
    return hits / N_ATTACKS, N_ATTACKS


@pytest.mark.parametrize("dm", sorted(BANDS, reverse=True))
def test_r5_1_hit_probability_per_range_band(dm):
    # Gun Combat 1, DEX 7 (DM 0): hit when 2D + 1 + range DM >= 8.
    rate, n = _hit_rate(dm)
    expected = p_2d_at_least(8 - 1 - dm)
    assert within(rate, expected, n), (dm, rate, expected)


def test_r4_3_hit_probability_with_aim_at_long_range():
    # One aim (+1) at 30 m (-4): hit when 2D + 1 - 4 + 1 >= 8, i.e. 2D >= 10 (6/36).
    rate, n = _hit_rate(-4, aim=1)
    assert within(rate, p_2d_at_least(10), n), rate


N_INIT = 6000


def test_r3_1_initiative_distribution():
    # blue_0 DEX 12 (DM +2), red_0 DEX 4 (DM -1): Initiative = 2D + DEX DM.
    sc = load_scenario(scenario([fighter((0, 0), chars={"DEX": 12})],
                                [fighter((5, 0), chars={"DEX": 4})]))
    seen = {"blue_0": Counter(), "red_0": Counter()}
    for seed in range(N_INIT):
        b = build_battle(sc, seed=seed)
        for c in b.combatants:
            seen[c.id][c.initiative] += 1
    for cid, dm in (("blue_0", 2), ("red_0", -1)):
        counts = seen[cid]
        assert set(counts) <= {s + dm for s in PMF_2D}
        for s, p in PMF_2D.items():
            assert within(counts[s + dm] / N_INIT, p, N_INIT), (cid, s + dm, counts[s + dm])
        mean = sum(v * k for v, k in counts.items()) / N_INIT
        assert abs(mean - (MEAN_2D + dm)) <= TOL_SE * SD_2D / math.sqrt(N_INIT), (cid, mean)


def test_r3_1_initiative_decides_who_acts_first():
    # Equal DEX: blue_0 acts first when its 2D is higher, or on a tie (scenario order, R2.5).
    sc = load_scenario(scenario([fighter((0, 0))], [fighter((5, 0))]))
    first = 0
    for seed in range(N_INIT):
        b = build_battle(sc, seed=seed)
        first += b.decision.agent == "blue_0"
    p_tie = sum(p * p for p in PMF_2D.values())
    expected = (1 - p_tie) / 2 + p_tie
    assert within(first / N_INIT, expected, N_INIT), first / N_INIT


@pytest.mark.parametrize("dm", range(-6, 7))
def test_r1_2_check_success_probability(dm):
    dice, n = Dice(100 + dm), 3000
    successes = 0
    for _ in range(n):
        roll, total, effect = roll_check(dice, {"dm": dm})
        assert total == sum(roll) + dm and effect == total - 8
        successes += effect >= 0
    assert within(successes / n, p_2d_at_least(8 - dm), n), (dm, successes / n)


def test_r1_1_dice_are_fair_six_sided():
    d, n = Dice(2024), 30000
    faces = Counter(x for _ in range(n // 3) for x in d.roll(3))
    assert set(faces) == {1, 2, 3, 4, 5, 6}
    for f in range(1, 7):
        assert within(faces[f] / n, 1 / 6, n), (f, faces[f])
