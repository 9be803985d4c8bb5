"""experiments/mirror_probe.py: the left-right mirror of a seat's observation and actions."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fighter, scenario, squad_labels

from experiments.mirror_probe import (
    MirroredPolicy,
    mirror_action_order,
    mirror_label,
    mirror_observation_order,
)
from traveller_env.env import TravellerEnv

# A map that is its own mirror image (x -> 11 - x): low walls and rubble on both halves.
TERRAIN = ["............",
           "..c......c..",
           "....~..~....",
           "...c....c...",
           "....~..~....",
           "..c......c..",
           "............"]
BLUE = [fighter((1, 2)), fighter((2, 4), weapon="shotgun")]
RED = [fighter((10, 2)), fighter((9, 4), weapon="shotgun")]
# Entries that describe the turn's state (whose turn, Initiative) rather than positions.
TURN_STATE = ("initiative", "phase_", "available", "acted", "round")


def test_labels_map_to_their_reflection_and_back():
    labels, actions = squad_labels(move_view=True, attack_view=True)
    assert mirror_label("move.E:1.seen_by") == "move.W:1.seen_by"
    assert mirror_label("attack.NE:2.threat") == "attack.NW:2.threat"
    assert mirror_label("attack.N:3.best_hit") == "attack.N:3.best_hit"
    assert mirror_label("move:SE:3") == "move:SW:3" and mirror_label("move:S:1") == "move:S:1"
    assert mirror_label("enemy0.dx") == "enemy0.dx" and mirror_label("attack:enemy0") == \
        "attack:enemy0"
    for order, n in ((mirror_observation_order(labels), len(labels)),
                     (mirror_action_order(actions), len(actions))):
        assert sorted(order.tolist()) == list(range(n))  # a permutation
        assert (order[order] == np.arange(n)).all()  # its own inverse
    moved = [a for a, i in zip(actions, mirror_action_order(actions), strict=True)
             if actions[i] != a]
    # exactly the moves with an east or west component change
    assert moved == [a for a in actions
                     if a.startswith("move:") and a.split(":")[1] in ("NE", "E", "SE", "SW",
                                                                     "W", "NW")]


def test_an_unmirrorable_label_set_is_refused_by_name():
    with pytest.raises(ValueError, match=r"'move\.W:1\.seen_by'.*not among them"):
        mirror_observation_order(["self.x", "move.E:1.seen_by"])


class _Recorder:
    """An inner policy that records what it was shown and picks a fixed action label."""

    def __init__(self, labels: list[str], pick: str) -> None:
        self.action_labels = labels
        self.name = "recorder"
        self.pick = pick
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def reset(self, seed=None) -> None:
        pass

    def choose(self, observation, mask, side=None) -> int:
        self.seen.append((np.asarray(observation), np.asarray(mask)))
        return self.action_labels.index(self.pick)


def test_a_mirrored_blue_seat_sees_what_the_mirror_red_seat_sees():
    """On a mirror-symmetric battle, blue's reflected observation is red's own: position,
    offsets, distances, bands, line of sight, cover, and the move and attack views' squares
    (the turn-state entries, Initiative and whose turn it is, differ by the dice)."""
    env = TravellerEnv(scenario(BLUE, RED, width=12, height=7, terrain=TERRAIN),
                       move_view=True, attack_view=True)
    env.reset(seed=3)
    labels = env.observation_labels
    mirror = MirroredPolicy(_Recorder(env.relative_actions.labels, "end_turn"), {"blue"})
    for b, r in (("blue_0", "red_0"), ("blue_1", "red_1")):
        reflected = mirror.mirror(env.observe(b)["observation"], env)
        own = env.observe(r)["observation"]
        compared = [i for i, lab in enumerate(labels)
                    if not any(t in lab for t in TURN_STATE)]
        assert len(compared) > 250
        np.testing.assert_allclose(reflected[compared], own[compared], atol=1e-6)
        # and the plain observation differs: the mirror is doing the work
        assert not np.allclose(np.asarray(env.observe(b)["observation"])[compared], own[compared])


def test_the_network_s_move_east_is_played_as_west():
    env = TravellerEnv(scenario(BLUE, RED, width=12, height=7, terrain=TERRAIN),
                       move_view=True, attack_view=True)
    env.reset(seed=3)
    agent = env.agent_selection
    side = env.scenario.sides[env.side_of(agent)].name
    rel = env.relative_actions
    inner = _Recorder(rel.labels, "move:E:1")
    policy = MirroredPolicy(inner, {side})
    mask = env.action_mask(agent)
    action = policy.act(env.observe(agent)["observation"], mask, agent, env)
    assert env.action_labels[action] == "move:W:1"
    shown_mask = inner.seen[-1][1]
    own_mask = np.asarray(rel.mask(agent, np.asarray(mask))).astype(bool)
    east, west = rel.labels.index("move:E:1"), rel.labels.index("move:W:1")
    assert shown_mask[east] == own_mask[west] and shown_mask[west] == own_mask[east]
