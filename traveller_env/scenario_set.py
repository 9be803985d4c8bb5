"""Scenario sets: the battles of a vector drawn from many scenarios under one layout.

``vector.make("gen:skirmish", layout="6v6", seeds=(0, 999))`` or ``vector.make(["squad",
"ambush"], layout="6v6")`` plays every battle on a scenario of a *set*: battle ``e`` of row
``r`` keeps its battle seed ``battle_seed(vector_seed, r, e)`` (as a fixed-scenario vector's)
and plays ``scenarios[scenario_index(battle_seed, len(scenarios))]``, so a run is reproducible
and a battle's seed names its scenario too. A generator distribution (``gen:<name>`` without a
seed) stands for its scenarios ``gen:<name>@lo`` ... ``gen:<name>@hi`` (both ends included;
the default ``TRAINING_SEEDS`` keeps clear of the seeds the benchmark holds out, 1000 and up).

Every scenario of a set must fit the layout (``traveller_env.layout``): the observation, the
mask and the actions are the layout's (slot-relative, the same labels for every scenario), and
the seats are the layout's *columns*: ``side * side_limit + k`` for the ``k``-th combatant of a
side (scenario order), named ``<side name>_<k>`` (so every scenario of a set must name its two
sides alike). ``ScenarioSet`` holds what both vector backends need: one AEC env per scenario
(its catalogue, layout builder and rewards), the slot-relative action table of each, and the
seat-to-column maps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .env import TravellerEnv
from .generate import GENERATED_PREFIX, parse_generated_name
from .layout import Layout
from .rules.rng import derive_seed

__all__ = ["MAX_SET_SIZE", "SCENARIO_STREAM", "TEST_SEEDS", "TRAINING_SEEDS", "VALIDATION_SEEDS",
           "ScenarioSet",
           "build_scenario_set", "is_set_source", "scenario_index", "set_sources"]

#: The sub-stream of a battle seed that picks its scenario (``scenario_index``).
SCENARIO_STREAM = 0x53434E
#: The generator seeds a distribution stands for by default: the benchmark holds 1000 and up
#: out of training (configs/benchmarks).
TRAINING_SEEDS = (0, 999)
#: The seeds a trainer's evaluation during training (and checkpoint selection) draws from:
#: clear of training's, of the benchmark's and of ``TEST_SEEDS``.
VALIDATION_SEEDS = (5000, 5999)
#: The seeds the published generalisation results are measured on: never trained on, never
#: used to select a checkpoint.
TEST_SEEDS = (10000, 19999)
#: The most scenarios one set may hold (each keeps its tables in memory, in both backends).
MAX_SET_SIZE = 100_000


def scenario_index(battle_seed: int, count: int) -> int:
    """The scenario (an index into a set of ``count``) that the battle seeded ``battle_seed``
    plays: ``derive_seed(battle_seed, SCENARIO_STREAM) % count`` (0 for a set of one)."""
    return 0 if count == 1 else derive_seed(battle_seed, SCENARIO_STREAM) % count


def is_set_source(scenario: Any) -> bool:
    """Whether ``scenario`` names a set: a list or tuple of scenarios, or a generator
    distribution without a seed (``gen:skirmish``)."""
    if isinstance(scenario, list | tuple):
        return True
    if isinstance(scenario, str) and scenario.startswith(GENERATED_PREFIX):
        return parse_generated_name(scenario)[1] is None
    return False


def set_sources(scenario: Any, seeds: Sequence[int] | None) -> list[Any]:
    """The scenarios of a set source (see ``is_set_source``); ``seeds`` = ``(lo, hi)``, both
    included, for a distribution (default ``TRAINING_SEEDS``)."""
    if isinstance(scenario, list | tuple):
        if seeds is not None:
            raise ValueError("seeds: only a generator distribution (gen:<name>) takes a seed "
                             "range; a list of scenarios is played as given")
        if not scenario:
            raise ValueError("scenario: an empty list of scenarios")
        if len(scenario) > MAX_SET_SIZE:
            raise ValueError(f"scenario: {len(scenario)} scenarios; a set holds at most "
                             f"{MAX_SET_SIZE}")
        return list(scenario)
    lo, hi = TRAINING_SEEDS if seeds is None else _seed_range(seeds)
    if hi - lo + 1 > MAX_SET_SIZE:
        raise ValueError(f"seeds: ({lo}, {hi}) is {hi - lo + 1} scenarios; a set holds at most "
                         f"{MAX_SET_SIZE}")
    return [f"{scenario}@{s}" for s in range(lo, hi + 1)]


def _seed_range(seeds: Any) -> tuple[int, int]:
    ok = (isinstance(seeds, list | tuple) and len(seeds) == 2
          and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
          and seeds[0] <= seeds[1])
    if not ok:
        raise ValueError(f"seeds must be (lo, hi), ints with 0 <= lo <= hi (both included), "
                         f"got {seeds!r}")
    return int(seeds[0]), int(seeds[1])


@dataclass
class ScenarioSet:
    """What both vector backends need to play a set (see the module docstring)."""

    layout: Layout
    #: One AEC env per scenario (built with the layout and the views: the catalogue, the
    #: layout's builder, the parsed scenario and its rewards).
    envs: list[TravellerEnv]
    #: ``tables[k][seat, j]``: the absolute index of layout action ``j`` for that seat of
    #: scenario ``k`` (its catalogue's size where the scenario has no such action).
    tables: list[np.ndarray]
    #: ``columns[k][seat]``: the layout column of each seat of scenario ``k``.
    columns: list[list[int]]
    side_names: list[str]
    #: The columns' names, ``<side>_<k>``.
    agents: list[str]
    action_labels: list[str]
    observation_labels: list[str]

    def __len__(self) -> int:
        return len(self.envs)


def build_scenario_set(sources: Sequence[Any], layout: Layout,
                       options: Mapping[str, Any]) -> ScenarioSet:
    """The ``ScenarioSet`` of ``sources`` under ``layout``, each scenario parsed with the
    environment ``options`` (as ``raw_env``'s). ``LayoutError`` names a scenario that does not
    fit; ``ValueError`` one whose side names differ from the first's. Sets of names are built
    once per process (the last few are kept: nothing in a set changes once built)."""
    try:
        key = (tuple(sources), layout, tuple(sorted(options.items())))
        hash(key)
    except TypeError:  # dicts or Scenario objects: built afresh
        return _build(sources, layout, options)
    found = _CACHE.get(key)
    if found is None:
        found = _build(sources, layout, options)
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = found
    return found


_CACHE: dict[tuple, ScenarioSet] = {}
_CACHE_SIZE = 4


def _build(sources: Sequence[Any], layout: Layout, options: Mapping[str, Any]) -> ScenarioSet:
    envs: list[TravellerEnv] = []
    tables: list[np.ndarray] = []
    columns: list[list[int]] = []
    labels = layout.action_labels()
    side_names: list[str] | None = None
    for source in sources:
        env = TravellerEnv(source, layout=layout, **options)
        names = [s.name for s in env.scenario.sides]
        if side_names is None:
            side_names = names
        elif names != side_names:
            raise ValueError(f"scenario {env.scenario.name!r}: sides {names}, but the set's "
                             f"first scenario names them {side_names}: every scenario of a set "
                             "must name its two sides alike (they name the seats)")
        rel = env.relative_actions
        n_abs = env.catalogue.n
        table = np.full((len(env.possible_agents), len(labels)), n_abs, dtype=np.int64)
        for s, agent in enumerate(env.possible_agents):
            table[s] = np.minimum(rel._perm[agent], n_abs)
        rank = [0, 0]
        cols = []
        for agent in env.possible_agents:
            side = env.side_of(agent)
            cols.append(side * layout.side_limit + rank[side])
            rank[side] += 1
        envs.append(env)
        tables.append(table)
        columns.append(cols)
    assert side_names is not None
    agents = [f"{side}_{k}" for side in side_names for k in range(layout.side_limit)]
    return ScenarioSet(layout=layout, envs=envs, tables=tables, columns=columns,
                       side_names=side_names, agents=agents, action_labels=labels,
                       observation_labels=envs[0].observation_labels)

