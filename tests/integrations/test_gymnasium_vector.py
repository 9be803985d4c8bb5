"""The Gymnasium bridge (``traveller_env.integrations.gymnasium_vector``) and the registered ids:
the ``gymnasium.vector.VectorEnv`` contract over the core, ``SAME_STEP`` autoreset with its
final observation and info, Gymnasium's vector wrappers, ``gymnasium.make`` / ``make_vec``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import (
    ClipReward,
    DictInfoToList,
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
)

import traveller_env
from traveller_env import core
from traveller_env.integrations.gymnasium_vector import (
    TravellerGymEnv,
    TravellerVectorEnv,
    default_opponent,
)
from traveller_env.policy import make_policy, policy_action
from traveller_env.rules.rng import derive_seed
from traveller_env.vector import random_legal_actions

if not core.available():
    pytest.skip("the compiled core is not built", allow_module_level=True)


def vec(num_envs: int = 4, **kwargs) -> gym.vector.VectorEnv:
    kwargs.setdefault("opponents", {"red": "rush"})
    return gym.make_vec("traveller/duel-v0", num_envs=num_envs,
                        vectorization_mode="vector_entry_point", **kwargs)


def play(envs, steps: int, seed: int = 0):
    """Random legal play; yields each step's five values and the actions taken."""
    rng = np.random.default_rng(seed)
    _, infos = envs.reset(seed=seed)
    for _ in range(steps):
        mask = infos["action_mask"].copy()
        mask[~mask.any(axis=1), 0] = True  # sync's NEXT_STEP: an ended env ignores its action
        actions = random_legal_actions(mask, rng)
        out = envs.step(actions)
        infos = out[4]
        yield (*out, actions)


def test_the_vector_env_contract():
    envs = vec(4)
    assert isinstance(envs, gym.vector.VectorEnv)
    assert isinstance(envs.unwrapped, TravellerVectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert envs.num_envs == 4
    assert envs.single_observation_space == gym.spaces.Box(-1, 1, (59,), np.float32)
    assert envs.observation_space.shape == (4, 59)
    assert envs.single_action_space == gym.spaces.Discrete(52)
    assert envs.action_space == gym.spaces.MultiDiscrete([52] * 4)
    obs, infos = envs.reset(seed=3, options=None)
    assert obs in envs.observation_space
    assert infos["action_mask"].shape == (4, 52) and infos["action_mask"].dtype == bool
    assert infos["action_mask"].any(axis=1).all()
    for obs, rewards, term, trunc, infos, _ in play(envs, 40, seed=3):
        assert obs in envs.observation_space
        assert rewards.shape == (4,) and rewards.dtype == np.float32
        assert term.shape == trunc.shape == (4,) and term.dtype == bool
        assert infos["action_mask"].any(axis=1).all()
    envs.close()


def test_reset_refuses_options_and_seed_lists_and_is_deterministic():
    envs = vec(2)
    with pytest.raises(ValueError, match="options"):
        envs.reset(options={"reset_mask": np.ones(2, dtype=bool)})
    with pytest.raises(ValueError, match="one int seeds"):
        envs.reset(seed=[1, 2])
    a = [r.copy() for _, r, *_ in play(envs, 30, seed=5)]
    b = [r.copy() for _, r, *_ in play(vec(2), 30, seed=5)]
    np.testing.assert_array_equal(np.array(a), np.array(b))


def test_final_info_holds_each_ended_battle_with_its_return():
    envs = vec(4)
    totals = np.zeros(4)
    ended = 0
    for _, rewards, term, trunc, infos, _ in play(envs, 200):
        totals += rewards
        done = term | trunc
        if not done.any():
            assert "final_info" not in infos and "final_obs" not in infos
            continue
        final = infos["final_info"]
        np.testing.assert_array_equal(infos["_final_info"], done)
        for r in np.flatnonzero(done):
            assert final["return"][r] == pytest.approx(totals[r], abs=1e-4)
            assert final["winner"][r] in (-1, 0, 1)
            assert final["length"][r] >= 1
            assert final["battle_seed"][r] != infos["battle_seed"][r]  # the next battle runs
            totals[r] = 0.0
            ended += 1
    assert ended > 4


def test_final_obs_is_the_ended_battles_last_observation():
    """The replayed final observation equals the AEC env's at the end of the same battle,
    played from its seed with the same learner actions and a rush NPC seeded as in the core."""
    envs = vec(2, final_obs=True)
    history: list[list[int]] = [[], []]
    checked = 0
    for obs, _, term, trunc, infos, actions in play(envs, 120, seed=1):
        for r in range(2):
            history[r].append(int(actions[r]))
        for r in np.flatnonzero(term | trunc):
            assert infos["_final_obs"][r]
            seed = int(infos["final_info"]["battle_seed"][r])
            aec = traveller_env.raw_env("duel")
            aec.reset(seed=seed)
            rush = make_policy("rush")
            rush.reset(derive_seed(seed, 2))  # seat 1 (red_0), as the vector seeds it
            mine = iter(history[r])
            for agent in aec.agent_iter():
                _, _, t, tr, _ = aec.last()
                if t or tr:
                    aec.step(None)
                elif agent == "blue_0":
                    aec.step(next(mine))
                else:
                    aec.step(policy_action(rush, aec, agent))
            assert next(mine, None) is None
            np.testing.assert_array_equal(infos["final_obs"][r],
                                          aec.observation_vector("blue_0"))
            assert not np.array_equal(infos["final_obs"][r], obs[r])  # the next battle's
            history[r] = []
            checked += 1
        assert ("final_obs" in infos) == bool((term | trunc).any())
    assert checked >= 2


def test_dict_observations_carry_the_mask():
    envs = vec(3, dict_obs=True)
    assert set(envs.single_observation_space.spaces) == {"observation", "action_mask"}
    obs, infos = envs.reset(seed=0)
    assert obs in envs.observation_space
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), infos["action_mask"])
    for obs, *_ in play(envs, 20):
        assert obs in envs.observation_space


def test_gymnasium_vector_wrappers_accept_it():
    envs = RecordEpisodeStatistics(vec(4))
    episodes = 0
    for _, _, term, trunc, infos, _ in play(envs, 150):
        done = term | trunc
        if done.any():
            np.testing.assert_array_equal(infos["_episode"], done)
            assert (infos["episode"]["l"][done] >= 1).all()
        episodes += int(done.sum())
    assert envs.episode_count == episodes > 0
    assert len(envs.return_queue) == min(episodes, 100)

    normalized = NormalizeReward(vec(4), gamma=0.99)
    raw = []
    for _, rewards, *_ in play(normalized, 100):
        assert rewards.shape == (4,) and np.isfinite(rewards).all()
        raw.append(rewards)
    assert normalized.return_rms.count > 1

    clipped = ClipReward(vec(4), min_reward=-0.5, max_reward=0.5)
    for _, rewards, *_ in play(clipped, 100):
        assert (np.abs(rewards) <= 0.5).all()

    as_list = DictInfoToList(vec(2))
    _, infos = as_list.reset(seed=0)
    assert isinstance(infos, list) and infos[0]["action_mask"].shape == (52,)


def test_normalize_observation_refuses_same_step_autoreset():
    """Gymnasium's NormalizeObservation takes only NEXT_STEP vectors (its own assertion);
    the core resets rows in the same step, so it is refused, as docs/integrations.md says."""
    with pytest.raises(AssertionError):
        NormalizeObservation(vec(2))


def test_registered_ids_and_their_default_opponents():
    for name in traveller_env.builtin_scenarios():
        spec = gym.spec(f"traveller/{name}-v0")
        assert spec.kwargs == {"scenario": name}
    assert default_opponent("duel") == "rush"
    assert default_opponent("range_long") == "passive"
    assert default_opponent("squad_commander") == "tactician"
    envs = gym.make_vec("traveller/range_short-v0", num_envs=2)
    assert envs.unwrapped.venv.opponents == {"red_0": "passive"}
    envs = gym.make_vec("traveller/duel-v0", num_envs=2, learner="red")
    assert envs.unwrapped.venv.opponents == {"blue_0": "rush"}
    assert envs.unwrapped.venv.learners == ["red_0"]
    with pytest.raises(ValueError, match="learner must be a side"):
        gym.make_vec("traveller/duel-v0", num_envs=2, learner="green")


def test_generated_squad_family_vector():
    envs = gym.make_vec("traveller/gen-squad-v0", num_envs=3, seeds=(0, 9))
    venv = envs.unwrapped.venv
    assert venv.scenario_set is not None and venv.layout.name == "6v6"
    assert set(venv.opponents.values()) == {"tactician"}
    obs, _ = envs.reset(seed=0)
    assert obs in envs.observation_space
    for obs, *_ in play(envs, 10):
        assert obs.shape == (3, envs.single_observation_space.shape[0])


def test_gymnasium_make_gives_the_single_learner_env():
    env = gym.make("traveller/duel-v0", opponents="rush")
    assert isinstance(env.unwrapped, TravellerGymEnv)
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space and info["action_mask"].dtype == bool
    rng = np.random.default_rng(0)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, term, trunc, info = env.step(action)
        done = term or trunc
    assert isinstance(reward, float)
    env = gym.make("traveller/duel-v0", dict_obs=True)
    obs, _ = env.reset(seed=1)
    assert obs in env.observation_space


def test_sync_vectorisation_over_the_single_env_gives_the_same_shapes():
    sync = gym.make_vec("traveller/duel-v0", num_envs=3, vectorization_mode="sync",
                        opponents={"red": "rush"})
    core_vec = vec(3)
    assert sync.single_observation_space == core_vec.single_observation_space
    assert sync.single_action_space == core_vec.single_action_space
    for envs in (sync, core_vec):
        steps = list(play(envs, 30))
        rewards = np.array([s[1] for s in steps])
        # Same shape; SyncVectorEnv stores rewards as float64, the core vector float32.
        assert rewards.shape == (30, 3) and rewards.dtype.kind == "f"
        assert steps[-1][4]["action_mask"].shape == (3, 52)
    # The sync vector resets NEXT_STEP, so NormalizeObservation takes it.
    normalized = NormalizeObservation(gym.make_vec("traveller/duel-v0", num_envs=2,
                                                   vectorization_mode="sync"))
    for obs, *_ in play(normalized, 20):
        assert obs.shape == (2, 59) and np.isfinite(obs).all()
    assert normalized.obs_rms.count > 20
