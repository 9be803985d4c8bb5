"""The optional move view (``move_view=True``; ``observations.move_view``): exact cases on small
maps for each of its fields, asked of R8.1 (line of sight through walls, low cover next to the
target) and R5.3 (cover counts for a crouched or prone target), and its plumbing: labels, sizes,
the env keyword's check and ``move_view_vector``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_env.observations import MOVE_VIEW_FIELDS, move_view, move_view_squares
from traveller_env.scenario import build_battle

# One blue fighter at (2, 2); red at (8, 2). A low-cover square at (3, 1) and a wall at (5, 4).
TERRAIN = [
    "..........",
    "...c......",
    "..........",
    "..........",
    ".....#....",
    "..........",
]


def _battle(red_stance: str = "stand", red_pos=(8, 2)):
    sc = scenario([fighter((2, 2))], [fighter(red_pos, stance=red_stance)], width=10, height=6,
                  terrain=TERRAIN)
    return build_battle(sc, seed=0)


def _entry(b, agent: str, square: str) -> dict[str, float]:
    """The move view of ``agent`` at ``square`` (``here`` or ``N:1``...), as a dict."""
    names = ["here"] + [f"{d}:{k}" for d in ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
                        for k in range(1, b.max_move_squares + 1)]
    v = move_view(b, agent)
    i = names.index(square) * len(MOVE_VIEW_FIELDS)
    return dict(zip(MOVE_VIEW_FIELDS, v[i:i + len(MOVE_VIEW_FIELDS)], strict=True))


def test_the_squares_are_the_own_then_each_move_actions_end_in_catalogue_order():
    b = _battle()
    blue = b.combatants[0].id
    squares = move_view_squares(b, blue)
    assert squares[0] == (2, 2)
    assert squares[1:5] == [(2, 1), (2, 0), (2, -1), (2, -2)]  # N:1..N:4 (north is -y)
    assert squares[5] == (3, 1)  # NE:1
    assert len(squares) == 1 + 8 * b.max_move_squares


def test_r8_1_a_square_with_low_cover_next_to_it_on_the_line_is_covered_from_that_enemy():
    b = _battle()
    blue = b.combatants[0].id
    # (2, 1): the line from red (8, 2) passes (3, 1), low cover next to (2, 1): covered.
    assert _entry(b, blue, "N:1") == {"seen_by": 1.0, "covered_from": 1.0, "clear_shots": 1.0}
    # (2, 2) here: (3, 1) is next to it but the line from (8, 2) runs along y = 2: not covered.
    assert _entry(b, blue, "here") == {"seen_by": 1.0, "covered_from": 0.0, "clear_shots": 1.0}


def test_r8_1_a_wall_on_the_line_hides_the_square_and_nothing_counts_behind_it():
    b = _battle(red_pos=(8, 6 - 1))
    blue = b.combatants[0].id
    # Blue at (2, 2) moving SE:2 ends on (4, 4); the line from red (8, 5) to (4, 4) enters the
    # wall square (5, 4), while N:1's (2, 1) stays in sight (the line passes (5, 3)).
    assert not b.grid.line_of_sight((8, 5), (4, 4))
    assert b.grid.line_of_sight((8, 5), (2, 1))
    assert _entry(b, blue, "N:1")["seen_by"] == 1.0
    assert _entry(b, blue, "SE:2") == {"seen_by": 0.0, "covered_from": 0.0, "clear_shots": 0.0}


def test_r5_3_an_enemy_behind_low_cover_is_a_clear_shot_only_while_standing():
    sc_terrain = ["..........", "..........", ".......c..", "..........", "..........",
                  ".........."]
    for stance, clear in (("stand", 1.0), ("crouch", 0.0), ("prone", 0.0)):
        sc = scenario([fighter((2, 2))], [fighter((8, 2), stance=stance)], width=10, height=6,
                      terrain=sc_terrain)
        b = build_battle(sc, seed=0)
        assert _entry(b, b.combatants[0].id, "here")["clear_shots"] == clear, stance


def test_off_the_map_and_wall_squares_are_zero_and_no_enemy_in_play_gives_zeros():
    b = _battle()
    blue = b.combatants[0].id
    assert _entry(b, blue, "N:3") == dict.fromkeys(MOVE_VIEW_FIELDS, 0.0)  # y = -1
    b.combatants[1].out = True
    assert move_view(b, blue) == [0.0] * (len(MOVE_VIEW_FIELDS) * (1 + 8 * b.max_move_squares))


def test_the_env_appends_the_view_with_labels_and_checks_the_keyword():
    plain = traveller_env.raw_env("squad")
    env = traveller_env.raw_env("squad", move_view=True)
    extra = len(MOVE_VIEW_FIELDS) * 33
    assert len(env.observation_labels) == len(plain.observation_labels) + extra
    assert env.observation_labels[-extra:][:3] == [f"move.here.{f}" for f in MOVE_VIEW_FIELDS]
    assert env.observation_space(env.possible_agents[0])["observation"].shape == (
        len(env.observation_labels),)
    env.reset(seed=4)
    plain.reset(seed=4)
    agent = env.agent_selection
    obs = env.observe(agent)["observation"]
    assert obs[:len(plain.observation_labels)].tobytes() == plain.observe(agent)[
        "observation"].tobytes()
    assert np.array_equal(obs[-extra:], plain.move_view_vector(agent))
    assert obs.min() >= 0.0 - 1.0 and obs.max() <= 1.0
    with pytest.raises(TypeError, match="move_view must be True or False"):
        traveller_env.raw_env("squad", move_view="yes")


# ------------------------------------------------------------------ trained policies with it
def _move_view_checkpoint(path, seed: int = 0):
    """A ``train_ppo`` checkpoint (random weights, spread logits) trained "with" the view."""
    torch = pytest.importorskip("torch")
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic

    env = traveller_env.raw_env("squad", move_view=True)
    torch.manual_seed(seed)
    net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [32])
    with torch.no_grad():
        net.actor[-1].weight.mul_(100.0)
    path.write_bytes(checkpoint_bytes(net, "squad", env.relative_actions.labels,
                                      decisions=0, update=0, seed=seed, move_view=True))
    return net


def test_a_checkpoint_trained_with_the_view_plays_in_an_env_without_it(tmp_path):
    """``load_ppo_policy`` reads ``move_view`` from the checkpoint; in a plain env the policy
    asks ``env.move_view_vector`` and picks what the network picks on the full observation;
    ONNX export records it and ``OnnxPolicy`` does the same."""
    torch = pytest.importorskip("torch")
    from traveller_agents.nets import masked_logits
    from traveller_agents.ppo_policy import load_ppo_policy

    net = _move_view_checkpoint(tmp_path / "mv.pt")
    policy = load_ppo_policy(tmp_path / "mv.pt", "squad")
    plain = traveller_env.raw_env("squad")
    full = traveller_env.raw_env("squad", move_view=True)
    onnx_policy = None
    if all(__import__("importlib").util.find_spec(m) for m in ("onnx", "onnxruntime")):
        from traveller_agents.onnx_policy import OnnxPolicy, read_metadata
        from traveller_rl.onnx_export import export_onnx

        export_onnx(tmp_path / "mv.pt", tmp_path / "mv.onnx")
        assert read_metadata(tmp_path / "mv.onnx")["move_view"] is True
        onnx_policy = OnnxPolicy(tmp_path / "mv.onnx", "squad")
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(3):
        plain.reset(seed=seed)
        full.reset(seed=seed)
        for agent in plain.agent_iter():
            obs, _, term, trunc, _ = plain.last()
            if term or trunc:
                plain.step(None)
                full.step(None)
                continue
            o, m = obs["observation"], obs["action_mask"]
            want_obs = full.observe(agent)["observation"]
            rel = plain.relative_actions.mask(agent, m).astype(bool)
            with torch.no_grad():
                z = masked_logits(net.actor(torch.as_tensor(want_obs)), torch.as_tensor(rel))
            want = plain.relative_actions.to_absolute(agent, int(z.argmax()))
            assert policy.act(o, m, agent, plain) == want
            assert policy.act(want_obs, m, agent, full) == want  # the full vector as is
            if onnx_policy is not None:
                assert onnx_policy.act(o, m, agent, plain) == want
            checked += 1
            action = int(rng.choice(np.flatnonzero(m)))
            plain.step(action)
            full.step(action)
    assert checked > 100


def test_train_ppo_init_must_match_the_move_view_flag(tmp_path):
    pytest.importorskip("torch")
    from traveller_rl.ppo import trainer as train_ppo

    _move_view_checkpoint(tmp_path / "mv.pt")
    with pytest.raises(ValueError, match=r"--init: .*mv.pt was trained with the move view; "
                                         r"pass --move-view"):
        train_ppo.prepare(train_ppo.Args(scenario="squad", init=str(tmp_path / "mv.pt"),
                                         out=str(tmp_path / "run"), progress=False))


@pytest.mark.parametrize("learner_view", [False, True])
def test_a_pool_mixes_checkpoints_with_and_without_the_view(tmp_path, learner_view):
    """A learner with (or without) the move view trains against a ``--pool-opponents``
    checkpoint without (or with) it: the vector observes the view when anyone needs it and
    each network reads its own prefix; the learner's checkpoint has its own size."""
    torch = pytest.importorskip("torch")
    from traveller_agents.checkpoint import checkpoint_bytes, read_checkpoint
    from traveller_agents.nets import ActorCritic
    from traveller_rl.ppo import trainer as train_ppo

    if learner_view:  # the other one lacks the view
        env = traveller_env.raw_env("squad")
        net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [16])
        (tmp_path / "other.pt").write_bytes(checkpoint_bytes(
            net, "squad", env.relative_actions.labels, decisions=0, update=0, seed=0))
    else:
        _move_view_checkpoint(tmp_path / "other.pt")
    flags = ["--scenario", "squad", "--pool", "--pool-opponents", str(tmp_path / "other.pt"),
             "--num-envs", "8", "--num-steps", "8", "--total-timesteps", "200",
             "--eval-vs", "rush", "--eval-battles", "2", "--eval-envs", "2",
             "--final-eval-battles", "0", "--no-progress", "--out", str(tmp_path / "run"),
             *(["--move-view"] if learner_view else [])]
    assert train_ppo.main(flags) == 0
    ckpt = read_checkpoint(tmp_path / "run" / "ppo.pt")
    want = len(traveller_env.raw_env("squad", move_view=learner_view).observation_labels)
    assert ckpt["obs_dim"] == want and bool(ckpt.get("move_view")) == learner_view
    assert torch.is_tensor(ckpt["actor"]["0.weight"])
