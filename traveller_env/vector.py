"""Batched environments: ``N`` battles stepped per call, for trainers (``traveller_env.vector``).

::

    from traveller_env import vector

    venv = vector.make("squad", num_envs=64, seed=0, backend="python",
                       opponents={"red": "rush"})
    obs, mask, info = venv.reset()
    while training:
        actions = policy(obs, mask)                       # int [N], indices into action_labels
        obs, mask, rewards, terminated, truncated, info = venv.step(actions)

**The contract** (the same for every backend):

- ``reset(seed=None) -> (obs, mask, info)``; ``step(actions) -> (obs, mask, rewards,
  terminated, truncated, info)``.
- ``obs``: float32 ``[N, obs_dim]``, the observation of the seat that decides next in each
  battle: the same vector ``TravellerEnv.observe(agent)["observation"]`` gives for it.
- ``mask``: bool ``[N, n_actions]``, that seat's legal actions (the AEC env's mask).
- ``actions``: integer ``[N]``, indices into ``action_labels`` (the AEC env's labels, or the
  slot-relative ones with ``relative_actions=True``), one per row: every row always has a
  seat deciding.
- ``rewards``: float32 ``[N, num_agents]`` (columns in ``possible_agents`` order): what each
  seat gained during this step, including seats that did not act (opponents, teammates) and
  the seat(s) knocked out by it. Summed over the steps of a battle they equal what the AEC
  env gives each agent over that battle (a seat knocked out receives, as in the AEC env, the
  rewards of the step that knocks it out and nothing after). Rewards that arrive in a new
  battle before its first learner decision (opponents acting first) are returned with the
  first step of that battle, so each step's rewards belong to one battle.
- ``terminated`` / ``truncated``: bool ``[N]``: the battle of that row ended in this step (won
  or wiped out / ``max_rounds`` reached).
- ``info``: ``{"agent": int64 [N]`` (the deciding seat, an index into ``possible_agents``),
  ``"episode": int64 [N]`` (the battle counter of the row, see below), ``"battle_seed": uint64
  [N]`` (the seed of the battle now running: ``raw_env(scenario).reset(seed=...)`` replays it),
  ``"winner": int8 [N]`` (in rows whose battle ended in this step, the winning side's index,
  -1 for a draw; -1 in the other rows)``}``.
- **Automatic reset.** The step that ends a battle returns its final rewards and its
  terminated/truncated flag, with the observation, mask and seat of the first decision of the
  row's next battle. Battle ``e`` (0, 1, ...) of row ``r`` is seeded
  ``rules.rng.battle_seed(seed, r, e)``, so a run is reproducible, rows differ, and a row does
  not depend on how many rows there are. ``reset()`` starts every row's next battle;
  ``reset(seed=s)`` re-seeds the vector and starts again at battle 0.
- **Opponents.** ``opponents={"red": "rush"}`` maps a side name or an agent id to a policy name
  (``traveller_env.policy.make_policy``; an agent id wins over its side). Those seats are
  played inside ``step`` (each row has its own policy instances, reseeded at each battle from
  the battle seed), as are the dead steps of the AEC API, so ``step`` returns only the other
  (learner) seats' decisions. A battle that ends before any learner seat decides (possible
  only with opponents) is skipped: its rewards are dropped, the row moves on to its next
  battle seed, and ``battles_skipped`` counts it.
- **Illegal actions.** An illegal action in any row raises ``ValueError`` naming the row, the
  seat, the label and the engine's reason, and nothing changes in any row (every row is
  checked before any is applied). With the scenario option ``illegal_action: penalize`` the
  rows are instead handled as the AEC env does (the seat forfeits its decision and gets -1).
  Actions of the wrong dtype, shape or range raise ``ValueError`` naming the expected shape
  and range.
- **Buffers.** ``reset`` and ``step`` write into arrays allocated once by the vector and
  return *the same arrays* (and the same ``info`` dict) every call: copy what you keep past
  the next call. Writing into them changes nothing inside the vector (legality is checked
  against a private copy of the mask).

**Backends.** ``backend="python"`` drives the Python engine (``Battle``, ``ActionCatalogue``,
``ObservationBuilder``) directly, one row after another
(``traveller_env.vector_python.PythonBackend``). ``backend="core"`` runs the rows in the
compiled core (``traveller_env.core.vector.CoreBackend`` over ``_core.VecBattles``: the same
battles, observations, masks and rewards, 50-200x faster; opponents must be policies that run
inside the core (``core.vector.CORE_POLICIES``: ``random``, ``passive``, ``rush``,
``marksman``, ``leader``, ``tactician``, ``cover``); ``threads=k`` steps rows in ``k``
threads). A backend implements ``VectorBackend`` (below); ``VectorEnv`` checks the
arguments, owns the buffers, checks legality and translates relative actions, so a backend only
plays battles. A core that is not built raises ``CoreUnavailableError`` saying how to build it;
there is never a silent fallback.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from . import vector_snapshot
from .core import available as core_available
from .encoding import RelativeActions
from .env import DEFAULT_BACKEND, ScenarioSource, TravellerEnv
from .layout import LAYOUTS, Layout, resolve_layout
from .policy import make_policy
from .rules.rng import check_u64
from .scenario import Scenario
from .scenario_set import (
    ScenarioSet,
    build_scenario_set,
    is_set_source,
    set_sources,
)
from .vector_buffers import VectorBuffers

__all__ = ["BACKENDS", "DEFAULT_SET_LAYOUT", "MAX_SKIPPED", "VectorBackend", "VectorEnv", "make",
           "random_legal_actions"]

#: Every backend name, and whether it can run here ("core" needs the compiled core built:
#: ``traveller_env.core.status()`` says why it is not).
BACKENDS = {"python": "available", "core": "available" if core_available() else "not built"}
#: The buffers a vector snapshot keeps (``vector_buffers.VectorBuffers``' fields).
VECTOR_BUFFERS = ("obs", "mask", "rewards", "terminated", "truncated", "agent", "episode",
                  "battle_seed", "winner")
#: How many consecutive battles of one row may end before any learner seat decides.
MAX_SKIPPED = 1000
#: The layout of a scenario set made without one (``traveller_env.layout.LAYOUTS``).
DEFAULT_SET_LAYOUT = "6v6"


def make(scenario: ScenarioSource | list, num_envs: int = 1, seed: int = 0,
         backend: str = DEFAULT_BACKEND, opponents: Mapping[str, str] | None = None, *,
         relative_actions: bool | None = None, threads: int = 1,
         layout: str | Mapping | Layout | None = None, seeds: tuple[int, int] | None = None,
         **options: Any) -> VectorEnv:
    """``num_envs`` battles of ``scenario`` stepped together (see the module docstring).

    Args:
        scenario: built-in name, path, dict or ``Scenario`` (as for ``raw_env``); or a
            *scenario set*: a generator distribution without a seed (``"gen:skirmish"``) or a
            list of scenarios, each battle drawn from it by its battle seed
            (``traveller_env.scenario_set``).
        num_envs: the number of battles (rows), an int >= 1.
        seed: the vector's seed, an int in ``[0, 2**64 - 1]``.
        backend: ``"python"`` (the Python engine) or ``"core"`` (the compiled core).
        opponents: side name or agent id -> policy name; those seats are played inside
            ``step``.
        relative_actions: name targets by observation slot (``attack:enemy0``) instead of by
            agent id, so that one policy can play every seat (``TravellerEnv.relative_actions``;
            ``action_labels`` are then the relative labels).
        threads: ``backend="core"`` only: step the rows in this many threads (contiguous
            chunks of rows; the results are identical to one thread's).
        layout: a fixed observation and action layout (``traveller_env.layout``: a name such
            as ``"6v6"``, a dict or a ``Layout``); a scenario set needs one (default
            ``DEFAULT_SET_LAYOUT``) and always plays its slot-relative actions.
        seeds: ``(lo, hi)``, both included: the generator seeds a distribution stands for
            (default ``scenario_set.TRAINING_SEEDS``, clear of the benchmark's held-out ones).
        **options: environment options, as for ``raw_env`` (``hastening``, ``reactions``,
            ``comms_range_m``, ``illegal_action``, ``max_rounds``, the views).
    """
    return VectorEnv(scenario, num_envs=num_envs, seed=seed, backend=backend,
                     opponents=opponents, relative_actions=relative_actions, threads=threads,
                     layout=layout, seeds=seeds, **options)


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a bool ``mask`` ``[N, n]``, vectorised
    (the same sampler for every row): int64 ``[N]``. ``ValueError`` if a row allows nothing."""
    counts = mask.sum(axis=1)
    if not counts.all():
        raise ValueError(f"row {int(np.flatnonzero(counts == 0)[0])} of the mask allows no "
                         "action")
    k = np.minimum((rng.random(len(counts)) * counts).astype(np.int64), counts - 1)
    return np.argmax(mask.cumsum(axis=1) > k[:, None], axis=1)


def _absolute_table(rel: RelativeActions, agents: list[str], n_abs: int) -> np.ndarray:
    """``table[seat, relative index]``: the absolute index (``n_abs`` for an empty slot)."""
    table = np.full((len(agents), rel.n), n_abs, dtype=np.int64)
    for s, agent in enumerate(agents):
        for j in range(rel.n):
            with contextlib.suppress(ValueError):  # names an empty slot
                table[s, j] = rel.to_absolute(agent, j)
    return table


class VectorBackend(Protocol):
    """What a backend implements. ``VectorEnv`` has already checked everything it passes.

    A backend plays battles of one scenario in ``num_envs`` rows and writes, for every row, the
    deciding learner seat's observation and (absolute, int8) mask, the seat index, the episode
    counter and battle seed, and on ``step`` the rewards, end flags and winner (see
    ``VectorBuffers``). A backend with ``publishes_relative`` also writes ``relative_mask`` (when
    the vector allocated it); the others leave it to ``VectorEnv``.
    """

    name: str
    battles_skipped: int
    publishes_relative: bool

    def reset(self, seed: int, restart: bool, out: VectorBuffers) -> None:
        """Start every row's next battle (battle 0 again when ``restart``), play opponent
        seats up to the first learner decision, fill ``out``."""

    def step(self, actions: np.ndarray, forfeits: Mapping[int, tuple[str, str]],
             out: VectorBuffers) -> None:
        """Apply each row's (legal, absolute: int64 ``[N]``) action, or forfeit the rows in
        ``forfeits`` (row -> (label, reason); ``illegal_action: penalize`` only); play
        opponents and dead
        steps up to each row's next learner decision, auto-resetting ended battles."""

    def why_illegal(self, row: int, action: int) -> str | None:
        """The engine's reason why absolute ``action`` is illegal in ``row`` (or ``None``)."""


class VectorEnv:
    """``num_envs`` battles of one scenario behind one batched API; build it with
    :func:`make` (the module docstring is the contract).

    Attributes: ``num_envs``, ``num_agents``, ``possible_agents``, ``sides`` (side names),
    ``agent_sides`` (int64 ``[num_agents]``: each seat's side index), ``learners`` (with
    ``learner_columns``, their indices in ``possible_agents``) and
    ``opponents`` (agent id -> policy name), ``action_labels``, ``n_actions``,
    ``observation_labels``, ``obs_dim``, ``relative_actions`` (the ``RelativeActions``
    translation, or ``None``), ``scenario``, ``seed``, ``backend``, ``battles_skipped``.
    """

    def __init__(self, scenario: ScenarioSource | list, num_envs: int = 1, seed: int = 0,
                 backend: str = DEFAULT_BACKEND, opponents: Mapping[str, str] | None = None,
                 relative_actions: bool | None = None, threads: int = 1,
                 layout: str | Mapping | Layout | None = None,
                 seeds: tuple[int, int] | None = None, **options: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) \
                or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        self.seed = check_u64(seed, "seed")
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got "
                             f"{backend!r}")
        if isinstance(threads, bool) or not isinstance(threads, int | np.integer) \
                or not 1 <= threads <= 256:
            raise ValueError(f"threads must be an int in [1, 256], got {threads!r}")
        if threads > 1 and backend != "core":
            raise ValueError(f"threads={threads}: only backend='core' steps rows in several "
                             "threads; the Python backend runs in one")
        if relative_actions is not None and not isinstance(relative_actions, bool):
            raise TypeError(f"relative_actions must be True or False, got {relative_actions!r}")
        if "check_invariants" in options:
            raise ValueError("check_invariants is an option of the AEC env (raw_env), not of "
                             "the vector API: run the AEC env to check invariants")
        if "render_mode" in options:
            raise ValueError("render_mode: the vector API does not render; use the AEC env")
        #: The fixed layout (``traveller_env.layout``), or ``None``: the scenario's own.
        self.layout: Layout | None = resolve_layout(layout)
        self.num_envs = int(num_envs)
        #: The scenario set (``traveller_env.scenario_set``), or ``None``: one scenario.
        self.scenario_set: ScenarioSet | None = None
        if is_set_source(scenario):
            if relative_actions is False:
                raise ValueError("relative_actions=False: a scenario set always plays its "
                                 "layout's slot-relative actions (leave it out)")
            if self.layout is None:
                self.layout = LAYOUTS[DEFAULT_SET_LAYOUT]
            self.scenario_set = build_scenario_set(set_sources(scenario, seeds), self.layout,
                                                   options)
            template = self.scenario_set.envs[0]
        else:
            if seeds is not None:
                raise ValueError("seeds: only a generator distribution without a seed "
                                 "(gen:<name>) takes a seed range")
            # The AEC env parses the scenario and the options, so both APIs share them exactly.
            template = TravellerEnv(scenario, layout=self.layout, **options)
        sset = self.scenario_set
        self.scenario: Scenario = template.scenario
        #: Every scenario the vector plays (one, or the set's).
        self.scenarios: list[Scenario] = ([template.scenario] if sset is None
                                          else [e.scenario for e in sset.envs])
        if sset is None:
            self.possible_agents: list[str] = list(template.possible_agents)
            self.sides: list[str] = [s.name for s in self.scenario.sides]
            self.agent_sides = np.array([template.side_of(a) for a in self.possible_agents],
                                        dtype=np.int64)
            self.absolute_action_labels: list[str] = template.action_labels
            self._slots = {a: template.observation_slots(a) for a in self.possible_agents}
        else:
            limit = self.layout.side_limit
            self.possible_agents = list(sset.agents)
            self.sides = list(sset.side_names)
            self.agent_sides = np.arange(2 * limit, dtype=np.int64) // limit
            # The backends translate each row's layout action with its scenario's table.
            self.absolute_action_labels = list(sset.action_labels)
            self._slots = {}
        self.num_agents = len(self.possible_agents)
        self.observation_labels: list[str] = template.observation_labels
        self.obs_dim = len(self.observation_labels)
        self.opponents: dict[str, str] = self._resolve_opponents(opponents)
        self.learners = [a for a in self.possible_agents if a not in self.opponents]
        self.learner_columns = np.array(
            [self.possible_agents.index(a) for a in self.learners], dtype=np.int64)
        self.relative_actions: RelativeActions | None = None
        n_abs = len(self.absolute_action_labels)
        if relative_actions and sset is None:
            self.relative_actions = template.relative_actions
            self.action_labels: list[str] = list(self.relative_actions.labels)
            self._perm = _absolute_table(self.relative_actions, self.possible_agents, n_abs)
        else:
            self.action_labels = list(self.absolute_action_labels)
            self._perm = None
        self.n_actions = len(self.action_labels)
        self._penalize = self.scenario.options.illegal_action == "penalize"
        self._buf = VectorBuffers(self.num_envs, self.obs_dim, n_abs, self.num_agents)
        self._mask_out = np.zeros((self.num_envs, self.n_actions), dtype=bool)
        if self._perm is not None:
            self._mask_pad = np.zeros((self.num_envs, n_abs + 1), dtype=np.int8)
            self._buf.relative_mask = np.zeros((self.num_envs, self.n_actions), dtype=np.int8)
        self.info: dict[str, np.ndarray] = {
            "agent": self._buf.agent, "episode": self._buf.episode,
            "battle_seed": self._buf.battle_seed, "winner": self._buf.winner}
        self._rows = np.arange(self.num_envs)
        self.backend = backend
        seat_policies = [self.opponents.get(a) for a in self.possible_agents]
        if backend == "core":
            from .core.vector import CoreBackend

            extra = {} if sset is None else {"scenario_set": sset}
            self._backend: VectorBackend = CoreBackend(template, self.num_envs, seat_policies,
                                                       self._buf, threads=int(threads),
                                                       relative_table=self._perm, **extra)
        else:
            from .vector_python import PythonBackend

            self._backend = PythonBackend(template, self.num_envs, seat_policies,
                                          scenario_set=sset, max_skipped=MAX_SKIPPED)
        self._ready = False
        self._broken: str | None = None
        self._template = template
        self._seat_policies = seat_policies
        self._replayer: Any = self._backend if backend == "python" else None

    # ------------------------------------------------------------------ public helpers
    def learner_side_rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Each row's reward for the learners' side, float32 ``[N]``, from ``step``'s per-seat
        ``rewards`` ``[N, num_agents]``: one learner seat's own; several, their sum, or with
        the scenario's ``shared`` rewards the side's reward (every learner seat still in play
        holds it, knocked-out seats 0)."""
        cols = rewards[:, self.learner_columns]
        if cols.shape[1] == 1:
            return cols[:, 0].astype(np.float32)
        if not self.scenario.rewards.shared:
            return cols.sum(axis=1, dtype=np.float32)
        nonzero = np.count_nonzero(cols, axis=1)
        return (cols.sum(axis=1) / np.maximum(nonzero, 1)).astype(np.float32)

    @property
    def battles_skipped(self) -> int:
        """Battles that ended before any learner seat decided (skipped; see ``opponents``)."""
        return self._backend.battles_skipped

    def observation_slots(self, agent: str) -> list[str | None]:
        """Which combatant sits in each slot of ``agent``'s observation (a scenario set:
        ``ValueError``, as it depends on each battle's scenario)."""
        if self.scenario_set is not None:
            raise ValueError("observation_slots: in a scenario set the slots depend on each "
                             "battle's scenario; ask raw_env(scenario, layout=...) for one")
        if agent not in self._slots:
            raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        return list(self._slots[agent])

    def final_observation(self, battle_seed: int, actions: Sequence[int],
                          agents: Sequence[int]) -> np.ndarray:
        """The observation, in its final state, of the learner seat that decided last in a
        battle this vector played (the vector has moved on to the row's next battle by then):
        the battle is played again on the Python engine (the reference the core mirrors) from
        its ``battle_seed`` (``info["battle_seed"]`` while it ran) with the ``actions`` passed
        to ``step`` for that row during it and the deciding seats (``info["agent"]`` before each
        of them). Costs one Python battle; ``RuntimeError`` if the actions do not end that
        battle. Returns a new float32 array ``[obs_dim]``."""
        if len(actions) != len(agents):
            raise ValueError(f"final_observation: {len(actions)} actions but {len(agents)} "
                             "deciding seats")
        if self._replayer is None:
            from .vector_python import PythonBackend

            self._replayer = PythonBackend(self._template, 1, self._seat_policies,
                                           scenario_set=self.scenario_set,
                                           max_skipped=MAX_SKIPPED)
        played = [int(a) for a in actions]
        if self._perm is not None:
            played = [int(self._perm[int(s), a]) for a, s in zip(played, agents, strict=True)]
        obs, _ = self._replayer.replay(check_u64(battle_seed, "battle_seed"), played)
        return obs

    def __repr__(self) -> str:
        opp = f", opponents={self.opponents}" if self.opponents else ""
        return (f"VectorEnv({self.scenario.name!r}, num_envs={self.num_envs}, seed={self.seed}, "
                f"backend={self.backend!r}{opp})")

    def close(self) -> None:
        """Nothing to release (the Python backend holds only Python objects)."""

    def _resolve_opponents(self, opponents: Mapping[str, str] | None) -> dict[str, str]:
        if opponents is None:
            return {}
        if not isinstance(opponents, Mapping):
            raise TypeError("opponents must be a mapping of side names or agent ids to policy "
                            f"names, got {type(opponents).__name__}")
        by_side: dict[str, str] = {}
        by_agent: dict[str, str] = {}
        for key, name in opponents.items():
            if key in self.sides:
                by_side[key] = name
            elif key in self.possible_agents:
                by_agent[key] = name
            else:
                raise ValueError(f"opponents: {key!r} is neither a side ({', '.join(self.sides)}) "
                                 f"nor an agent ({', '.join(self.possible_agents)})")
        resolved = {}
        for a, side in zip(self.possible_agents, self.agent_sides, strict=True):
            name = by_agent.get(a, by_side.get(self.sides[side]))
            if name is not None:
                resolved[a] = name
        for key, name in opponents.items():
            try:
                make_policy(name)  # checks the name (and that its factory works) now
            except ValueError as exc:
                raise ValueError(f"opponents[{key!r}]: {exc}") from None
            except TypeError as exc:
                raise TypeError(f"opponents[{key!r}]: {exc}") from None
        if len(resolved) == self.num_agents:
            raise ValueError("opponents cover every seat, so no learner would ever decide: "
                             "leave at least one seat out of opponents")
        return resolved

    # ------------------------------------------------------------------ the batched API
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
        """Start every row's next battle (``seed``: re-seed the vector and start again at
        battle 0); returns ``(obs, mask, info)`` at each row's first learner decision."""
        restart = seed is not None
        if restart:
            self.seed = check_u64(seed, "seed")
        self._broken = None
        self._ready = False
        buf = self._buf
        buf.rewards.fill(0.0)
        buf.terminated.fill(False)
        buf.truncated.fill(False)
        buf.winner.fill(-1)
        self._backend.reset(self.seed, restart, buf)
        self._publish_mask()
        self._ready = True
        return buf.obs, self._mask_out, self.info

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                           np.ndarray, dict]:
        """Apply one action per row; returns ``(obs, mask, rewards, terminated, truncated,
        info)`` (see the module docstring)."""
        if not self._ready:
            if self._broken is not None:
                raise RuntimeError(f"a previous step failed part-way ({self._broken}); the "
                                   "battles are in an unknown state: call reset()")
            raise RuntimeError("step() called before reset(): call reset() first")
        absolute, forfeits = self._check_actions(actions)
        buf = self._buf
        buf.rewards.fill(0.0)
        buf.terminated.fill(False)
        buf.truncated.fill(False)
        buf.winner.fill(-1)
        try:
            self._backend.step(absolute, forfeits, buf)
        except BaseException as exc:
            self._ready = False
            self._broken = f"{type(exc).__name__}: {exc}"
            raise
        self._publish_mask()
        return (buf.obs, self._mask_out, buf.rewards, buf.terminated, buf.truncated,
                self.info)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> bytes:
        """Every row's battle and bookkeeping, the opponents' state, the counters and the
        buffers as bytes (``vector_snapshot``'s format): ``restore`` on a vector made with the
        same arguments continues exactly as this one would (either backend: a snapshot restores
        on a vector of its own backend; over a scenario set, each row's scenario too)."""
        if not self._ready:
            raise RuntimeError("snapshot() needs a vector that has been reset() and is not "
                               "broken by a failed step")
        snap = getattr(self._backend, "snapshot", None)
        if snap is None:
            raise NotImplementedError(
                f"snapshot() is not available on backend={self.backend!r}; use "
                "backend='python' or 'core'")
        buf = self._buf
        state = {"backend": self.backend, "num_envs": self.num_envs, "seed": self.seed,
                 "action_labels": list(self.action_labels), "set": self._set_record(),
                 "buffers": {name: getattr(buf, name).copy() for name in VECTOR_BUFFERS},
                 "rows": snap()}
        return vector_snapshot.encode(state)

    def restore(self, data: bytes) -> None:
        """Put a ``snapshot()`` back: this vector must have been made with the same scenario
        (or scenario set), ``num_envs``, backend and actions (``ValueError`` naming the
        difference; nothing changes then)."""
        state = vector_snapshot.decode(data)
        for key, mine in (("backend", self.backend), ("num_envs", self.num_envs),
                          ("action_labels", list(self.action_labels))):
            if state[key] != mine:
                raise ValueError(f"vector snapshot: taken with another {key} "
                                 f"({state[key]!r}; this vector: {mine!r})")
        self._check_set(state.get("set"))  # absent: a snapshot from before sets, one scenario
        restore = getattr(self._backend, "restore", None)
        if restore is None:
            raise NotImplementedError(f"restore() is not available on backend={self.backend!r}")
        restore(state["rows"])
        self.seed = state["seed"]
        for name in VECTOR_BUFFERS:
            getattr(self._buf, name)[...] = state["buffers"][name]
        self._broken = None
        self._publish_mask(recompute=True)  # the relative mask too, whichever backend wrote it
        self._ready = True

    def _set_record(self) -> dict[str, Any] | None:
        """What a snapshot records of the scenario set (``None``: one scenario): its size, its
        layout's name and a hash of its scenarios' names, in order."""
        if self.scenario_set is None:
            return None
        names = "\n".join(s.name for s in self.scenarios)
        return {"size": len(self.scenarios), "layout": self.layout.name,
                "names_sha256": hashlib.sha256(names.encode()).hexdigest()}

    def _check_set(self, saved: dict[str, Any] | None) -> None:
        """``ValueError`` when a snapshot's scenario set (``_set_record``) is not this
        vector's: one scenario against a set, or another set."""
        mine = self._set_record()

        def what(record: dict[str, Any] | None) -> str:
            return ("one scenario" if record is None else
                    f"a scenario set of {record['size']} scenarios on layout "
                    f"{record['layout']!r}")

        if (saved is None) != (mine is None) or (
                saved is not None and (saved["size"], saved["layout"])
                != (mine["size"], mine["layout"])):
            raise ValueError(f"vector snapshot: taken over {what(saved)}; this vector plays "
                             f"{what(mine)}")
        if saved is not None and saved["names_sha256"] != mine["names_sha256"]:
            raise ValueError(f"vector snapshot: taken over another scenario set of "
                             f"{saved['size']} scenarios (its scenarios' names differ from "
                             "this vector's: another distribution, seed range or list)")

    def _publish_mask(self, recompute: bool = False) -> None:
        buf = self._buf
        if self._perm is None:
            np.copyto(self._mask_out, buf.mask.view(bool))
        elif self._backend.publishes_relative and not recompute:  # the backend's threads wrote it
            np.copyto(self._mask_out, buf.relative_mask.view(bool))
        else:
            self._mask_pad[:, :-1] = buf.mask
            buf.relative_mask[...] = np.take_along_axis(self._mask_pad, self._perm[buf.agent],
                                                        axis=1)
            np.copyto(self._mask_out, buf.relative_mask.view(bool))

    def _check_actions(self, actions: Any) -> tuple[np.ndarray, dict[int, tuple[str, str]]]:
        """The absolute action of each row (int64 ``[N]``), after the shape, range and
        legality checks (whole-array NumPy; the per-row Python loop only builds the message
        or the forfeits of an illegal action)."""
        n, size = self.num_envs, self.n_actions
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if a.dtype.kind not in "iu" or a.shape != (n,):
            got = f"dtype {a.dtype}" if a.dtype.kind not in "iu" else f"shape {a.shape}"
            raise ValueError(f"actions: expected an integer array of shape ({n},) with values "
                             f"in [0, {size}) (indices into action_labels), got {got}")
        if int(a.min()) < 0 or int(a.max()) >= size:
            r = int(np.flatnonzero((a < 0) | (a >= size))[0])
            raise ValueError(f"actions: expected an integer array of shape ({n},) with values "
                             f"in [0, {size}) (indices into action_labels); row {r} has "
                             f"{a[r].item()}")
        buf = self._buf
        if self._perm is None:
            absolute = a.astype(np.int64, copy=False)
            legal = buf.mask[self._rows, a]
        else:
            absolute = self._perm[buf.agent, a]
            # The private relative mask (0 for empty slots) is current: _publish_mask.
            legal = buf.relative_mask[self._rows, a]
        if legal.all():
            return absolute, {}
        chosen: list[int] = a.tolist()
        rows = np.flatnonzero(legal == 0).tolist()
        forfeits: dict[int, tuple[str, str]] = {}
        if not self._penalize:
            r = rows[0]
            more = f" (and {len(rows) - 1} more rows)" if len(rows) > 1 else ""
            label, reason = self._refusal(r, chosen[r], int(absolute[r]))
            raise ValueError(f"row {r}: illegal action {label} for seat "
                             f"{self.possible_agents[int(buf.agent[r])]}: {reason}{more}; "
                             "nothing was applied in any row")
        for r in rows:
            _, reason = self._refusal(r, chosen[r], int(absolute[r]))
            forfeits[r] = (self.action_labels[chosen[r]], reason)
        return absolute, forfeits

    def _refusal(self, row: int, action: int, absolute: int) -> tuple[str, str]:
        """``(label as the caller named it, reason)`` for an illegal action of ``row``."""
        label = repr(self.action_labels[action])
        if self.scenario_set is not None:
            label += f" (index {action})"
            reason = self._backend.why_illegal(row, action)
            return label, reason or "not allowed by the action mask (it names an empty slot "\
                "or an action this battle's scenario lacks)"
        if self._perm is not None:
            if absolute >= len(self.absolute_action_labels):
                return label + f" (index {action})", "it names an empty slot"
            label += f" (index {action}, absolute {self.absolute_action_labels[absolute]!r})"
        else:
            label += f" (index {action})"
        reason = self._backend.why_illegal(row, absolute)
        return label, reason or "not allowed by the action mask"
