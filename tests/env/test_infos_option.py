"""The ``infos`` option of the AEC env, its event cursor (``new_events``), and
``learner_seats.LearnerSeatsEnv`` (the env as TorchRL-style clients need it)."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import raw_env
from traveller_env.integrations.learner_seats import learner_seats_env
from traveller_env.policy import RandomPolicy, policy_action
from traveller_env.scenario import builtin_scenarios


@pytest.mark.parametrize("backend", ["python", "core"])
def test_infos_none_keeps_infos_empty_and_new_events_gives_what_infos_would(backend):
    from traveller_env import core

    if backend == "core" and not core.available():
        pytest.skip("the compiled core is not built")
    full = raw_env("squad", backend=backend, infos="events")
    bare = raw_env("squad", backend=backend, infos="none")
    full.reset(seed=4)
    bare.reset(seed=4)
    policy = RandomPolicy(1)
    for _ in range(300):
        if not full.agents:
            break
        agent = full.agent_selection
        assert bare.agent_selection == agent
        assert all(info == {} for info in bare.infos.values())
        assert bare.new_events(agent) == full.infos[agent]["events"] == full.new_events(agent)
        dead = full.terminations[agent] or full.truncations[agent]
        action = None if dead else policy_action(policy, full, agent)
        full.step(action)
        bare.step(action)
        assert bare.rewards == full.rewards and bare.terminations == full.terminations
    assert bare.battle.events == full.battle.events


def test_the_infos_option_is_checked_and_the_default_is_numeric():
    assert raw_env("duel", backend="python").infos_mode == "numeric"
    with pytest.raises(ValueError, match="infos must be one of"):
        raw_env("duel", backend="python", infos="numbers")
    with pytest.raises(RuntimeError, match="reset"):
        raw_env("duel", backend="python").new_events("blue_0")


@pytest.mark.parametrize("name", builtin_scenarios())
def test_learner_seats_always_select_a_live_learner_with_a_legal_action(name):
    """Dead steps are taken inside, every possible agent keeps its entries, the rewards of a
    battle add up to the AEC env's (here: every seat a learner, random play)."""
    env = learner_seats_env(name, backend="python")
    rng = np.random.default_rng(0)
    env.reset(seed=7)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for _ in range(400):
        if not env.agents:
            assert all(env.terminations[a] or env.truncations[a] for a in env.possible_agents)
            env.reset(seed=8)
            totals = dict.fromkeys(env.possible_agents, 0.0)
            continue
        agent = env.agent_selection
        assert set(env.rewards) == set(env.terminations) == set(env.possible_agents)
        assert all(info == {} for info in env.infos.values())
        mask = env.observe(agent)["action_mask"]
        assert mask.any() and not (env.terminations[agent] or env.truncations[agent])
        env.step(int(rng.choice(np.flatnonzero(mask))))
        for a, r in env.rewards.items():
            totals[a] += r


def test_learner_seats_play_opponents_inside_and_add_their_rewards():
    env = learner_seats_env("duel", opponents={"red": "rush"}, backend="python")
    assert env.possible_agents == ["blue_0"]
    rng = np.random.default_rng(1)
    outcomes = []
    for seed in range(30):
        env.reset(seed=seed)
        total = env.rewards["blue_0"]
        while env.agents:
            assert env.agent_selection == "blue_0"
            mask = env.observe("blue_0")["action_mask"]
            env.step(int(rng.choice(np.flatnonzero(mask))))
            total += env.rewards["blue_0"]
        winner = env.unwrapped.battle.winner
        outcomes.append(winner)
        assert total == pytest.approx({"blue": 1.0, "red": -1.0, None: 0.0}[winner])
    assert "red" in outcomes
    with pytest.raises(ValueError, match="neither"):
        learner_seats_env("duel", opponents={"green": "rush"}, backend="python")
