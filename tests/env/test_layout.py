"""Fixed layouts (traveller_env.layout): one observation and action layout for every scenario
that fits, and a clear error for one that does not."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import raw_env
from traveller_env.layout import LAYOUTS, Layout, LayoutError, resolve_layout
from traveller_env.observations import STATE_FIELDS

SIX = LAYOUTS["6v6"]
FITTING = ["squad", "ambush", "melee", "leadership_l0", "gen:skirmish@3", "gen:squad@1",
           "gen:duel@2", "gen:ambush@4"]


def _env(scenario: str, **options):
    env = raw_env(scenario, backend="python", **options)
    env.reset(seed=11)
    return env


@pytest.mark.parametrize("scenario", FITTING)
def test_every_fitting_scenario_has_the_layouts_sizes_and_labels(scenario):
    env = _env(scenario, layout="6v6", move_view=True, attack_view=True)
    ref = _env("squad", layout="6v6", move_view=True, attack_view=True)
    assert env.observation_labels == ref.observation_labels
    assert env.relative_actions.labels == SIX.action_labels()
    assert env.state().shape == (2 * SIX.side_limit * len(STATE_FIELDS) + 4,)
    for agent in env.possible_agents:
        obs = env.observe(agent)["observation"]
        assert obs.shape == (len(ref.observation_labels),)
        assert np.all(np.abs(obs) <= 1.0)


def test_positions_are_divided_by_the_layouts_map_size_and_the_rest_is_unchanged():
    plain, laid = _env("squad"), _env("squad", layout="6v6")
    agent = plain.agent_selection
    a = dict(zip(plain.observation_labels, plain.observe(agent)["observation"], strict=True))
    b = dict(zip(laid.observation_labels, laid.observe(agent)["observation"], strict=True))
    x, y = plain.battle.by_id[agent].pos
    assert b["self.x"] == np.float32(x / SIX.map_size)
    assert b["self.y"] == np.float32(y / SIX.map_size)
    assert a["self.x"] == np.float32(x / plain.battle.grid.width)
    for label, value in a.items():  # squad has 4 a side: its slots are the layout's first ones
        if label.endswith((".x", ".y", ".dx", ".dy")):
            continue
        assert b[label] == value, label
    # the layout's extra slots are empty: all zeros
    assert all(v == 0.0 for k, v in b.items() if k.startswith(("ally3.", "ally4.", "enemy4.",
                                                                 "enemy5.")))


@pytest.mark.parametrize("scenario", ["squad", "gen:skirmish@5", "ambush"])
def test_the_layout_mask_allows_exactly_the_legal_actions_each_named_once(scenario):
    """R2.1: the mask says what the engine accepts; under a layout every legal action has one
    slot-relative label and nothing else is allowed."""
    env = _env(scenario, layout="6v6")
    rel = env.relative_actions
    rng = np.random.default_rng(0)
    for _ in range(60):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        absolute = env.action_mask(agent)
        mask = rel.mask(agent, absolute)
        assert mask.sum() == absolute.sum()
        allowed = np.flatnonzero(mask)
        assert sorted(rel.to_absolute(agent, int(j)) for j in allowed) == \
            np.flatnonzero(absolute).tolist()
        env.step(rel.to_absolute(agent, int(rng.choice(allowed))))
        if not env.agents:
            break


def test_a_scenario_that_does_not_fit_names_the_limit():
    with pytest.raises(LayoutError, match=r"'duel' does not fit layout '6v6'.*240x5 squares.*"
                                          r"limit is 40x40 \(map_size\)"):
        raw_env("duel", backend="python", layout="6v6")
    small = Layout("tiny", allies=1, enemies=2, map_size=40, max_move_squares=4)
    with pytest.raises(LayoutError, match=r"side 0 has 4 combatants; the layout's limit is 2"):
        raw_env("squad", backend="python", layout=small)
    slow = Layout("slow", allies=5, enemies=6, map_size=40, max_move_squares=2)
    with pytest.raises(LayoutError, match=r"moves 4 squares; the layout's limit is 2"):
        raw_env("squad", backend="python", layout=slow)


def test_layouts_resolve_from_names_and_dicts_and_refuse_anything_else():
    assert resolve_layout("6v6") is SIX
    assert resolve_layout(SIX.to_dict()) == SIX
    assert resolve_layout(None) is None
    with pytest.raises(LayoutError, match="one of 6v6"):
        resolve_layout("7v7")
    with pytest.raises(LayoutError, match="missing: max_move_squares"):
        resolve_layout({"name": "x", "allies": 1, "enemies": 2, "map_size": 9})
    with pytest.raises(LayoutError, match="allies must be an int"):
        Layout("x", allies=-1, enemies=2, map_size=9, max_move_squares=4)


def test_a_policy_on_a_layout_reads_it_in_an_env_without_one():
    plain, laid = _env("gen:squad@7"), _env("gen:squad@7", layout="6v6")
    agent = plain.agent_selection
    assert np.array_equal(plain.layout_observation(agent, "6v6"),
                          laid.observe(agent)["observation"])
    assert plain.layout_actions("6v6").labels == laid.relative_actions.labels
