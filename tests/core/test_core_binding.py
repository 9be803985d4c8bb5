"""The binding boundary: caller-owned NumPy buffers are checked, never trusted or converted.

``rng_fill(seeds: uint64[N], out: int8[N, K])`` and ``battle_seeds(vector_seed, episodes:
uint64[N], out: uint64[N])`` show the pattern every batched call of the core uses: exact dtype,
shape and C order, writable outputs, a ``ValueError`` naming the argument, the expected shape
and dtype and what was given, and nothing written when a check fails.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from traveller_env import core
from traveller_env.rules import rng


@pytest.fixture(scope="module")
def c():
    return core.require()


def seeds(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def test_rng_fill_writes_each_row_from_its_own_seed(c):
    s = seeds(0, 1, 2**63 + 1)
    out = np.zeros((3, 40), dtype=np.int8)
    assert c.rng_fill(s, out) is None
    for row, seed in zip(out, s.tolist(), strict=True):
        assert row.tolist() == rng.Pcg32(seed).roll_d6(40)


def test_rng_fill_accepts_empty_and_read_only_inputs(c):
    c.rng_fill(seeds(), np.zeros((0, 5), dtype=np.int8))
    out = np.zeros((2, 0), dtype=np.int8)
    c.rng_fill(seeds(1, 2), out)
    frozen = seeds(4, 5)
    frozen.flags.writeable = False
    out = np.zeros((2, 3), dtype=np.int8)
    c.rng_fill(frozen, out)
    assert out.tolist() == [rng.Pcg32(4).roll_d6(3), rng.Pcg32(5).roll_d6(3)]


def test_rng_fill_writes_into_a_contiguous_view_of_a_larger_buffer(c):
    big = np.zeros((4, 6), dtype=np.int8)
    c.rng_fill(seeds(8, 9), big[1:3])  # rows 1-2: still C-contiguous
    assert big[0].tolist() == [0] * 6 and big[3].tolist() == [0] * 6
    assert big[1].tolist() == rng.Pcg32(8).roll_d6(6)


SHAPE_MSG = ("rng_fill: out must be a C-contiguous int8 array of shape (2, K) (writable) in "
             "CPU memory")


@pytest.mark.parametrize(("out", "got"), [
    (np.zeros((2, 4), dtype=np.int16), "got a int16 array of shape (2, 4)"),
    (np.zeros((2, 4), dtype=np.uint8), "got a uint8 array of shape (2, 4)"),
    (np.zeros((3, 4), dtype=np.int8), "got a int8 array of shape (3, 4)"),
    (np.zeros(8, dtype=np.int8), "got a int8 array of shape (8,)"),
    (np.zeros((2, 4, 1), dtype=np.int8), "got a int8 array of shape (2, 4, 1)"),
    (np.zeros((4, 2), dtype=np.int8).T,
     "got a int8 array of shape (2, 4) that is not C-contiguous"),
    (np.zeros((2, 8), dtype=np.int8)[:, ::2], "that is not C-contiguous"),
    ([[0] * 4] * 2, "got a list object"),
    (None, "got a NoneType object"),
], ids=["int16", "uint8", "rows", "1d", "3d", "fortran", "strided", "list", "none"])
def test_a_bad_output_buffer_is_refused_by_name_and_left_untouched(c, out, got):
    with pytest.raises(ValueError, match=re.escape(SHAPE_MSG)) as err:
        c.rng_fill(seeds(1, 2), out)
    assert got in str(err.value)
    if isinstance(out, np.ndarray):
        assert not out.any()


def test_a_read_only_output_buffer_is_refused(c):
    out = np.zeros((2, 4), dtype=np.int8)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"out must be .* \(writable\).* that is read-only"):
        c.rng_fill(seeds(1, 2), out)
    assert not out.any()


@pytest.mark.parametrize(("bad", "got"), [
    (np.array([1, 2], dtype=np.int64), "got a int64 array of shape (2,)"),
    (np.array([[1, 2]], dtype=np.uint64), "got a uint64 array of shape (1, 2)"),
    (np.array([1.0, 2.0]), "got a float64 array of shape (2,)"),
    ([1, 2], "got a list object"),
])
def test_bad_seeds_arrays_are_refused_by_name(c, bad, got):
    out = np.zeros((2, 4), dtype=np.int8)
    msg = "rng_fill: seeds must be a C-contiguous uint64 array of shape (N,) in CPU memory, " + got
    with pytest.raises(ValueError, match=re.escape(msg)):
        c.rng_fill(bad, out)
    assert not out.any()


def test_battle_seeds_checks_its_buffers_too(c):
    with pytest.raises(ValueError, match=re.escape(
            "battle_seeds: out must be a C-contiguous uint64 array of shape (3,) (writable) in "
            "CPU memory, got a uint64 array of shape (2,)")):
        c.battle_seeds(0, seeds(0, 0, 0), np.zeros(2, dtype=np.uint64))
    with pytest.raises(ValueError, match=re.escape(
            "battle_seeds: episodes must be a C-contiguous uint64 array of shape (N,)")):
        c.battle_seeds(0, np.zeros(3, dtype=np.int32), np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError, match=r"^vector_seed must be an int in \[0, 2\*\*64 - 1\]"):
        c.battle_seeds(-1, seeds(0), np.zeros(1, dtype=np.uint64))


def test_counts_are_checked(c):
    with pytest.raises(ValueError, match=r"^n must be an int in \[0, 16777216\], got -1"):
        c.rng_rolls(0, -1)
    with pytest.raises(ValueError, match=r"^n must be an int in \[0, 16777216\]"):
        c.rng_rolls(0, 2**80)
    with pytest.raises(TypeError, match=r"^n must be an int"):
        c.rng_rolls(0, 2.0)
    with pytest.raises(ValueError, match=r"^n must be an int"):
        c.Pcg32(0).roll_d6(-3)
    with pytest.raises(ValueError, match=r"^n must be an int"):
        rng.Pcg32(0).roll_d6(-3)
    assert c.rng_rolls(0, 0) == [] == rng.Pcg32(0).roll_d6(0)


def test_build_info_says_how_the_core_was_built(c):
    info = core.build_info()
    assert info["source_digest"] == c.SOURCE_DIGEST
    assert info["cplusplus"] >= 201703
    assert info["build_type"] in {"Release", "RelWithDebInfo", "Debug", "MinSizeRel"}
    if info["build_type"] == "Release":
        assert "-O3" in info["cxx_flags"] or "-O2" in info["cxx_flags"]
        assert info["assertions"] is False
