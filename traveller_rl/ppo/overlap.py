"""``traveller train ppo --overlap``: battles and inference at once. The rows are split in two
halves that take turns: while the compiled core steps one half in a background thread (it
releases the interpreter while it plays), the main thread runs the policy on the other half.

**Rows.** Each training group (``rows.Group``) keeps its rows, ``start:stop``, but its vector
is a ``HalvedVector``: two vectors, the group's first ``ceil(rows / 2)`` rows (half 0) and the
rest (half 1; none for a group of one row). Half 0 is made with the group's own vector seed,
so its rows play the very battles the same rows play without ``--overlap`` (battle ``e`` of row
``r`` is seeded ``rules.rng.battle_seed(vector seed, r, e)``); half 1 is a vector of its own,
seeded ``derive_seed(group seed, HALF_SEED)``, so its battles are others. ``HalvedBatch`` is
``rows.RowBatch`` stepping one half at a time into the same arrays.

**The turns** (``Pipeline.rollout``): choose half 0's actions; step half 0 in the background
while choosing half 1's; wait for half 0 and take in its results; step half 1 while choosing
half 0's; and so on, ``--num-steps`` steps of each half per rollout; the last step is waited
for before the update. Each half is stepped exactly as often as without ``--overlap``, and
every draw (the sampler, the pool's) happens on the main thread in a fixed order: a run is
reproducible for a seed, whatever the timing. The learner sees each rollout's decisions in
another order (half by half), and different battles in half 1, so a run differs from the same
flags without ``--overlap``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from traveller_rl.ppo.args import Args
from traveller_rl.ppo.rows import Group, RowBatch, make_vector

__all__ = ["HALF_SEED", "HalvedBatch", "HalvedVector", "Pipeline", "check_halves",
           "halved_vector"]

#: ``derive_seed(group seed, HALF_SEED)`` seeds each group's second half.
HALF_SEED = 7


class HalvedVector:
    """One training group's rows as two ``traveller_env.vector`` vectors (``parts``: its first
    rows, then the rest; one vector for a group of one row). It has the vectors' shared
    attributes (scenario, seats, sides, labels, sizes, opponents), ``num_envs`` and
    ``battles_skipped`` over both, and ``snapshot``/``restore`` of both; ``HalvedBatch`` steps
    the parts."""

    #: The attributes every part has alike, read from the first (those it has).
    SHARED = ("scenario", "scenarios", "scenario_set", "layout", "possible_agents",
              "num_agents", "sides", "agent_sides", "observation_labels", "obs_dim",
              "absolute_action_labels", "action_labels", "n_actions", "relative_actions",
              "learners", "opponents", "backend", "seed")

    def __init__(self, parts: list[Any]) -> None:
        if not 1 <= len(parts) <= 2:
            raise ValueError(f"a HalvedVector has one or two parts, got {len(parts)}")
        self.parts = list(parts)
        for name in self.SHARED:
            if hasattr(parts[0], name):
                setattr(self, name, getattr(parts[0], name))
        self.num_envs = sum(p.num_envs for p in parts)

    @property
    def battles_skipped(self) -> int:
        """Battles that ended before any learner seat decided, in both parts."""
        return sum(p.battles_skipped for p in self.parts)

    def snapshot(self) -> tuple[bytes, ...]:
        """Each part's ``VectorEnv.snapshot``."""
        return tuple(p.snapshot() for p in self.parts)

    def restore(self, data: Any) -> None:
        """Put ``snapshot()``'s parts back (``ValueError`` for a snapshot of another shape:
        a run without ``--overlap``)."""
        if not isinstance(data, tuple | list) or len(data) != len(self.parts):
            raise ValueError(f"vector snapshot: not one of {len(self.parts)} halves (a run "
                             "without --overlap?)")
        for part, snap in zip(self.parts, data, strict=True):
            part.restore(snap)

    def reset(self) -> None:
        """Not here: ``HalvedBatch`` resets and steps the parts."""
        raise TypeError("a HalvedVector is stepped half by half through HalvedBatch")

    step = reset


def halved_vector(args: Args, seed: int, num_envs: int, opponents: dict[str, str] | None,
                  flag: str, fallback: bool = False,
                  scenario: str | None = None) -> tuple[HalvedVector, str]:
    """``rows.make_vector``'s vector of ``num_envs`` rows as a ``HalvedVector``: the first
    ``ceil(num_envs / 2)`` rows seeded ``seed`` (the battles those rows play without
    ``--overlap``), the rest seeded ``derive_seed(seed, HALF_SEED)``."""
    from traveller_env.rules.rng import derive_seed

    first = (num_envs + 1) // 2
    made, backend = make_vector(args, seed, first, opponents, flag, fallback, scenario)
    parts = [made]
    if num_envs > first:
        parts.append(make_vector(args, derive_seed(seed, HALF_SEED), num_envs - first,
                                 opponents, flag, fallback, scenario)[0])
    return HalvedVector(parts), backend


def check_halves(groups: list[Group]) -> None:
    """``ValueError`` naming ``--overlap`` when the second half would have no row (every group
    has a single row)."""
    if all(len(g.venv.parts) < 2 for g in groups):
        raise ValueError(f"--overlap: every group has a single row ({len(groups)} groups "
                         f"of --num-envs {groups[-1].stop}), so the second half has none: "
                         "raise --num-envs")


class HalvedBatch(RowBatch):
    """``RowBatch`` over groups of ``HalvedVector``s, stepped one half at a time:
    ``rows[k]`` are the rows of half ``k`` (sorted), ``step_half(k, actions)`` steps them."""

    def __init__(self, groups: list[Group], learner_dim: int) -> None:
        super().__init__(groups, learner_dim)
        self.halves: list[list[tuple[Any, slice]]] = [[], []]
        for g in groups:
            if not isinstance(g.venv, HalvedVector):
                raise TypeError(f"group {g.label!r}: not a HalvedVector (build the groups "
                                "with --overlap)")
        check_halves(groups)
        for g in groups:
            start = g.start
            for k, part in enumerate(g.venv.parts):
                self.halves[k].append((part, slice(start, start + part.num_envs)))
                start += part.num_envs
        self.rows = [np.concatenate([np.arange(sl.start, sl.stop, dtype=np.int64)
                                     for _, sl in half] or [np.zeros(0, np.int64)])
                     for half in self.halves]

    def reset(self) -> None:
        """Reset both halves."""
        for half in self.halves:
            for part, sl in half:
                self.fill(sl, part.reset())

    def step(self, actions: np.ndarray) -> None:
        """Step both halves, one after the other (``actions``: one per row)."""
        for k in range(len(self.halves)):
            self.step_half(k, actions)

    def step_half(self, k: int, actions: np.ndarray) -> None:
        """Step half ``k``'s vectors with their rows' entries of ``actions`` (one per row of
        the batch); only those rows of the arrays change."""
        for part, sl in self.halves[k]:
            self.fill(sl, part.step(actions[sl]))


class Pipeline:
    """Rollouts of a ``HalvedBatch`` with one half's battles stepped in a background thread
    while the main thread chooses the other half's actions (see the module docstring). The
    thread persists (the core's per-thread caches stay warm); ``close`` ends it."""

    def __init__(self, batch: HalvedBatch) -> None:
        self.batch = batch
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="battles")

    def rollout(self, steps: int, decide: Callable[[np.ndarray], Any],
                absorb: Callable[[np.ndarray, Any], None], timers: Any) -> None:
        """``steps`` steps of each half. ``decide(rows)`` chooses the actions of ``rows``
        (returning an object whose ``actions`` holds one per row of the batch);
        ``absorb(rows, chosen)`` takes in their step's results once it is done. ``timers``:
        ``inference`` gains the time in ``decide``, ``env`` the time spent waiting for a
        half's battles (the part of the battles nothing overlapped)."""
        rows = self.batch.rows
        flight: tuple[int, Future, Any] | None = None
        for _ in range(steps):
            for k in range(2):
                t = time.perf_counter()
                chosen = decide(rows[k])
                t2 = time.perf_counter()
                timers.inference += t2 - t
                if flight is not None:
                    self._land(flight, absorb, timers)
                t3 = time.perf_counter()
                flight = (k, self._thread.submit(self.batch.step_half, k, chosen.actions),
                          chosen)
                timers.env += time.perf_counter() - t3
        if flight is not None:
            self._land(flight, absorb, timers)

    def _land(self, flight: tuple[int, Future, Any],
              absorb: Callable[[np.ndarray, Any], None], timers: Any) -> None:
        """Wait for the half in flight and take in its results."""
        k, future, chosen = flight
        t = time.perf_counter()
        future.result()  # re-raises the step's error (an illegal action, a core fault) here
        timers.env += time.perf_counter() - t
        absorb(self.batch.rows[k], chosen)

    def close(self) -> None:
        """End the background thread (after its step in flight, if any)."""
        self._thread.shutdown(wait=True)
