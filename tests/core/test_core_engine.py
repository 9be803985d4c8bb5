"""The compiled core plays the same battles as the Python engine (differential tests).

Every built-in scenario and fuzzed scenarios (``fuzz_scenarios.valid_scenarios``) are played
with the same seed (both engines roll the shared PCG32 generator: ``Dice(seed,
generator="pcg")``) and the same random legal actions through both engines. At every step the
event logs (the dicts and their JSON), the action masks, the decider, the dice generator's state
and, for a sample of illegal actions, the refusal reasons must be identical; in ``penalize``
scenarios some steps forfeit instead. A divergence fails printing the first differing event of
both sides."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fuzz_scenarios import valid_scenarios
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traveller_env import core
from traveller_env.scenario import builtin_scenarios

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def play_both(*args, **kwargs) -> int:
    from traveller_env.core.differential import play_both as play

    return play(*args, **kwargs)


@pytest.mark.parametrize("name", builtin_scenarios())
def test_every_builtin_scenario_plays_identically(name):
    for seed in range(8):
        play_both(name, seed)


@settings(FUZZ, max_examples=80)
@given(sc=valid_scenarios(), seed=st.integers(0, 2**64 - 1))
def test_fuzzed_scenarios_play_identically(sc, seed):
    play_both(sc, seed)


@settings(FUZZ, max_examples=80)
@given(sc=valid_scenarios(max_side=4, max_map=6, max_char=6), seed=st.integers(0, 2**64 - 1))
def test_crowded_fuzzed_scenarios_play_identically(sc, seed):
    play_both(sc, seed, attack_rate=0.7)


def test_distances_match_python_hypot_on_every_map_offset():
    """The core's sqrt(dx*dx + dy*dy) * 1.5 is Python's math.hypot(dx, dy) * 1.5 bit for bit
    for every offset on maps up to the schema's 1000 squares (checked on a 1-in-7 sample of
    rows, and on every row near the axes and the diagonal)."""
    c = core.require()
    rows = sorted(set(range(0, 1000, 7)) | set(range(0, 40)) | {999})
    for dx in rows:
        for dy in range(0, 1000):
            assert c.Grid.distance_m(0, 0, dx, dy) == math.hypot(dx, dy) * 1.5, (dx, dy)


def test_line_of_sight_and_cover_match_the_python_grid():
    from traveller_env.core.engine import _grid
    from traveller_env.rules.grid import GridMap

    rnd = np.random.default_rng(5)
    for trial in range(6):
        w, h = int(rnd.integers(3, 14)), int(rnd.integers(3, 14))
        rows = ["".join(rnd.choice(list(".~c#"), size=w, p=[0.6, 0.1, 0.15, 0.15]))
                for _ in range(h)]
        py, cg = GridMap(w, h, rows), _grid(w, h, "".join(rows))
        for ax in range(w):
            for ay in range(h):
                for bx in range(w):
                    for by in range(h):
                        assert cg.line_of_sight(ax, ay, bx, by) == py.line_of_sight(
                            (ax, ay), (bx, by)), (trial, ax, ay, bx, by)
                        assert cg.cover_between(ax, ay, bx, by) == py.cover_between(
                            (ax, ay), (bx, by)), (trial, ax, ay, bx, by)


def test_an_illegal_action_raises_naming_seat_label_and_reason_and_changes_nothing():
    from traveller_env.core.engine import CoreBattle

    cb = CoreBattle("duel", 3)
    before, mask = cb.num_events, cb.mask()
    bad = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match=rf"{cb.current_agent}: illegal action "
                                         rf"'{cb.labels[bad]}' \(index {bad}\): "):
        cb.step(bad)
    assert cb.num_events == before and np.array_equal(cb.mask(), mask)
    for index in (-1, cb.n_actions, 2**70):
        with pytest.raises(ValueError, match=r"action must be an int in \[0, "):
            cb.step(index)
    for index in (1.0, "0", None, True):
        with pytest.raises(TypeError, match="action must be an int"):
            cb.step(index)


def test_bad_flat_input_is_refused_naming_the_field():
    from traveller_env.core.engine import INT_COLUMNS, flatten_scenario

    c = core.require()
    flat = flatten_scenario("squad")
    for column, value in (("STR", 0), ("x", 999), ("side", 2), ("skill_weapon", 7),
                          ("damage_count", 0), ("stance", 3)):
        ints = flat["ints"].copy()
        ints[1, INT_COLUMNS.index(column)] = value
        with pytest.raises(ValueError, match=rf"combatants\[1\]\.{column} must be in"):
            c.Battle.create(**{**flat, "ints": ints}, seed=0, record_events=True)
    ints = flat["ints"].copy()
    ints[1, [7, 8]] = ints[0, [7, 8]]
    with pytest.raises(ValueError, match=r"combatants\[1\] shares its square"):
        c.Battle.create(**{**flat, "ints": ints}, seed=0, record_events=True)
    with pytest.raises(ValueError, match="Battle: ints must be a C-contiguous int32 array"):
        c.Battle.create(**{**flat, "ints": flat["ints"].astype(np.int64)}, seed=0,
                        record_events=True)
    with pytest.raises(ValueError, match="ids, weapons and damage_dice"):
        c.Battle.create(**{**flat, "ids": flat["ids"][:-1]}, seed=0, record_events=True)
    with pytest.raises(ValueError, match="terrain must hold"):
        c.Grid.create(3, 3, b"\0" * 8)
    with pytest.raises(ValueError, match=r"terrain\[4\] must be 0"):
        c.Grid.create(3, 3, b"\0\0\0\0\x07\0\0\0\0")


def test_a_registered_kind_the_core_lacks_is_refused(monkeypatch):
    from traveller_env.core import engine
    from traveller_env.rules import kinds

    class Shout(kinds.EndTurn):
        name = "shout"

    monkeypatch.setitem(kinds.KINDS, "shout", Shout())
    with pytest.raises(NotImplementedError, match="not in the core: shout"):
        engine.CoreBattle("duel", 0)


def test_without_recording_the_core_plays_the_same_battle():
    from traveller_env.core.engine import CoreBattle

    a, b = CoreBattle("squad", 9), CoreBattle("squad", 9, record_events=False)
    rng = np.random.default_rng(0)
    while not a.done:
        mask = a.mask()
        assert np.array_equal(mask, b.mask())
        i = int(rng.choice(np.flatnonzero(mask)))
        a.step(i)
        b.step(i)
    assert b.done and b.winner == a.winner and b.num_events == 0
    assert a.dice_state() == b.dice_state() and a.summary() == b.summary()


def test_the_detector_reports_the_first_differing_event_of_both_sides():
    from traveller_env.core.differential import first_difference

    a = [{"type": "round", "round": 1}, {"type": "haste", "actor": "x", "haste": False}]
    b = [{"type": "round", "round": 1}, {"type": "haste", "actor": "x", "haste": True}]
    msg = first_difference(a, b)
    assert msg is not None and "event 1 differs" in msg and '"haste": false' in msg
    assert '"haste": true' in msg
    assert "only on the python side" in first_difference(a, a[:1])
    assert first_difference(a, list(a)) is None
    # a float written differently (3 vs 3.0) is a difference too, though 3 == 3.0
    assert first_difference([{"metres": 3}], [{"metres": 3.0}]) is not None
