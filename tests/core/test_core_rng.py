"""The shared dice generator, checked in both languages against tests/data/rng_vectors.json.

``impl`` runs each test once on the Python generator (``traveller_env.rules.rng``) and once on
the compiled core's (``traveller_env._core``). The compiled half needs the core built (``make
build``); without it those tests fail with the reason, never silently pass.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from traveller_env import core
from traveller_env.rules import rng

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "rng_vectors.json").read_text())
GOLDEN = 0x9E3779B97F4A7C15

# Chi-square critical values at p = 0.001 (the stated tolerance: a fixed-seed sample this far
# from uniform would happen once in a thousand samples of a perfect generator).
CHI2_P001 = {5: 20.515, 6: 22.458, 35: 66.619}


def _python() -> SimpleNamespace:
    return SimpleNamespace(name="python", Pcg32=rng.Pcg32, mix64=rng.mix64,
                           derive_seed=rng.derive_seed, battle_seed=rng.battle_seed,
                           rolls=lambda seed, n: rng.Pcg32(seed).roll_d6(n))


def _compiled() -> SimpleNamespace:
    c = core.require()
    return SimpleNamespace(name="core", Pcg32=c.Pcg32, mix64=c.mix64, derive_seed=c.derive_seed,
                           battle_seed=c.battle_seed, rolls=c.rng_rolls)


@pytest.fixture(params=["python", "core"])
def impl(request) -> SimpleNamespace:
    return _python() if request.param == "python" else _compiled()


def chi2(counts: Counter, cells: list, total: int) -> float:
    expected = total / len(cells)
    return sum((counts.get(c, 0) - expected) ** 2 / expected for c in cells)


# --- vectors ------------------------------------------------------------------------------------

def test_pcg32_matches_the_published_reference_outputs(impl):
    ref = VECTORS["reference"]["pcg32_srandom_r_42_54_u32"]
    g = impl.Pcg32.from_init(int(ref["initstate"]), int(ref["initseq"]))
    assert [g.next_u32() for _ in ref["u32"]] == [int(x, 16) for x in ref["u32"]]


def test_mix64_gives_the_published_splitmix64_outputs(impl):
    ref = VECTORS["reference"]["splitmix64_1234567"]
    seed = int(ref["seed"])
    got = [impl.mix64((seed + (i + 1) * GOLDEN) % 2**64) for i in range(len(ref["outputs"]))]
    assert got == [int(x) for x in ref["outputs"]]


@pytest.mark.parametrize("case", VECTORS["seeds"], ids=lambda c: c["seed"])
def test_seeding_words_and_dice_match_the_vectors(impl, case):
    seed = int(case["seed"])
    assert impl.Pcg32(seed).getstate() == (int(case["state"], 16), int(case["inc"], 16))
    g = impl.Pcg32(seed)
    assert [g.next_u32() for _ in case["u32"]] == [int(x, 16) for x in case["u32"]]
    assert impl.rolls(seed, len(case["d6"])) == case["d6"]
    g = impl.Pcg32(seed)
    assert [g.d6() for _ in case["d6"]] == case["d6"]
    g = impl.Pcg32(seed)
    assert g.roll_d6(10) + g.roll_d6(len(case["d6"]) - 10) == case["d6"]


def test_a_draw_below_the_threshold_is_rejected_and_redrawn(impl):
    case = VECTORS["rejection"]
    state, inc = int(case["state"], 16), int(case["inc"], 16)
    words = [int(x, 16) for x in case["u32"]]
    assert words[0] < 4  # (2**32 - 6) % 6: this draw must not become a die
    g = impl.Pcg32.from_state(state, inc)
    assert [g.next_u32() for _ in words] == words
    assert impl.Pcg32.from_state(state, inc).roll_d6(len(case["d6"])) == case["d6"]
    assert case["d6"][:2] == [words[1] % 6 + 1, words[2] % 6 + 1]


@pytest.mark.parametrize("case", VECTORS["below"], ids=lambda c: f"{c['seed']}-{c['n']}")
def test_bounded_draws_match_the_vectors(impl, case):
    g = impl.Pcg32(int(case["seed"]))
    assert [g.below(int(case["n"])) for _ in case["values"]] == case["values"]


def test_a_bounded_draw_below_its_threshold_is_rejected_and_redrawn(impl):
    case = VECTORS["below_rejection"]
    n, threshold = int(case["n"]), int(case["threshold"])
    assert threshold == (2**32 - n) % n
    words = [int(x, 16) for x in case["u32"]]
    kept = [w % n for w in words if w >= threshold]
    assert any(w < threshold for w in words[:3])  # the vector does exercise a rejection
    g = impl.Pcg32(int(case["seed"]))
    assert [g.below(n) for _ in case["values"]] == case["values"] == kept[:len(case["values"])]


def test_below_six_is_the_die_stream(impl):
    g, dice = impl.Pcg32(2024), impl.Pcg32(2024)
    assert [g.below(6) + 1 for _ in range(200)] == dice.roll_d6(200)


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-1, ValueError),
                                          (2**32, ValueError), (True, TypeError),
                                          (1.0, TypeError), (None, TypeError)], ids=repr)
def test_bad_bounds_are_refused_with_the_same_message_in_both_languages(n, error):
    c = core.require()
    with pytest.raises(error) as py_err:
        rng.Pcg32(1).below(n)
    with pytest.raises(error) as c_err:
        c.Pcg32(1).below(n)
    assert str(py_err.value) == str(c_err.value)
    assert str(py_err.value).startswith("n must be an int in [1, 2**32 - 1], got ")


def test_compiled_bounded_draws_are_uniform():
    g = core.require().Pcg32(77)
    draws = Counter(g.below(7) for _ in range(70_000))
    assert chi2(draws, list(range(7)), 70_000) < CHI2_P001[6]


def test_mix_and_stream_seeds_match_the_vectors(impl):
    for x, out in VECTORS["mix64"]:
        assert impl.mix64(int(x, 16)) == int(out, 16)
    for seed, index, out in VECTORS["derive_seed"]:
        assert impl.derive_seed(int(seed), int(index)) == int(out, 16)
    for seed, row, episode, out in VECTORS["battle_seed"]:
        assert impl.battle_seed(int(seed), int(row), int(episode)) == int(out, 16)


def test_vectors_cover_the_seeds_the_issue_names():
    seeds = {int(c["seed"]) for c in VECTORS["seeds"]}
    assert {0, 2**63 + 1, 2**64 - 1} <= seeds
    assert all(len(c["d6"]) >= 32 for c in VECTORS["seeds"])


# --- state save and restore ---------------------------------------------------------------------

def test_clone_continues_identically_and_independently(impl):
    g = impl.Pcg32(2024)
    g.roll_d6(17)
    twin = g.clone()
    assert twin == g and twin.getstate() == g.getstate()
    ahead = g.roll_d6(50)
    assert twin != g  # the original moved on; the clone did not
    assert twin.roll_d6(50) == ahead


def test_getstate_restores_exactly(impl):
    g = impl.Pcg32(7)
    g.roll_d6(3)
    saved = g.getstate()
    first = g.roll_d6(40)
    g.setstate(saved)
    assert g.roll_d6(40) == first
    assert impl.Pcg32.from_state(*saved).roll_d6(40) == first


def test_state_moves_between_languages():
    c = core.require()
    py = rng.Pcg32(99)
    py.roll_d6(13)
    cc = c.Pcg32.from_state(*py.getstate())
    assert cc.roll_d6(200) == py.roll_d6(200)
    assert cc.getstate() == py.getstate()
    assert rng.Pcg32.from_state(*cc.getstate()).roll_d6(20) == cc.roll_d6(20)


def test_an_even_increment_is_refused(impl):
    with pytest.raises(ValueError, match="inc must be odd"):
        impl.Pcg32.from_state(1, 2)
    g = impl.Pcg32(1)
    with pytest.raises(ValueError, match="inc must be odd"):
        g.setstate((1, 2))


# --- seeds --------------------------------------------------------------------------------------

BAD_SEEDS = [(-1, ValueError), (2**64, ValueError), (-(2**70), ValueError), (1.5, TypeError),
             (True, TypeError), ("1", TypeError), (None, TypeError), (np.float64(2.0), TypeError)]


@pytest.mark.parametrize(("seed", "error"), BAD_SEEDS, ids=repr)
def test_bad_seeds_are_refused_with_the_same_message_in_both_languages(seed, error):
    c = core.require()
    with pytest.raises(error) as py_err:
        rng.Pcg32(seed)
    with pytest.raises(error) as c_err:
        c.Pcg32(seed)
    assert str(py_err.value) == str(c_err.value)
    assert str(py_err.value).startswith("seed must be an int in [0, 2**64 - 1], got ")
    for fn in (rng.derive_seed, c.derive_seed):
        with pytest.raises(error, match=r"^seed must be an int in \[0, 2\*\*64 - 1\]"):
            fn(seed, 0)
    for fn in (rng.battle_seed, c.battle_seed):
        with pytest.raises(error, match=r"^episode must be an int"):
            fn(0, 0, seed)


def test_numpy_integers_are_seeds(impl):
    assert impl.Pcg32(np.uint64(2**64 - 1)) == impl.Pcg32(2**64 - 1)
    assert impl.Pcg32(np.int64(5)).roll_d6(8) == impl.Pcg32(5).roll_d6(8)


def test_nearby_seeds_give_unrelated_streams(impl):
    starts = {tuple(impl.rolls(s, 12)) for s in range(200)}
    assert len(starts) == 200
    assert len({impl.Pcg32(s).getstate()[1] for s in range(200)}) == 200  # distinct streams


# --- per-battle streams of a vector -------------------------------------------------------------

def test_rows_and_episodes_get_distinct_seeds(impl):
    rows = [impl.battle_seed(0, r, 0) for r in range(2000)]
    episodes = [impl.battle_seed(0, 5, e) for e in range(2000)]
    assert len(set(rows)) == 2000 and len(set(episodes)) == 2000
    assert [impl.derive_seed(impl.derive_seed(0, r), 0) for r in range(50)] == rows[:50]


def test_batched_stream_seeds_equal_the_scalar_ones():
    c = core.require()
    episodes = np.array([0, 1, 2, 0, 7, 2**64 - 1], dtype=np.uint64)
    out = np.zeros(len(episodes), dtype=np.uint64)
    c.battle_seeds(2**63 + 1, episodes, out)
    assert out.tolist() == [rng.battle_seed(2**63 + 1, r, int(e)) for r, e in enumerate(episodes)]


# --- statistics ---------------------------------------------------------------------------------

def test_compiled_d6_faces_are_uniform():
    c = core.require()
    out = np.empty((6, 100_000), dtype=np.int8)
    c.rng_fill(np.array([0, 1, 2, 2**63 + 1, 123456789, 2**64 - 1], dtype=np.uint64), out)
    faces = Counter(out.ravel().tolist())
    assert set(faces) == {1, 2, 3, 4, 5, 6}
    assert chi2(faces, [1, 2, 3, 4, 5, 6], out.size) < CHI2_P001[5]
    # Consecutive pairs (serial correlation): 36 cells.
    pairs = Counter(zip(out[:, 0::2].ravel().tolist(), out[:, 1::2].ravel().tolist(),
                        strict=True))
    cells = [(a, b) for a in range(1, 7) for b in range(1, 7)]
    assert chi2(pairs, cells, out.size // 2) < CHI2_P001[35]


def test_python_d6_faces_are_uniform():
    rolls = rng.Pcg32(31337).roll_d6(60_000)
    assert chi2(Counter(rolls), [1, 2, 3, 4, 5, 6], len(rolls)) < CHI2_P001[5]


def test_first_rolls_across_battle_streams_are_uniform():
    c = core.require()
    n = 60_000
    seeds = np.empty(n, dtype=np.uint64)
    c.battle_seeds(0, np.zeros(n, dtype=np.uint64), seeds)
    first = np.empty((n, 2), dtype=np.int8)
    c.rng_fill(seeds, first)
    assert chi2(Counter(first[:, 0].tolist()), [1, 2, 3, 4, 5, 6], n) < CHI2_P001[5]
    pairs = Counter(zip(first[:, 0].tolist(), first[:, 1].tolist(), strict=True))
    cells = [(a, b) for a in range(1, 7) for b in range(1, 7)]
    assert chi2(pairs, cells, n) < CHI2_P001[35]
