"""The fast paths give exactly the answers of the straightforward code they replace.

Each fast path is compared with a reference on seeded and generated inputs:

* R8.1: the integer segment test equals the ``Fraction`` one it replaced; the per-map line of
  sight and cover tables equal the per-pair checks;
* the observation's per-combatant cache equals a fresh builder's vector for every agent at
  every step (so every state change names its combatant in an event);
* a step validated by the cached mask plays the same battle as the engine's own check;
* per-step rewards (cleared only when some were given) equal the rewards recomputed from
  each step's events;
* ``env()``'s order enforcement keeps PettingZoo's guarantees;
* policies that declare ``needs_observation = False`` get ``None`` and choose as before.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.utils import wrappers

import traveller_env
from traveller_agents.registry import make_policy
from traveller_env import builtin_scenarios, raw_env
from traveller_env.observations import ObservationBuilder
from traveller_env.policy import RandomPolicy, policy_action
from traveller_env.rules.grid import GridMap, _segment_enters_square
from traveller_env.scenario import build_battle, load_scenario
from traveller_rl.evaluation import play_battle

MAPPED = [n for n in builtin_scenarios()
          if build_battle(n, seed=0).grid.walls or build_battle(n, seed=0).grid.cover_squares]


def fraction_segment_enters_square(a, b, sq) -> bool:
    """The original exact test (R8.1), in rational arithmetic: the reference."""
    x0, y0 = 2 * a[0] + 1, 2 * a[1] + 1
    dx, dy = 2 * (b[0] - a[0]), 2 * (b[1] - a[1])
    t_lo, t_hi = Fraction(0), Fraction(1)
    for p0, d, lo, hi in ((x0, dx, 2 * sq[0], 2 * sq[0] + 2),
                          (y0, dy, 2 * sq[1], 2 * sq[1] + 2)):
        if d == 0:
            if not lo < p0 < hi:
                return False
            continue
        t1, t2 = sorted((Fraction(lo - p0, d), Fraction(hi - p0, d)))
        t_lo, t_hi = max(t_lo, t1), min(t_hi, t2)
        if t_lo >= t_hi:
            return False
    return t_lo < t_hi


square = st.tuples(st.integers(0, 40), st.integers(0, 40))


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(square, square, square)
def test_r8_1_integer_segment_test_equals_the_rational_reference(a, b, sq):
    assert _segment_enters_square(a, b, sq) == fraction_segment_enters_square(a, b, sq)


def test_r8_1_segment_test_exhaustive_on_a_small_board():
    squares = [(x, y) for x in range(5) for y in range(5)]
    for a in squares:
        for b in squares:
            for sq in squares:
                assert _segment_enters_square(a, b, sq) == fraction_segment_enters_square(
                    a, b, sq), (a, b, sq)


def pairwise_grid(grid: GridMap) -> GridMap:
    """The same map answering from the per-pair checks (tables switched off)."""
    twin = GridMap(grid.width, grid.height, list(grid.rows))
    twin._tables = ()
    return twin


def assert_tables_equal_pairwise(grid: GridMap, pairs: int, seed: int) -> None:
    reference = pairwise_grid(grid)
    squares = [(x, y) for x in range(grid.width) for y in range(grid.height)]
    rng = random.Random(seed)
    for _ in range(pairs):
        a, b = rng.choice(squares), rng.choice(squares)
        assert grid.line_of_sight(a, b) == reference.line_of_sight(a, b), (a, b)
        assert grid.cover_between(a, b) == reference.cover_between(a, b), (a, b)


@pytest.mark.parametrize("name", MAPPED)
def test_r8_1_visibility_tables_equal_the_pairwise_checks_on_builtin_maps(name):
    grid = GridMap(*(lambda g: (g.width, g.height, list(g.rows)))(build_battle(name, 0).grid))
    assert_tables_equal_pairwise(grid, 4000, seed=1)
    assert grid._tables, "built-in maps are small enough for the tables"


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 16), st.integers(1, 16), st.randoms(use_true_random=False))
def test_r8_1_visibility_tables_equal_the_pairwise_checks_on_random_maps(w, h, rnd):
    rows = ["".join(rnd.choice("...~c#") for _ in range(w)) for _ in range(h)]
    grid = GridMap(w, h, rows)
    assert_tables_equal_pairwise(grid, 600, seed=rnd.randrange(1000))
    if grid.walls or grid.cover_squares:
        assert grid._tables


def test_maps_too_large_for_tables_fall_back_to_pairwise_checks():
    grid = GridMap(60, 60, ["." * 30 + "#" + "." * 19 + "c" + "." * 9] * 60)  # 3,600 squares
    assert not grid.line_of_sight((29, 5), (31, 5))  # through the wall column
    assert grid._tables == ()  # over MAX_TABLE_SQUARES: not built
    assert grid.line_of_sight((0, 0), (29, 59))
    assert grid.cover_between((40, 7), (51, 7))  # low cover at x=50, next to the target
    assert not grid.cover_between((40, 7), (49, 2))  # the line never reaches x=50


@pytest.mark.parametrize("name", ["squad", "squad_commander", "ambush", "melee"])
def test_cached_observation_equals_a_fresh_builder_for_every_agent(name):
    e = raw_env(name)
    for seed in range(3):
        e.reset(seed=seed)
        reference = ObservationBuilder(build_battle(name, seed=seed))  # starting spares etc.
        rng = np.random.default_rng(seed)
        steps = 0
        while e.agents and steps < 400:
            agent = e.agent_selection
            for other in e.possible_agents:  # the cache serves every observer
                reference._public_battle = None  # an empty cache: every block built anew
                np.testing.assert_array_equal(
                    e.observe(other)["observation"], reference.observe(e.battle, other),
                    err_msg=f"{name} seed {seed} step {steps}: {other}")
            if e.terminations[agent] or e.truncations[agent]:
                e.step(None)
            else:
                legal = np.flatnonzero(e.action_mask())
                e.step(int(legal[rng.integers(len(legal))]))
            steps += 1


@pytest.mark.parametrize("name", ["duel", "squad_commander", "melee"])
def test_steps_validated_by_the_mask_play_the_same_battle_as_the_engine(name):
    e = raw_env(name)
    e.reset(seed=11)
    rng = np.random.default_rng(11)
    chosen = []
    while e.agents:
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            e.step(None)
            continue
        legal = np.flatnonzero(e.last()[0]["action_mask"])  # the mask is cached now
        action = int(legal[rng.integers(len(legal))])
        chosen.append(e.action_labels[action])
        e.step(action)
    battle = build_battle(name, seed=11)
    for label in chosen:
        battle.apply(label)  # checked by why_illegal
    assert battle.events == e.battle.events


def test_illegal_action_is_refused_when_the_mask_is_cached():
    e = raw_env("duel")
    e.reset(seed=0)
    mask = e.last()[0]["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        e.step(illegal)


def test_per_step_rewards_equal_the_rewards_recomputed_from_each_steps_events():
    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"damage_dealt": 0.1, "damage_taken": -0.05, "per_round": -0.01}
    # each step's rewards as they arise: a knocked-out agent's are not held to the battle's end
    # (the default's totals are the same: tests/env/test_client_conventions.py)
    e = raw_env(sc, terminate_on_knockout=True)
    r = e.scenario.rewards
    e.reset(seed=5)
    rng = np.random.default_rng(5)
    side = {a: e.side_of(a) for a in e.possible_agents}
    while e.agents:
        agent = e.agent_selection
        first = len(e.battle.events)
        if e.terminations[agent] or e.truncations[agent]:
            e.step(None)
            assert all(v == 0 for v in e.rewards.values())  # a dead step gives nothing
            continue
        legal = np.flatnonzero(e.action_mask())
        e.step(int(legal[rng.integers(len(legal))]))
        expected = dict.fromkeys(e.rewards, 0.0)
        for ev in e.battle.events[first:]:
            if ev["type"] == "attack" and ev["damage"]:
                for a in expected:
                    if side[a] == side[ev["actor"]]:
                        expected[a] += r.damage_dealt * ev["damage"]
                    if side[a] == side[ev["target"]]:
                        expected[a] += r.damage_taken * ev["damage"]
            elif ev["type"] == "round":
                for a in expected:
                    if not e.battle.by_id[a].out:
                        expected[a] += r.per_round
            elif ev["type"] == "end":
                for a in expected:
                    won = ev["winner"] == e.battle.side_names[side[a]]
                    expected[a] += 0.0 if ev["winner"] is None else (r.win if won else r.loss)
        assert e.rewards == pytest.approx(expected), e.battle.events[first:]


def test_env_order_enforcement_keeps_pettingzoos_guarantees():
    e = traveller_env.env("duel")
    assert isinstance(e, wrappers.OrderEnforcingWrapper)
    for name in ("agents", "agent_selection", "rewards", "terminations", "truncations",
                 "infos", "num_agents"):
        with pytest.raises(AttributeError, match="before reset"):
            getattr(e, name)
    with pytest.raises(AssertionError, match="reset"):
        e.state()
    e.reset(seed=0)
    assert e.agents == e.unwrapped.agents and e.num_agents == 2
    assert e.agent_selection == e.unwrapped.agent_selection
    assert e._cumulative_rewards is e.unwrapped._cumulative_rewards
    it = iter(e.agent_iter())
    next(it)
    with pytest.raises(AssertionError, match="need to call step"):
        next(it)  # no step in between


class ReadsObservation(RandomPolicy):
    """A random policy that insists on being handed the observation vector."""

    needs_observation = True

    def act(self, observation, action_mask, agent, env):
        assert observation is not None and observation.dtype == np.float32
        return super().act(observation, action_mask, agent, env)


def test_policies_without_observation_get_none_and_choose_the_same():
    e = raw_env("squad")
    e.reset(seed=3)
    seen = []

    class Spy(RandomPolicy):
        def act(self, observation, action_mask, agent, env):
            seen.append(observation)
            return super().act(observation, action_mask, agent, env)

    policy_action(Spy(0), e, e.agent_selection)
    assert seen == [None]
    # The same seeds give the same battle whether the vector is built or not.
    fast = play_battle(raw_env("squad"), dict.fromkeys(e.possible_agents, RandomPolicy()), 4)
    slow = play_battle(raw_env("squad"), dict.fromkeys(e.possible_agents, ReadsObservation()),
                       4)
    assert fast.events == slow.events


@pytest.mark.parametrize("name", ["rush", "marksman", "cover", "leader", "tactician",
                                  "passive", "optimal_aim"])
def test_scripted_policies_decide_without_the_observation(name):
    policy = make_policy(name)
    assert policy.needs_observation is False
    e = raw_env("squad_commander" if name != "optimal_aim" else "range_medium")
    battle = play_battle(e, dict.fromkeys(e.possible_agents, policy), 2)
    assert battle.done
