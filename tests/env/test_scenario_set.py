"""Vectors over a scenario set (traveller_env.scenario_set): each battle's scenario drawn from
its battle seed, the layout's columns, and every battle replayable in the AEC env."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import raw_env, vector
from traveller_env.layout import LayoutError
from traveller_env.rules.rng import derive_seed
from traveller_env.scenario_set import (
    SCENARIO_STREAM,
    TRAINING_SEEDS,
    is_set_source,
    scenario_index,
    set_sources,
)


def test_a_battle_seed_names_its_scenario():
    assert scenario_index(12345, 1) == 0
    assert scenario_index(12345, 50) == derive_seed(12345, SCENARIO_STREAM) % 50
    picks = np.bincount([scenario_index(s, 10) for s in range(5000)], minlength=10)
    # 5000 draws over 10 scenarios: each count ~ Binomial(5000, 0.1), sd 21; 6 sd either side
    assert picks.min() > 500 - 130 and picks.max() < 500 + 130


def test_set_sources():
    assert is_set_source("gen:skirmish") and is_set_source(["squad"])
    assert not is_set_source("gen:skirmish@3") and not is_set_source("squad")
    assert set_sources("gen:squad", (4, 6)) == ["gen:squad@4", "gen:squad@5", "gen:squad@6"]
    assert len(set_sources("gen:squad", None)) == TRAINING_SEEDS[1] - TRAINING_SEEDS[0] + 1
    with pytest.raises(ValueError, match="seeds must be"):
        set_sources("gen:squad", (6, 4))


def _replay(v, row_log, lo):
    """Replay each logged battle of a row in the AEC env with the same scenario, seed and
    (translated) actions; the observations and the column sums of rewards must agree."""
    checked = 0
    for seed, steps in row_log:
        scenario = f"gen:skirmish@{lo + scenario_index(seed, len(v.scenarios))}"
        env = raw_env(scenario, backend="python", layout=v.layout, max_rounds=3)
        env.reset(seed=seed)
        rel = env.relative_actions
        totals = {a: 0.0 for a in env.possible_agents}
        column_of = {}
        rank = [0, 0]
        for a in env.possible_agents:
            s = env.side_of(a)
            column_of[a] = s * v.layout.side_limit + rank[s]
            rank[s] += 1
        got = np.zeros(v.num_agents)
        for obs, action, rewards in steps:
            agent = env.agent_selection
            while env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                agent = env.agent_selection
            assert np.array_equal(env.observe(agent)["observation"], obs)
            env.step(rel.to_absolute(agent, action))
            for a, r in env.rewards.items():
                totals[a] += r
            got += rewards
            checked += 1
        for a, total in totals.items():
            assert got[column_of[a]] == pytest.approx(total, abs=1e-5)
    return checked


def test_every_battle_replays_in_the_aec_env_with_its_scenario():
    lo = 20
    v = vector.make("gen:skirmish", num_envs=3, seed=4, backend="python", seeds=(lo, lo + 9),
                    max_rounds=3)
    assert len(v.scenarios) == 10 and v.layout.name == "6v6"
    assert v.possible_agents[:2] == ["blue_0", "blue_1"] and v.num_agents == 12
    assert v.action_labels == v.layout.action_labels()
    obs, mask, info = v.reset()
    rng = np.random.default_rng(1)
    logs = [[] for _ in range(3)]
    current = [(int(info["battle_seed"][r]), []) for r in range(3)]
    for _ in range(400):
        actions = vector.random_legal_actions(mask, rng)
        before = obs.copy()
        obs, mask, rewards, term, trunc, info = v.step(actions)
        for r in range(3):
            current[r][1].append((before[r], int(actions[r]), rewards[r].copy()))
            if term[r] or trunc[r]:
                logs[r].append(current[r])
                current[r] = (int(info["battle_seed"][r]), [])
    assert sum(len(x) for x in logs) >= 3  # battles ended (and the next scenario drawn)
    assert sum(_replay(v, log, lo) for log in logs) > 100


def test_same_seed_same_battles():
    def run():
        v = vector.make("gen:squad", num_envs=2, seed=9, backend="python", seeds=(0, 5),
                        opponents={"red": "rush"})
        obs, mask, info = v.reset()
        rng = np.random.default_rng(3)
        out = []
        for _ in range(50):
            obs, mask, rew, _term, _trunc, info = v.step(vector.random_legal_actions(mask, rng))
            out.append((obs.copy(), rew.copy(), info["battle_seed"].copy()))
        return out
    for a, b in zip(run(), run(), strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_a_list_of_scenarios_and_the_errors():
    v = vector.make(["squad", "gen:squad@3"], num_envs=2, seed=0, backend="python",
                    opponents={"red": "rush"})
    obs, mask, _info = v.reset()
    assert obs.shape == (2, v.obs_dim) and mask.shape == (2, len(v.layout.action_labels()))
    assert set(v.learners) == {f"blue_{k}" for k in range(6)}
    with pytest.raises(ValueError, match="every scenario of a set must name its two sides"):
        vector.make(["squad", "ambush"], backend="python")
    with pytest.raises(LayoutError, match="'duel' does not fit"):
        vector.make(["squad", "duel"], backend="python")
    with pytest.raises(ValueError, match="seeds: only a generator distribution"):
        vector.make("squad", backend="python", seeds=(0, 3))
    with pytest.raises(ValueError, match="relative_actions=False"):
        vector.make("gen:squad", backend="python", seeds=(0, 3), relative_actions=False)
    with pytest.raises(ValueError, match="observation_slots"):
        v.observation_slots("blue_0")


def test_the_envs_of_a_set_share_their_observation_labels():
    """Under one layout every scenario's observation has the same labels: the set's envs hold
    one copy of them, not one per map (a copy per map was a third of a set's memory)."""
    from traveller_env.layout import resolve_layout
    from traveller_env.scenario_set import build_scenario_set

    sset = build_scenario_set(set_sources("gen:squad", (0, 2)), resolve_layout("6v6"),
                              {"move_view": True})
    builders = [env._obs_builder for env in sset.envs]
    assert all(b.labels is builders[0].labels for b in builders)
    assert sset.envs[0].observation_labels == sset.envs[2].observation_labels
    assert len(builders[0].labels) == builders[0].size
