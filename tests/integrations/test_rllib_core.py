"""RLlib on the compiled core (``traveller_env.integrations.rllib.core``): RLlib's own env
runner (``CoreEnvRunner``, no Ray instance needed) samples episodes from battles stepped in the
core, and every episode is replayed on the AEC env with the same battle seed, opponents and
actions: the same observations, masks honoured, the same rewards summed, the battle ending at
the same decision. Then `traveller train rllib` on the core path (a local Ray) and its
argument errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_env.policy import make_policy, policy_action
from traveller_env.rules.rng import derive_seed

pytest.importorskip("ray.rllib")
if not traveller_env.core.available():  # pragma: no cover - the core is built by `make`
    pytest.skip("the compiled core is not built (make build)", allow_module_level=True)


def skirmish() -> dict:
    """2 v 2 at close range with damage and per-round rewards, each seat's own (not shared)."""
    sc = scenario([fighter((2, 2)), fighter((2, 4), weapon="autopistol")],
                  [fighter((9, 2)), fighter((9, 5), weapon="autopistol")],
                  width=12, height=8, max_rounds=6, hastening=True, reactions=True)
    sc["rewards"] = {"win": 1.0, "loss": -1.0, "draw": 0.25, "damage_dealt": 0.1,
                     "damage_taken": -0.05, "per_round": -0.01, "shared": False}
    return sc


def runner_for(sc, num_envs: int, horizon: int = 1, module_class=None):
    """RLlib's PPO config on the core path and a local ``CoreEnvRunner`` built from it."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from traveller_env.integrations.rllib.core import make_core_env
    from traveller_env.integrations.rllib.core_runner import CoreEnvRunner
    from traveller_env.integrations.rllib.modules import MaskedPPOTorchRLModule

    env_config = {"scenario": sc, "opponents": {"red": "rush"}}
    probe = make_core_env({**env_config, "num_envs": 1})
    config = (PPOConfig()
              .environment(make_core_env, env_config=env_config, disable_env_checking=True)
              .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs,
                           env_runner_cls=CoreEnvRunner,
                           gym_env_vectorize_mode="vector_entry_point",
                           episode_lookback_horizon=horizon)
              .rl_module(rl_module_spec=RLModuleSpec(
                  module_class=module_class or MaskedPPOTorchRLModule,
                  observation_space=probe.single_observation_space,
                  action_space=probe.single_action_space,
                  model_config={"fcnet_hiddens": [16], "vf_share_layers": False}))
              .debugging(seed=3))
    return CoreEnvRunner(config=config)


def replay(sc, episode) -> tuple[float, int]:
    """Play the episode's battle on the AEC env (its seed, rush as red seeded as the core seeds
    its opponents, the episode's actions for blue) and check each observation and mask; returns
    blue's reward summed over the battle and the number of blue decisions."""
    env = traveller_env.raw_env(sc)
    rel = env.relative_actions
    seed = int(episode.get_infos(0)["battle_seed"])
    env.reset(seed=seed)
    npcs = {}
    for i, agent in enumerate(env.possible_agents):
        if env.side_of(agent) == 1:
            npcs[agent] = make_policy("rush")
            npcs[agent].reset(derive_seed(seed, 1 + i))
    obs = episode.get_observations()
    actions = episode.get_actions()
    total, k = 0.0, 0
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
        elif agent in npcs:
            env.step(policy_action(npcs[agent], env, agent))
        else:
            seen = env.observe(agent)
            np.testing.assert_array_equal(obs["observations"][k], seen["observation"])
            mask = rel.mask(agent, seen["action_mask"])
            np.testing.assert_array_equal(obs["action_mask"][k], mask.astype(np.float32))
            assert mask[actions[k]], "the module chose a masked action"
            env.step(rel.to_absolute(agent, int(actions[k])))
            k += 1
        total += sum(r for a, r in env.rewards.items() if env.side_of(a) == 0)
    return total, k


@pytest.mark.parametrize(("sc", "num_envs"), [("duel", 8), (skirmish(), 4)])
def test_rllib_episodes_are_the_battles_with_the_same_rewards(sc, num_envs):
    """Every episode RLlib's runner builds on the core (several per row, so across its
    resets) is one battle: replayed on the AEC env it has the same observations, masks,
    decisions and reward sum."""
    runner = runner_for(sc, num_envs)
    chunks: dict[str, list] = {}
    for _ in range(3):  # an episode cut by sample() goes on in the next call's chunk
        for chunk in runner.sample(num_timesteps=40 * num_envs):
            chunks.setdefault(chunk.id_, []).append(chunk)
    seeds = set()
    for parts in chunks.values():
        if parts[0].t_started or not parts[-1].is_done:
            continue  # began before the first call or goes on after the last one
        episode = parts[0]
        for part in parts[1:]:
            episode.concat_episode(part)
        total, decisions = replay(sc, episode)
        assert decisions == len(episode)
        assert episode.get_return() == pytest.approx(total, abs=1e-5)
        seeds.add(int(episode.get_infos(0)["battle_seed"]))
    assert len(seeds) >= 2 * num_envs



def rllib_loop_runner(sc, num_envs: int, horizon: int = 1):
    """The same runner made to run RLlib's own sampling loop (an episode callback does it)."""
    runner = runner_for(sc, num_envs, horizon)
    runner.config._is_frozen = False
    runner.config.callbacks_on_episode_step = lambda **kwargs: None
    return runner


def episode_fields(episode) -> dict:
    """Everything an episode chunk holds, but its random id and wall-clock times."""
    state = episode.get_state()
    for key in ("id_", "_start_time", "_last_step_time"):
        state.pop(key, None)
    return state


@pytest.mark.parametrize(("sc", "num_envs", "explore", "horizon", "steps"), [
    ("duel", 8, True, 1, 40), (skirmish(), 4, True, 1, 40), ("duel", 8, False, 1, 40),
    ("duel", 3, True, 3, 5), ("duel", 1, True, 2, 1)])
def test_lean_path_builds_rllibs_episodes(sc, num_envs, explore, horizon, steps):
    """``CoreEnvRunner``'s lean path returns, chunk for chunk, what RLlib's own loop returns
    on the same seeds: observations and lookbacks, actions and their dtype, rewards, log-probs,
    logits (to the last bit, whatever the batch's size), ``t_started``, ends; and logs the same
    episode metrics. An episode goes on across calls under one id in both; calls shorter than
    the lookback horizon too. ``explore=False`` (evaluation): the greedy action, in both."""
    import tree

    calls = 3 if steps > 5 else 60 // steps
    lean = runner_for(sc, num_envs, horizon)
    assert lean._lean_path_applies()
    lean_chunks = [c for _ in range(calls)
                   for c in lean.sample(num_timesteps=steps * num_envs, explore=explore)]
    loop = rllib_loop_runner(sc, num_envs, horizon)  # re-seeds torch as the first one did
    assert not loop._lean_path_applies()
    loop_chunks = [c for _ in range(calls)
                   for c in loop.sample(num_timesteps=steps * num_envs, explore=explore)]

    assert len(lean_chunks) == len(loop_chunks) > calls * num_envs // 2
    for a, b in zip(lean_chunks, loop_chunks, strict=True):
        fa, fb = episode_fields(a), episode_fields(b)
        assert fa.keys() == fb.keys()
        for key in fa:
            tree.map_structure(np.testing.assert_array_equal, fa[key], fb[key])
        assert a.get_actions().dtype == b.get_actions().dtype
    continued = [i for i, c in enumerate(lean_chunks) if c.t_started]
    assert continued
    for i in continued:  # a chunk that goes on from an earlier one carries its id
        assert lean_chunks[i].id_ in {c.id_ for c in lean_chunks[:i]}
    ma, mb = lean.get_metrics(), loop.get_metrics()
    for key in ("episode_return_mean", "episode_len_mean", "episode_return_min",
                "episode_return_max", "num_episodes", "num_env_steps_sampled"):
        assert float(ma[key]) == pytest.approx(float(mb[key]), abs=1e-9), key


def test_lean_path_and_rllibs_loop_take_turns():
    """``sample(num_episodes=...)`` runs RLlib's loop, which starts every row afresh; the
    lean path then starts afresh too, and every whole episode of either is its battle."""
    runner = runner_for("duel", 4)
    chunks = list(runner.sample(num_timesteps=80))
    whole = runner.sample(num_episodes=3)
    assert len(whole) >= 3 and all(e.is_done and not e.t_started for e in whole)
    after = runner.sample(num_timesteps=80)
    assert all(not c.t_started for c in after)  # no chunk goes on from before the loop
    for episode in [c for c in chunks + after if c.is_done and not c.t_started] + whole:
        total, decisions = replay("duel", episode)
        assert decisions == len(episode)
        assert episode.get_return() == pytest.approx(total, abs=1e-5)


def test_a_module_with_more_outputs_runs_rllibs_loop():
    """A module whose forward pass returns more than the logits gets RLlib's loop, which
    keeps every output in the episodes."""
    from ray.rllib.core.columns import Columns

    from traveller_env.integrations.rllib.modules import MaskedPPOTorchRLModule

    class WithBest(MaskedPPOTorchRLModule):
        def _forward(self, batch, **kwargs):
            out = super()._forward(batch, **kwargs)
            out["best_logit"] = out[Columns.ACTION_DIST_INPUTS].max(-1).values
            return out

    runner = runner_for("duel", 4, module_class=WithBest)
    assert not runner._lean_path_applies()
    chunks = runner.sample(num_timesteps=40)
    assert all(len(c.get_extra_model_outputs("best_logit")) == len(c) for c in chunks)
    assert runner_for("duel", 4)._lean_path_applies()

def test_train_rllib_core_path(tmp_path):
    """`traveller train rllib --scenario squad` runs on the core by default (against the
    scenario's default opponent), writes the run folder, and its checkpoint plays as an NPC."""
    from traveller_agents.registry import make_policy as registry_policy
    from traveller_cli import main
    from traveller_rl.evaluation import play_battle

    out = tmp_path / "run"
    assert main(["train", "rllib", "--scenario", "squad", "--num-env-runners", "1",
                 "--num-envs-per-env-runner", "8", "--total-timesteps", "200",
                 "--train-batch-size", "100", "--minibatch-size", "50", "--num-epochs", "1",
                 "--eval-battles", "2", "--eval-vs", "random", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["args"]["env"] == "core"
    assert config["env_config"]["opponents"] == {f"red_{i}": "tactician" for i in range(4)}
    meta = json.loads((out / "checkpoint" / "traveller.json").read_text())
    assert meta["trained_modules"] == ["default_policy"]
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["env_steps"] >= 200 and evaluation["module_steps"]["default_policy"] > 0
    policy = registry_policy(str(out / "checkpoint"), scenario="squad", seed=0)
    env = traveller_env.raw_env("squad")
    battle = play_battle(env, {a: policy if env.side_of(a) == 0 else make_policy("rush")
                               for a in env.possible_agents}, seed=2)
    assert battle.done


def test_train_rllib_on_a_distribution(tmp_path, capsys):
    """`traveller train rllib --scenario gen:squad` trains on the distribution's draws in the
    core; the checkpoint keeps the layout, its observation size and action labels, plays drawn
    scenarios through the layout one decision at a time (the AEC env) and batched (the
    benchmark's vector path), and both choose the same action."""
    from traveller_agents.registry import make_policy as registry_policy
    from traveller_cli import main
    from traveller_rl.benchmark import vector_player
    from traveller_rl.scenario_eval import play_scenarios

    out = tmp_path / "run"
    assert main(["train", "rllib", "--scenario", "gen:squad", "--opponents", "red=rush",
                 "--num-env-runners", "0", "--num-envs-per-env-runner", "4",
                 "--total-timesteps", "100", "--train-batch-size", "100", "--minibatch-size",
                 "50", "--num-epochs", "1", "--eval-battles", "2", "--out", str(out)]) == 0
    assert "traveller benchmark" in capsys.readouterr().out  # no one scenario to evaluate on
    checkpoint = out / "checkpoint"
    meta = json.loads((checkpoint / "traveller.json").read_text())
    drawn = traveller_env.vector.make("gen:squad", num_envs=1, opponents={"red": "rush"},
                                      relative_actions=True)
    assert meta["layout"] == drawn.layout.to_dict()
    assert (meta["obs_dim"], meta["action_labels"]) == (drawn.obs_dim, list(drawn.action_labels))
    learned = vector_player(str(checkpoint))
    assert learned is not None and learned.layout.name == "6v6"
    records = play_scenarios(learned, ["gen:squad@1000"], "rush")
    assert [r["result"] for r in records if r["result"] == "not_playable"] == []

    scenario = "gen:squad@1001"
    policy = registry_policy(str(checkpoint), scenario=scenario, seed=0)
    env = traveller_env.raw_env(scenario)
    env.reset(seed=4)
    agent = next(a for a in env.possible_agents if env.side_of(a) == 0)
    while env.agent_selection != agent:
        env.step(policy_action(make_policy("rush"), env, env.agent_selection))
    o = env.observe(agent)
    action = policy.act(o["observation"], o["action_mask"], agent, env)
    assert o["action_mask"][action] == 1
    rel = env.layout_actions(learned.layout)
    obs = env.layout_observation(agent, learned.layout)[None]
    mask = rel.mask(agent, np.asarray(o["action_mask"]))[None].astype(bool)
    assert rel.to_absolute(agent, int(learned.choose(obs, mask, "blue")[0])) == action


def test_core_path_argument_errors_exit_2(capsys):
    from traveller_rl import rllib as train_rllib

    for argv, message in (
            (["--env", "gpu"], "--env must be one of"),
            (["--env", "core", "--policy-mapping", "per-side"], "--env core: --policy-mapping"),
            (["--env", "core", "--scenario", "squad", "--opponents", "red_0=rush"],
             "every side but one"),
            (["--env-runner-resources", "worker_node"], "--env-runner-resources")):
        assert train_rllib.main(argv) == 2
        assert message in capsys.readouterr().err
