"""The optional aim view (``aim_view=True``; ``ObservationBuilder.aim_view_entries``): per slot,
the aim DM that combatant holds on the observer (R4.3 aims, R5.2 their DM, at most +6). Exact
cases on small battles, and its plumbing: labels and order after the move view, the env
keyword's check, ``aim_view_vector``, trained policies that read it in envs without it, and
``train_ppo --aim-view``. (Both engines agree on it: tests/core/test_core_observation.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fighter, play_like_the_network, scenario, view_checkpoint

import traveller_env
from traveller_env.observations import AIM_VIEW_FIELDS, ObservationBuilder
from traveller_env.scenario import build_battle


def _two_on_two():
    sc = scenario([fighter((2, 2)), fighter((2, 4))], [fighter((10, 2)), fighter((10, 4))])
    return build_battle(sc, seed=3)


def _play_turns(b, plans: dict[str, list[str]]) -> None:
    """Play one round: each combatant, on its turn, its planned actions then ``end_turn``
    (unless the budget already ended the turn)."""
    done: set[str] = set()
    while len(done) < len(b.combatants):
        agent = b.current_agent
        for label in plans.get(agent, []):
            b.apply(label)
        if b.current_agent == agent:
            b.apply("end_turn")
        done.add(agent)


def _aims_on(builder: ObservationBuilder, b, agent: str) -> dict[str, float]:
    """``agent``'s aim view as {combatant id in that slot: entry}."""
    return {oid: v for oid, v in zip(builder.slots(agent), builder.aim_view_entries(b, agent),
                                     strict=True) if oid is not None}


def test_r4_3_each_slot_shows_the_aim_dm_its_combatant_holds_on_me():
    b = _two_on_two()
    builder = ObservationBuilder(b, aim_view=True)
    _play_turns(b, {"blue_1": ["aim:red_0"] * 3, "red_1": ["aim:blue_0"]})
    assert b.by_id["blue_1"].aim_dm == 3
    assert _aims_on(builder, b, "red_0") == {"red_1": 0.0, "blue_0": 0.0, "blue_1": 3 / 6}
    assert _aims_on(builder, b, "blue_0") == {"blue_1": 0.0, "red_0": 0.0, "red_1": 1 / 6}
    assert set(_aims_on(builder, b, "red_1").values()) == {0.0}
    assert set(_aims_on(builder, b, "blue_1").values()) == {0.0}  # my own aim: not here
    # R4.3: aiming at another target moves the aim; the old target's entry goes back to 0
    _play_turns(b, {"blue_1": ["aim:red_1"]})
    assert _aims_on(builder, b, "red_0")["blue_1"] == 0.0
    assert _aims_on(builder, b, "red_1")["blue_1"] == 1 / 6
    # an aimer out of play aims at nobody
    b.by_id["blue_1"].out = True
    assert _aims_on(builder, b, "red_1")["blue_1"] == 0.0


def test_r5_2_the_entry_caps_with_the_aim_dm_at_plus_6():
    b = _two_on_two()
    builder = ObservationBuilder(b, aim_view=True)
    for _ in range(3):
        _play_turns(b, {"blue_0": ["aim:red_1"] * 3})
    assert b.by_id["blue_0"].aim_dm == 6
    assert _aims_on(builder, b, "red_1")["blue_0"] == 1.0


def test_the_env_appends_the_view_after_the_move_view_and_checks_the_keyword():
    plain = traveller_env.raw_env("squad")
    move = traveller_env.raw_env("squad", move_view=True)
    both = traveller_env.raw_env("squad", move_view=True, aim_view=True)
    aim = traveller_env.raw_env("squad", aim_view=True)
    n_slots = 7  # 3 allies and 4 enemies
    assert aim.observation_labels == plain.observation_labels + [
        f"aim.{s}.{f}" for s in [*(f"ally{k}" for k in range(3)),
                                 *(f"enemy{k}" for k in range(4))] for f in AIM_VIEW_FIELDS]
    assert both.observation_labels == (move.observation_labels
                                       + aim.observation_labels[-n_slots:])
    for env in (plain, both, aim):
        env.reset(seed=4)
    for agent in plain.possible_agents:
        base = plain.observe(agent)["observation"]
        full = both.observe(agent)["observation"]
        assert full[:len(base)].tobytes() == aim.observe(agent)["observation"][
            :len(base)].tobytes() == base.tobytes()
        assert np.array_equal(full[-n_slots:], plain.aim_view_vector(agent))
    with pytest.raises(TypeError, match="aim_view must be True or False"):
        traveller_env.raw_env("squad", aim_view=1)


# ------------------------------------------------------------------ trained policies with it
def _checkpoint(path, move_view: bool, aim_view: bool, seed: int = 0):
    """A ``train_ppo`` checkpoint (random weights, spread logits) trained "with" the views."""
    return view_checkpoint(path, seed, move_view=move_view, aim_view=aim_view)


@pytest.mark.parametrize("move_view", [False, True])
def test_a_checkpoint_trained_with_the_aim_view_plays_in_envs_without_it(tmp_path, move_view):
    """``load_ppo_policy`` reads ``aim_view`` from the checkpoint; in an env without it (or
    with only the other view) the policy asks the env and picks what the network picks on
    the full observation; the ONNX export records it and ``OnnxPolicy`` does the same."""
    pytest.importorskip("torch")
    from traveller_agents.ppo_policy import load_ppo_policy

    net = _checkpoint(tmp_path / "av.pt", move_view, True)
    policy = load_ppo_policy(tmp_path / "av.pt", "squad")
    full = traveller_env.raw_env("squad", move_view=move_view, aim_view=True)
    envs = [traveller_env.raw_env("squad"), traveller_env.raw_env("squad", move_view=True),
            full]
    onnx_policy = None
    if all(__import__("importlib").util.find_spec(m) for m in ("onnx", "onnxruntime")):
        from traveller_agents.onnx_policy import OnnxPolicy, read_metadata
        from traveller_rl.onnx_export import export_onnx

        export_onnx(tmp_path / "av.pt", tmp_path / "av.onnx")
        meta = read_metadata(tmp_path / "av.onnx")
        assert (meta["aim_view"], meta["move_view"]) == (True, move_view)
        onnx_policy = OnnxPolicy(tmp_path / "av.onnx", "squad")
    rng = np.random.default_rng(0)
    aimed_at = 0

    def choose(agent, observation, mask):
        nonlocal aimed_at
        aimed_at += bool(observation[-7:].any())
        legal = np.flatnonzero(mask)
        aims = [i for i in legal if full.action_labels[i].startswith("aim:")]
        return int(rng.choice(aims if aims and rng.random() < 0.5 else legal))

    policies = [policy] + ([onnx_policy] if onnx_policy is not None else [])
    checked = play_like_the_network(net, full, envs, policies, range(2), choose)
    assert checked > 50 and aimed_at > 5


@pytest.mark.parametrize("view", ["aim_view", "attack_view"])
def test_train_ppo_views_after_the_move_view_record_and_check_init_and_pool(tmp_path, view):
    """``--aim-view`` and ``--attack-view`` (both come after the move view): the checkpoint
    records the view, ``--init`` must match it, and beside a pool opponent with the move view
    the learner must read the move view too (its inputs stay a prefix)."""
    pytest.importorskip("torch")
    from traveller_agents.checkpoint import read_checkpoint
    from traveller_rl.ppo import trainer as train_ppo

    flag, name = "--" + view.replace("_", "-"), view.replace("_", " ")
    common = ["--scenario", "squad", "--num-envs", "8", "--num-steps", "8",
              "--total-timesteps", "200", "--eval-vs", "rush", "--eval-battles", "2",
              "--eval-envs", "2", "--final-eval-battles", "0", "--no-progress"]
    assert train_ppo.main([*common, flag, "--out", str(tmp_path / "a")]) == 0
    ckpt = read_checkpoint(tmp_path / "a" / "ppo.pt")
    assert ckpt[view] is True and {"move_view", "aim_view", "attack_view"} & set(ckpt) == {view}
    assert ckpt["obs_dim"] == len(traveller_env.raw_env("squad", **{view: True})
                                  .observation_labels)
    with pytest.raises(ValueError, match=rf"--init: .*ppo.pt was trained with the {name}; "
                                         rf"pass {flag}"):
        train_ppo.prepare(train_ppo.Args(scenario="squad", init=str(tmp_path / "a" / "ppo.pt"),
                                         out=str(tmp_path / "b"), progress=False))
    # a pool opponent with the move view: the learner's view would not be a prefix
    view_checkpoint(tmp_path / "mv.pt", move_view=True)
    pool = ["--pool", "--pool-opponents", str(tmp_path / "mv.pt")]
    with pytest.raises(ValueError, match=rf"{flag}: .*reads move view.*pass --move-view too"):
        train_ppo.prepare(train_ppo.Args(scenario="squad", pool=True, **{view: True},
                                         pool_opponents=str(tmp_path / "mv.pt"),
                                         out=str(tmp_path / "c"), progress=False))
    # the learner with the move view beside a pool opponent with only this view: the
    # vector observes both; the opponent reads the plain part and its view (a gather)
    assert train_ppo.main([*common, "--move-view", "--pool", "--pool-opponents",
                           str(tmp_path / "a" / "ppo.pt"), "--out", str(tmp_path / "d")]) == 0
    assert read_checkpoint(tmp_path / "d" / "ppo.pt")["obs_dim"] == len(
        traveller_env.raw_env("squad", move_view=True).observation_labels)
    assert train_ppo.main([*common, *pool, "--move-view", flag,
                           "--out", str(tmp_path / "e")]) == 0
