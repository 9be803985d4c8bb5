"""Tianshou 2.x over the AEC env: its ``PettingZooEnv`` and ``MultiAgentOffPolicyAlgorithm``
with a DQN learner as blue and our ``rush`` as red (``tianshou_scripted.ScriptedAlgorithm``).

A smoke test: training runs (collection, replay, DQN updates) and evaluation plays whole
battles. No improvement is asserted: in trials of 2,000-5,000 steps the learner went from 0
to 0-0.12 wins, too unsteady for a CI check (a likely cause: Tianshou's AEC dispatch credits
each reward to the transition of the agent that moved, so blue never sees the loss dealt on
rush's move)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("tianshou")

import numpy as np
import torch
from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

from traveller_env import core
from traveller_env import env as make_env
from traveller_env.tianshou_scripted import ScriptedAlgorithm

BACKEND = "core" if core.available() else "python"


def test_dqn_trains_against_rush_through_the_multi_agent_algorithm():
    torch.manual_seed(0)
    np.random.seed(0)
    warnings.simplefilter("ignore")
    game = make_env("duel", backend=BACKEND, infos="none")
    ts_env = PettingZooEnv(game)
    ts_env.reset(seed=0)
    obs_dim = ts_env.observation_space["observation"].shape[0]
    net = Net(state_shape=obs_dim, action_shape=ts_env.action_space.n, hidden_sizes=[64, 64])
    learner = DQN(policy=DiscreteQLearningPolicy(model=net, action_space=ts_env.action_space,
                                                 eps_training=0.2),
                  optim=AdamOptimizerFactory(lr=1e-3), gamma=0.95, target_update_freq=200)
    rush = ScriptedAlgorithm(game, "rush", ts_env.action_space, seed=0)
    marl = MultiAgentOffPolicyAlgorithm(algorithms=[learner, rush], env=ts_env)
    venv = DummyVectorEnv([lambda: ts_env])
    buffer = VectorReplayBuffer(5000, 1)
    collector = Collector(marl, venv, buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(marl.policy):
        for _ in range(3):
            collector.collect(n_step=200)
            for _ in range(10):
                marl.update(buffer, 64)
    assert len(buffer) == 600
    agents = {str(a) for a in buffer.obs.agent_id[:600]}
    assert agents == {"blue_0", "red_0"}
    result = Collector(marl, venv).collect(n_episode=5, reset_before_collect=True)
    assert result.n_collected_episodes == 5
    assert set(np.round(result.returns[:, 0]).tolist()) <= {-1.0, 0.0, 1.0}
