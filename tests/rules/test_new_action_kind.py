"""Adding an action kind: the worked example of docs/environment.md ("Adding an action kind").

A test-only kind, ``taunt:<agent>`` (a Minor action aimed at an enemy in line of sight; it
changes nothing but the log), is registered from this module. Everything else derives from
the one description: labels and parsing, the action catalogue and the mask, the reference
legality (``why_illegal``), the R2.1 budget and R4.3 aim breaking, dispatch, the event
vocabulary, the invariant checker and the SB3 bridge's focus sets.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fighter, scenario

import traveller_env
from traveller_env.integrations.sb3 import TravellerSB3Env
from traveller_env.rules.events import EventKind
from traveller_env.rules.kinds import ActionKind, parse_action, register_kind, unregister_kind


class Taunt(ActionKind):
    """``taunt:<agent>``: shout at an enemy you can see (Minor). Changes nothing."""

    name, cost, args, rules = "taunt", "minor", "combatant", "test-only"
    events = {"taunt": EventKind(("actor", "target"), ("actor",), "test-only",
                                 "a taunt is shouted")}

    def legal(self, ctx):
        los, pos = ctx.battle.grid.line_of_sight, ctx.actor.pos
        return tuple(t.id for t in ctx.enemies if los(pos, t.pos))

    def why_not(self, ctx, action):
        t = ctx.battle.by_id.get(action.arg)
        if t is None or t.out or t.side == ctx.actor.side:
            return f"{action.arg} is not an enemy in play"
        if not ctx.battle.grid.line_of_sight(ctx.actor.pos, t.pos):
            return f"no line of sight to {action.arg}"
        return None

    def apply(self, battle, actor, action):
        battle.emit({"type": "taunt", "actor": actor.id, "target": action.arg})


@pytest.fixture
def taunt():
    register_kind(Taunt())
    yield
    unregister_kind("taunt")


WALLED = scenario([fighter((0, 0)), fighter((0, 4))], [fighter((6, 0)), fighter((6, 4))],
                  width=8, height=5, terrain=["........", "........", "########",
                                              "........", "........"])


def test_a_registered_kind_is_in_the_catalogue_mask_and_engine(taunt):
    env = traveller_env.raw_env(WALLED, check_invariants=True, backend="python")
    env.reset(seed=3)
    labels = env.action_labels
    assert labels[-4:] == ["taunt:blue_0", "taunt:blue_1", "taunt:red_0", "taunt:red_1"]
    assert parse_action("taunt:red_0").kind == "taunt"
    agent = env.agent_selection
    mask = env.action_mask(agent)
    me = env.unwrapped.battle.by_id[agent]
    seen = {c.id for c in env.unwrapped.battle.combatants
            if c.side != me.side and env.unwrapped.battle.line_of_sight(agent, c.id)}
    offered = {labels[i].split(":")[1] for i in np.flatnonzero(mask)
               if labels[i].startswith("taunt:")}
    assert offered == seen and len(seen) == 1  # the wall hides the other enemy
    assert np.array_equal(mask, env.unwrapped.catalogue.mask_slow(env.unwrapped.battle))
    hidden = next(c for c in env.unwrapped.battle.combatants
                  if c.side != me.side and c.id not in seen)
    assert "line of sight" in env.unwrapped.battle.why_illegal(f"taunt:{hidden.id}")
    target = seen.pop()
    for _ in range(3):  # three Minor actions: the budget (R2.1) ends the turn
        env.step(env.action_index(f"taunt:{target}"))
    events = [e for e in env.unwrapped.battle.events if e["type"] == "taunt"]
    assert events == [{"type": "taunt", "actor": agent, "target": target}] * 3
    assert env.agent_selection != agent


def test_random_battles_with_the_new_kind_keep_every_invariant(taunt):
    env = traveller_env.raw_env("squad", check_invariants=True, backend="python")
    rng = np.random.default_rng(0)
    for seed in range(3):
        env.reset(seed=seed)
        for agent in env.agent_iter(max_iter=3000):
            _, _, term, trunc, _ = env.last(observe=False)
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(env.action_mask(agent))
            env.step(int(legal[rng.integers(len(legal))]))
        assert any(e["type"] == "taunt" for e in env.unwrapped.battle.events)


def test_the_sb3_bridge_accepts_the_new_kind_as_a_focus(taunt):
    from traveller_env.policy import RandomPolicy

    bridge = TravellerSB3Env("duel", learner="blue", assist=RandomPolicy(0), focus=["taunt"],
                             backend="python")
    bridge.reset(seed=0)
    assert "taunt:red_0" in bridge.action_labels


def test_registering_checks_the_description():
    bad = Taunt()
    bad.cost = "expensive"
    with pytest.raises(ValueError, match="cost 'expensive'"):
        register_kind(bad)
    with pytest.raises(ValueError, match="taken"):
        register_kind(type("Again", (Taunt,), {"name": "attack"})())


def test_unregistering_restores_the_catalogue(taunt):
    unregister_kind("taunt")
    assert "taunt:red_0" not in traveller_env.raw_env("duel").action_labels
    register_kind(Taunt())  # for the fixture's clean-up
