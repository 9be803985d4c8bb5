"""`Dice` can draw from the shared generator (PCG32, the engine's default since the switch,
`DEFAULT_GENERATOR = "pcg"`); Mersenne Twister (`"mt"`) still replays the seeds from before it."""

from __future__ import annotations

import json
import random

import pytest

from traveller_env.env import TravellerEnv
from traveller_env.rules import dice as dice_module
from traveller_env.rules.dice import Dice
from traveller_env.rules.rng import Pcg32
from traveller_env.scenario import build_battle


def play(battle, action_seed: int):
    """Random legal actions (from their own RNG) until the battle ends."""
    pick = random.Random(action_seed)
    while not battle.done:
        battle.apply(pick.choice(battle.legal_actions()))
    return battle


def test_pcg_dice_roll_the_shared_stream():
    d, g = Dice(11, generator="pcg"), Pcg32(11)
    assert [d.roll(n) for n in (2, 1, 3, 2)] == [g.roll_d6(n) for n in (2, 1, 3, 2)]
    assert d.seed == 11 and d.generator == "pcg"


def test_pcg_dice_clone_and_state_replay_the_same_rolls():
    d = Dice(5, generator="pcg")
    d.roll(4)
    twin, saved = d.clone(), d.getstate()
    ahead = d.roll(30)
    assert twin.roll(30) == ahead
    d.setstate(saved)
    assert d.roll(30) == ahead
    with pytest.raises(ValueError, match="state is of generator 'pcg'"):
        Dice(5, generator="mt").setstate(saved)


def test_from_rng_draws_from_that_generator_itself():
    g = Pcg32(3)
    d = Dice.from_rng(g, seed=3)
    d.roll(5)
    twin = Pcg32(3)
    twin.roll_d6(5)
    assert g.getstate() == twin.getstate()
    with pytest.raises(TypeError, match=r"rng must be a traveller_env\.rules\.rng\.Pcg32"):
        Dice.from_rng(random.Random(3))


def test_bad_generator_or_seed_is_refused():
    with pytest.raises(ValueError, match=r"generator must be one of \('mt', 'pcg'\), got 'xx'"):
        Dice(1, generator="xx")
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*64 - 1\], got -1"):
        Dice(-1, generator="pcg")
    assert Dice(None, generator="pcg").roll(1)[0] in range(1, 7)


def test_the_default_is_the_shared_generator_and_mt_still_replays_old_seeds():
    assert dice_module.DEFAULT_GENERATOR == "pcg"
    assert Dice(7).generator == "pcg"
    assert Dice(7).roll(6) == Pcg32(7).roll_d6(6)
    rnd = random.Random(7).random
    assert Dice(7, generator="mt").roll(6) == [int(rnd() * 6) + 1 for _ in range(6)]


def test_a_battle_runs_on_the_shared_generator_deterministically():
    logs = [json.dumps(play(build_battle("squad", dice=Dice(21, generator="pcg")), 4).events)
            for _ in range(2)]
    assert logs[0] == logs[1]
    mt = json.dumps(play(build_battle("squad", dice=Dice(21, generator="mt")), 4).events)
    assert logs[0] != mt  # the generator really changed


def _env_events(seed: int) -> tuple[str, str]:
    """The generator and the event log of a duel env reset with ``seed`` and played to the end
    with each seat's first legal action."""
    env = TravellerEnv("duel")
    env.reset(seed=seed)
    generator = env.battle.dice.generator
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(int(env.observe(agent)["action_mask"].nonzero()[0][0]))
    return generator, json.dumps(env.battle.events)


def test_switching_the_default_moves_seeded_battles_onto_it(monkeypatch):
    """A real switch, to the other generator and back: seeded battles (built or reset by the
    env) follow the default, their rolls change with it and come back with it."""
    assert dice_module.DEFAULT_GENERATOR == "pcg"
    before = json.dumps(play(build_battle("duel", seed=8), 1).events)
    env_before = _env_events(8)
    assert env_before[0] == "pcg"
    assert before == json.dumps(play(build_battle("duel", dice=Dice(8, generator="pcg")), 1)
                                .events)

    monkeypatch.setattr(dice_module, "DEFAULT_GENERATOR", "mt")
    battle = build_battle("duel", seed=8)
    assert battle.dice.generator == "mt"
    switched = json.dumps(play(battle, 1).events)
    explicit = build_battle("duel", dice=Dice(8, generator="mt"))
    assert switched == json.dumps(play(explicit, 1).events)
    assert switched != before  # the rolls changed with the generator
    env_switched = _env_events(8)
    assert env_switched[0] == "mt" and env_switched[1] != env_before[1]

    monkeypatch.setattr(dice_module, "DEFAULT_GENERATOR", "pcg")
    assert json.dumps(play(build_battle("duel", seed=8), 1).events) == before
    assert _env_events(8) == env_before  # ... and came back
