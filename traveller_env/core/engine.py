"""The compiled core's battle, driven from Python: ``CoreBattle``.

The Python side loads and validates the scenario (``traveller_env.scenario.load_scenario``, the
same checks as for the Python engine) and hands the core flat data: one int32 row per combatant
(``INT_COLUMNS``: side, characteristics, square, stance, equipment numbers and the skill levels
the rules ask about, resolved here by ``rules.checks.skill_level``; -1 for "not held"), one
float64 row (movement, weapon range), the names the event log prints, the map's terrain codes
and the rules options. The binding checks every value again and raises ``ValueError`` naming
the field.

The core plays the same battle as ``scenario.build_battle(sc, dice=Dice(seed, generator="pcg"))``:
the same dice, the same decisions, the same event log (``events()`` gives the Python engine's
dicts, field for field), the same action catalogue (``labels``, in ``rules.kinds.KINDS`` order)
and mask. ``tests/core/test_core_engine.py`` and ``tests/diff_backends.py`` prove it on
built-in and fuzzed scenarios.

Not supported (refused, never approximated): action kinds registered with
``rules.kinds.register_kind`` beyond the built-in twelve (``NotImplementedError`` naming them),
and scripted dice (the core rolls only the shared PCG32 generator).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..layout import Layout
from ..rules.checks import skill_level
from ..rules.kinds import KINDS
from ..rules.reactions import DODGE_SKILL, UNARMED_SKILL
from ..rules.sequencing import TACTICS_SKILL, has_military_tactics
from . import require

__all__ = ["CORE_KINDS", "FLOAT_COLUMNS", "INT_COLUMNS", "CoreBattle", "core_layout",
           "flatten_scenario"]

#: The action kinds the core implements, in catalogue order.
CORE_KINDS = ("end_turn", "move", "stance", "draw", "reload", "aim", "attack", "leadership",
              "direct", "hamper", "react", "haste")
#: Columns of the combatants' int32 table (csrc/src/battle_binding.cpp ``Col``).
INT_COLUMNS = ("side", "STR", "DEX", "END", "INT", "EDU", "SOC", "x", "y", "stance", "drawn",
               "radio", "prepared", "melee", "magazine", "spare_magazines", "str_requirement",
               "draw_actions", "reload_actions", "damage_count", "damage_modifier",
               "needs_draw", "protection", "skill_weapon", "skill_unarmed", "skill_dodge",
               "skill_leadership", "skill_tactics", "has_tactics")
FLOAT_COLUMNS = ("movement", "range")
_STANCES = {"stand": 0, "crouch": 1, "prone": 2}
_TERRAIN = bytes.maketrans(b".~c#", bytes([0, 1, 2, 3]))


def _level(skills: Mapping[str, int], skill: str) -> int:
    level = skill_level(skills, skill)
    return -1 if level is None else level


def check_kinds() -> None:
    """``NotImplementedError`` when the action kinds table is not the core's."""
    if tuple(KINDS) != CORE_KINDS:
        extra = [k for k in KINDS if k not in CORE_KINDS]
        raise NotImplementedError(
            f"the compiled core implements the action kinds {', '.join(CORE_KINDS)} in that "
            f"order; this process has {', '.join(KINDS)} (not in the core: "
            f"{', '.join(extra) or 'none, but reordered'}); use backend='python'")


def flatten_scenario(scenario: Any) -> dict[str, Any]:
    """The flat data the core's ``Battle.create`` takes (everything but the seed), from a
    scenario (name, path, dict or ``Scenario``), mirroring ``scenario.build_battle``."""
    from ..scenario import load_scenario, rules_options

    sc = load_scenario(scenario)
    weapons, armour = sc.all_weapons(), sc.all_armour()
    rows, frows, ids, wnames, dice = [], [], [], [], []
    for s, side in enumerate(sc.sides):
        for i, spec in enumerate(side.combatants):
            w = weapons[spec.weapon].to_weapon(spec.weapon)
            prepared = side.prepared if spec.prepared is None else spec.prepared
            ch = spec.characteristics
            skills = dict(spec.skills)
            rows.append([
                s, ch.STR, ch.DEX, ch.END, ch.INT, ch.EDU, ch.SOC, spec.position[0],
                spec.position[1], _STANCES[spec.stance],
                int(spec.drawn or prepared or not w.needs_draw), int(spec.radio), int(prepared),
                int(w.is_melee), w.magazine, w.spare_magazines, w.str_requirement,
                w.draw_actions, w.reload_actions, w.damage.count, w.damage.modifier,
                int(w.needs_draw), armour[spec.armour].protection, _level(skills, w.skill),
                _level(skills, UNARMED_SKILL), _level(skills, DODGE_SKILL),
                _level(skills, "leadership"), _level(skills, TACTICS_SKILL),
                int(has_military_tactics(skills))])
            frows.append([float(spec.movement), 0.0 if w.is_melee else float(w.range_m)])
            ids.append(f"{side.name}_{i}")
            wnames.append(spec.weapon)
            dice.append(str(w.damage))
    opts = rules_options(sc)
    terrain = "".join(sc.map.terrain) if sc.map.terrain else "." * (sc.map.width * sc.map.height)
    return {
        "grid": _grid(sc.map.width, sc.map.height, terrain),
        "ints": np.asarray(rows, dtype=np.int32).reshape(len(rows), len(INT_COLUMNS)),
        "floats": np.asarray(frows, dtype=np.float64).reshape(len(rows), len(FLOAT_COLUMNS)),
        "ids": ids, "weapons": wnames, "damage_dice": dice,
        "side_names": [s.name for s in sc.sides], "hastening": opts.hastening,
        "reactions": opts.reactions, "comms_range_m": float(opts.comms_range_m),
        "max_rounds": opts.max_rounds,
    }


def core_layout(layout: Layout | None) -> tuple[int, int, int, int] | None:
    """A ``Layout`` as the core takes it: ``(allies, enemies, map_size, max_move_squares)``, or
    ``None`` for none (the core checks the fields' ranges and the scenario's fit again)."""
    if layout is None:
        return None
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a traveller_env.layout.Layout or None, got "
                        f"{type(layout).__name__} (resolve names with layout.resolve_layout)")
    return (layout.allies, layout.enemies, layout.map_size, layout.max_move_squares)


@functools.lru_cache(maxsize=64)
def _grid(width: int, height: int, terrain: str) -> Any:
    # Maps are immutable: battles of one scenario share one core Grid (and its LOS tables).
    return require().Grid.create(width, height, terrain.encode().translate(_TERRAIN))


class CoreBattle:
    """One battle on the compiled core (see the module docstring).

    ``step(index)`` takes an action of the catalogue (``ValueError`` naming the seat, the
    label and the reason when it is illegal; nothing changes then), ``mask()`` gives the int8
    mask, ``why_illegal(index)`` the reason or ``None``, ``events(start)`` the log's dicts,
    ``forfeit(label, reason)`` the penalize mode's do-nothing default, ``observe(agent)`` and
    ``state()`` the observation vector and the global state (``traveller_env.observations``;
    ``move_view=True`` appends the move view, ``ObservationBuilder(move_view=True)``, and
    ``aim_view=True`` the aim view after it, ``attack_view=True`` the attack view last;
    ``layout``, a ``traveller_env.layout.Layout``, lays them out as
    ``ObservationBuilder(layout=)`` does: ``ValueError`` naming the limit when the scenario
    does not fit it).
    """

    def __init__(self, scenario: str | Path | Mapping[str, Any] | Any, seed: int,
                 record_events: bool = True, *, flat: dict[str, Any] | None = None,
                 move_view: bool = False, aim_view: bool = False,
                 attack_view: bool = False, layout: Layout | None = None) -> None:
        check_kinds()
        if flat is None:  # ``flat``: flatten_scenario(scenario), when the caller keeps it
            flat = flatten_scenario(scenario)
        self._attach(require().Battle.create(seed=seed, record_events=record_events,
                                             move_view=move_view, aim_view=aim_view,
                                             attack_view=attack_view,
                                             layout=core_layout(layout), **flat),
                     flat["ids"], flat["side_names"])

    def _attach(self, handle: Any, ids: list[str], side_names: list[str],
                labels: list[str] | None = None) -> None:
        """Hold ``handle`` (a ``_core.Battle``) with its scenario's names; the action labels
        are read from it unless given (a copy shares its battle's)."""
        self._b = handle
        self.ids: list[str] = ids
        self.side_names: list[str] = side_names
        self.n_actions: int = handle.num_actions
        self.labels: list[str] = (labels if labels is not None
                                  else [handle.label(i) for i in range(self.n_actions)])
        self._mask = np.zeros(self.n_actions, dtype=np.uint8)

    @property
    def done(self) -> bool:
        """True once the battle is over."""
        return self._b.done

    @property
    def truncated(self) -> bool:
        """True when the battle ended by ``max_rounds``."""
        return self._b.truncated

    @property
    def current_agent(self) -> str | None:
        """The combatant that decides now (``None`` once over)."""
        d = self._b.decider
        return None if d < 0 else self.ids[d]

    @property
    def phase(self) -> str:
        """``haste``, ``turn``, ``reaction`` or ``over``."""
        return self._b.phase

    @property
    def winner(self) -> str | None:
        """The winning side's name, or ``None``."""
        w = self._b.winner
        return None if w < 0 else self.side_names[w]

    @property
    def round(self) -> int:
        """The current round."""
        return self._b.round

    def mask(self) -> np.ndarray:
        """int8 ``[n_actions]``: 1 where the action is legal now (a new array)."""
        self._b.mask(self._mask)
        return self._mask.view(np.int8).copy()

    def why_illegal(self, index: int) -> str | None:
        """Why action ``index`` is refused now, or ``None`` when it is legal."""
        return self._b.why_illegal(index)

    def step(self, index: int) -> None:
        """Take action ``index``."""
        self._b.step(index)

    def forfeit(self, label: str, reason: str) -> None:
        """Record an illegal choice and take the do-nothing default (``Battle.forfeit``)."""
        self._b.forfeit(label, reason)

    @property
    def num_events(self) -> int:
        """Events recorded so far."""
        return self._b.num_events

    def events(self, start: int = 0) -> list[dict]:
        """The event log from ``start``: the Python engine's dicts, field for field."""
        return self._b.events(start)

    def summary(self) -> tuple[dict[str, int], dict[str, int], int]:
        """``(damage dealt, damage taken, dropouts)`` like ``Battle.summary``."""
        dealt, taken, dropouts = self._b.summary()
        return dict(zip(self.ids, dealt, strict=True)), dict(zip(self.ids, taken, strict=True)), \
            dropouts

    @property
    def observation_size(self) -> int:
        """Entries of one observation vector (``len(ObservationBuilder.labels)``)."""
        return self._b.observation_size

    @property
    def state_size(self) -> int:
        """Entries of the global state (``ObservationBuilder.state_size``)."""
        return self._b.state_size

    def seat(self, agent: str | int) -> int:
        """The seat (scenario-order index) of an agent id, or a seat checked for range."""
        if isinstance(agent, str):
            try:
                return self.ids.index(agent)
            except ValueError:
                raise ValueError(f"agent must be one of {self.ids}, got {agent!r}") from None
        return agent  # an int: checked by the core (ValueError naming "seat")

    def observe(self, agent: str | int, out: np.ndarray | None = None) -> np.ndarray:
        """``agent``'s observation vector (an agent id or a seat), float32, equal bit for bit
        to ``ObservationBuilder.observe(battle, agent)`` on the Python engine's battle; written
        into ``out`` (float32 ``[observation_size]``) when given, else a new array."""
        if out is None:
            out = np.empty(self._b.observation_size, dtype=np.float32)
        self._b.observe(self.seat(agent), out)
        return out

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """The global state, float32, equal bit for bit to ``ObservationBuilder.state``;
        written into ``out`` (float32 ``[state_size]``) when given, else a new array."""
        if out is None:
            out = np.empty(self._b.state_size, dtype=np.float32)
        self._b.state(out)
        return out

    def dice_state(self) -> tuple[int, int]:
        """The dice generator's ``(state, inc)`` (the Python ``Pcg32.getstate()`` pair)."""
        return self._b.dice_state()

    def snapshot(self) -> bytes:
        """The complete state, dice included, as bytes: ``traveller_env.rules.snapshot``'s
        format, byte for byte what the Python engine's ``Battle.snapshot()`` writes for the same
        state (so either engine restores it)."""
        return self._b.snapshot()

    def restore(self, data: bytes) -> None:
        """Put a snapshot (of either engine) back into this battle of the same scenario;
        ``ValueError`` naming what is wrong (magic, version, checksum, another scenario, a value
        out of range) leaves it unchanged. The event log restarts empty."""
        self._b.restore(data)

    def simulate(self, seed: int, record_events: bool = False, *,
                 move_view: bool | None = None, aim_view: bool | None = None,
                 attack_view: bool | None = None) -> CoreBattle:
        """An independent copy for look-ahead search, with *fresh* dice seeded by ``seed`` (the
        core's ``BattleView.simulate``: a copy of the real dice would reveal future rolls).
        Changing the copy never affects this battle. ``record_events=False`` (the default)
        starts the copy with an empty log and records nothing, which is what makes a copy
        cheap; the views (``None``: this battle's) set what the copy's ``observe`` writes."""
        twin = object.__new__(CoreBattle)
        twin._attach(self._b.simulate(seed, record_events, move_view, aim_view, attack_view),
                     self.ids, self.side_names, self.labels)
        return twin

    @property
    def handle(self) -> Any:
        """The ``_core.Battle`` itself, for the core's own callers: an in-core policy plays
        ``_core.Policy(name).act(battle.handle, seat)``."""
        return self._b
