"""Look-ahead copies of a core battle (``CoreBattle.simulate``) play as the Python engine's
(``BattleView.simulate``): the same state with fresh dice seeded by the given seed, so a copy
and the Python copy, given the same actions, log the same events; playing a copy never
changes the battle it came from; a copy that records nothing plays the same battle; a copy
with other views observes what a battle built with those views observes."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import core
from traveller_env.encoding import ActionCatalogue
from traveller_env.rules.dice import Dice
from traveller_env.scenario import build_battle, load_scenario
from traveller_env.view import BattleView

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())


def _both(name: str, seed: int, steps: int):
    """A battle on both engines after ``steps`` shared random legal actions."""
    from traveller_env.core.engine import CoreBattle

    sc = load_scenario(name)
    py = build_battle(sc, dice=Dice(seed, generator="pcg"))
    cb = CoreBattle(sc, seed)
    cat = ActionCatalogue(py)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if py.done:
            break
        i = int(rng.choice(np.flatnonzero(cat.mask(py))))
        py.apply(cat.actions[i])
        cb.step(i)
    return py, cb, cat, rng


@pytest.mark.parametrize("name,seed", [("squad", 3), ("squad", 11), ("duel", 5), ("ambush", 7)])
def test_a_core_copy_plays_as_the_python_engines_copy(name, seed):
    from traveller_env.core.differential import first_difference

    py, cb, cat, rng = _both(name, seed, steps=40)
    start = len(py.events)
    assert cb.num_events == start
    py_twin = BattleView(py).simulate(seed + 1000)
    core_twin = cb.simulate(seed + 1000, record_events=True)
    while not py_twin.done:
        mask = cat.mask(py_twin)
        assert np.array_equal(mask, core_twin.mask())
        i = int(rng.choice(np.flatnonzero(mask)))
        py_twin.apply(cat.actions[i])
        core_twin.step(i)
    assert core_twin.done and core_twin.winner == py_twin.winner
    assert first_difference(py_twin.events[start:], core_twin.events(start)) is None
    assert len(py_twin.events) > start


def test_playing_a_copy_never_changes_the_battle():
    _, cb, _, rng = _both("squad", 21, steps=30)
    before = (cb.dice_state(), cb.num_events, cb.mask().tobytes(), cb.summary(),
              cb.current_agent, cb.round)
    twin = cb.simulate(99)
    while not twin.done:
        twin.step(int(rng.choice(np.flatnonzero(twin.mask()))))
    after = (cb.dice_state(), cb.num_events, cb.mask().tobytes(), cb.summary(),
             cb.current_agent, cb.round)
    assert before == after


def test_a_copy_has_fresh_dice_not_the_battles():
    _, cb, _, _ = _both("squad", 4, steps=20)
    from traveller_env.rules.rng import Pcg32

    assert cb.simulate(77).dice_state() == Pcg32(77).getstate()
    assert cb.simulate(77).dice_state() != cb.dice_state()


def test_a_copy_that_records_nothing_plays_the_same_battle():
    _, cb, _, _ = _both("squad", 8, steps=25)
    quiet, loud = cb.simulate(5), cb.simulate(5, record_events=True)
    rng = np.random.default_rng(0)
    while not loud.done:
        i = int(rng.choice(np.flatnonzero(loud.mask())))
        assert np.array_equal(quiet.mask(), loud.mask())
        quiet.step(i)
        loud.step(i)
    assert quiet.done and quiet.winner == loud.winner and quiet.summary() == loud.summary()
    assert quiet.num_events == 0 and loud.num_events > cb.num_events


def test_a_copy_with_other_views_observes_what_a_battle_built_with_them_does():
    from traveller_env.core.engine import CoreBattle

    sc = load_scenario("squad")
    plain = CoreBattle(sc, 12)
    viewed = CoreBattle(sc, 12, move_view=True, aim_view=True, attack_view=True)
    rng = np.random.default_rng(12)
    for _ in range(35):
        i = int(rng.choice(np.flatnonzero(plain.mask())))
        plain.step(i)
        viewed.step(i)
    a = plain.simulate(3, move_view=True, aim_view=True, attack_view=True)
    b = viewed.simulate(3)
    back = viewed.simulate(3, move_view=False, aim_view=False, attack_view=False)
    assert a.observation_size == b.observation_size > plain.observation_size
    assert back.observation_size == plain.observation_size
    for _ in range(30):
        for seat in range(len(plain.ids)):
            assert np.array_equal(a.observe(seat), b.observe(seat))
        if a.done:
            break
        i = int(rng.choice(np.flatnonzero(a.mask())))
        a.step(i)
        b.step(i)
    assert np.array_equal(plain.simulate(1).observe(0),
                          viewed.simulate(1, move_view=False, aim_view=False,
                                          attack_view=False).observe(0))


def test_bad_arguments_are_refused_naming_them():
    _, cb, _, _ = _both("duel", 2, steps=3)
    with pytest.raises((ValueError, TypeError), match="seed"):
        cb.simulate(-1)
    with pytest.raises(ValueError, match="attack_view"):
        cb.simulate(1, attack_view=1)
