"""Copy and pickle of the AEC env (``TravellerEnv.__getstate__``/``__setstate__``): a copy made
mid-battle, by ``copy.deepcopy`` or a pickle round trip, on either engine, continues exactly as
the original (the same events byte for byte, observations, masks, rewards and selection) and
is independent of it."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from traveller_env import core
from traveller_env.env import env as make_env
from traveller_env.env import raw_env
from traveller_env.rules.dice import ScriptedDice

BACKENDS = ["python", pytest.param("core", marks=pytest.mark.skipif(
    not core.available(), reason="the compiled core is not built here"))]
COPIES = {"deepcopy": copy.deepcopy, "pickle": lambda e: pickle.loads(pickle.dumps(e))}


def _record(e) -> dict:
    """Everything an agent or a trainer reads at this point of the episode."""
    sel = e.agent_selection
    obs = e.observe(sel)
    return {"selection": sel, "agents": list(e.agents),
            "observation": obs["observation"].tobytes(), "mask": obs["action_mask"].tobytes(),
            "others": [e.observe(a)["observation"].tobytes() for a in e.agents],
            "rewards": dict(e.rewards), "cumulative": dict(e._cumulative_rewards),
            "terminations": dict(e.terminations), "truncations": dict(e.truncations),
            "infos": json.dumps(e.infos, sort_keys=True), "state": e.state().tobytes()}


def _play(e, rng: np.random.Generator, steps: int | None = None,
          illegal: float = 0.0) -> list[dict]:
    """Play ``steps`` steps (``None``: to the end) with seeded random legal actions (with
    probability ``illegal``, an illegal one, for ``illegal_action: penalize``); the trace."""
    trace = []
    n = 0
    while e.agents and (steps is None or n < steps):
        trace.append(_record(e))
        sel = e.agent_selection
        if e.terminations[sel] or e.truncations[sel]:
            action = None
        else:
            mask = e.observe(sel)["action_mask"]
            pool = np.flatnonzero(mask == 0) if rng.random() < illegal else np.flatnonzero(mask)
            action = int(rng.choice(pool if len(pool) else np.flatnonzero(mask)))
        e.step(action)
        n += 1
    return trace


def _events(e) -> str:
    return json.dumps(e.unwrapped.battle.events)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("name", ["duel", "squad", "melee", "ambush", "leadership_l3"])
def test_copy_mid_battle_continues_identically(name: str, how: str, backend: str) -> None:
    e = raw_env(name, backend=backend, max_rounds=6)
    e.reset(seed=11)
    _play(e, np.random.default_rng(0), steps=23)
    assert e.agents, "the battle must still be on when copied"
    twin = COPIES[how](e)
    assert twin is not e and type(twin) is type(e) and twin.battle is not e.battle
    assert _events(twin) == _events(e)
    assert _record(twin) == _record(e)
    mine = _play(e, np.random.default_rng(5))
    theirs = _play(twin, np.random.default_rng(5))
    assert len(mine) > 0
    assert theirs == mine
    assert _events(twin) == _events(e)
    assert twin.agents == e.agents == []
    assert twin._cumulative_rewards == e._cumulative_rewards


@pytest.mark.parametrize("backend", BACKENDS)
def test_copy_of_a_copy_with_forfeits_continues_identically(backend: str) -> None:
    """A copy copied again, with illegal actions forfeited (``illegal_action: penalize``)
    before and after each copy: the same to the end."""
    e = make_env("squad", backend=backend, illegal_action="penalize", max_rounds=5)
    e.reset(seed=3)
    _play(e, np.random.default_rng(1), steps=15, illegal=0.2)
    first = pickle.loads(pickle.dumps(e))
    assert any(ev["type"] == "illegal_action" for ev in e.unwrapped.battle.events)
    _play(e, np.random.default_rng(2), steps=20, illegal=0.2)
    _play(first, np.random.default_rng(2), steps=20, illegal=0.2)
    second = copy.deepcopy(first)
    assert _record(second) == _record(first) == _record(e)
    ends = [_play(x, np.random.default_rng(9), illegal=0.2) for x in (e, first, second)]
    assert ends[0] == ends[1] == ends[2]
    assert _events(e) == _events(first) == _events(second)


@pytest.mark.parametrize("backend", BACKENDS)
def test_copy_is_independent(backend: str) -> None:
    e = raw_env("squad", backend=backend)
    e.reset(seed=7)
    _play(e, np.random.default_rng(0), steps=10)
    before, events_before = _record(e), _events(e)
    twin = copy.deepcopy(e)
    _play(twin, np.random.default_rng(1), steps=30)
    assert _events(twin) != events_before
    assert _record(e) == before
    assert _events(e) == events_before
    twin.reset(seed=99)
    assert _record(e) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_copy_before_reset_and_after_the_end(backend: str) -> None:
    fresh = pickle.loads(pickle.dumps(raw_env("duel", backend=backend, move_view=True)))
    assert fresh.battle is None and fresh.move_view
    fresh.reset(seed=4)
    ref = raw_env("duel", backend=backend, move_view=True)
    ref.reset(seed=4)
    assert _play(fresh, np.random.default_rng(0)) == _play(ref, np.random.default_rng(0))
    done = copy.deepcopy(ref)
    assert done.agents == [] and _events(done) == _events(ref)
    done.reset(seed=5)
    ref.reset(seed=5)
    assert _record(done) == _record(ref)


def test_core_copy_keeps_its_python_twin_exact() -> None:
    """On the core, ``check_invariants=True`` cross-checks the copy against its Python twin
    (replayed from the seed and the saved actions) after every step."""
    if not core.available():
        pytest.skip("the compiled core is not built here")
    e = raw_env("ambush", backend="core", check_invariants=True, max_rounds=4)
    e.reset(seed=21)
    _play(e, np.random.default_rng(0), steps=12)
    twin = pickle.loads(pickle.dumps(e))
    assert twin.view.round == e.view.round
    assert _play(twin, np.random.default_rng(3)) == _play(e, np.random.default_rng(3))


def test_scripted_dice_cannot_be_copied() -> None:
    e = raw_env("duel", backend="python")
    e.reset(options={"dice": ScriptedDice([(3, 3)] * 50)})
    with pytest.raises(TypeError, match=r"scripted|Dice"):
        pickle.dumps(e)
