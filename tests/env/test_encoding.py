"""The fast action mask equals the reference mask (R2.1 budget, R4 legality): the fast path
groups legality by kind (``Battle.turn_options``), the reference asks ``why_illegal`` about
every action, over random battles on every built-in scenario."""

from __future__ import annotations

import random

import numpy as np
import pytest

from traveller_env.encoding import ActionCatalogue
from traveller_env.scenario import build_battle, builtin_scenarios


@pytest.mark.parametrize("name", builtin_scenarios())
def test_fast_mask_equals_reference_mask(name):
    checked = 0
    for seed in range(4):
        battle = build_battle(name, seed=seed)
        cat = ActionCatalogue(battle)
        rng = random.Random(seed)
        while not battle.done and checked < 600:
            fast, slow = cat.mask(battle), cat.mask_slow(battle)
            diff = [cat.labels[i] for i in np.flatnonzero(fast != slow)]
            assert not diff, f"{name} seed {seed}: masks differ on {diff}"
            battle.apply(cat.actions[rng.choice(np.flatnonzero(fast))])
            checked += 1
    assert checked > 50


def test_turn_options_refuses_other_phases():
    battle = build_battle("duel", seed=0)  # hastening on: round 1 opens with declarations
    assert battle.phase == "haste"
    with pytest.raises(RuntimeError, match="turn decision"):
        battle.turn_options()
