"""SuperSuit's vector wrappers over the AEC env, and SB3's ``SubprocVecEnv`` over the SB3
bridge: short random rollouts (a few hundred steps on every built-in scenario and
``gen:squad@3``; duel and squad on the core too) that run, reset
at the end of each battle, and match the same battles played without the wrappers.

SuperSuit's multiprocess AEC vectorization refuses ``Dict`` observation spaces (PettingZoo's
action-mask convention), PettingZoo's own ``connect_four`` included:
``test_supersuit_async_aec_refuses_dict_observations`` pins that limitation of SuperSuit
(docs/integrations.md, SuperSuit).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from traveller_env import builtin_scenarios, core
from traveller_env.env import env as make_env

ss = pytest.importorskip("supersuit")
from pettingzoo.utils.conversions import turn_based_aec_to_parallel  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv  # noqa: E402

from traveller_env.integrations.sb3 import make_sb3_env  # noqa: E402

BACKENDS = ["python", pytest.param("core", marks=pytest.mark.skipif(
    not core.available(), reason="the compiled core is not built here"))]
#: Every built-in scenario and a generated one on the Python engine; duel and squad on the core.
SCENARIOS = [*(pytest.param(n, "python", id=f"{n}-python")
               for n in [*builtin_scenarios(), "gen:squad@3"]),
             *(pytest.param(n, "core", id=f"{n}-core", marks=pytest.mark.skipif(
                 not core.available(), reason="the compiled core is not built here"))
               for n in ("duel", "squad"))]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's and SuperSuit's deprecation notices
        yield


def _legal(masks, rng: np.random.Generator) -> np.ndarray:
    """A random legal action per row (0 where nothing is legal: an agent not selected)."""
    return np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])


@pytest.mark.parametrize(("name", "backend"), SCENARIOS)
def test_vectorize_aec_env(name: str, backend: str) -> None:
    """``vectorize_aec_env_v0`` (in process): each copy plays the battle its seed gives, the
    same as the env alone with the same actions, and battles restart when they end."""
    n = 3
    venv = ss.vectorize_aec_env_v0(make_env(name, backend=backend, max_rounds=3), n)
    venv.reset(seed=10)
    alone = [make_env(name, backend=backend, max_rounds=3) for _ in range(n)]
    for i, e in enumerate(alone):
        e.reset(seed=10 + i)
    rng = np.random.default_rng(0)
    restarts, steps = 0, 0
    for agent in venv.agent_iter(300):
        obs, _, _, _, _, _, passes, _ = venv.last()
        masks = [o["action_mask"] for o in obs]
        actions = _legal(masks, rng)
        for i, e in enumerate(alone):  # the same battles, until each first ends
            if e is not None and all(e.terminations[a] or e.truncations[a] for a in e.agents):
                alone[i] = None  # over: SuperSuit restarts it (without the dead steps)
            if alone[i] is None or passes[i]:
                continue
            assert e.agent_selection == agent
            mine = e.observe(agent)
            assert mine["observation"].tobytes() == obs[i]["observation"].tobytes()
            assert mine["action_mask"].tobytes() == masks[i].tobytes()
            e.step(int(actions[i]))
        venv.step(actions)
        restarts += int(np.sum(venv.envs_dones))
        steps += 1
    assert steps == 300
    if name == "duel":
        assert restarts > 0  # battles of 3 rounds end within 300 steps


@pytest.mark.parametrize(("name", "backend"), SCENARIOS)
def test_concat_vec_envs_over_the_parallel_conversion(name: str, backend: str) -> None:
    """SuperSuit's documented route: the turn-based parallel conversion, one vector row per
    agent (``pettingzoo_env_to_vec_env_v1``), then ``concat_vec_envs_v1`` of copies
    (in process, gymnasium's API)."""
    par = turn_based_aec_to_parallel(make_env(name, backend=backend, max_rounds=3))
    agents = len(par.possible_agents)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0)
    obs, _ = venv.reset(seed=0)
    assert obs["observation"].shape[0] == obs["action_mask"].shape[0] == 2 * agents
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(300):
        masks = obs["action_mask"]
        assert masks.reshape(2, agents, -1).any(axis=2).sum(axis=1).tolist() == [1, 1]
        obs, rewards, terms, truncs, _ = venv.step(_legal(masks, rng))
        assert rewards.shape == (2 * agents,) and np.isfinite(rewards).all()
        ends += int(np.any(terms | truncs))
    if name == "duel":
        assert ends > 0
    venv.close()


def test_concat_vec_envs_in_subprocesses_for_sb3() -> None:
    """``concat_vec_envs_v1`` with worker processes (the env travels by pickle) and SB3's
    vector API (``base_class="stable_baselines3"``), on both engines when the core is built."""
    factories = [make_env("duel", backend="python", max_rounds=3)]
    if core.available():
        factories.append(make_env("squad", backend="core", max_rounds=3))
    for aec in factories:
        par = turn_based_aec_to_parallel(aec)
        agents = len(par.possible_agents)
        venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=2,
                                     base_class="stable_baselines3")
        try:
            obs = venv.reset()
            rng = np.random.default_rng(2)
            for _ in range(200):
                obs, _, dones, infos = venv.step(_legal(obs["action_mask"], rng))
                assert dones.shape == (2 * agents,) and len(infos) == 2 * agents
        finally:
            venv.close()


@pytest.mark.parametrize("name", ["duel", "squad"])
def test_sb3_subproc_vec_env_matches_in_process(name: str) -> None:
    """SB3's ``SubprocVecEnv`` over the bridge (``make_sb3_env``) plays exactly the battles
    that ``DummyVecEnv`` plays in process, through a few hundred steps and the automatic
    resets between battles (the bridge seeds each from its own generator)."""
    factory = make_sb3_env(name, learner="blue", backend="python", max_rounds=3)
    traces, battles = [], []
    for cls in (DummyVecEnv, SubprocVecEnv):
        venv = cls([factory] * 2, **({"start_method": "fork"} if cls is SubprocVecEnv else {}))
        try:
            venv.seed(7)
            obs = venv.reset()
            rng = np.random.default_rng(3)
            trace, ended = [obs.tobytes()], 0
            for _ in range(300):
                masks = np.stack(venv.env_method("action_masks"))
                assert masks.any(axis=1).all()
                obs, rewards, dones, _ = venv.step(_legal(masks, rng))
                # (DummyVecEnv's rewards are float32, SubprocVecEnv's float64)
                trace.append((obs.tobytes(), rewards.astype(np.float64).tobytes(),
                              dones.tobytes()))
                ended += int(dones.sum())
            traces.append(trace)
            battles.append(ended)
        finally:
            venv.close()
    assert traces[0] == traces[1]
    if name == "duel":
        assert battles[0] >= 2


@pytest.mark.parametrize("control", ["traveller", "connect_four"])
def test_supersuit_async_aec_refuses_dict_observations(control: str) -> None:
    """SuperSuit's limitation, not the env's: its multiprocess AEC vector env takes only Box
    and Discrete observation spaces, so every env with an action mask in a ``Dict``
    observation is refused, PettingZoo's ``connect_four`` as well as this one. (In process,
    ``observe`` returns an object array of the observation dicts.)"""
    if control == "connect_four":
        aec = pytest.importorskip("pettingzoo.classic.connect_four_v3").env()
    else:
        aec = make_env("duel", backend="python")
    with pytest.raises(AssertionError, match="only support Box and Discrete"):
        ss.vectorize_aec_env_v0(aec, 2, num_cpus=2)
