"""The compiled core's observation vector and global state equal the Python
``ObservationBuilder``'s bit for bit (csrc/src/observation.cpp, ``CoreBattle.observe/state``).

Every built-in scenario and fuzzed scenarios (``fuzz_scenarios.valid_scenarios``) are played
with the same seed through both engines (the shared PCG32 dice: ``Dice(seed, generator="pcg")``)
and the same random legal actions; at every step, the final one included, the observation of
EVERY agent (not only the deciding one) and the global state must have the same float32 bits. A
difference fails naming the step, the agent, the label of the first differing entry
(``ObservationBuilder.labels``) and both values. The entries cover R2.1 (the budget), R3
(Initiative, haste, the pending attack of R3.6), R4.3 (aim), R5.1 (range bands), R5.3 (cover),
R6 (wounds), R7.5 (leadership pools) and R8.1 (line of sight); the built-in playthroughs are
checked to reach a non-zero value in every entry kind that can have one, so that no comparison
passes vacuously."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from fuzz_scenarios import valid_scenarios
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traveller_env import core
from traveller_env.observations import SELF_FIELDS, SLOT_FIELDS, STATE_FIELDS
from traveller_env.scenario import builtin_scenarios

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def play_and_compare(scenario, seed: int, attack_rate: float = 0.5, illegal_rate: float = 0.05,
                     seen: dict[str, int] | None = None, move_view: bool = False,
                     aim_view: bool = False, attack_view: bool = False) -> int:
    """Play one battle through both engines comparing observations and states at every step;
    count in ``seen`` the steps at which each field (label without its slot) was non-zero.
    Returns the number of decisions."""
    from traveller_env.core.differential import (
        Divergence,
        check_observations,
        take_same_random_action,
    )
    from traveller_env.core.engine import CoreBattle
    from traveller_env.encoding import ActionCatalogue
    from traveller_env.observations import ObservationBuilder
    from traveller_env.rules.dice import Dice
    from traveller_env.scenario import build_battle, load_scenario

    sc = load_scenario(scenario)
    py = build_battle(sc, dice=Dice(seed, generator="pcg"))
    cb = CoreBattle(sc, seed, record_events=False, move_view=move_view, aim_view=aim_view,
                    attack_view=attack_view)
    builder = ObservationBuilder(py, move_view=move_view, aim_view=aim_view,
                                 attack_view=attack_view)
    assert (cb.observation_size, cb.state_size) == (builder.size, builder.state_size)
    for seat, agent in enumerate(cb.ids):  # the slots, relative to the observer
        core_slots = [cb._b.slot(seat, k) for k in range(cb._b.num_slots)]
        assert [cb.ids[i] if i >= 0 else None for i in core_slots] == builder.slots(agent)
    cat = ActionCatalogue(py)
    assert cat.labels == cb.labels
    penalize = sc.options.illegal_action == "penalize"
    attacks = np.array([lab.startswith("attack:") for lab in cat.labels])
    fields = [lab.split(".", 1)[1] if lab.startswith("self.")
              else "move." + lab.rsplit(".", 1)[1] if lab.startswith("move.")
              else "aim." + lab.rsplit(".", 1)[1] if lab.startswith("aim.")
              else "attack." + lab.rsplit(".", 1)[1] if lab.startswith("attack.")
              else "slot." + lab.split(".", 1)[1] for lab in builder.labels]
    rng = np.random.default_rng(seed)
    steps = 0
    while True:
        check_observations(builder, py, cb, f"{sc.name} seed {seed}, step {steps}: ")
        if seen is not None:
            for agent in cb.ids:
                for j in np.flatnonzero(cb.observe(agent)):
                    seen[fields[j]] += 1
            for j in np.flatnonzero(cb.state()):
                seen["state." + builder.state_labels[j].rsplit(".", 1)[-1]] += 1
        if py.done:
            assert cb.done and cb.winner == py.winner
            return steps
        mask = cat.mask(py)
        if py.current_agent != cb.current_agent or not np.array_equal(mask, cb.mask()):
            raise Divergence(f"{sc.name} seed {seed}, step {steps}: the battles diverged")
        take_same_random_action(py, cb, cat, mask, attacks, rng, penalize, attack_rate,
                                illegal_rate)
        steps += 1


def rocket_duel() -> dict:
    """The duel with undrawn rocket launchers (two actions to draw, two to reload), 30 m
    apart: the only way a shipped weapon shows partial ``ready_progress`` (R4.4)."""
    import yaml

    from traveller_env.scenario import config_dir

    sc = yaml.safe_load((config_dir() / "scenarios" / "duel.yaml").read_text())
    sc["name"], sc["map"]["width"] = "rocket_duel", 30
    for side, x in zip(sc["sides"], (5, 25), strict=True):
        c = side["combatants"][0]
        c.update(weapon="rocket_launcher", drawn=False, position=[x, 2])
        c["skills"]["heavy_weapons.portable"] = 1
    return sc


def test_every_builtin_scenario_observes_identically_and_reaches_every_entry_kind():
    seen: dict[str, int] = defaultdict(int)
    for name in [*builtin_scenarios(), rocket_duel()]:
        for seed in range(3):
            play_and_compare(name, seed, seen=seen)
    missing = [f for f in SELF_FIELDS if not seen[f]]
    missing += [f"slot.{f}" for f in SLOT_FIELDS if not seen[f"slot.{f}"]]
    missing += [f"state.{f}" for f in STATE_FIELDS if not seen[f"state.{f}"]]
    assert not missing, f"entries never non-zero in the built-in playthroughs: {missing}"


def test_the_move_view_observes_identically_and_reaches_every_entry():
    """The move view (R8.1 line of sight, R5.3 cover at each square a move could end on) is
    the same on both engines in every built-in scenario, and every one of its fields is
    non-zero somewhere (squad has low cover; melee and the ranges have open ground)."""
    from traveller_env.observations import MOVE_VIEW_FIELDS

    seen: dict[str, int] = defaultdict(int)
    for name in builtin_scenarios():
        for seed in range(2):
            play_and_compare(name, seed, seen=seen, move_view=True)
    missing = [f for f in MOVE_VIEW_FIELDS if not seen[f"move.{f}"]]
    assert not missing, f"move view entries never non-zero: {missing}"


@settings(FUZZ, max_examples=40)
@given(sc=valid_scenarios(), seed=st.integers(0, 2**64 - 1))
def test_fuzzed_scenarios_observe_identically(sc, seed):
    play_and_compare(sc, seed)


def test_the_aim_view_observes_identically_and_reaches_every_entry():
    """The aim view (who holds an R4.3 aim on the observer, per slot) is the same on both
    engines after the move view, in every built-in scenario, and is non-zero somewhere."""
    from traveller_env.observations import AIM_VIEW_FIELDS

    seen: dict[str, int] = defaultdict(int)
    for name in builtin_scenarios():
        play_and_compare(name, 0, seen=seen, move_view=True, aim_view=True)
    play_and_compare("squad", 1, aim_view=True)  # the aim view alone: right after the slots
    missing = [f for f in AIM_VIEW_FIELDS if not seen[f"aim.{f}"]]
    assert not missing, f"aim view entries never non-zero: {missing}"


def test_the_attack_view_observes_identically_and_reaches_every_entry():
    """The attack view (exact R1.2 hit chances of each attack now, and from each square a move
    could end on, with every R4.1/R4.3/R5 DM) is the same on both engines after the other
    views and alone, in every built-in scenario, and each of its fields is non-zero
    somewhere."""
    from traveller_env.observations import ATTACK_SQUARE_FIELDS, ATTACK_VIEW_FIELDS

    seen: dict[str, int] = defaultdict(int)
    for name in builtin_scenarios():
        play_and_compare(name, 0, seen=seen, move_view=True, aim_view=True, attack_view=True)
    play_and_compare("squad", 1, attack_view=True)  # alone: right after the slots
    missing = [f for f in (*ATTACK_VIEW_FIELDS, *ATTACK_SQUARE_FIELDS)
               if not seen[f"attack.{f}"]]
    assert not missing, f"attack view entries never non-zero: {missing}"


@settings(FUZZ, max_examples=25)
@given(sc=valid_scenarios(max_side=4, max_map=8), seed=st.integers(0, 2**64 - 1))
def test_fuzzed_scenarios_give_the_same_attack_view(sc, seed):
    play_and_compare(sc, seed, attack_rate=0.7, attack_view=True)


@settings(FUZZ, max_examples=25)
@given(sc=valid_scenarios(), seed=st.integers(0, 2**64 - 1), aim_view=st.booleans())
def test_fuzzed_scenarios_give_the_same_move_view(sc, seed, aim_view):
    play_and_compare(sc, seed, move_view=True, aim_view=aim_view)


@settings(FUZZ, max_examples=40)
@given(sc=valid_scenarios(max_side=4, max_map=6, max_char=6), seed=st.integers(0, 2**64 - 1))
def test_crowded_fuzzed_scenarios_observe_identically(sc, seed):
    play_and_compare(sc, seed, attack_rate=0.7)


def test_a_difference_is_reported_with_the_label_the_step_and_both_values(monkeypatch):
    from traveller_env.core.differential import Divergence, check_observations
    from traveller_env.core.engine import CoreBattle
    from traveller_env.observations import ObservationBuilder
    from traveller_env.rules.dice import Dice
    from traveller_env.scenario import build_battle

    py = build_battle("duel", dice=Dice(1, generator="pcg"))
    cb = CoreBattle("duel", 1)
    builder = ObservationBuilder(py)
    check_observations(builder, py, cb)
    j = builder.labels.index("enemy0.distance")
    real = cb.observe

    def off_by_one_bit(agent, out=None):
        v = real(agent, out)
        v.view(np.uint32)[j] ^= 1
        return v

    monkeypatch.setattr(cb, "observe", off_by_one_bit)
    with pytest.raises(Divergence, match=rf"step 7: observation of {cb.ids[0]} differs at "
                                         rf"\[{j}\] enemy0\.distance: python "):
        check_observations(builder, py, cb, "step 7: ")


def test_bad_seat_or_buffer_is_refused_naming_the_argument_and_nothing_is_written():
    from traveller_env.core.engine import CoreBattle

    cb = CoreBattle("squad", 0)
    raw, n, size = cb._b, len(cb.ids), cb.observation_size
    out = np.full(size, 7.0, dtype=np.float32)
    for seat in (-1, n, 2**70):
        with pytest.raises(ValueError, match=rf"seat must be an int in \[0, {n - 1}\]"):
            raw.observe(seat, out)
        with pytest.raises(ValueError, match=rf"seat must be an int in \[0, {n - 1}\]"):
            cb.observe(seat)
    for seat in ("0", 1.0, None, True):
        with pytest.raises(TypeError, match="seat must be an int"):
            raw.observe(seat, out)
    with pytest.raises(ValueError, match=r"agent must be one of \['"):
        cb.observe("nobody")
    want = rf"Battle\.observe: out must be a C-contiguous float32 array of shape \({size},\)"
    for bad in (np.zeros(size, dtype=np.float64), np.zeros(size - 1, dtype=np.float32),
                np.zeros((1, size), dtype=np.float32), np.zeros(2 * size, np.float32)[::2],
                [0.0] * size, None):
        with pytest.raises(ValueError, match=want):
            raw.observe(0, bad)
    frozen = np.zeros(size, dtype=np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        raw.observe(0, frozen)
    assert (out == 7.0).all()  # refused calls wrote nothing
    state_want = rf"Battle\.state: out must be a C-contiguous float32 array of shape " \
                 rf"\({cb.state_size},\)"
    for bad in (np.zeros(cb.state_size, dtype=np.float16), np.zeros(size, dtype=np.float32)):
        with pytest.raises(ValueError, match=state_want):
            raw.state(bad)
    with pytest.raises(ValueError, match=rf"k must be an int in \[0, {raw.num_slots - 1}\]"):
        raw.slot(0, raw.num_slots)
    raw.observe(0, out)  # a good call fills the caller's buffer in place
    assert np.array_equal(out, cb.observe(0)) and not (out == 7.0).any()
    # ... and writes exactly its entries: canaries on both sides of a view stay untouched
    for size_, call in ((size, lambda v: raw.observe(n - 1, v)),
                        (cb.state_size, lambda v: raw.state(v))):
        big = np.full(size_ + 16, 7.0, dtype=np.float32)
        call(big[8:-8])
        assert (big[:8] == 7.0).all() and (big[-8:] == 7.0).all()
