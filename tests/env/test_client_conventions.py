"""The AEC env's conventions for generic clients: knocked-out agents wait for the battle's end
(``terminate_on_knockout`` keeps the per-agent termination) with the same reward totals,
illegal actions per ``illegal_action`` (``env``: terminate, ``raw_env``: raise), numeric
``infos`` by default, and ``battle_seed`` (no attribute shadowing ``seed()``)."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import core, env, raw_env
from traveller_env.env import INFO_PHASES
from traveller_env.scenario import builtin_scenarios, load_scenario

SCENARIOS = [*builtin_scenarios(), "gen:squad@3"]
BACKEND = "core" if core.available() else "python"


def with_rich_rewards(name: str) -> dict:
    """The scenario with every reward term on, so that the totals test covers them all."""
    data = load_scenario(name).model_dump(mode="json")
    data["rewards"] = {"win": 1.0, "loss": -1.0, "draw": 0.25, "damage_dealt": 0.1,
                       "damage_taken": -0.05, "per_round": -0.01, "shared": name != "melee"}
    return data


def play(game, seed: int) -> tuple[dict[str, float], list[str], bool]:
    """One battle of seeded random legal moves; each agent's rewards as ``last()`` delivers
    them, the agents that terminated before the battle ended, and whether it ended."""
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(game.possible_agents, 0.0)
    early = []
    for agent in game.agent_iter(100_000):
        obs, reward, term, trunc, _ = game.last()
        totals[agent] += reward
        if term or trunc:
            battle = game.unwrapped.battle
            if not (battle.done or battle.truncated):
                early.append(agent)
            game.step(None)
        else:
            game.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return totals, early, game.unwrapped.battle.done


@pytest.mark.parametrize("name", SCENARIOS)
def test_knocked_out_agents_receive_the_same_totals_in_both_modes(name):
    sc = with_rich_rewards(name)
    knocked_somewhere = False
    for seed in (1, 2):
        deferred = play(raw_env(sc, backend=BACKEND), seed)
        per_agent = play(raw_env(sc, backend=BACKEND, terminate_on_knockout=True), seed)
        assert deferred[0] == per_agent[0], (seed, deferred[0], per_agent[0])
        assert deferred[1] == []  # nobody terminates before the battle's end
        knocked_somewhere |= bool(per_agent[1])
    if name in ("squad", "ambush", "gen:squad@3"):
        assert knocked_somewhere  # the comparison covered knocked-out agents


def test_illegal_actions_end_the_episode_in_env_and_raise_in_raw_env():
    game = env("squad", backend=BACKEND)
    game.reset(seed=0)
    offender = game.agent_selection
    illegal = int(np.flatnonzero(game.observe(offender)["action_mask"] == 0)[0])
    with pytest.warns(UserWarning, match=rf"{offender}: illegal action .* the episode ends"):
        game.step(illegal)
    assert all(game.terminations.values()) and game.unwrapped.illegal_action == "terminate"
    totals = {}
    for agent in game.agent_iter():
        totals[agent] = game.last()[1]
        game.step(None)
    assert totals[offender] == -1.0 and sum(totals.values()) == -1.0
    events = game.unwrapped.battle.events
    assert [e["actor"] for e in events if e["type"] == "illegal_action"] == [offender]
    bare = raw_env("squad", backend=BACKEND)
    bare.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action"):
        bare.step(illegal)
    assert env("duel", backend=BACKEND, illegal_action="raise").unwrapped.illegal_action == "raise"
    assert raw_env("duel", illegal_action="terminate", backend=BACKEND).illegal_action == \
        "terminate"
    own = load_scenario("duel").model_dump(mode="json")
    own["options"]["illegal_action"] = "penalize"
    assert env(own, backend=BACKEND).unwrapped.illegal_action == "penalize"  # the scenario's
    with pytest.raises(ValueError, match="'raise', 'penalize', 'terminate'"):
        raw_env("duel", backend=BACKEND, illegal_action="end")


@pytest.mark.parametrize("backend", ["python", "core"])
def test_default_infos_are_numbers_and_new_events_has_the_events(backend):
    if backend == "core" and not core.available():
        pytest.skip("the compiled core is not built")
    game = raw_env("squad", backend=backend)
    game.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(200):
        if not game.agents:
            break
        agent = game.agent_selection
        for info in game.infos.values():
            assert set(info) == {"round", "phase", "new_events"}
            assert np.asarray(list(info.values())).dtype.kind == "i"
        info = game.infos[agent]
        assert info["new_events"] == len(game.new_events(agent))
        assert INFO_PHASES[info["phase"]] == game.battle.phase
        assert info["round"] == game.battle.round
        _, _, term, trunc, _ = game.last()
        mask = game.observe(agent)["action_mask"]
        game.step(None if term or trunc else int(rng.choice(np.flatnonzero(mask))))


def test_the_battle_seed_is_battle_seed_and_unseeded_resets_follow_a_seeded_one():
    game = raw_env("duel", backend=BACKEND)
    assert not hasattr(game, "seed")  # nothing shadows a client's seed() probe
    game.reset(seed=5)
    assert game.battle_seed == 5
    game.reset()
    again = raw_env("duel", backend=BACKEND)
    again.reset(seed=5)
    again.reset()
    assert game.battle_seed == again.battle_seed != 5
    assert game.battle.events == again.battle.events
