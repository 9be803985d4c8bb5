"""Vector snapshots over a scenario set (``VectorEnv.snapshot``/``restore``, both backends).

A vector over ``gen:squad`` seeds 0-9 is stepped with random legal actions; at random steps it
is snapshotted, the snapshot restored into a fresh vector made with the same arguments (reset
with another seed, so its rows play other battles and scenarios), and the rest of the actions
replayed there: every output must equal the uninterrupted run's, byte for byte, across the
battles (and scenario changes) that follow. A snapshot of one scenario restored into a set, of
one set into another, or of the core's old format into a set, is refused naming the
difference; the core's version 1 format (one scenario, before sets) still restores.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from traveller_env import core, vector, vector_snapshot
from traveller_env.vector import random_legal_actions

needs_core = pytest.mark.skipif(not core.available(), reason=core.status())
DATA = Path(__file__).parents[1] / "data"


def _make(backend: str, opponents: dict | None, seeds=(0, 9), threads: int = 1,
          num_envs: int = 4) -> vector.VectorEnv:
    return vector.make("gen:squad", num_envs=num_envs, seed=3, backend=backend, layout="6v6",
                       seeds=seeds, opponents=opponents, threads=threads, max_rounds=3)


def _steps(venv: vector.VectorEnv, start: int, stop: int) -> list[tuple]:
    """Steps ``start`` .. ``stop - 1`` with random legal actions drawn from the step's index
    (so a restored vector replays the same actions); each step's outputs."""
    outs = []
    mask = venv._mask_out
    for k in range(start, stop):
        obs, mask, rewards, term, trunc, info = venv.step(
            random_legal_actions(mask, np.random.default_rng(k)))
        outs.append((obs.copy(), mask.copy(), rewards.copy(), term.copy(), trunc.copy(),
                     *(info[key].copy() for key in ("agent", "episode", "battle_seed",
                                                    "winner"))))
    return outs


@pytest.mark.parametrize(("backend", "opponents", "threads"), [
    ("python", {"red": "rush"}, 1),
    ("python", None, 1),
    pytest.param("core", {"red": "tactician"}, 1, marks=needs_core),
    pytest.param("core", {"blue_0": "rush", "red": "tactician"}, 2, marks=needs_core),
    pytest.param("core", None, 1, marks=needs_core),
], ids=["python-rush", "python", "core-tactician", "core-mixed-2-threads", "core"])
def test_a_restored_set_vector_continues_exactly(backend, opponents, threads):
    whole = _make(backend, opponents, threads=threads)
    whole.reset()
    total = 90
    points = sorted(random.Random().sample(range(1, total - 20), 3))  # anywhere in the run
    snaps = {}
    expected = []
    for k in range(total):
        if k in points:
            snaps[k] = whole.snapshot()
        expected += _steps(whole, k, k + 1)
    assert len(set(expected[-1][6].tolist())) > 1 or expected[-1][6].max() >= 2  # battles ended
    for k, data in snaps.items():
        resumed = _make(backend, opponents, threads=threads)
        resumed.reset(seed=12345)  # other battles and scenarios: restore replaces them
        resumed.restore(data)
        got = _steps(resumed, k, total)
        for step, (a, b) in enumerate(zip(expected[k:], got, strict=True)):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y, err_msg=f"snapshot at {k}, step {k + step}")
        assert resumed.battles_skipped == whole.battles_skipped
        if backend == "core":  # the same rows (the Python engine's bytes count its log too)
            assert resumed._backend.snapshot() == whole._backend.snapshot()


@pytest.mark.parametrize("backend", ["python", pytest.param("core", marks=needs_core)])
def test_a_snapshot_of_another_set_or_of_one_scenario_is_refused(backend):
    opponents = {"red": "rush"}
    venv = _make(backend, opponents)
    venv.reset()
    _steps(venv, 0, 5)
    data = venv.snapshot()
    before = venv.snapshot()
    with pytest.raises(ValueError, match="taken over a scenario set of 10 scenarios on layout "
                                         "'6v6'; this vector plays a scenario set of 11"):
        _make(backend, opponents, seeds=(0, 10)).restore(data)
    with pytest.raises(ValueError, match="another scenario set of 10 scenarios"):
        _make(backend, opponents, seeds=(10, 19)).restore(data)
    with pytest.raises(ValueError, match="num_envs"):
        _make(backend, opponents, num_envs=5).restore(data)
    # one scenario on the same layout: the same actions, not the same vector
    fixed = vector.make("gen:squad@3", num_envs=4, seed=3, backend=backend, layout="6v6",
                        relative_actions=True, opponents=opponents)
    fixed.reset()
    assert fixed.action_labels == venv.action_labels
    with pytest.raises(ValueError, match="taken over a scenario set of 10 scenarios on layout "
                                         "'6v6'; this vector plays one scenario"):
        fixed.restore(data)
    with pytest.raises(ValueError, match="taken over one scenario; this vector plays a "
                                         "scenario set of 10"):
        venv.restore(fixed.snapshot())
    assert venv.snapshot() == before  # nothing changed


@needs_core
def test_the_cores_rows_are_checked_against_the_set():
    """Below ``VectorEnv``'s checks, the core's own: the set's size, each row's scenario and
    seats; a bad row changes no row."""
    venv = _make("core", {"red": "tactician"})
    venv.reset()
    _steps(venv, 0, 5)
    rows = venv._backend.snapshot()["core_rows"]
    assert rows[4] == 2  # format version 2
    other = _make("core", {"red": "tactician"}, seeds=(0, 10))
    other.reset()
    with pytest.raises(ValueError, match="taken over a set of 10 scenarios; this stepper's set "
                                         "has 11"):
        other._backend.restore({"core_rows": rows})
    header = 4 + 1 + 8 + 8 + 4 + 4 + 1 + 4  # magic .. seats, the set flag and size
    bad_scenario = rows[:header] + (10).to_bytes(4, "little") + rows[header + 4:]
    with pytest.raises(ValueError, match="row 0 plays scenario 10 of a set of 10"):
        venv._backend.restore({"core_rows": bad_scenario})
    seats = int.from_bytes(rows[header + 4:header + 8], "little")
    bad_seats = rows[:header + 4] + (seats + 1).to_bytes(4, "little") + rows[header + 8:]
    with pytest.raises(ValueError, match=f"row 0 has {seats + 1} seats"):
        venv._backend.restore({"core_rows": bad_seats})
    with pytest.raises(ValueError, match="cut short"):
        venv._backend.restore({"core_rows": rows[:-7]})
    assert venv._backend.snapshot()["core_rows"] == rows  # nothing changed


@needs_core
def test_the_cores_version_1_rows_still_restore_and_only_over_one_scenario():
    """tests/data/vector_snapshot_v1_core.bin: a snapshot the core wrote before sets (rows
    format version 1) of ``squad`` (3 rows, seed 7, red=tactician, relative actions, 25 random
    steps). It restores; the rows' version 2 bytes are the same but for the version byte and
    the set section; the vector steps on. A set refuses version 1 rows."""
    data = (DATA / "vector_snapshot_v1_core.bin").read_bytes()
    old = vector_snapshot.decode(data)["rows"]["core_rows"]
    assert old[4] == 1
    venv = vector.make("squad", num_envs=3, seed=7, backend="core",
                       opponents={"red": "tactician"}, relative_actions=True)
    venv.reset()
    venv.restore(data)
    rows = venv._backend.snapshot()["core_rows"]
    header = 4 + 1 + 8 + 8 + 4 + 4
    section = 1 + 4 + 3 * 8  # the set flag and size, each row's scenario and seats
    assert rows[4] == 2 and rows[header:header + 5] == b"\0" + (1).to_bytes(4, "little")
    assert rows[:4] + b"\1" + rows[5:header] + rows[header + section:] == old
    rng = np.random.default_rng(0)
    mask = venv._mask_out
    for _ in range(20):
        mask = venv.step(random_legal_actions(mask, rng))[1]
    venv_set = _make("core", {"red": "tactician"})
    venv_set.reset()
    with pytest.raises(ValueError, match="format version 1 holds the rows of one scenario; "
                                         "this stepper plays a scenario set"):
        venv_set._backend.restore({"core_rows": old})


def test_a_python_snapshot_from_before_sets_still_restores():
    """A Python backend's snapshot of one scenario written before sets (no set record, no
    scenario per row) restores and continues exactly."""
    def make():
        return vector.make("duel", num_envs=3, seed=5, backend="python",
                           opponents={"red": "rush"})

    whole = make()
    whole.reset()
    _steps(whole, 0, 12)
    state = vector_snapshot.decode(whole.snapshot())
    del state["set"]
    for row in state["rows"]["rows"]:
        del row["scenario"]
    old = vector_snapshot.encode(state)
    expected = _steps(whole, 12, 40)
    resumed = make()
    resumed.reset(seed=99)
    resumed.restore(old)
    for a, b in zip(expected, _steps(resumed, 12, 40), strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
