"""The Python engine behind ``traveller_env.vector`` (``backend="python"``): ``PythonBackend``.

``VectorEnv`` checks the arguments, owns the buffers and checks each action's range and
legality; this backend plays each row's ``Battle`` in turn with the AEC env's reward bookkeeping
(``rewards.RewardLedger``), plays the opponent seats with ``traveller_env.policy`` policies
(each row its own instances, seen through a ``_RowEnv``), and snapshots and restores the rows
(the opponents pickled by ``_PolicyPickler`` with the vector's objects written as names, and
read back naming only the classes the vector's own opponents are made of). The
compiled core's backend (``traveller_env.core.vector.CoreBackend``) mirrors it step for step.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

from .encoding import ActionCatalogue
from .env import TravellerEnv
from .observations import ObservationBuilder
from .policy import Policy, make_policy
from .rewards import BattleCounters, RewardLedger, RewardScorer
from .rules.battle import Battle
from .rules.dice import Dice
from .rules.rng import battle_seed, derive_seed
from .scenario import Scenario, build_battle
from .scenario_set import ScenarioSet, scenario_index
from .vector_buffers import VectorBuffers
from .view import BattleView

__all__ = ["PythonBackend"]


class _RowEnv:
    """The environment a policy sees for one row: the read-only part of ``TravellerEnv``'s API
    that policies use (``view``, ``action_labels``, ``action_index``, ``observation_slots``,
    ``side_of``, ``observation_vector``, ``action_mask``, ``unwrapped``)."""

    def __init__(self, shared: _Shared) -> None:
        self._shared = shared
        self.battle: Battle | None = None
        self.scenario = shared.scenario
        self.possible_agents = list(shared.ids)
        self.builder: ObservationBuilder = shared.builder.fork()

    @property
    def unwrapped(self) -> _RowEnv:
        """Itself (as a raw ``TravellerEnv``)."""
        return self

    @property
    def view(self) -> BattleView:
        """A read-only view of this row's battle."""
        return BattleView(self.battle)

    @property
    def action_labels(self) -> list[str]:
        """The (absolute) label of each action index."""
        return list(self._shared.catalogue.labels)

    @property
    def observation_labels(self) -> list[str]:
        """The name of each observation entry."""
        return list(self._shared.builder.labels)

    def action_index(self, label: str) -> int:
        """The index of an action label."""
        return self._shared.catalogue.index(label)

    def observation_slots(self, agent: str) -> list[str | None]:
        """Which combatant sits in each slot of ``agent``'s observation."""
        return self._shared.builder.slots(agent)

    def side_of(self, agent: str) -> int:
        """The side index of an agent."""
        return self._shared.builder.side_of[agent]

    def observation_vector(self, agent: str) -> np.ndarray:
        """``agent``'s observation vector in this row's battle."""
        return self.builder.observe(self.battle, agent)

    def action_mask(self, agent: str | None = None) -> np.ndarray:
        """The int8 mask of the deciding seat (all zeros for any other agent)."""
        b = self.battle
        if agent is not None and agent != b.current_agent:
            return np.zeros(self._shared.catalogue.n, dtype=np.int8)
        return self._shared.catalogue.mask(b)


class _Shared:
    """What every row of one vector shares about one scenario: the scenario and its tables
    (a scenario set has one per scenario)."""

    def __init__(self, template: TravellerEnv, columns: list[int] | None = None,
                 table: np.ndarray | None = None) -> None:
        self.scenario: Scenario = template.scenario
        # The AEC env's own catalogue and builder (labels and vectors identical by design).
        self.catalogue: ActionCatalogue = template._catalogue
        self.builder: ObservationBuilder = template._obs_builder
        self.ids: list[str] = list(template.possible_agents)
        self.seat = {a: i for i, a in enumerate(self.ids)}
        self.side = [template.side_of(a) for a in self.ids]
        self.scorer = RewardScorer(self.scenario.rewards, self.side)
        #: Each seat's column of the vector's rewards and ``agent`` (a set: the layout's).
        self.column: list[int] = list(range(len(self.ids))) if columns is None else columns
        #: A set only: ``table[seat, j]``, layout action ``j``'s absolute index (``n`` none).
        self.table = table
        self.table_list = None if table is None else table.tolist()


class _Row:
    """One row: its battle and the bookkeeping the AEC env keeps per battle (its rewards'
    ``RewardLedger``, over the battle's ``BattleCounters``)."""

    __slots__ = ("acc", "battle", "column_policies", "counters", "env", "episode", "gained",
                 "ledger", "next_episode", "policies", "seed", "shared")

    def __init__(self, shared: _Shared, policies: list[Policy | None]) -> None:
        self.shared = shared  # the scenario of the row's battle
        self.env = _RowEnv(shared)
        #: The opponents by column (a set's battles seat them by their scenario's seats).
        self.column_policies = policies
        self.policies = policies
        self.battle: Battle | None = None
        self.next_episode = 0
        self.episode = 0
        self.seed = 0
        self.acc: list[float] = [0.0] * len(policies)  # rewards not yet returned, by column
        self.gained = False  # acc may hold a non-zero entry
        self.counters: BattleCounters | None = None
        self.ledger: RewardLedger | None = None


def _row_objects(row: _Row) -> dict[str, Any]:
    """The objects of a row that its opponents may hold references to, by a stable name: a
    snapshot refers to them by name (they are rebuilt on restore, not pickled)."""
    return _objects(row.env, row.battle)


def _objects(env: _RowEnv, battle: Battle | None) -> dict[str, Any]:
    """``_row_objects`` of a row playing ``battle`` in ``env``."""
    return {"env": env, "battle": battle, "env_builder": env.builder, "shared": env._shared,
            "builder": env._shared.builder, "catalogue": env._shared.catalogue}


class _PolicyPickler:
    """Pickles a row's opponent policies by column (``row.column_policies``) with the
    vector's objects written as names, and reads them back bound to a (restored) row's:

    - the row's own objects (``_row_objects``: its env, battle and shared tables) by name;
    - any scenario's tables (``_Shared``, its builder and catalogue) by the scenario's index;
    - over a set, an env of an earlier battle that a policy still holds (scripted policies
      keep the env they last acted in, to cache its labels) as a fresh env of that scenario
      with no battle, and such an env's battle as ``None``: a policy that compares its
      reference with the env it is handed sees the same difference either way.
    """

    def __init__(self, specs: list[_Shared]) -> None:
        self.specs = specs
        self.names: dict[int, tuple] = {}
        self.index: dict[int, int] = {}
        for k, spec in enumerate(specs):
            self.index[id(spec)] = k
            for part, obj in (("shared", spec), ("builder", spec.builder),
                              ("catalogue", spec.catalogue)):
                self.names[id(obj)] = ("spec", k, part)

    def dump(self, row: _Row) -> bytes:
        """The row's ``column_policies`` pickled (see the class docstring)."""
        own = {id(obj): name for name, obj in _row_objects(row).items()}

        def persistent_id(obj: Any) -> Any:
            name = own.get(id(obj))
            if name is not None:
                return name
            name = self.names.get(id(obj))
            if name is not None:
                return name
            if isinstance(obj, _RowEnv):
                return ("env", self.index[id(obj._shared)])
            if isinstance(obj, Battle):
                return ("battle",)
            return None

        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = persistent_id
        pickler.dump(row.column_policies)
        return buffer.getvalue()

    def globals_of(self, row: _Row) -> set[tuple[str, str]]:
        """The globals (``(module, name)``) that ``dump(row)`` names: the classes the row's
        own opponents are made of, as the vector built them by name."""
        seen: set[tuple[str, str]] = set()

        class Recorder(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                seen.add((module, name))
                return super().find_class(module, name)

            def persistent_load(self, pid: Any) -> Any:
                return None

        Recorder(io.BytesIO(self.dump(row))).load()
        return seen

    def load(self, data: bytes, objects: dict[str, Any],
             allowed: set[tuple[str, str]] | None = None) -> list[Policy | None]:
        """``dump``'s inverse, the row's names bound to ``objects`` (``_objects``); with
        ``allowed``, a pickle naming any other global (class or function) is refused with a
        ``ValueError`` before it is called (``vector_snapshot.SafeUnpickler``)."""
        from .vector_snapshot import ARRAY_GLOBALS, SafeUnpickler
        def persistent_load(pid: Any) -> Any:
            if isinstance(pid, str):
                return objects[pid]
            if pid[0] == "spec":
                spec = self.specs[pid[1]]
                return {"shared": spec, "builder": spec.builder,
                        "catalogue": spec.catalogue}[pid[2]]
            if pid[0] == "env":
                return _RowEnv(self.specs[pid[1]])
            return None  # an earlier battle

        if allowed is None:
            unpickler = pickle.Unpickler(io.BytesIO(data))
        else:
            unpickler = SafeUnpickler(data, allowed | ARRAY_GLOBALS,
                                      "vector snapshot: a row's opponents")
        unpickler.persistent_load = persistent_load
        try:
            return unpickler.load()
        except ValueError:
            raise
        except Exception as exc:  # a damaged pickle: any of pickle's many errors
            raise ValueError(f"vector snapshot: a row's opponents do not unpickle "
                             f"({type(exc).__name__}: {exc})") from None


class PythonBackend:
    """The Python engine behind ``VectorEnv``: each row's ``Battle`` stepped in turn, with the
    AEC env's reward bookkeeping (``rewards.RewardLedger``) and the SB3 bridge's opponent loop,
    without PettingZoo's per-agent dicts."""

    name = "python"
    publishes_relative = False

    def __init__(self, template: TravellerEnv, num_envs: int,
                 policy_names: list[str | None], scenario_set: ScenarioSet | None = None,
                 max_skipped: int = 1000) -> None:
        """``template``: the vector's AEC env (a set: its first scenario's); ``policy_names``:
        the opponent of each seat (a set: of each layout column), or ``None`` for a learner;
        ``max_skipped``: how many consecutive battles of one row may end before any learner
        seat decides (``vector.MAX_SKIPPED``)."""
        if scenario_set is None:
            self.specs = [_Shared(template)]
        else:
            self.specs = [_Shared(env, cols, table) for env, cols, table in
                          zip(scenario_set.envs, scenario_set.columns, scenario_set.tables,
                              strict=True)]
        self.shared = s = self.specs[0]
        self.set_mode = scenario_set is not None
        self.policy_names = policy_names  # by column
        self.rows = [_Row(s, [None if p is None else make_policy(p) for p in policy_names])
                     for _ in range(num_envs)]
        if self.set_mode:
            for row in self.rows:
                row.shared = None  # each battle seats the policies by its own scenario
        self.vector_seed = 0
        self.battles_skipped = 0
        self.max_skipped = max_skipped

    # ------------------------------------------------------------------ backend interface
    def why_illegal(self, row: int, action: int) -> str | None:
        the = self.rows[row]
        spec = the.shared
        if self.set_mode:
            action = spec.table_list[spec.seat[the.battle.current_agent]][action]
            if action >= spec.catalogue.n:
                return None
        return the.battle.why_illegal(spec.catalogue.actions[action])

    def reset(self, seed: int, restart: bool, out: VectorBuffers) -> None:
        self.vector_seed = seed
        for r, row in enumerate(self.rows):
            if restart:
                row.next_episode = 0
            self._begin(r, row, out)
            self._publish(r, row, out)

    def step(self, actions: list[int], forfeits: Mapping[int, tuple[str, str]],
             out: VectorBuffers) -> None:
        rewards = out.rewards
        actions = actions.tolist()  # Python ints index the action list fastest
        set_mode = self.set_mode
        for r, row in enumerate(self.rows):
            b = row.battle
            spec = row.shared
            if forfeits and r in forfeits:
                label, reason = forfeits[r]
                seat = spec.seat[b.current_agent]
                b.forfeit(label, reason)
                self._score(row, seat)
            else:
                a = actions[r]
                if set_mode:  # the layout's action -> this scenario's (legal: it was masked)
                    a = spec.table_list[spec.seat[b.current_agent]][a]
                b.apply(spec.catalogue.actions[a], validated=True)
                self._score(row)
            self._play_opponents(r, row)
            b = row.battle
            if b.done:
                if b.truncated:
                    out.truncated[r] = True
                else:
                    out.terminated[r] = True
                if b.winner is not None:
                    out.winner[r] = b.side_names.index(b.winner)
                if row.gained:
                    rewards[r] = row.acc
                row.acc = [0.0] * len(row.acc)
                row.gained = False
                self._begin(r, row, out)
            elif row.gained:
                rewards[r] = row.acc
                row.acc = [0.0] * len(row.acc)
                row.gained = False
            self._publish(r, row, out)

    def snapshot(self) -> dict[str, Any]:
        """The rows' state (``VectorEnv.snapshot``): each battle's snapshot bytes and scenario
        (an index into ``specs``), the episode counters and seeds, the rewards not yet
        returned, the reward ledger and the opponent policies by column (pickled: their
        generators and plans)."""
        index = {id(spec): k for k, spec in enumerate(self.specs)}
        pickler = _PolicyPickler(self.specs)
        rows = []
        for row in self.rows:
            ledger = row.ledger
            rows.append({
                "scenario": index[id(row.shared)],
                "battle": row.battle.snapshot(), "episode": row.episode,
                "next_episode": row.next_episode, "seed": row.seed, "acc": list(row.acc),
                "gained": row.gained,
                "ledger": (list(ledger.live), ledger.last_round, ledger.last_dropouts,
                           ledger.last_damage),
                "policies": pickler.dump(row)})
        return {"vector_seed": self.vector_seed, "battles_skipped": self.battles_skipped,
                "rows": rows}

    def restore(self, state: dict[str, Any]) -> None:
        """Rebuild the rows from ``snapshot()``'s state: each row's scenario (over a set: its
        env, and its policies seated by that scenario's columns), its battle restored from its
        bytes, its counters, ledger and policies. Every row is rebuilt before any changes, so
        a bad one (``ValueError``) changes nothing."""
        if "core_rows" in state or "rows" not in state:
            raise ValueError("vector snapshot: not a Python backend's rows")
        saved_rows = state["rows"]
        if len(saved_rows) != len(self.rows):
            raise ValueError(f"vector snapshot: {len(saved_rows)} rows; this vector has "
                             f"{len(self.rows)}")
        pickler = _PolicyPickler(self.specs)
        allowed: dict[int, set[tuple[str, str]]] = {}
        built = []
        for r, (row, saved) in enumerate(zip(self.rows, saved_rows, strict=True)):
            k = saved.get("scenario", 0)  # absent: a snapshot from before sets
            if not isinstance(k, int) or not 0 <= k < len(self.specs):
                raise ValueError(f"vector snapshot: row {r} plays scenario {k!r}; this vector "
                                 f"has {len(self.specs)}")
            s = self.specs[k]
            env = row.env if s is row.shared else _RowEnv(s)
            b = build_battle(s.scenario, dice=Dice(saved["seed"]))
            b.restore(saved["battle"])
            counters = BattleCounters(b, s.ids)
            ledger = s.scorer.ledger(counters)
            live, ledger.last_round, ledger.last_dropouts, ledger.last_damage = saved["ledger"]
            if len(live) != len(ledger.live) or len(saved["acc"]) != len(row.column_policies):
                raise ValueError(f"vector snapshot: row {r}'s ledger or rewards do not fit its "
                                 f"scenario {s.scenario.name!r}")
            ledger.live[:] = live
            # only the classes this vector's own opponents (built by name) are made of
            columns = pickler.load(saved["policies"], _objects(env, b),
                                   allowed.setdefault(id(row), pickler.globals_of(row)))
            built.append((s, env, b, counters, ledger, columns))
        for row, saved, (s, env, b, counters, ledger, columns) in zip(
                self.rows, saved_rows, built, strict=True):
            row.shared, row.env = s, env
            row.battle = env.battle = b
            row.counters, row.ledger = counters, ledger
            row.episode, row.next_episode = saved["episode"], saved["next_episode"]
            row.seed, row.acc, row.gained = saved["seed"], list(saved["acc"]), saved["gained"]
            row.column_policies = columns
            row.policies = ([columns[c] for c in s.column] if self.set_mode else columns)
        self.vector_seed = state["vector_seed"]
        self.battles_skipped = state["battles_skipped"]

    def replay(self, seed: int, actions: list[int]) -> tuple[np.ndarray, str]:
        """Play battle ``seed`` again in a fresh row (the opponents as fresh instances, seeded
        as in ``_open_battle``) with the learner ``actions`` the backend was given in it, in
        order (an illegal one is forfeited, as ``illegal_action: penalize`` does); returns the
        observation of the learner seat that decided last, in the battle's final state, and
        that seat's agent id. ``RuntimeError`` if the battle does not end exactly with the last
        action (the actions are not that battle's)."""
        row = _Row(self.shared, [None if p is None else make_policy(p)
                                 for p in self.policy_names])
        if self.set_mode:
            row.shared = None
        self._open_battle(row, seed)
        self._play_opponents(-1, row)
        b = row.battle
        agent = None
        for k, a in enumerate(actions):
            if b.done:
                raise RuntimeError(f"replay of battle {seed}: it ended after {k} of "
                                   f"{len(actions)} learner actions")
            spec = row.shared
            agent = b.current_agent
            if self.set_mode:
                a = spec.table_list[spec.seat[agent]][a]
            if a < spec.catalogue.n and spec.catalogue.mask(b)[a]:
                b.apply(spec.catalogue.actions[a], validated=True)
                self._score(row)
            else:
                label = spec.catalogue.labels[a] if a < spec.catalogue.n else "(empty slot)"
                b.forfeit(label, "illegal (replayed forfeit)")
                self._score(row, spec.seat[agent])
            self._play_opponents(-1, row)
        if not b.done or agent is None:
            raise RuntimeError(f"replay of battle {seed}: not over after its "
                               f"{len(actions)} learner actions")
        return row.env.builder.observe(b, agent), agent

    # ------------------------------------------------------------------ internals
    def _publish(self, r: int, row: _Row, out: VectorBuffers) -> None:
        """Write the row's deciding learner seat: its observation, mask and index (``_begin``
        writes the episode and battle seed, which change only with the battle)."""
        b = row.battle
        agent = b.current_agent
        spec = row.shared
        row.env.builder.observe(b, agent, out=out.obs[r])
        seat = spec.seat[agent]
        if self.set_mode:  # the layout's (slot-relative) mask
            absolute = np.append(spec.catalogue.mask(b), np.int8(0))
            out.mask[r] = absolute[spec.table[seat]]
        else:
            spec.catalogue.mask(b, out=out.mask[r])
        out.agent[r] = spec.column[seat]

    def _begin(self, r: int, row: _Row, out: VectorBuffers) -> None:
        """Start the row's next battle and play opponent seats up to the first learner
        decision; a battle that ends before one is skipped (its rewards dropped)."""
        for _ in range(self.max_skipped + 1):
            self._start_battle(r, row)
            self._play_opponents(r, row)
            if not row.battle.done:
                out.episode[r] = row.episode
                out.battle_seed[r] = row.seed
                return
            self.battles_skipped += 1
        raise RuntimeError(f"row {r}: {self.max_skipped + 1} battles in a row ended before any "
                           f"learner seat decided: check the scenario "
                           f"{row.shared.scenario.name!r} and the opponents")

    def _start_battle(self, r: int, row: _Row) -> None:
        row.episode = e = row.next_episode
        row.next_episode = e + 1
        self._open_battle(row, battle_seed(self.vector_seed, r, e))

    def _open_battle(self, row: _Row, seed: int) -> None:
        """Start battle ``seed`` in ``row``: its scenario (over a set: drawn by the seed), its
        battle, its reward ledger and its opponents reseeded."""
        row.seed = seed
        s = self.specs[scenario_index(seed, len(self.specs))]
        if s is not row.shared:  # a scenario set: this battle plays another scenario
            row.shared = s
            row.env = _RowEnv(s)
            row.policies = [row.column_policies[c] for c in s.column]
        row.battle = b = build_battle(s.scenario, dice=Dice(seed))
        row.env.battle = b
        row.counters = BattleCounters(b, s.ids)
        row.ledger = s.scorer.ledger(row.counters)
        row.acc = [0.0] * len(row.column_policies)
        row.gained = False
        for i, p in enumerate(row.policies):
            if p is not None:
                p.reset(derive_seed(seed, 1 + i))

    def _play_opponents(self, r: int, row: _Row) -> None:
        """Let opponent seats decide until a learner seat must, or the battle ends."""
        b = row.battle
        seat_of = row.shared.seat
        policies = row.policies
        catalogue = row.shared.catalogue
        while not b.done:
            agent = b.current_agent
            i = seat_of[agent]
            policy = policies[i]
            if policy is None:
                return
            mask = catalogue.mask(b)
            obs = (row.env.builder.observe(b, agent)
                   if getattr(policy, "needs_observation", True) else None)
            a = policy.act(obs, mask, agent, row.env)
            if isinstance(a, bool) or not isinstance(a, int | np.integer) \
                    or not 0 <= a < catalogue.n or not mask[a]:
                reason = ("out of range" if not isinstance(a, int | np.integer)
                          or not 0 <= a < catalogue.n
                          else b.why_illegal(catalogue.actions[int(a)]))
                raise ValueError(f"row {r}: opponent policy "
                                 f"{self.policy_names[row.shared.column[i]]!r} playing "
                                 f"{agent} chose action {a!r}, which is illegal: {reason}")
            b.apply(catalogue.actions[int(a)], validated=True)
            self._score(row)

    def _score(self, row: _Row, penalized: int = -1) -> None:
        """This sub-step's rewards (``rewards.RewardLedger.score``, the AEC env's arithmetic,
        so the sums agree to the bit), added to ``row.acc``; seats that drop out stop
        receiving rewards after this sub-step, as the AEC env's dead step removes them.
        ``penalized``: the seat that forfeited (-1 more, as the AEC env)."""
        gains, _ = row.ledger.score(row.counters, penalized)
        if gains is not None:
            acc = row.acc
            column = row.shared.column
            for i, x in enumerate(gains):
                acc[column[i]] += x
            row.gained = True
