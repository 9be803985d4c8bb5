"""The SB3 bridge (``traveller_env.integrations.sb3``): a single-learner ``gymnasium.Env`` over the
AEC environment. Checked with Gymnasium's and SB3's env checkers, against the AEC mask, for the
learner's own reward (a known bug of PettingZoo's SB3 tutorial wrapper), for the knocked-out
learner's outcome reward, under SB3's vectorised environments, and with a short MaskablePPO run.

The checkers sample actions without the mask, so they run with ``illegal_action="penalize"``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import fighter, scenario
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from traveller_env.integrations.sb3 import TravellerSB3Env, make_sb3_env
from traveller_env.policy import RandomPolicy

LEARNERS = [("duel", "blue_0"), ("duel", "red"), ("squad", "blue"), ("ambush", "guards"),
            ("melee", "all"), ("squad", "all")]


class Scripted:
    """A policy playing a fixed preference list of labels (first legal one wins)."""

    name = "scripted"

    def __init__(self, *labels: str) -> None:
        self.labels = labels

    def reset(self, seed: int | None = None) -> None:
        """Nothing random."""

    def act(self, observation, action_mask, agent, env) -> int:
        for label in self.labels:
            i = env.action_index(label)
            if action_mask[i]:
                return i
        return int(np.flatnonzero(action_mask)[0])


def legal_random(bridge: TravellerSB3Env, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(bridge.action_masks())))


# ---------------------------------------------------------------------------- env checkers
@pytest.mark.parametrize(("name", "learner"), LEARNERS)
def test_gymnasium_and_sb3_check_env(name, learner):
    """The bridge passes gymnasium's and SB3's checkers (R2.3 forfeit under penalize) for an
    agent, a side and shared self-play."""
    bridge = TravellerSB3Env(name, learner=learner, illegal_action="penalize")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render.*")
        gymnasium_check_env(bridge)
        sb3_check_env(bridge, warn=True)


def test_bad_learner_and_policies_are_refused():
    """API (no rule): unknown learners and misplaced policies fail with clear errors."""
    with pytest.raises(ValueError, match="neither an agent"):
        TravellerSB3Env("duel", learner="green")
    with pytest.raises(ValueError, match="not non-learner"):
        TravellerSB3Env("duel", learner="blue", policies={"blue_0": RandomPolicy()})
    with pytest.raises(TypeError, match="Policy"):
        TravellerSB3Env("duel", learner="blue", policies=object())


# ---------------------------------------------------------------------------- masks and play
@pytest.mark.parametrize(("name", "learner"), LEARNERS)
def test_action_masks_match_the_aec_mask(name, learner):
    """R2.1: at every learner decision action_masks() is the AEC mask of the selected agent,
    who is one of the learner's seats; observations stay in the observation space."""
    bridge = TravellerSB3Env(name, learner=learner)
    rng = np.random.default_rng(0)
    obs, info = bridge.reset(seed=3)
    for _ in range(300):
        agent = bridge.current_agent
        assert agent == info["agent"] == bridge.aec.agent_selection
        assert agent in bridge.learners
        mask = bridge.action_masks()
        assert mask.dtype == bool and mask.any()
        np.testing.assert_array_equal(mask, bridge.aec.action_mask(agent).astype(bool))
        np.testing.assert_array_equal(obs, bridge.aec.observe(agent)["observation"])
        assert bridge.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = bridge.step(legal_random(bridge, rng))
        assert isinstance(reward, float)
        assert bridge.observation_space.contains(obs)
        if terminated or truncated:
            assert not bridge.action_masks().any()
            with pytest.raises(RuntimeError, match="reset"):
                bridge.step(0)
            obs, info = bridge.reset()


def test_reset_seed_reproduces_the_battle():
    """R1.1: the same reset seed gives the same battle (bridge seed -> battle and policies)."""
    logs = []
    for _ in range(2):
        bridge = TravellerSB3Env("squad", learner="blue_0")
        bridge.reset(seed=42)
        rng = np.random.default_rng(1)
        for _ in range(30):
            *_, terminated, truncated, _ = bridge.step(legal_random(bridge, rng))
            if terminated or truncated:
                break
        logs.append(list(bridge.aec.battle.events))
    assert logs[0] == logs[1]


# ---------------------------------------------------------------------------- rewards
def _damage_duel(**options) -> dict:
    """blue_0 (prepared: Initiative 12 + 3, always first) always hits red_0 (2 + 6 + 3 + 1 is at
    least 12) but cannot take it out in one shot (at most 18 + 14 damage against 45 points)."""
    tough = {"STR": 15, "DEX": 15, "END": 15}
    blue = fighter((2, 5), skills={"gun_combat.slug": 6}, chars=tough, prepared=True)
    red = fighter((12, 5), skills={}, chars=tough)
    sc = scenario([blue], [red], **options)
    sc["rewards"] = {"damage_dealt": 1.0, "damage_taken": 0.0, "shared": False}
    return sc


@pytest.mark.parametrize("reactions", [False, True])
def test_step_returns_the_learners_own_reward_not_the_next_agents(reactions):
    """The SB3 tutorial wrapper's known bug (R2.3, R6.1): blue_0 aims then attacks, which
    spends its budget, so the next agent is the enemy (whose own reward is 0: shared false,
    damage_taken 0); the bridge still returns blue_0's +damage. With reactions on, the hit
    resolves in red's reaction step and is still credited to the learner."""
    sc = _damage_duel(reactions=reactions)
    bridge = TravellerSB3Env(sc, learner="blue_0", policies=Scripted("end_turn", "react:none"))
    bridge.reset(seed=0)
    aec = bridge.aec
    _, reward, *_ = bridge.step(aec.action_index("aim:red_0"))
    assert reward == 0.0 and bridge.current_agent == "blue_0"
    n_events = len(aec.battle.events)
    _, reward, terminated, truncated, _ = bridge.step(aec.action_index("attack:red_0"))
    attacks = [ev for ev in aec.battle.events[n_events:] if ev["type"] == "attack"]
    assert attacks[0]["actor"] == "blue_0" and attacks[0]["hit"]
    damage = attacks[0]["damage"]
    assert damage > 0
    ends = [ev for ev in aec.battle.events[n_events:] if ev["type"] == "end_turn"]
    assert ends[0]["actor"] == "blue_0"  # the turn passed to red in between
    reactions_seen = [ev for ev in aec.battle.events[n_events:] if ev["type"] == "reaction"]
    assert [ev["actor"] for ev in reactions_seen] == (["red_0"] if reactions else [])
    assert reward == pytest.approx(float(damage))
    assert not terminated and not truncated
    assert bridge.current_agent == "blue_0"


def test_the_aec_alone_hands_the_next_agent_a_different_reward():
    """The trap the bridge avoids: after blue_0's hit the AEC selects red_0, whose ``last()``
    reward is 0 while blue_0 earned the damage (R6.1, shared false)."""
    bridge = TravellerSB3Env(_damage_duel(), learner="blue_0")
    bridge.reset(seed=0)
    aec = bridge.aec
    aec.step(aec.action_index("aim:red_0"))
    aec.step(aec.action_index("attack:red_0"))
    damage = [ev for ev in aec.battle.events if ev["type"] == "attack"][-1]["damage"]
    assert aec.agent_selection == "red_0"
    assert aec.last()[1] == 0.0
    assert aec.rewards["blue_0"] == damage > 0


def _execution_scenario() -> dict:
    """Blue is prepared (12 + DEX DM; blue_0 never after red_0, scenario order settles a tie);
    red_0 aims and then always hits (2 + 6 - 2 + 1 + 1) and takes out a 1/1/1 target."""
    weak = {"STR": 1, "DEX": 1, "END": 1}
    blue = [fighter((2, 5), chars=weak), fighter((2, 7), chars=weak)]
    red = [fighter((8, 5), skills={"gun_combat.slug": 6}, chars={"DEX": 1})]
    sc = scenario(blue, red)
    sc["sides"][0]["prepared"] = True
    return sc


class Executioner:
    """Aims at blue_0 then attacks it; then the same for blue_1; otherwise ends its turn."""

    name = "executioner"

    def reset(self, seed: int | None = None) -> None:
        """Nothing random."""

    def act(self, observation, action_mask, agent, env) -> int:
        me = env.battle.by_id[agent]
        for target in ("blue_0", "blue_1"):
            aim, attack = env.action_index(f"aim:{target}"), env.action_index(f"attack:{target}")
            if me.aim_target == target and action_mask[attack]:
                return attack
            if me.aim_target != target and action_mask[aim]:
                return aim
        return env.action_index("end_turn")


@pytest.mark.parametrize("play_out", [True, False])
def test_learner_knocked_out_before_the_end_gets_the_loss(play_out):
    """R6.3, R8.2: the learner blue_0 is taken out while blue_1 fights on, so the AEC never
    gives it the outcome; with play_out the bridge plays the battle out (red then takes out
    blue_1: red wins) and returns blue's loss (-1); without, the episode ends at once with 0."""
    policies = {"red_0": Executioner(), "blue_1": Scripted("end_turn")}
    bridge = TravellerSB3Env(_execution_scenario(), learner="blue_0", policies=policies,
                             play_out=play_out)
    bridge.reset(seed=0)
    assert bridge.current_agent == "blue_0"
    aec = bridge.aec
    _, reward, terminated, truncated, info = bridge.step(aec.action_index("end_turn"))
    assert terminated and not truncated
    assert aec.battle.by_id["blue_0"].out
    assert "blue_0" not in aec.agents  # the AEC will never hand it the outcome
    downed = [ev["actor"] for ev in aec.battle.events if ev["type"] == "incapacitated"]
    if play_out:
        assert downed == ["blue_0", "blue_1"]
        assert aec.battle.done and aec.battle.winner == "red"
        assert info["winner"] == "red"
        assert reward == -1.0
    else:
        assert downed == ["blue_0"] and not aec.battle.done
        assert reward == 0.0


def test_side_learner_gets_the_outcome_when_the_battle_ends():
    """R8.2: a side learner (shared rewards) gets the loss when its last seat falls."""
    policies = {"red_0": Executioner()}
    bridge = TravellerSB3Env(_execution_scenario(), learner="blue", policies=policies)
    bridge.reset(seed=0)
    aec = bridge.aec
    ended = False
    rewards = []
    for _ in range(10):
        _, reward, terminated, truncated, _ = bridge.step(aec.action_index("end_turn"))
        rewards.append(reward)
        if terminated or truncated:
            ended = True
            break
    assert ended and aec.battle.winner == "red"
    assert rewards[-1] == -1.0 and sum(rewards[:-1]) == 0.0


# ---------------------------------------------------------------------------- vectorised SB3
@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_make_vec_env(vec_env_cls):
    """API (R2.1 masks via env_method): make_sb3_env works under SB3's make_vec_env with
    DummyVecEnv and SubprocVecEnv."""
    factory = make_sb3_env("duel", learner="blue", illegal_action="penalize")
    venv = make_vec_env(factory, n_envs=2, seed=0, vec_env_cls=vec_env_cls)
    try:
        obs = venv.reset()
        assert obs.shape == (2, *venv.observation_space.shape)
        rng = np.random.default_rng(0)
        for _ in range(20):
            masks = np.stack(venv.env_method("action_masks"))
            assert masks.shape == (2, venv.action_space.n) and masks.any(axis=1).all()
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, dones, infos = venv.step(actions)
            assert obs.shape[0] == rewards.shape[0] == dones.shape[0] == len(infos) == 2
    finally:
        venv.close()


def test_maskable_ppo_smoke_run():
    """A MaskablePPO run of 256 steps on the duel learns without error and predicts a legal
    action (R2.1)."""
    torch = pytest.importorskip("torch")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    torch.set_num_threads(1)
    bridge = TravellerSB3Env("duel", learner="blue")
    model = sb3_contrib.MaskablePPO("MlpPolicy", bridge, n_steps=128, batch_size=64, n_epochs=1,
                                    seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs, _ = bridge.reset(seed=1)
    action, _ = model.predict(obs, action_masks=bridge.action_masks(), deterministic=True)
    assert bridge.action_masks()[int(action)]
