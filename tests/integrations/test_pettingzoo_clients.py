"""Generic PettingZoo and Gymnasium clients on the AEC env as it comes from ``env()``, on every
built-in scenario and a generated one (the table of docs/integrations.md).

PettingZoo's own checks (``api_test``, ``seed_test``, ``state_test``, ``parallel_api_test`` and
``parallel_seed_test`` through ``turn_based_aec_to_parallel``, ``performance_benchmark``), and
the loops the clients' tutorials write: MaskablePPO over the AEC env the way PettingZoo's SB3
action-mask tutorial drives it, Tianshou's ``PettingZooEnv`` in a ``DummyVectorEnv``, TorchRL's
``PettingZooWrapper``. Budgets are tiny: these check that the clients run and are right, not
that anything learns.
"""

from __future__ import annotations

import importlib
import warnings

import gymnasium
import pytest
from pettingzoo.test import (
    api_test,
    parallel_api_test,
    parallel_seed_test,
    performance_benchmark,
    seed_test,
    state_test,
)
from pettingzoo.utils import BaseWrapper
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from traveller_env import core
from traveller_env import env as make_env
from traveller_env.scenario import builtin_scenarios

BACKEND = "core" if core.available() else "python"
SCENARIOS = [*builtin_scenarios(), "gen:squad@3"]


def game(name: str, **options):
    return make_env(name, backend=BACKEND, **options)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("name", SCENARIOS)
def test_pettingzoo_api_seed_state_and_parallel_tests_pass(name, capsys):
    api_test(game(name), num_cycles=60)
    seed_test(lambda: game(name), num_cycles=60)
    state_test(game(name), turn_based_aec_to_parallel(game(name)), num_cycles=60)
    parallel_api_test(turn_based_aec_to_parallel(game(name)), num_cycles=200)
    parallel_seed_test(lambda: turn_based_aec_to_parallel(game(name)), num_cycles=60)
    assert "Passed API test" in capsys.readouterr().out


def test_parallel_api_test_passes_twenty_times_in_a_row_on_squad(capsys):
    """Once intermittent: the conversion observed before the dead steps were taken, so the next
    agent's mask arrived all zeros. Every knocked-out agent now waits for the battle's end."""
    for _ in range(20):
        parallel_api_test(turn_based_aec_to_parallel(game("squad")), num_cycles=1000)
    assert capsys.readouterr().out.count("Passed Parallel API test") == 20


class _FastClock:
    """``time`` for ``performance_benchmark``, one second a call: it stops after a few cycles."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("name", ["duel", "squad", "gen:squad@3"])
def test_performance_benchmark_runs(name, monkeypatch, capsys):
    module = importlib.import_module("pettingzoo.test.performance_benchmark")
    monkeypatch.setattr(module, "time", _FastClock())
    performance_benchmark(game(name))
    assert "turns per second" in capsys.readouterr().out


# ------------------------------------------------------------------ Gymnasium and SB3 checkers
@pytest.mark.parametrize("name", SCENARIOS)
def test_gymnasium_and_sb3_check_env_pass_on_the_bridges(name):
    """Both checkers step unmasked random actions: the bridges answer an illegal one with -1
    and the episode's end (``illegal_action="terminate"``, their default)."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("tianshou")
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from traveller_env.integrations.sb3 import TravellerSB3Env
    from traveller_env.integrations.tianshou_scripted import masked_learner_env

    sides = [s.name for s in game(name).unwrapped.scenario.sides]
    makers = [lambda learner=learner: TravellerSB3Env(name, learner=learner, backend=BACKEND)
              for learner in [*sides, "all"]]
    makers.append(lambda: masked_learner_env(name, learner=sides[0], seed=0, backend=BACKEND))
    for make in makers:
        gymnasium_check_env(make(), skip_render_check=True)
        sb3_check_env(make())


# ------------------------------------------------------------------ SB3 (PettingZoo's tutorial)
class ActionMaskGym(BaseWrapper, gymnasium.Env):
    """The AEC env as one gymnasium env for MaskablePPO, written the way PettingZoo's SB3
    action-mask tutorial writes its wrapper: every selected agent is driven by the one policy;
    ``step`` returns the next selected agent's observation and the acting agent's cumulative
    reward and flags."""

    def reset(self, seed=None, options=None):
        super().reset(seed, options)
        self.observation_space = super().observation_space(self.possible_agents[0])["observation"]
        self.action_space = super().action_space(self.possible_agents[0])
        return self.observe(self.agent_selection), {}

    def step(self, action):
        acting = self.agent_selection
        super().step(action)
        return (self.observe(self.agent_selection), self._cumulative_rewards[acting],
                self.terminations[acting], self.truncations[acting], self.infos[acting])

    def observe(self, agent):
        return super().observe(agent)["observation"]

    def action_mask(self):
        return super().observe(self.agent_selection)["action_mask"]


def test_maskable_ppo_drives_squad_as_the_sb3_tutorial_does():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from sb3_contrib.common.wrappers import ActionMasker

    wrapped = ActionMaskGym(game("squad"))
    wrapped.reset(seed=0)
    ends = []
    masked = ActionMasker(wrapped, lambda e: e.action_mask())
    model = MaskablePPO(MaskableActorCriticPolicy, masked, n_steps=128, batch_size=64,
                        n_epochs=1, seed=0, device="cpu")

    def note_end(locals_, _globals) -> bool:
        if locals_["dones"][0]:
            battle = wrapped.unwrapped.battle
            ends.append((battle.done, battle.winner, battle.truncated))
        return True

    model.learn(total_timesteps=384, callback=note_end)
    assert model.num_timesteps >= 384
    # An episode MaskablePPO ends is a battle's end (a winner, or max_rounds).
    assert all(done and (winner is not None or truncated) for done, winner, truncated in ends)


# ------------------------------------------------------------------ Tianshou
def test_tianshou_pettingzoo_env_collects_whole_battles_on_squad():
    pytest.importorskip("tianshou")
    from tianshou.algorithm import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    ends = []

    class Watched(PettingZooEnv):
        """Tianshou's wrapper, noting the battle at each episode end it reports."""

        def step(self, action):
            out = super().step(action)
            if out[2] or out[3]:
                b = self.env.unwrapped.battle
                ends.append((b.done, b.winner, b.truncated, b.round))
            return out

    venv = DummyVectorEnv([lambda: Watched(game("squad", max_rounds=4))])
    venv.seed(0)  # Tianshou's own seeding (once refused: the env's seed was an int attribute)
    ts_env = PettingZooEnv(game("squad"))
    marl = MultiAgentOffPolicyAlgorithm(
        algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(ts_env.action_space)
                    for _ in ts_env.agents], env=ts_env)
    result = Collector(marl, venv).collect(n_episode=2, reset_before_collect=True)
    assert result.n_collected_episodes == len(ends) == 2
    # Every episode Tianshou ended is a battle's end (a winner, or max_rounds), not a knockout.
    assert all(done and (winner is not None or truncated) for done, winner, truncated, _ in ends)


# ------------------------------------------------------------------ TorchRL
@pytest.mark.parametrize("infos", ["numeric", "none"])
def test_torchrl_pettingzoo_wrapper_rolls_out_on_squad(infos):
    pytest.importorskip("torchrl")
    import torch
    from torchrl.envs import PettingZooWrapper

    wrapped = PettingZooWrapper(game("squad", infos=infos, max_rounds=2), use_mask=True,
                                categorical_actions=True, done_on_any=False, seed=0)
    td = wrapped.rollout(300, break_when_any_done=False)
    assert td.batch_size == torch.Size([300])
    assert bool(td["next", "done"].any())  # battles ended (and the next ones began)
    agents = wrapped.group_map  # one group per agent in a turn-based env
    acted = torch.stack([td[a, "mask"] for a in agents]).sum(0)
    assert bool((acted == 1).all())  # each step, exactly one agent acted (a legal action)
    rewards = torch.cat([td["next", a, "reward"].flatten() for a in agents])
    assert bool(torch.isfinite(rewards).all())
