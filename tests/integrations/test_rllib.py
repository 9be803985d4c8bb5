"""The RLlib bridge. The turn-based ``MultiAgentEnv`` (contract, rewards carried
forward with none lost, seeding, misuse, RLlib's own env checker), the masking and scripted
RLModules, and one tiny end-to-end run: train on a local Ray with 2 env runners, checkpoint,
load the checkpoint as an NPC, play battles with it (``traveller eval``, the tournament)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_agents.registry import make_policy
from traveller_env.integrations.rllib import TravellerMultiAgentEnv
from traveller_env.policy import policy_action


def skirmish(**rewards) -> dict:
    """2 v 2 at close range, so that combatants drop out during the battle, with rewards
    given during the battle (damage, per round) as well as at its end."""
    sc = scenario([fighter((2, 2)), fighter((2, 4), weapon="autopistol")],
                  [fighter((9, 2)), fighter((9, 5), weapon="autopistol")],
                  width=12, height=8, max_rounds=6, hastening=True, reactions=True)
    sc["rewards"] = {"win": 1.0, "loss": -1.0, "draw": 0.25, **rewards}
    return sc


def relative_index(env: TravellerMultiAgentEnv, agent: str, absolute: int) -> int:
    """The relative action that means AEC action ``absolute`` for ``agent``."""
    onehot = np.zeros(len(env.aec.action_labels), dtype=np.int8)
    onehot[absolute] = 1
    rel = env.relative.mask(agent, onehot)
    assert rel.sum() == 1
    return int(np.argmax(rel))


def play_lockstep(sc, seed: int, policies: dict, **options) -> tuple[dict, dict, list]:
    """Play one battle in the AEC env and, action for action, in the RLlib env. Returns
    each agent's reward summed over the AEC steps, the same from the RLlib env's returns,
    and the RLlib env's returns (for further checks)."""
    aec = traveller_env.raw_env(sc, **options)
    menv = TravellerMultiAgentEnv({"scenario": sc, **options})
    aec.reset(seed=seed)
    obs, _ = menv.reset(seed=seed)
    for i, p in enumerate({id(p): p for p in policies.values()}.values()):
        p.reset(seed + i)
    aec_sum = dict.fromkeys(aec.possible_agents, 0.0)
    rl_sum = dict.fromkeys(aec.possible_agents, 0.0)
    returns = []
    while aec.agents:
        agent = aec.agent_selection
        if aec.terminations[agent] or aec.truncations[agent]:
            aec.step(None)
            continue
        deciding = [a for a, o in obs.items() if o["action_mask"].any()]
        assert deciding == [agent]
        absolute = policy_action(policies[agent], aec, agent)
        aec.step(absolute)
        for a, r in aec.rewards.items():
            aec_sum[a] += r
        step = menv.step({agent: relative_index(menv, agent, absolute)})
        returns.append(step)
        obs, rewards = step[0], step[1]
        assert set(rewards) == set(obs), "a reward comes with its agent's observation"
        for a, r in rewards.items():
            rl_sum[a] += r
    assert returns[-1][2]["__all__"] or returns[-1][3]["__all__"]
    return aec_sum, rl_sum, returns


@pytest.mark.parametrize(("sc", "seed", "options"), [
    ("duel", 3, {}),
    (skirmish(), 1, {}),
    (skirmish(damage_dealt=0.1, damage_taken=-0.05, per_round=-0.01), 2, {}),
    (skirmish(damage_dealt=0.1, damage_taken=-0.05, shared=False), 4, {}),
    (skirmish(damage_dealt=0.1, per_round=0.02), 5, {"max_rounds": 2}),
    ("squad", 7, {}),
])
def test_no_reward_is_lost(sc, seed, options):
    """Summing every agent's rewards over a complete battle gives the same totals through
    the RLlib env as through the AEC env, with the same seed and actions: end rewards,
    damage rewards, per-round rewards, truncation, combatants knocked out mid-battle."""
    aec = traveller_env.raw_env(sc, **options)
    npc = {"rush": make_policy("rush"), "random": make_policy("random")}
    policies = {a: npc["rush" if aec.side_of(a) == 0 or a.endswith("_1") else "random"]
                for a in aec.possible_agents}
    aec_sum, rl_sum, returns = play_lockstep(sc, seed, policies, **options)
    assert rl_sum == pytest.approx(aec_sum, abs=1e-9)
    assert any(aec_sum.values()), "the battle gave no reward at all: nothing was compared"
    # Every agent gets its final observation once, and nothing after it.
    finished: set[str] = set()
    for obs, _, term, trunc, _ in returns:
        for a in obs:
            assert a not in finished, f"{a} observed after its final observation"
            if term.get(a) or trunc.get(a):
                finished.add(a)
                assert not obs[a]["action_mask"].any()
    assert finished == set(aec.possible_agents)


def test_knocked_out_agents_finish_before_the_end_with_their_rewards():
    """In a 2 v 2 played to a finish, some agent gets its final observation (terminated)
    before ``__all__``; the loser side's end reward reaches each of its agents still in play
    though none of them acted last."""
    found = False
    for seed in range(12):
        policies = dict.fromkeys(["blue_0", "blue_1", "red_0", "red_1"], make_policy("rush"))
        aec_sum, rl_sum, returns = play_lockstep(skirmish(), seed, policies)
        early = [a for obs, _, term, _, _ in returns[:-1] for a in obs if term.get(a)]
        if early and returns[-1][2]["__all__"]:
            found = True
            assert rl_sum == pytest.approx(aec_sum)
            assert sorted(v for v in rl_sum.values() if v) == sorted(
                v for v in aec_sum.values() if v)
            break
    assert found, "no battle with an early knock-out in 12 seeds"


def test_contract_spaces_observations_and_masks():
    """``TravellerMultiAgentEnv({"scenario": "duel"})``: the same spaces for every agent;
    ``reset(seed=...)`` observes only the deciding agent, with the AEC's observation and its
    mask in relative form; ``step({agent: action})`` returns RLlib's five dicts."""
    env = TravellerMultiAgentEnv({"scenario": "duel"})
    aec = traveller_env.raw_env("duel")
    assert env.possible_agents == aec.possible_agents
    for a in env.possible_agents:
        assert env.get_observation_space(a) == env.observation_space
        assert env.get_action_space(a) == env.action_space
    assert set(env.observation_space.spaces) == {"observations", "action_mask"}
    assert env.action_space.n == len(env.action_labels) == aec.relative_actions.n
    obs, infos = env.reset(seed=11)
    aec.reset(seed=11)
    (agent,) = obs
    assert agent == aec.agent_selection and set(infos) == {agent}
    assert env.observation_space.contains(obs[agent])
    np.testing.assert_array_equal(obs[agent]["observations"], aec.observe(agent)["observation"])
    np.testing.assert_array_equal(obs[agent]["action_mask"],
                                  aec.relative_actions.mask(agent, aec.action_mask(agent)))
    action = int(np.flatnonzero(obs[agent]["action_mask"])[0])
    out = env.step({agent: action})
    assert len(out) == 5
    nobs, rewards, terms, truncs, infos = out
    assert set(rewards) == set(nobs) and terms["__all__"] is False and truncs["__all__"] is False
    assert all(env.observation_space.contains(o) for o in nobs.values())


def test_same_seed_same_battle_and_unseeded_resets_follow_the_seed():
    """Same seed and actions: the same observations byte for byte. A ``reset()`` without a
    seed after ``reset(seed=s)`` draws its battle from ``s``."""
    def run(env, seeds):
        trace = []
        for s in seeds:
            obs, _ = env.reset(seed=s) if s is not None else env.reset()
            rng = np.random.default_rng(0)
            for _ in range(60):
                (agent,) = [a for a, o in obs.items() if o["action_mask"].any()]
                trace.append(obs[agent]["observations"].tobytes())
                legal = np.flatnonzero(obs[agent]["action_mask"])
                obs, _, term, trunc, _ = env.step({agent: int(rng.choice(legal))})
                if term["__all__"] or trunc["__all__"]:
                    break
        return trace

    a = run(TravellerMultiAgentEnv({"scenario": "squad"}), [5, None, None])
    b = run(TravellerMultiAgentEnv({"scenario": "squad"}), [5, None, None])
    c = run(TravellerMultiAgentEnv({"scenario": "squad"}), [6, None, None])
    assert a == b and a != c


def test_misuse_raises_clear_errors():
    env = TravellerMultiAgentEnv({"scenario": "duel"})
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"blue_0": 0})
    obs, _ = env.reset(seed=0)
    (agent,) = obs
    other = next(a for a in env.possible_agents if a != agent)
    with pytest.raises(ValueError, match=agent):
        env.step({other: 0})
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step({agent: len(env.action_labels)})
    illegal = int(np.flatnonzero(obs[agent]["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        env.step({agent: illegal})
    with pytest.raises(TypeError, match="seed"):
        env.reset(seed="1")
    with pytest.raises(ValueError, match=r"unknown key.*scenarioo"):
        TravellerMultiAgentEnv({"scenarioo": "duel"})
    with pytest.raises(ValueError, match="npcs: 'green'"):
        TravellerMultiAgentEnv({"scenario": "duel", "npcs": {"green": "rush"}})
    with pytest.raises(ValueError, match="unknown policy 'rushh'"):
        TravellerMultiAgentEnv({"scenario": "duel", "npcs": {"red": "rushh"}})
    with pytest.raises(traveller_env.ScenarioError):
        TravellerMultiAgentEnv({"scenario": "no_such_scenario"})


def test_rllib_env_checker_passes_in_penalize_mode():
    """RLlib's checker steps with unmasked random actions: with ``illegal_action=penalize``
    they are penalised (including relative actions naming an empty slot) and it passes."""
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    for sc in ("duel", "squad", "ambush"):
        env = TravellerMultiAgentEnv({"scenario": sc, "illegal_action": "penalize"})
        check_multiagent_environments(env)
    env = TravellerMultiAgentEnv({"scenario": "duel", "illegal_action": "penalize"})
    obs, _ = env.reset(seed=0)
    (agent,) = obs
    illegal = int(np.flatnonzero(obs[agent]["action_mask"] == 0)[0])
    env.step({agent: illegal})
    assert [e["actor"] for e in env.aec.battle.events if e["type"] == "illegal_action"] == [
        agent]


def test_npc_seats_offer_exactly_the_scripted_choice():
    """``npcs``: an NPC seat's mask holds only the action its scripted policy picks (the
    same as the policy playing the AEC env with the same seeds)."""
    env = TravellerMultiAgentEnv({"scenario": "duel", "npcs": {"red": "rush"}})
    obs, _ = env.reset(seed=3)
    rush = make_policy("rush")
    rush.reset(3 * 7919)
    npc_steps = 0
    rng = np.random.default_rng(0)
    for _ in range(200):
        (agent,) = [a for a, o in obs.items() if o["action_mask"].any()]
        mask = obs[agent]["action_mask"]
        if agent == "red_0":
            npc_steps += 1
            assert mask.sum() == 1
            want = policy_action(rush, env.aec, agent)
            assert env.relative.to_absolute(agent, int(np.argmax(mask))) == want
            action = int(np.argmax(mask))
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
        obs, _, term, trunc, _ = env.step({agent: action})
        if term["__all__"] or trunc["__all__"]:
            break
    assert npc_steps > 3


def test_masked_module_never_picks_a_masked_action():
    """``MaskedPPOTorchRLModule``: with random weights and observations, inference and
    exploration logits put (numerically) zero probability outside the mask; the scripted
    module takes the one allowed action and refuses a mask with several."""
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from traveller_env.integrations.rllib.modules import MaskedPPOTorchRLModule, ScriptedRLModule

    env = TravellerMultiAgentEnv({"scenario": "duel"})
    spec = RLModuleSpec(module_class=MaskedPPOTorchRLModule,
                        observation_space=env.observation_space,
                        action_space=env.action_space, model_config={"fcnet_hiddens": [16]})
    module = spec.build()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = env.action_space.n
    mask = (rng.random((64, n)) < 0.1).astype(np.float32)
    mask[np.arange(64), rng.integers(n, size=64)] = 1
    obs = rng.uniform(-1, 1, (64, env.observation_space["observations"].shape[0]))
    batch = {Columns.OBS: {"observations": torch.as_tensor(obs, dtype=torch.float32),
                           "action_mask": torch.as_tensor(mask)}}
    for fwd in (module.forward_inference, module.forward_exploration):
        logits = fwd({Columns.OBS: dict(batch[Columns.OBS])})[Columns.ACTION_DIST_INPUTS]
        probs = torch.softmax(logits, -1).numpy()
        assert probs[mask == 0].max() < 1e-30
        assert np.allclose(probs.sum(-1), 1)
    values = module.compute_values({Columns.OBS: dict(batch[Columns.OBS])})
    assert values.shape == (64,)
    scripted = RLModuleSpec(module_class=ScriptedRLModule, observation_space=env.observation_space,
                            action_space=env.action_space).build()
    onehot = np.eye(n, dtype=np.float32)[[3, 7]]
    out = scripted.forward_inference({Columns.OBS: {"observations": obs[:2],
                                                    "action_mask": onehot}})
    assert list(out[Columns.ACTIONS]) == [3, 7]
    with pytest.raises(ValueError, match="npcs"):
        scripted.forward_inference({Columns.OBS: {"observations": obs[:2],
                                                  "action_mask": mask[:2]}})


def test_train_rllib_end_to_end(tmp_path, capsys, monkeypatch):
    """A tiny run through `traveller train rllib` on a local Ray with 2 env runners, one
    policy per side and a scripted NPC: checkpoint, metadata, evaluation; the checkpoint
    loads as an NPC (registry, `traveller eval`, the tournament) and plays battles."""
    from traveller_cli import main
    from traveller_rl.evaluation import play_battle

    out = tmp_path / "run"
    assert main(["train", "rllib", "--scenario", "squad", "--num-env-runners", "2",
                 "--num-envs-per-env-runner", "2", "--total-timesteps", "300",
                 "--train-batch-size", "150", "--minibatch-size", "64", "--num-epochs", "1",
                 "--policy-mapping", "per-side", "--opponents", "red_3=rush",
                 "--eval-battles", "2", "--eval-vs", "random", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "module blue:" in printed and "module red:" in printed
    meta = json.loads((out / "checkpoint" / "traveller.json").read_text())
    assert meta["trained_modules"] == ["blue", "red"]
    assert meta["module_of_agent"]["red_3"] == "npc_rush"
    assert meta["module_of_agent"]["red_0"] == "red"
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["env_steps"] >= 300 and evaluation["module_steps"]["blue"] > 0
    assert {(r["module"], r["opponent"]) for r in evaluation["evaluation"]} == {
        ("blue", "random"), ("red", "random")}
    progress = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert progress[-1]["env_steps"] == evaluation["env_steps"]

    ckpt = out / "checkpoint"
    with pytest.raises(ValueError, match="say which one"):
        make_policy(str(ckpt), scenario="squad")
    blue_dir = ckpt / "learner_group" / "learner" / "rl_module" / "blue"
    blue = make_policy(str(blue_dir), scenario="squad", seed=0)
    env = traveller_env.raw_env("squad")
    policies = {a: blue if env.side_of(a) == 0 else make_policy("rush")
                for a in env.possible_agents}
    battle = play_battle(env, policies, seed=1)
    assert battle.done
    with pytest.raises(ValueError, match="does not fit scenario 'duel'"):
        make_policy(str(blue_dir), scenario="duel")
    with pytest.raises(ValueError, match="scripted NPC seat"):
        make_policy(str(blue_dir.parent / "npc_rush"), scenario="squad")

    report = tmp_path / "eval.json"
    assert main(["eval", str(blue_dir), "--scenario", "squad", "--vs", "random",
                 "--battles", "2", "--json", str(report)]) == 0
    rows = json.loads(report.read_text())
    assert rows[0]["wins"] + rows[0]["draws"] + rows[0]["losses"] == 2
    assert main(["tournament", "--policies", f"{blue_dir},random", "--scenarios", "squad",
                 "--battles", "1", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "tour")]) == 0
    # a relative path (Ray refuses one as a URI without a scheme) and `traveller benchmark`
    # of the folder (its loader needs the scenario: checked without loading it first)
    monkeypatch.chdir(tmp_path)
    relative = str(blue_dir.relative_to(tmp_path))
    assert make_policy(relative, scenario="squad").act is not None
    suite = tmp_path / "suite.yaml"
    suite.write_text("version: 9\nbattles_per_cell: 2\nplay: vector\nscenario_sets:\n"
                     "  squad: {scenarios: [squad]}\nopponents: [random]\n")
    assert main(["benchmark", relative, "--suite", str(suite), "--no-progress"]) == 0
    assert "squad         random" in capsys.readouterr().out


def test_train_rllib_bad_arguments_exit_2(capsys):
    from traveller_rl import rllib as train_rllib

    for argv, message in ((["--policy-mapping", "mixed"], "--policy-mapping"),
                          (["--opponents", "red"], "SEAT=POLICY"),
                          (["--opponents", "green=rush"], "green"),
                          (["--opponents", "blue=rush,red=rush"], "nothing left to train"),
                          (["--num-env-runners", "-1"], "--num-env-runners"),
                          (["--hidden", "64,x"], "--hidden")):
        assert train_rllib.main(argv) == 2
        assert message in capsys.readouterr().err
