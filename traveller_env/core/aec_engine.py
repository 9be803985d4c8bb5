"""The compiled core as the AEC env's engine: ``CoreEngine`` (``raw_env(..., backend="core")``).

``traveller_env.env.TravellerEnv`` runs over an engine adapter; this is the core's.
``CoreEngine`` takes actions, writes observations and masks, and hands the env the core's
``_core.Battle`` as its running counters (``round``, ``phase``, ``done``, ``dropouts``,
``summary()``, ...; ``rewards.Counters``), so the env's step is the same code on both engines.

``env.battle`` is a ``CoreBattleState``: the part of the Python engine's ``Battle`` interface
that callers of ``env.battle`` use (``events``, ``version``, ``summary``, ``by_id[a].out``,
``round``, ``done``, ``apply``, ``forfeit``, ...) answered from the core. Any other attribute
(``combatants``, ``grid``, ``pools``, ...) is read from the Python twin below, so code written for
the Python engine's ``env.battle`` keeps working.

What reads the whole battle (``view`` for scripted policies, ``render``, the invariant checks)
gets the Python engine's ``Battle`` replaying the same seed and the same actions
(``CoreBattleState.python``): the two engines play identical battles
(tests/core/test_core_engine.py), so the view is exact, and it costs nothing until asked for.

Not supported on the core (refused with a clear error): scripted dice (``reset(options=
{"dice": ...})``) and action kinds registered beyond the built-in twelve.

This module does not import ``traveller_env.env`` (the env imports it, on ``backend="core"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layout import Layout
from ..observations import ObservationBuilder
from ..rules.battle import Battle, BattleSummary, IllegalActionError
from ..rules.dice import Dice
from ..scenario import Scenario, build_battle
from .engine import CoreBattle, flatten_scenario

__all__ = ["CoreBattleState", "CoreEngine", "CoreEngineFactory"]

_empty = np.empty
_FLOAT32, _INT8 = np.dtype(np.float32), np.dtype(np.int8)


class _Out:
    """``by_id[agent]`` for the env's bookkeeping: ``out`` read from the core; any other
    attribute from the Python twin's combatant."""

    __slots__ = ("_i", "_id", "_state")

    def __init__(self, state: CoreBattleState, i: int, cid: str) -> None:
        self._state, self._i, self._id = state, i, cid

    @property
    def out(self) -> bool:
        return self._state._b.out(self._i)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state.python.by_id[self._id], name)


class _LazySummary:
    """``Battle.summary`` of the core: ``dropouts`` at once, the per-combatant damage totals
    (and ``copy()``, a ``BattleSummary``) only when asked (damage rewards)."""

    __slots__ = ("_full", "_state", "dropouts")

    def __init__(self, state: CoreBattleState) -> None:
        self._state = state
        self.dropouts: int = state._b.dropouts
        self._full: BattleSummary | None = None

    def _summary(self) -> BattleSummary:
        if self._full is None:
            ids = self._state.ids
            dealt, taken, dropouts = self._state._b.summary()
            self._full = BattleSummary(dict(zip(ids, dealt, strict=True)),
                                       dict(zip(ids, taken, strict=True)), dropouts)
        return self._full

    @property
    def damage_dealt(self) -> dict[str, int]:
        return self._summary().damage_dealt

    @property
    def damage_taken(self) -> dict[str, int]:
        return self._summary().damage_taken

    def copy(self) -> BattleSummary:
        return self._summary().copy()


class _Prepared:
    """What every battle of one env shares, made once (not at each ``reset``): the scenario's
    flat data for the core, the catalogue's labels and its actions' indices by identity."""

    __slots__ = ("flat", "index", "labels")

    def __init__(self, scenario: Any, catalogue: Any) -> None:
        self.flat = flatten_scenario(scenario)
        self.index = {id(a): i for i, a in enumerate(catalogue.actions)}
        self.labels = list(catalogue.labels)


def _from_core(name: str) -> property:
    """A read-only property answered by ``CoreBattle.<name>`` of the state's ``core``."""
    return property(lambda self: getattr(self.core, name), doc=f"``CoreBattle.{name}``.")


class CoreBattleState:
    """One battle on the core, with the part of ``Battle``'s interface that callers of
    ``env.battle`` use (the env itself goes through ``CoreEngine``).

    ``events`` holds the Python engine's event dicts (converted as they are recorded);
    ``version`` moves on with every action; ``python`` is the Python engine's ``Battle`` at the
    same point (replayed lazily from the same seed and actions).
    """

    def __init__(self, scenario: Any, seed: int, catalogue: Any, *,
                 prepared: _Prepared | None = None, move_view: bool = False,
                 aim_view: bool = False, attack_view: bool = False,
                 layout: Layout | None = None) -> None:
        if prepared is None:
            prepared = _Prepared(scenario, catalogue)
        self.core = CoreBattle(scenario, seed, flat=prepared.flat, move_view=move_view,
                               aim_view=aim_view, attack_view=attack_view, layout=layout)
        self._b = self.core._b
        self._scenario = scenario
        self._seed = seed
        # The catalogue's own action objects, by identity (the env passes them).
        self._index = prepared.index
        self._catalogue = catalogue
        if prepared.labels != self.core.labels:
            raise RuntimeError("the core's action catalogue differs from the Python engine's")
        self.ids = self.core.ids
        self.side_names = self.core.side_names
        self.by_id = {cid: _Out(self, i, cid) for i, cid in enumerate(self.ids)}
        self.events: list[dict] = self._b.events(0)
        self.version = 0
        self._taken: list[int | tuple] = []  # actions so far: an index, or (label, reason)
        self._python: Battle | None = None
        self._replayed = 0
        self._base = 0  # events before the core's own log (a battle resumed from a snapshot)

    # ------------------------------------------------------------------ Battle's interface
    # What ``CoreBattle`` answers already (one home for the seat -> id and side-name mapping).
    current_agent = _from_core("current_agent")
    done = _from_core("done")
    truncated = _from_core("truncated")
    winner = _from_core("winner")
    round = _from_core("round")
    phase = _from_core("phase")

    @property
    def summary(self) -> _LazySummary:
        return _LazySummary(self)

    def why_illegal(self, action: Any) -> str | None:
        return self._b.why_illegal(self._index[id(action)])

    def apply(self, action: Any, validated: bool = False) -> None:
        """Take a catalogue action; ``IllegalActionError`` (nothing changes) when refused."""
        index = self._index[id(action)]
        try:
            self._b.step(index)
        except ValueError:
            raise IllegalActionError(self.current_agent, action.label,
                                     self._b.why_illegal(index) or "refused") from None
        self._taken.append(index)
        self._recorded()

    def forfeit(self, label: str, reason: str) -> None:
        """Record an illegal choice and take the do-nothing default."""
        self._b.forfeit(label, reason)
        self._taken.append((label, reason))
        self._recorded()

    def _recorded(self) -> None:
        self.version += 1
        self._append_events()

    def _append_events(self) -> None:
        """Append the new events to ``events`` as the engine's dicts. A resumed battle's core
        log starts at the snapshot (its first ``_base`` events are not the core's)."""
        if self._base:
            self.events.extend(self._b.events(len(self.events) - self._base))
        else:
            self._b.aec_events(self.events)

    def resume(self, snapshot: bytes, events: list[dict], taken: list[int | tuple],
               version: int) -> None:
        """Continue from ``CoreEngine.saved``'s data (a new state of the same scenario and
        seed): the snapshot restored into the core, the event log and the actions taken so far
        (which the Python twin replays) put back; it takes the lists."""
        self._b.restore(snapshot)
        self.events = events
        self._base = len(events)
        self._taken = taken
        self._python = None
        self.version = version

    def __getattr__(self, name: str) -> Any:
        """Anything else ``Battle`` has (``combatants``, ``grid``, ``pools``, ...), read from
        the Python twin, so code written for ``env.battle`` keeps working on the core."""
        if name.startswith("__") or name in ("_python", "_taken", "_replayed", "_scenario",
                                             "_seed", "_base"):
            raise AttributeError(name)
        return getattr(self.python, name)

    # ------------------------------------------------------------------ the Python twin
    @property
    def python(self) -> Battle:
        """The Python engine's battle at this point (same seed, same actions replayed)."""
        if self._python is None:
            self._python = build_battle(self._scenario, dice=Dice(self._seed))
            self._replayed = 0
        b = self._python
        actions = None
        for taken in self._taken[self._replayed:]:
            if type(taken) is int:
                if actions is None:
                    from ..encoding import ActionCatalogue

                    actions = ActionCatalogue(b).actions
                b.apply(actions[taken], validated=True)
            else:
                b.forfeit(*taken)
        self._replayed = len(self._taken)
        return b




class CoreEngine:
    """The engine adapter of ``TravellerEnv`` on the core (``traveller_env.env.Engine``): one
    core call takes a legal action, one appends the new events, one writes an observation and
    its mask. ``counters`` is the core's ``_core.Battle`` itself (it has every counter the env
    and ``rewards.RewardLedger`` read)."""

    __slots__ = ("_dim", "_labels", "_n", "_pb", "_taken", "battle", "counters", "events")

    def __init__(self, state: CoreBattleState, obs_dim: int, n_actions: int) -> None:
        #: What ``env.battle`` shows.
        self.battle = state
        self._pb = self.counters = state._b
        #: The event log (the Python engine's dicts), appended to as actions are taken.
        self.events: list[dict] = state.events
        self._taken = state._taken
        self._labels = state.core.labels
        self._dim, self._n = obs_dim, n_actions

    def take(self, action: int) -> int:
        """Take the catalogue's action ``action`` (an int in range) for the deciding seat;
        returns the seat that decides next (-1 once the battle is over). ``IllegalActionError``
        when the core refuses it (nothing changes then)."""
        pb = self._pb
        decider = pb.aec_step(action)
        if decider == -2:
            raise IllegalActionError(self.battle.current_agent, self._labels[action],
                                     pb.why_illegal(action) or "refused")
        self._taken.append(action)
        self.battle.version += 1
        self._sync_events()
        return decider

    def _sync_events(self) -> None:
        """Append the action's new events to ``events`` (the core's log starts with the
        battle here)."""
        self._pb.aec_events(self.events)

    def forfeit(self, label: str, reason: str) -> int:
        """Record an illegal choice and take the do-nothing default; returns the next
        decider's seat (-1 once over)."""
        self.battle.forfeit(label, reason)
        return self._pb.decider

    def saved(self) -> dict[str, Any]:
        """Plain data from which ``CoreEngineFactory.resume`` continues this battle exactly
        (``traveller_env.env.Engine.saved``): the core's snapshot (``rules.snapshot``'s
        format), the event log, the actions taken so far and the battle's version."""
        state = self.battle
        return {"snapshot": state.core.snapshot(), "events": self.events,
                "taken": self._taken, "version": state.version}

    def observe(self, seat: int, deciding: bool) -> dict[str, np.ndarray]:
        """``{"observation", "action_mask"}`` of ``seat`` (new arrays, written by the core in
        one call); the mask is all zeros unless ``deciding`` and the seat decides now."""
        obs = _empty(self._dim, _FLOAT32)  # (positional dtype objects: half the cost)
        mask = _empty(self._n, _INT8)
        self._pb.aec_observe(seat, deciding, obs, mask)
        return {"observation": obs, "action_mask": mask}

    def observation_vector(self, seat: int) -> np.ndarray:
        """Only the float32 observation vector of ``seat``."""
        out = np.empty(self._dim, dtype=np.float32)
        self._pb.observe(seat, out)
        return out

    def mask(self, seat: int, deciding: bool) -> np.ndarray:
        """The int8 action mask of ``seat`` (all zeros unless ``deciding`` and it decides)."""
        mask = np.zeros(self._n, dtype=np.int8)
        if deciding and self._pb.decider == seat:
            self._pb.mask(mask.view(np.uint8))  # (decider is -1 once the battle is over)
        return mask

    def state(self) -> np.ndarray:
        """The global state vector."""
        return self.battle.core.state()

    @property
    def python(self) -> Battle:
        """The Python engine's twin of the battle (for the view, rendering, the checks)."""
        return self.battle.python

    def check_against_twin(self, builder: ObservationBuilder, agents: list[str]) -> None:
        """``check_invariants=True``: the core's event log and every agent's observation equal
        the Python twin's (a cross-check of the two engines); ``AssertionError`` otherwise."""
        state = self.battle
        twin = state.python
        if state.events != twin.events:
            from .differential import first_difference

            raise AssertionError("the core's event log differs from the Python engine's: "
                                 + str(first_difference(twin.events, state.events)))
        seat = {cid: i for i, cid in enumerate(state.ids)}
        for a in agents:
            mine = self.observation_vector(seat[a])
            ref = builder.observe(twin, a)
            if mine.tobytes() != ref.tobytes():
                j = int(np.flatnonzero(mine != ref)[0])
                raise AssertionError(f"{a}: the core's observation differs at "
                                     f"{builder.labels[j]}: {mine[j]!r} vs {ref[j]!r}")


class _ResumedCoreEngine(CoreEngine):
    """``CoreEngine`` of a battle resumed from a snapshot: the core's log holds only what
    happened since, so new events are appended past the saved ones."""

    __slots__ = ()

    def _sync_events(self) -> None:
        """Append past the saved events (the core's log starts at the snapshot)."""
        self.battle._append_events()


class CoreEngineFactory:
    """Makes the ``CoreEngine`` of each ``reset`` of one env (what every battle of the env
    shares, the scenario's flat data and the catalogue's indices, prepared once). The core's
    observations are laid out by ``builder.layout`` (the env's ``layout``), as the builder's."""

    def __init__(self, scenario: Scenario, catalogue: Any, builder: ObservationBuilder, *,
                 move_view: bool = False, aim_view: bool = False,
                 attack_view: bool = False) -> None:
        self._scenario = scenario
        self._catalogue = catalogue
        self._prepared = _Prepared(scenario, catalogue)
        self._views = {"move_view": move_view, "aim_view": aim_view, "attack_view": attack_view,
                       "layout": builder.layout}
        self._dim = len(builder.labels)
        self._n = catalogue.n

    def __call__(self, seed: int, dice: Dice | None) -> CoreEngine:
        """The engine of a new battle from ``seed`` (scripted ``dice`` are refused)."""
        if dice is not None:
            raise ValueError("reset options['dice']: scripted dice are not supported on "
                             "backend='core' (the core rolls only the shared PCG32 generator "
                             "from the seed); use backend='python'")
        state = CoreBattleState(self._scenario, seed, self._catalogue, prepared=self._prepared,
                                **self._views)
        return CoreEngine(state, self._dim, self._n)

    def resume(self, seed: int, saved: dict[str, Any]) -> CoreEngine:
        """The engine of a battle of ``seed`` continued from ``CoreEngine.saved``'s data."""
        state = CoreBattleState(self._scenario, seed, self._catalogue, prepared=self._prepared,
                                **self._views)
        state.resume(saved["snapshot"], saved["events"], saved["taken"], saved["version"])
        return _ResumedCoreEngine(state, self._dim, self._n)
