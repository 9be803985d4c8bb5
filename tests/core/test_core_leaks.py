"""LeakSanitizer on the compiled core alone (runs under `make sanitize`, skipped otherwise).

The whole sanitized test run keeps LeakSanitizer off, because CPython and other extensions keep
allocations at exit that it would report. Here a fresh interpreter loads only the core's shared
object (not the package, so no third-party extension), with ``PYTHONMALLOC=malloc`` so that
every Python object is visible to the sanitizer, drives every binding (including its error
paths) many times, and asks LeakSanitizer for a report while the interpreter still runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from traveller_env import core

WORKLOAD = r"""
import gc, importlib.util, os, sys
import numpy as np

spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
c = importlib.util.module_from_spec(spec)
spec.loader.exec_module(c)

def work():  # in a function: CPython's own frame objects then stay reachable
    for i in range(300):
        out = np.zeros((3, 4), np.int8)
        c.rng_fill(np.arange(3, dtype=np.uint64), out)
        for bad in (np.zeros(3), np.zeros((3, 4), np.int16), None, [1], out.T):
            try:
                c.rng_fill(np.zeros(3, np.uint64), bad)
            except ValueError:
                pass
        for seed in (-1, 2**64, 1.5, None):
            try:
                c.Pcg32(seed)
            except (TypeError, ValueError):
                pass
        g = c.Pcg32(i)
        g.clone().roll_d6(20)
        g.setstate(c.Pcg32.from_state(*g.getstate()).getstate())
        c.rng_rolls(i, 5)
        seeds = np.empty(3, np.uint64)
        c.battle_seeds(1, np.zeros(3, np.uint64), seeds)
        c.build_info()

work()
gc.collect()
print("leaks:", c.lsan_leak_check())
sys.stdout.flush()
os._exit(0)  # skip interpreter teardown: its leftovers are not the core's
"""


def test_the_core_leaks_nothing():
    c = core.require()
    if not hasattr(c, "lsan_leak_check"):
        pytest.skip("needs the sanitized core: make sanitize")
    env = dict(os.environ, PYTHONMALLOC="malloc",
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0")
    done = subprocess.run([sys.executable, "-c", WORKLOAD, c.__file__], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "leaks: False", done.stderr
    assert "LeakSanitizer" not in done.stderr, done.stderr
