"""One battle played with uniformly random legal actions (``traveller simulate``): the
playing loop and the one-line result."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .rules.battle import Battle

__all__ = ["play_random", "result_line"]


def play_random(battle: Battle, rng: random.Random,
                on_turn_end: Callable[[Battle, list[dict[str, Any]]], None] | None = None,
                ) -> int:
    """Play ``battle`` to its end, each decision a uniformly random legal action drawn with
    ``rng`` (separate from the battle's dice). After every action that ends a turn (or the
    battle), ``on_turn_end(battle, attacks)`` is called with that turn's attack events, each
    copied with ``actor_pos`` and ``target_pos`` (the squares at the time of the attack).
    Returns the number of actions taken."""
    steps = 0
    attacks: list[dict[str, Any]] = []
    while not battle.done:
        before = len(battle.events)
        battle.apply(rng.choice(battle.legal_actions()))
        steps += 1
        new = battle.events[before:]
        for e in new:
            if e.get("type") == "attack":
                a, t = battle.by_id[e["actor"]], battle.by_id[e["target"]]
                attacks.append({**e, "actor_pos": list(a.pos), "target_pos": list(t.pos)})
        if any(e.get("type") in ("end_turn", "end") for e in new):
            if on_turn_end is not None:
                on_turn_end(battle, attacks)
            attacks = []
    return steps


def result_line(battle: Battle) -> str:
    """``Winner: blue after 7 rounds.``, ``Draw: ...`` or ``Truncated: ...`` for a finished
    battle (``In progress: ...`` otherwise)."""
    rounds = f"{battle.round} round" + ("" if battle.round == 1 else "s")
    if not battle.done:
        return f"In progress: round {battle.round}."
    if battle.winner is not None:
        return f"Winner: {battle.winner} after {rounds}."
    if battle.truncated:
        return f"Truncated: no winner after {rounds} (max_rounds reached)."
    return f"Draw: no one left able to fight after {rounds}."
