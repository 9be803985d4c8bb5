"""experiments/search_probe.py: look-ahead on the core's battle copies around a checkpoint.
The copies never touch the real battle (with an infinite margin the searched policy plays
the plain checkpoint's battle event for event), a search that may override picks only legal
actions, and an env without a core battle is refused by name."""

from __future__ import annotations

import json

import pytest
from conftest import member_checkpoint

from agents.evaluation import play_battle
from agents.registry import make_policy
from traveller_env import core

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())


def _events(policy, seed: int) -> str:
    import traveller_env

    env = traveller_env.raw_env("squad")
    policies = {a: policy if a.startswith("blue") else make_policy("marksman", seed=1)
                for a in env.possible_agents}
    return json.dumps(play_battle(env, policies, seed).events)


def test_with_an_infinite_margin_the_search_plays_the_checkpoints_battle(tmp_path):
    from experiments.search_probe import SearchPolicy

    member_checkpoint(tmp_path / "a.pt", "entity", 1)
    plain = make_policy(str(tmp_path / "a.pt"), scenario="squad")
    searched = SearchPolicy(str(tmp_path / "a.pt"), candidates=3, rollouts=2, confident=1.0,
                            margin=float("inf"), potential={"clear_shots": 1.0, "exposed": -1.0})
    assert _events(searched, 5) == _events(plain, 5)
    assert searched.searches > 0 and searched.overrides == 0  # the copies left the battle as it was


def test_a_search_that_may_override_plays_legal_actions_to_the_end(tmp_path):
    from experiments.search_probe import SearchPolicy

    member_checkpoint(tmp_path / "a.pt", "entity", 2)
    searched = SearchPolicy(str(tmp_path / "a.pt"), candidates=3, rollouts=2, confident=1.0,
                            knockouts={"enemies_out": 0.25, "allies_out": -0.25},
                            model="cover")
    log = json.loads(_events(searched, 9))  # an illegal choice would raise in the env
    assert log[-1]["type"] == "end" and searched.searches > 0
    assert 0 <= searched.overrides <= searched.searches


def test_an_env_without_a_core_battle_is_refused_by_name(tmp_path):
    import traveller_env
    from experiments.search_probe import SearchPolicy

    member_checkpoint(tmp_path / "a.pt", "entity", 3)
    searched = SearchPolicy(str(tmp_path / "a.pt"), candidates=3, rollouts=2, confident=1.0)
    env = traveller_env.raw_env("squad", backend="python")
    policies = {a: searched for a in env.possible_agents}
    with pytest.raises(ValueError, match="needs an env on the core"):
        play_battle(env, policies, 1)
