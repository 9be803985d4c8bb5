"""The optional attack view (``attack_view=True``; ``ObservationBuilder.attack_view_entries``):
exact hit chances from the rules (``rules.attack.hit_probability``: 2D + every DM >= 8, R1.2),
per slot for each attack now and per move-view square for the best unaimed shot and the
enemies' mean threat. Exact cases by hand on a small map, and its plumbing: labels and order
after the aim view, the env keyword's check, ``attack_view_vector``, trained policies that read
it in envs without it, ONNX metadata (``train_ppo --attack-view``: tests/env/test_aim_view.py,
beside ``--aim-view``). (Both engines agree on it: tests/core/test_core_observation.py,
test_core_aec.py, test_core_vector.py.)"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import fighter, play_like_the_network, scenario, view_checkpoint

import traveller_env
from traveller_env.observations import (
    ATTACK_SQUARE_FIELDS,
    ATTACK_VIEW_FIELDS,
    ObservationBuilder,
)
from traveller_env.rules.attack import hit_probability
from traveller_env.scenario import build_battle

# 20 x 10: low cover at (4, 2) and (9, 2), a wall at (2, 1) and a wall right across row 5, so
# that nothing in rows 0-4 sees rows 6-9 (R8.1).
TERRAIN = ["." * 20,
           "..#" + "." * 17,
           "...." + "c" + "...." + "c" + "." * 10,
           "." * 20,
           "." * 20,
           "#" * 20,
           *(["." * 20] * 4)]


def p_2d6_at_least(n: int, times: Fraction = Fraction(1)) -> object:
    """P(2D >= n) (x ``times``), counted from the 36 outcomes as a fraction; compared within
    1e-12 (the view sums the eleven float probabilities)."""
    exact = Fraction(sum(1 for a in range(1, 7) for b in range(1, 7) if a + b >= n), 36)
    return pytest.approx(float(exact * times), abs=1e-12)


HALF = Fraction(1, 2)


def _battle():
    """blue_0 at (2, 2) and red_0 at (10, 2), both autorifles (skill 1, DEX DM 0; 12 m is
    short range for a 300 m weapon, DM +1, R5.1): DM +2 before cover, prone or aim. red_1 sits
    behind the wall row, out of everyone's line of sight."""
    sc = scenario([fighter((2, 2))], [fighter((10, 2)), fighter((10, 8))], terrain=TERRAIN)
    return build_battle(sc, seed=1)


def _view(builder: ObservationBuilder, b, agent: str) -> dict[str, float]:
    """``agent``'s attack view as {label without the ``attack.`` prefix: entry}, slots named by
    the combatant sitting there."""
    labels = builder.attack_view_labels(b.max_move_squares)
    names = dict(zip(builder.slot_names(), builder.slots(agent), strict=True))
    out = {}
    for label, v in zip(labels, builder.attack_view_entries(b, agent), strict=True):
        _, where, field = label.split(".")
        out[f"{names.get(where, where)}.{field}"] = v
    return out


def test_r1_2_r5_each_attack_now_gets_its_exact_2d6_chance():
    b = _battle()
    builder = ObservationBuilder(b, attack_view=True)
    blue, red = b.by_id["blue_0"], b.by_id["red_0"]
    v = _view(builder, b, "blue_0")
    assert v["red_0.hit"] == p_2d6_at_least(6)  # DM +2 both ways
    assert v["red_0.hits_me"] == p_2d6_at_least(6)
    assert v["red_1.hit"] == v["red_1.hits_me"] == 0.0  # no line of sight: out of reach
    red.stance = "crouch"  # R5.3: the low cover at (9, 2) is next to it on the line
    assert _view(builder, b, "blue_0")["red_0.hit"] == p_2d6_at_least(8)
    red.stance = "prone"  # cover -2 and prone -1
    assert _view(builder, b, "blue_0")["red_0.hit"] == p_2d6_at_least(9)
    blue.aim_target, blue.aim_dm = "red_0", 2  # R4.3: the aim held on it counts
    assert _view(builder, b, "blue_0")["red_0.hit"] == p_2d6_at_least(7)
    blue.hasty = True  # R3.5
    assert _view(builder, b, "blue_0")["red_0.hit"] == p_2d6_at_least(8)
    blue.bonus = True  # R7.3: a held leadership bonus
    assert _view(builder, b, "blue_0")["red_0.hit"] == p_2d6_at_least(7)
    assert _view(builder, b, "red_0")["blue_0.hits_me"] == p_2d6_at_least(7)  # seen from red
    # its attack on me: red's own aim on me and my stance; blue stands in the open
    red.aim_target, red.aim_dm = "blue_0", 3
    assert _view(builder, b, "blue_0")["red_0.hits_me"] == p_2d6_at_least(3)  # always hits
    red.out = True  # out of play: nothing
    v = _view(builder, b, "blue_0")
    assert v["red_0.hit"] == v["red_0.hits_me"] == 0.0


def test_r5_3_each_square_gets_the_best_unaimed_shot_and_the_mean_threat():
    b = _battle()
    builder = ObservationBuilder(b, attack_view=True)
    blue, red = b.by_id["blue_0"], b.by_id["red_0"]
    blue.stance = "crouch"
    blue.aim_target, blue.aim_dm = "red_0", 4  # a move breaks an aim (R4.3): not counted
    v = _view(builder, b, "blue_0")
    assert v["here.best_hit"] == p_2d6_at_least(6)
    # two enemies in play; red_1 cannot see the square, red_0 hits DM +2 (no cover next to me)
    assert v["here.threat"] == p_2d6_at_least(6, HALF)
    # one square east: the low cover at (4, 2) is next to me on red_0's line (R5.3)
    assert v["E:1.best_hit"] == p_2d6_at_least(6)
    assert v["E:1.threat"] == p_2d6_at_least(8, HALF)
    blue.stance = "stand"  # standing, cover does not count
    assert _view(builder, b, "blue_0")["E:1.threat"] == p_2d6_at_least(6, HALF)
    red.stance = "prone"  # the best shot from anywhere on the row: cover -2, prone -1
    v = _view(builder, b, "blue_0")
    assert v["here.best_hit"] == p_2d6_at_least(9)
    assert v["E:2.best_hit"] == p_2d6_at_least(9)
    # a wall square and a square off the map: zeros
    assert v["N:1.best_hit"] == v["N:1.threat"] == 0.0
    assert v["W:3.best_hit"] == v["W:3.threat"] == 0.0
    # below the wall row (2, 6): only red_1 is in reach, both ways, standing in the open
    assert v["S:4.best_hit"] == p_2d6_at_least(6)
    assert v["S:4.threat"] == p_2d6_at_least(6, HALF)
    b.by_id["red_1"].out = True  # out of play: no longer in the mean
    assert _view(builder, b, "blue_0")["here.threat"] == p_2d6_at_least(6)


def test_hit_probability_is_the_success_chance_of_the_attacks_dms():
    """The view asks ``hit_probability``, which is the R1.2 chance of the engine's own DMs."""
    from traveller_env.rules.attack import attack_dms, held_dms, total_dm
    from traveller_env.rules.checks import success_probability

    b = _battle()
    blue, red = b.by_id["blue_0"], b.by_id["red_0"]
    for stance in ("stand", "crouch", "prone"):
        red.stance = stance
        dms = {**attack_dms(blue, red, b.grid), **held_dms(blue)}
        assert hit_probability(blue, red, b.grid) == success_probability(total_dm(dms))
    assert hit_probability(blue, b.by_id["red_1"], b.grid) == 0.0


def test_the_env_appends_the_view_last_and_checks_the_keyword():
    plain = traveller_env.raw_env("squad")
    views = traveller_env.raw_env("squad", move_view=True, aim_view=True)
    every = traveller_env.raw_env("squad", move_view=True, aim_view=True, attack_view=True)
    attack = traveller_env.raw_env("squad", attack_view=True)
    slots = [*(f"ally{k}" for k in range(3)), *(f"enemy{k}" for k in range(4))]
    squares = ["here"] + [f"{d}:{k}" for d in ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
                          for k in range(1, 5)]
    tail = ([f"attack.{s}.{f}" for s in slots for f in ATTACK_VIEW_FIELDS]
            + [f"attack.{s}.{f}" for s in squares for f in ATTACK_SQUARE_FIELDS])
    assert attack.observation_labels == plain.observation_labels + tail
    assert every.observation_labels == views.observation_labels + tail
    for env in (plain, every, attack):
        env.reset(seed=4)
    for agent in plain.possible_agents:
        base = plain.observe(agent)["observation"]
        full = every.observe(agent)["observation"]
        assert full[:len(base)].tobytes() == base.tobytes()
        assert np.array_equal(full[-len(tail):], plain.attack_view_vector(agent))
        assert np.array_equal(attack.observe(agent)["observation"][-len(tail):],
                              plain.attack_view_vector(agent))
    with pytest.raises(TypeError, match="attack_view must be True or False"):
        traveller_env.raw_env("squad", attack_view="yes")


def test_a_checkpoint_trained_with_the_attack_view_plays_in_envs_without_it(tmp_path):
    """``load_ppo_policy`` reads ``attack_view``; in an env without it (or with other views)
    the policy asks the env and picks what the network picks on the full observation; the
    ONNX export records it and ``OnnxPolicy`` does the same."""
    pytest.importorskip("torch")
    from traveller_agents.ppo_policy import load_ppo_policy

    net = view_checkpoint(tmp_path / "atk.pt", move_view=True, attack_view=True)
    policy = load_ppo_policy(tmp_path / "atk.pt", "squad")
    full = traveller_env.raw_env("squad", move_view=True, attack_view=True)
    envs = [traveller_env.raw_env("squad"), traveller_env.raw_env("squad", aim_view=True),
            traveller_env.raw_env("squad", move_view=True, aim_view=True, attack_view=True),
            full]
    onnx_policy = None
    if all(__import__("importlib").util.find_spec(m) for m in ("onnx", "onnxruntime")):
        from traveller_agents.onnx_policy import OnnxPolicy, read_metadata
        from traveller_rl.onnx_export import export_onnx

        export_onnx(tmp_path / "atk.pt", tmp_path / "atk.onnx")
        meta = read_metadata(tmp_path / "atk.onnx")
        assert (meta["attack_view"], meta["move_view"], meta["aim_view"]) == (True, True, False)
        onnx_policy = OnnxPolicy(tmp_path / "atk.onnx", "squad")
    rng = np.random.default_rng(0)
    policies = [policy] + ([onnx_policy] if onnx_policy is not None else [])
    checked = play_like_the_network(net, full, envs, policies, [1],
                                    lambda agent, obs, mask: int(rng.choice(np.flatnonzero(mask))),
                                    max_iter=300)
    assert checked > 50
