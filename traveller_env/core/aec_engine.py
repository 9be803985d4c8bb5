"""The AEC environment on the compiled core: ``raw_env(..., backend="core")``.

``CoreTravellerEnv`` is a ``TravellerEnv`` whose battle runs in the core: the PettingZoo
bookkeeping (agents, rewards, terminations, dead steps, infos) is ``TravellerEnv``'s own code,
played on ``CoreBattleState``, which answers the few questions that code asks of a battle
(``apply``, ``forfeit``, ``events``, ``version``, ``summary``, ``by_id[a].out``, ``round``,
``done``, ...) from the core. Observations, masks and ``state()`` come from the core too.
Any other attribute of ``env.battle`` (``combatants``, ``grid``, ``pools``, ...) is read from
the Python twin below, so code written for the Python engine's ``env.battle`` keeps working.

What reads the whole battle (``view`` for scripted policies, ``render``, the invariant checks)
gets the Python engine's ``Battle`` replaying the same seed and the same actions
(``CoreBattleState.python``): the two engines play identical battles (tests/test_core_engine.py),
so the view is exact, and it costs nothing until asked for.

Not supported on the core (refused with a clear error): scripted dice (``reset(options=
{"dice": ...})``) and action kinds registered beyond the built-in twelve.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..env import ScenarioSource, TravellerEnv
from ..rules.battle import Battle, BattleSummary, IllegalActionError
from ..rules.dice import Dice
from ..scenario import build_battle
from ..view import BattleView
from .engine import CoreBattle, flatten_scenario

__all__ = ["CoreBattleState", "CoreTravellerEnv"]

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
    """One battle on the core, with the part of ``Battle``'s interface ``TravellerEnv`` uses.

    ``events`` holds the Python engine's event dicts (converted as they are recorded);
    ``version`` moves on with every action; ``python`` is the Python engine's ``Battle`` at the
    same point (replayed lazily from the same seed and actions).
    """

    def __init__(self, scenario: Any, seed: int, catalogue: Any, *,
                 prepared: _Prepared | None = None, move_view: bool = False,
                 aim_view: bool = False, attack_view: bool = False) -> None:
        if prepared is None:
            prepared = _Prepared(scenario, catalogue)
        self.core = CoreBattle(scenario, seed, flat=prepared.flat, move_view=move_view,
                               aim_view=aim_view, attack_view=attack_view)
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
        self._b.aec_events(self.events)  # the new events, appended as the engine's dicts

    def __getattr__(self, name: str) -> Any:
        """Anything else ``Battle`` has (``combatants``, ``grid``, ``pools``, ...), read from
        the Python twin, so code written for ``env.battle`` keeps working on the core."""
        if name.startswith("__") or name in ("_python", "_taken", "_replayed", "_scenario",
                                             "_seed"):
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


class CoreTravellerEnv(TravellerEnv):
    """``TravellerEnv`` on the compiled core (see the module docstring); build it with
    ``raw_env(scenario, backend="core")`` or ``env(scenario, backend="core")``."""

    backend = "core"

    def __init__(self, scenario: ScenarioSource = "duel", render_mode: str | None = None,
                 **options: Any) -> None:
        from . import require
        from .engine import check_kinds

        require()  # CoreUnavailableError now, saying how to build it, not at the first reset
        check_kinds()
        super().__init__(scenario, render_mode=render_mode, **options)
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_dim = len(self._obs_builder.labels)
        self._n_actions = self._catalogue.n
        self._prepared = _Prepared(self.scenario, self._catalogue)
        r = self.scenario.rewards
        self._damage_rewards = bool(r.damage_dealt or r.damage_taken)
        self._last_dropouts = 0
        self._last_damage: tuple[list[int], list[int]] | None = None

    def _python_battle(self) -> Battle:
        return self.battle.python

    def _build_battle(self, dice: Dice | None) -> Any:
        if dice is not None:
            raise ValueError("reset options['dice']: scripted dice are not supported on "
                             "backend='core' (the core rolls only the shared PCG32 generator "
                             "from the seed); use backend='python'")
        state = CoreBattleState(self.scenario, self.seed, self._catalogue,
                                prepared=self._prepared, move_view=self.move_view,
                                aim_view=self.aim_view, attack_view=self.attack_view)
        # What ``_score`` compares with (the core's summary, read straight from the core).
        self._last_dropouts = state._b.dropouts
        self._last_damage = state._b.summary()[:2] if self._damage_rewards else None
        return state

    # ------------------------------------------------------------------ the hot path
    # ``step``, ``observe``, ``_score`` and ``_refresh_info`` below do what ``TravellerEnv``'s
    # do, reading the core directly: one core call takes a legal action (an illegal one, a dead
    # step or an action that is not a plain int goes through ``TravellerEnv.step``, which
    # raises or forfeits exactly as on the Python engine), one appends the new events, one
    # writes an observation and its mask. tests/test_core_aec.py plays both engines in lock
    # step and compares every observation, mask, reward, done, info and ``state()``.

    def step(self, action: int | np.integer | None) -> None:
        """Take ``action`` (an index into ``action_labels``) for the selected agent."""
        b = self.battle
        if b is None or type(action) is not int or not self.agents:
            return super().step(action)  # the checks and their errors, or a dead step
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent] or not (
                0 <= action < self._n_actions):
            return super().step(action)
        pb = b._b
        decider = pb.aec_step(action)
        if decider == -2:  # illegal (nothing changed): raise or forfeit as TravellerEnv does
            return super().step(action)
        # Below: TravellerEnv.step after ``b.apply``, term for term.
        b._taken.append(action)
        b.version += 1
        events = b.events
        first_event = len(events)
        pb.aec_events(events)
        self._cumulative_rewards[agent] = 0.0
        self._cursor[agent] = first_event
        if self._rewards_dirty:
            self._clear_rewards()
        gained, dones_changed = self._score()
        self._rewards_dirty = gained
        if gained:
            self._accumulate_rewards()
        if decider >= 0:
            self.agent_selection = b.ids[decider]
        if dones_changed:
            self._update_dones()
            self._deads_step_first()
            for a in self.agents:
                if self.terminations[a] or self.truncations[a]:
                    self._refresh_info(a)
        sel = self.agent_selection
        infos = self.infos
        if sel in infos:  # _refresh_info(sel), inlined
            infos[sel] = {"events": events[self._cursor[sel]:], "phase": pb.phase,
                          "round": pb.round}
        if self._check_invariants:
            self._run_invariant_checks(first_event)
        return None

    def last(self, observe: bool = True) -> tuple:
        """``(observation, cumulative reward, terminated, truncated, info)`` of the selected
        agent (PettingZoo's ``last``)."""
        if self.battle is None:
            self._require_reset("last()")
        if not self.agents:
            raise RuntimeError("last() called after the episode is over (every agent is "
                               "done): call reset()")
        agent = self.agent_selection
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], self.infos[agent])

    def _refresh_info(self, agent: str) -> None:
        infos = self.infos
        if agent in infos:
            b = self.battle
            pb = b._b
            infos[agent] = {"events": b.events[self._cursor[agent]:], "phase": pb.phase,
                            "round": pb.round}

    def _score(self) -> tuple[bool, bool]:
        """``TravellerEnv._score`` on the core's counters (same terms, same order, so the same
        floats): damage since the last step (read only when damage rewards are on), rounds
        begun, dropouts, the outcome."""
        pb = self.battle._b
        r = self.scenario.rewards
        live = self.rewards
        gained = dones = False
        if self._damage_rewards:
            dealt, taken, _ = pb.summary()
            last_dealt, last_taken = self._last_damage
            if dealt != last_dealt or taken != last_taken:
                for i, cid in enumerate(self.possible_agents):
                    d = dealt[i] - last_dealt[i]
                    if d:
                        gained = True
                        self._give(cid, r.damage_dealt * d, r.shared)
                    t = taken[i] - last_taken[i]
                    if t:
                        gained = True
                        self._give(cid, r.damage_taken * t, r.shared)
                self._last_damage = (dealt, taken)
        rnd = pb.round
        if r.per_round and rnd > self._last_round:
            gained = True
            seat = self._seat
            for a in live:
                if not pb.out(seat[a]):  # not to one awaiting its dead step
                    live[a] += r.per_round * (rnd - self._last_round)
        dropouts = pb.dropouts
        if dropouts != self._last_dropouts:
            dones = True
            self._last_dropouts = dropouts
        if pb.done:
            gained = dones = True
            w = pb.winner
            names = self.battle.side_names
            for a in live:
                if w < 0:
                    live[a] += r.draw
                elif names[self._side_of[a]] == names[w]:
                    live[a] += r.win
                else:
                    live[a] += r.loss
        self._last_round = rnd
        return gained, dones

    @property
    def view(self) -> BattleView:
        """A read-only view of the current battle (the Python engine's twin of the core's)."""
        if self.battle is None:
            raise RuntimeError("call reset() before reading the battle view")
        return BattleView(self.battle.python)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``{"observation": float32 vector, "action_mask": int8 mask}`` for ``agent`` (new
        arrays, written by the core in one call)."""
        b = self.battle
        seat = self._seat.get(agent)
        if b is None or seat is None:
            self._require_reset("observe()")
            self._check_agent(agent)
        obs = _empty(self._obs_dim, _FLOAT32)  # (positional dtype objects: half the cost)
        mask = _empty(self._n_actions, _INT8)
        b._b.aec_observe(seat, agent == self.agent_selection, obs, mask)
        return {"observation": obs, "action_mask": mask}

    def observation_vector(self, agent: str) -> np.ndarray:
        """Only the float32 observation vector of ``agent``, from the core."""
        if self.battle is None or agent not in self._side_of:
            self._require_reset("observation_vector()")
            self._check_agent(agent)
        out = np.empty(self._obs_dim, dtype=np.float32)
        self.battle._b.observe(self._seat[agent], out)
        return out

    def _mask_for(self, agent: str) -> np.ndarray:
        b = self.battle
        if isinstance(b, Battle):  # the twin, during the invariant checks
            return super()._mask_for(agent)
        mask = np.zeros(self._n_actions, dtype=np.int8)
        if agent == self.agent_selection and b._b.decider == self._seat[agent]:
            b._b.mask(mask.view(np.uint8))  # (decider is -1 once the battle is over)
        return mask

    def state(self) -> np.ndarray:
        """The global state vector (see ``state_labels``), from the core."""
        self._require_reset("state()")
        return self.battle.core.state()

    def render(self) -> str | np.ndarray | None:
        """As ``TravellerEnv.render``, drawn from the Python twin of the battle."""
        if self.render_mode is None or self.battle is None:
            return super().render()
        core_state = self.battle
        self.battle = core_state.python
        try:
            return super().render()
        finally:
            self.battle = core_state

    def _run_invariant_checks(self, first_event: int) -> None:
        """The Python engine's invariant checks on the twin, plus: the core's event log,
        observations and mask equal the twin's (a cross-check of the two engines)."""
        core_state = self.battle
        twin = core_state.python
        if core_state.events != twin.events:
            from .differential import first_difference

            raise AssertionError("the core's event log differs from the Python engine's: "
                                 + str(first_difference(twin.events, core_state.events)))
        for a in self.agents:
            mine = self.observation_vector(a)
            ref = self._obs_builder.observe(twin, a)
            if mine.tobytes() != ref.tobytes():
                j = int(np.flatnonzero(mine != ref)[0])
                raise AssertionError(f"{a}: the core's observation differs at "
                                     f"{self._obs_builder.labels[j]}: {mine[j]!r} vs {ref[j]!r}")
        self.battle = twin
        try:
            super()._run_invariant_checks(first_event)
        finally:
            self.battle = core_state
