"""traveller_rl.scenario_eval: a learned policy against in-core opponents on many scenarios,
both sides, each battle replayable from its record."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_agents.registry import make_policy
from traveller_env import raw_env
from traveller_rl.scenario_eval import load_learned, play_scenarios, summarise

UNDERSTUDY = "results/league/understudy.onnx"


def test_records_replay_in_the_aec_env_with_the_same_result():
    learned = load_learned(UNDERSTUDY)
    records = play_scenarios(learned, ["squad", "gen:squad@10003"], opponent="rush")
    assert [r["side"] for r in records] == ["blue", "red", "blue", "red"]
    policy = make_policy(UNDERSTUDY, scenario="squad")
    for r in records[:2]:  # the same battle, played through the AEC env by the same policy
        env = raw_env(r["scenario"])
        env.reset(seed=r["battle_seed"])
        rush = make_policy("rush")
        rush.reset(None)
        while env.agents:
            agent = env.agent_selection
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            side = env.scenario.sides[env.side_of(agent)].name
            player = policy if side == r["side"] else rush
            env.step(player.act(obs["observation"], obs["action_mask"], agent, env))
        assert env.battle.winner is not None or r["result"] == "draw"
        won = env.battle.winner == r["side"]
        assert won == (r["result"] == "win")


def test_unplayable_scenarios_are_recorded_not_lost():
    learned = load_learned(UNDERSTUDY)
    records = play_scenarios(learned, ["duel"], opponent="rush")
    assert {r["result"] for r in records} == {"not_playable"}
    assert "the policy takes 333" in records[0]["reason"]
    s = summarise(records)
    assert s["battles"] == 0 and s["not_playable"] == 2 and s["win_rate"] is None


def test_summary_counts_and_interval():
    rows = [{"side": "blue", "result": "win"}, {"side": "red", "result": "loss"},
            {"side": "red", "result": "draw"}, {"side": "blue", "result": "not_playable"}]
    s = summarise(rows)
    assert (s["battles"], s["wins"], s["draws"], s["losses"], s["not_playable"]) == \
        (3, 1, 1, 1, 1)
    assert s["win_rate"] == pytest.approx(1 / 3)
    assert s["win_ci95"][0] < 1 / 3 < s["win_ci95"][1]
    assert s["by_side"]["blue"]["wins"] == 1 and np.isclose(s["by_side"]["red"]["win_rate"], 0)
