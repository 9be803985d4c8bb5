"""The AEC env and the SB3 bridge on the compiled core (``backend="core"``) against the Python
engine: the same seed and actions give the same observations, masks, rewards, dones, infos
(event log included), ``state()`` and ``view`` at every step (R1-R8 through both engines)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import fighter, scenario
from hypothesis import HealthCheck, given, settings
from pettingzoo.test import api_test

import traveller_env
from traveller_env.core import available
from traveller_env.rules.dice import ScriptedDice

pytestmark = pytest.mark.skipif(not available(), reason="the compiled core is not built here")


def lockstep(sc, seed: int, *, illegal_rate: float = 0.0, steps: int = 100_000,
             policies=None, **options) -> int:
    """Play ``sc`` on both backends with the same actions; compare everything at each step.
    Returns the number of steps."""
    py = traveller_env.raw_env(sc, backend="python", **options)
    core = traveller_env.raw_env(sc, backend="core", **options)
    py.reset(seed=seed)
    core.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n = 0
    while py.agents and n < steps:
        agent = py.agent_selection
        assert core.agent_selection == agent, n
        assert core.agents == py.agents, n
        obs_p, ret_p, term_p, trunc_p, info_p = py.last()
        obs_c, ret_c, term_c, trunc_c, info_c = core.last()
        assert obs_c["observation"].tobytes() == obs_p["observation"].tobytes(), (n, agent)
        assert np.array_equal(obs_c["action_mask"], obs_p["action_mask"]), (n, agent)
        assert (ret_c, term_c, trunc_c) == (ret_p, term_p, trunc_p), (n, agent)
        assert json.dumps(info_c) == json.dumps(info_p), (n, agent)
        assert core.rewards == py.rewards and core.terminations == py.terminations, n
        assert core.state().tobytes() == py.state().tobytes(), n
        if term_p or trunc_p:
            action = None
        elif policies is not None:
            # Twin policies (same seeds), one per backend: each sees its own env's view.
            side = py.side_of(agent)
            action = policies[0][side].act(obs_p["observation"], obs_p["action_mask"], agent, py)
            again = policies[1][side].act(obs_c["observation"], obs_c["action_mask"], agent,
                                          core)
            assert again == action, (n, agent)  # the core's view is the same battle
        elif rng.random() < illegal_rate:
            action = int(rng.choice(np.flatnonzero(obs_p["action_mask"] == 0)))
        else:
            action = int(rng.choice(np.flatnonzero(obs_p["action_mask"])))
        py.step(action)
        core.step(action)
        n += 1
    assert json.dumps(core.battle.events) == json.dumps(py.battle.events)
    return n


@pytest.mark.parametrize("name", traveller_env.builtin_scenarios())
def test_every_builtin_scenario_gives_the_same_aec_steps(name):
    assert lockstep(name, seed=3) > 10


def test_penalize_mode_and_damage_rewards_agree():
    from traveller_env.scenario import load_scenario

    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": 0.25, "damage_dealt": 0.1,
                     "damage_taken": -0.05, "per_round": -0.01, "shared": False}
    sc["options"] = {**sc.get("options", {}), "illegal_action": "penalize"}
    assert lockstep(sc, seed=5, illegal_rate=0.1) > 10


def test_scripted_npcs_see_the_same_battle_through_the_view():
    from traveller_env.policy import make_policy

    twins = [[make_policy("tactician", seed=1), make_policy("marksman", seed=2)]
             for _ in range(2)]
    assert lockstep("squad", seed=4, policies=twins, steps=400) > 10


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=__import__("hypothesis").strategies.integers(0, 2**32))
def test_fuzzed_small_battles_agree(seed):
    rng = np.random.default_rng(seed)
    blue = [fighter((int(rng.integers(0, 5)), 2 * i)) for i in range(int(rng.integers(1, 3)))]
    red = [fighter((int(rng.integers(12, 18)), 2 * i), weapon="blade" if i else "autorifle",
                   skills={"melee.blade": 1, "gun_combat.slug": 0})
           for i in range(int(rng.integers(1, 3)))]
    sc = scenario(blue, red, hastening=bool(seed % 2), reactions=bool(seed % 3))
    lockstep(sc, seed=seed, illegal_rate=0.0, check_invariants=True)


def test_the_pettingzoo_api_test_passes_on_the_core():
    api_test(traveller_env.env("duel", backend="core"), num_cycles=200)


def test_check_invariants_cross_checks_the_engines():
    e = traveller_env.raw_env("squad", backend="core", check_invariants=True)
    e.reset(seed=1)
    for _ in range(60):
        if not e.agents:
            break
        obs, *_ = e.last()
        e.step(int(np.flatnonzero(obs["action_mask"])[0]) if not e.terminations[
            e.agent_selection] else None)


def test_bad_backend_and_scripted_dice_are_refused_clearly():
    with pytest.raises(ValueError, match=r"backend must be one of 'python', 'core', got 'gpu'"):
        traveller_env.raw_env("duel", backend="gpu")
    e = traveller_env.raw_env("duel", backend="core")
    with pytest.raises(ValueError, match=r"scripted dice are not supported on backend='core'"):
        e.reset(options={"dice": ScriptedDice([[1, 1]])})


def test_the_sb3_bridge_on_the_core_matches_the_python_engine():
    from traveller_env.sb3 import TravellerSB3Env

    envs = [TravellerSB3Env("squad", learner="blue", backend=b) for b in ("python", "core")]
    outs = [e.reset(seed=9) for e in envs]
    rng = np.random.default_rng(9)
    episodes = 0
    for _ in range(600):
        o0, o1 = outs[0][0], outs[1][0]
        assert o0.tobytes() == o1.tobytes()
        mask = envs[0].action_masks()
        assert np.array_equal(mask, envs[1].action_masks())
        a = int(rng.choice(np.flatnonzero(mask)))
        r = [e.step(a) for e in envs]
        assert r[0][1:4] == r[1][1:4]
        outs = [(x[0], x[4]) for x in r]
        if r[0][2] or r[0][3]:
            episodes += 1
            outs = [e.reset(seed=9 + episodes) for e in envs]
    assert episodes >= 1
