"""Differential play: one battle through the Python engine and the compiled core at once.

``play_both(scenario, seed)`` builds the Python battle with ``Dice(seed, generator="pcg")`` and
a ``CoreBattle`` with the same seed, then takes the same random legal actions in both (an attack,
when one is legal, with probability ``attack_rate``; in ``penalize`` scenarios an illegal
choice forfeited now and then). At every decision it requires identical new events (as dicts and
as JSON), decider and phase, dice generator state, action mask and, every ``reasons_every``
decisions, the refusal reasons of a sample of actions; at the end the same result and summary.
The first difference raises ``Divergence`` showing both sides. Used by
``tests/core/test_core_engine.py`` and ``tests/diff_backends.py``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..encoding import ActionCatalogue
from ..observations import ObservationBuilder
from ..rules.dice import Dice
from ..scenario import build_battle, load_scenario
from .engine import CoreBattle

__all__ = ["Divergence", "check_observations", "first_difference", "play_both",
           "take_same_random_action"]


class Divergence(AssertionError):
    """The engines disagree; the message shows the first difference."""


def first_difference(py_events: list[dict], core_events: list[dict]) -> str | None:
    """The first differing event of the two logs, both sides, or ``None``."""
    for i, (a, b) in enumerate(zip(py_events, core_events, strict=False)):
        if a != b or json.dumps(a) != json.dumps(b):
            return f"event {i} differs:\n  python: {json.dumps(a)}\n  core:   {json.dumps(b)}"
    if len(py_events) != len(core_events):
        i = min(len(py_events), len(core_events))
        extra = py_events[i:i + 1] or core_events[i:i + 1]
        side = "python" if len(py_events) > len(core_events) else "core"
        return f"event {i} only on the {side} side: {json.dumps(extra[0])}"
    return None


def _first_bit_difference(want: np.ndarray, got: np.ndarray) -> int | None:
    """Index of the first entry whose float32 bits differ (``-0.0`` and ``0.0`` differ too),
    or ``None``."""
    if want.shape != got.shape:
        return min(len(want), len(got))
    diff = np.flatnonzero(want.view(np.uint32) != got.view(np.uint32))
    return int(diff[0]) if len(diff) else None


def check_observations(builder: ObservationBuilder, py: Any, cb: CoreBattle,
                       where: str = "") -> None:
    """Require the core's observation vector of every agent (not only the deciding one) and
    its global state to equal the Python ``ObservationBuilder``'s bit for bit; raise
    ``Divergence`` naming the agent, the label of the first differing entry and both values.
    ``builder`` must have been built from the Python battle at its start."""
    for agent in cb.ids:
        want, got = builder.observe(py, agent), cb.observe(agent)
        j = _first_bit_difference(want, got)
        if j is not None:
            label = builder.labels[j] if j < len(builder.labels) else "(length)"
            raise Divergence(f"{where}observation of {agent} differs at [{j}] {label}: python "
                             f"{want[j] if j < len(want) else None!r}, core "
                             f"{got[j] if j < len(got) else None!r}")
    want, got = builder.state(py), cb.state()
    j = _first_bit_difference(want, got)
    if j is not None:
        label = builder.state_labels[j] if j < len(builder.state_labels) else "(length)"
        raise Divergence(f"{where}global state differs at [{j}] {label}: python "
                         f"{want[j] if j < len(want) else None!r}, core "
                         f"{got[j] if j < len(got) else None!r}")


def take_same_random_action(py: Any, cb: CoreBattle, cat: ActionCatalogue, mask: np.ndarray,
                            attacks: np.ndarray, rng: np.random.Generator, penalize: bool,
                            attack_rate: float, illegal_rate: float) -> None:
    """One random decision taken in both engines: in a ``penalize`` scenario an illegal action
    forfeited with probability ``illegal_rate`` (the Python engine's reason given to both);
    otherwise a legal attack with probability ``attack_rate`` when there is one, else any legal
    action. ``mask`` is the decider's (equal in both), ``attacks`` marks the attack actions."""
    illegal = np.flatnonzero(mask == 0)
    if penalize and len(illegal) and rng.random() < illegal_rate:
        i = int(rng.choice(illegal))
        reason = py.why_illegal(cat.actions[i])
        py.forfeit(cat.labels[i], reason)
        cb.forfeit(cat.labels[i], reason)
        return
    legal_attacks = np.flatnonzero(mask.astype(bool) & attacks)
    if len(legal_attacks) and rng.random() < attack_rate:
        i = int(rng.choice(legal_attacks))
    else:
        i = int(rng.choice(np.flatnonzero(mask)))
    py.apply(cat.actions[i])
    cb.step(i)


def play_both(scenario: Any, seed: int, attack_rate: float = 0.5, illegal_rate: float = 0.05,
              reasons_every: int = 3) -> int:
    """Play one battle through both engines; raise ``Divergence`` at the first difference.
    Returns the number of decisions."""
    sc = load_scenario(scenario)
    py = build_battle(sc, dice=Dice(seed, generator="pcg"))
    cb = CoreBattle(sc, seed)
    cat = ActionCatalogue(py)
    if cat.labels != cb.labels:
        raise Divergence(f"action catalogues differ:\n  python: {cat.labels}\n  core: {cb.labels}")
    penalize = sc.options.illegal_action == "penalize"
    attacks = np.array([lab.startswith("attack:") for lab in cat.labels])
    rng = np.random.default_rng(seed)
    steps = 0
    seen = 0
    while True:
        new_py, new_core = py.events[seen:], cb.events(seen)
        diff = first_difference(new_py, new_core)
        if diff is not None:
            raise Divergence(f"seed {seed}, decision {steps}: {diff}")
        seen = len(py.events)
        if py.done or cb.done:
            if not (py.done and cb.done and py.truncated == cb.truncated
                    and py.winner == cb.winner):
                raise Divergence(f"seed {seed}: end differs (python done={py.done} "
                                 f"winner={py.winner}, core done={cb.done} winner={cb.winner})")
            break
        if py.current_agent != cb.current_agent or py.phase != cb.phase:
            raise Divergence(f"seed {seed}, decision {steps}: decider python "
                             f"{py.current_agent}/{py.phase}, core {cb.current_agent}/{cb.phase}")
        if py.dice.getstate()[1] != cb.dice_state():
            raise Divergence(f"seed {seed}, decision {steps}: dice states differ")
        mask = cat.mask(py)
        core_mask = cb.mask()
        if not np.array_equal(mask, core_mask):
            wrong = [f"{cat.labels[i]} (python {mask[i]}, core {core_mask[i]})"
                     for i in np.flatnonzero(mask != core_mask)]
            raise Divergence(f"seed {seed}, decision {steps}: masks differ at {wrong}")
        if steps % reasons_every == 0:  # the refusal reasons, word for word
            for i in rng.choice(len(mask), size=min(8, len(mask)), replace=False):
                want, got = py.why_illegal(cat.actions[i]), cb.why_illegal(int(i))
                if want != got:
                    raise Divergence(f"seed {seed}, decision {steps}: why_illegal("
                                     f"{cat.labels[i]}) python {want!r}, core {got!r}")
        take_same_random_action(py, cb, cat, mask, attacks, rng, penalize, attack_rate,
                                illegal_rate)
        steps += 1
    dealt, taken, dropouts = cb.summary()
    s = py.summary
    if (dealt, taken, dropouts) != (s.damage_dealt, s.damage_taken, s.dropouts):
        raise Divergence(f"seed {seed}: summaries differ")
    return steps
