"""A read-only view of a battle, for scripted policies and analysis.

``env.unwrapped.view`` (or ``BattleView(battle)``) answers questions about the battle without
exposing anything that could change it: combatants come back as ``CombatantView`` proxies whose
attributes are read-only, characteristic and skill maps are ``MappingProxyType``, and the event
log is a tuple. Policies use it to score actions (exact hit chances from the 2D6 distribution,
ranges, line of sight, cover) and never mutate the engine.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from traveller_env.rules.kinds import parse_action
from traveller_env.rules.vocabulary import Action

from .rules import attack as attack_rules
from .rules.attack import range_dm
from .rules.battle import Battle
from .rules.budget import Budget
from .rules.checks import success_probability
from .rules.dice import Dice
from .rules.equipment import Armour, Weapon
from .rules.movement import move_budget_m

__all__ = ["BattleView", "CombatantView"]

Square = tuple[int, int]


class CombatantView:
    """Read-only attributes of one combatant (see ``rules.combatant.Combatant``)."""

    __slots__ = ("_c",)

    def __init__(self, combatant) -> None:
        object.__setattr__(self, "_c", combatant)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("CombatantView is read-only")

    id = property(lambda self: self._c.id, doc="``<side>_<index>``")
    side = property(lambda self: self._c.side, doc="side index (0 or 1)")
    pos = property(lambda self: self._c.pos, doc="``(x, y)`` square")
    stance = property(lambda self: self._c.stance, doc="stand | crouch | prone")
    drawn = property(lambda self: self._c.drawn, doc="weapon drawn")
    ammo = property(lambda self: self._c.ammo, doc="rounds in the magazine")
    spares = property(lambda self: self._c.spares, doc="spare magazines")
    radio = property(lambda self: self._c.radio, doc="carries a radio (R7.2)")
    aim_target = property(lambda self: self._c.aim_target, doc="who it aims at, or None")
    aim_dm = property(lambda self: self._c.aim_dm, doc="aim DM held (R4.3)")
    hasty = property(lambda self: self._c.hasty, doc="declared haste this round")
    bonus = property(lambda self: self._c.bonus, doc="holds a leadership bonus")
    penalty = property(lambda self: self._c.penalty, doc="holds a leadership penalty")
    down = property(lambda self: self._c.down, doc="incapacitated (R6.3)")
    out = property(lambda self: self._c.out, doc="out of play")
    in_play = property(lambda self: not self._c.out, doc="still in play")
    acted = property(lambda self: self._c.turn_begun, doc="has begun its turn this round")
    minors = property(lambda self: self._c.minors, doc="Minor actions used this turn")
    significant = property(lambda self: self._c.significant, doc="Significant action used")
    initiative = property(lambda self: self._c.current_initiative,
                          doc="this round's Initiative")
    movement_m = property(lambda self: self._c.movement_m, doc="Movement score in metres")
    move_budget_m = property(lambda self: move_budget_m(self._c.movement_m, self._c.stance),
                             doc="metres one Move action covers now (R4.6: prone quarters it)")
    weapon: Weapon = property(lambda self: self._c.weapon, doc="the (immutable) weapon")
    armour: Armour = property(lambda self: self._c.armour, doc="the (immutable) armour")

    @property
    def chars(self) -> MappingProxyType:
        """Current characteristics (read-only)."""
        return MappingProxyType(self._c.chars)

    @property
    def max_chars(self) -> MappingProxyType:
        """Starting characteristics (read-only)."""
        return MappingProxyType(self._c.max_chars)

    @property
    def skills(self) -> MappingProxyType:
        """Skill levels (read-only)."""
        return MappingProxyType(self._c.skills)

    def dm(self, characteristic: str) -> int:
        """Characteristic DM from the current value (R1.3)."""
        return self._c.dm(characteristic)

    def __repr__(self) -> str:
        c = self._c
        return (f"CombatantView({c.id}, pos={c.pos}, {c.stance}, STR {c.chars['STR']} "
                f"DEX {c.chars['DEX']} END {c.chars['END']}{', out' if c.out else ''})")


class BattleView:
    """Read-only queries over a ``Battle``."""

    __slots__ = ("_b",)

    def __init__(self, battle: Battle) -> None:
        object.__setattr__(self, "_b", battle)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BattleView is read-only")

    round = property(lambda self: self._b.round, doc="the current round (1-based)")
    phase = property(lambda self: self._b.phase, doc="haste | turn | reaction | over")
    done = property(lambda self: self._b.done, doc="the battle is over")
    winner = property(lambda self: self._b.winner, doc="winning side name, or None")
    current_agent = property(lambda self: self._b.current_agent, doc="who decides now")
    side_names = property(lambda self: tuple(self._b.side_names), doc="the two side names")
    grid = property(lambda self: self._b.grid, doc="the map (immutable)")
    max_rounds = property(lambda self: self._b.options.max_rounds, doc="the round limit")
    comms_range_m = property(lambda self: self._b.options.comms_range_m, doc="R7.2 range")

    @property
    def events(self) -> tuple[dict, ...]:
        """The event log so far (a tuple; treat the dicts as read-only)."""
        return tuple(self._b.events)

    def combatant(self, cid: str) -> CombatantView:
        """One combatant by id."""
        return CombatantView(self._b.by_id[cid])

    def combatants(self) -> list[CombatantView]:
        """Every combatant, in scenario order (out-of-play ones included)."""
        return [CombatantView(c) for c in self._b.combatants]

    def allies(self, cid: str, in_play: bool = True) -> list[CombatantView]:
        """The combatant's side, itself excluded."""
        side = self._b.by_id[cid].side
        return [CombatantView(c) for c in self._b.combatants
                if c.side == side and c.id != cid and (not in_play or not c.out)]

    def enemies(self, cid: str, in_play: bool = True) -> list[CombatantView]:
        """The other side."""
        side = self._b.by_id[cid].side
        return [CombatantView(c) for c in self._b.combatants
                if c.side != side and (not in_play or not c.out)]

    def distance_m(self, a: str, b: str) -> float:
        """Range in metres between two combatants (R8.1)."""
        return self._b.distance_m(a, b)

    def line_of_sight(self, a: str, b: str) -> bool:
        """Line of sight between two combatants (R8.1)."""
        return self._b.line_of_sight(a, b)

    def in_cover_from(self, shooter: str, target: str) -> bool:
        """The target is crouched/prone behind low cover on the line from the shooter (R5.3)."""
        return self._b.in_cover_from(shooter, target)

    def range_dm(self, attacker: str, target: str) -> int | None:
        """R5.1 band DM of the attacker's weapon at the target (None: beyond 4x Range)."""
        a = self._b.by_id[attacker]
        if a.weapon.is_melee:
            return None
        return range_dm(self._b.distance_m(attacker, target), a.weapon.range_m)

    def attack_dms(self, attacker: str, target: str, *, apos: Square | None = None,
                   tpos: Square | None = None, tstance: str | None = None,
                   aim: int | None = None, hasty: bool | None = None) -> dict[str, int]:
        """The DMs an attack would take (before reactions and leadership bonuses): now, or
        with the attacker or target elsewhere, another target stance, aim or haste
        (``rules.attack.attack_dms``)."""
        b = self._b
        return attack_rules.attack_dms(b.by_id[attacker], b.by_id[target], b.grid, apos=apos,
                                       tpos=tpos, tstance=tstance, aim=aim, hasty=hasty)

    def attack_in_reach(self, attacker: str, target: str, *, apos: Square | None = None,
                        tpos: Square | None = None) -> bool:
        """R4.1 reach (adjacent for melee; line of sight and 4x Range for ranged), now or
        from hypothetical squares; drawn and loaded are not checked."""
        a, t = self._b.by_id[attacker], self._b.by_id[target]
        return attack_rules.in_attack_reach(a.weapon, self._b.grid,
                                            a.pos if apos is None else apos,
                                            t.pos if tpos is None else tpos)

    def hit_probability(self, attacker: str, target: str, extra_dm: int = 0) -> float:
        """Exact chance that the attack hits now (2D6), with an extra DM (e.g. aim, dodge)."""
        return success_probability(sum(self._b.attack_dms(attacker, target).values())
                                   + extra_dm)

    def budget(self, cid: str) -> Budget:
        """What the combatant has spent of its turn (R2.1; ``rules.budget.Budget``)."""
        return self._b.budget(cid)

    def budget_left(self, cid: str) -> tuple[bool, int]:
        """``(significant_available, minors_available)`` (R2.1)."""
        return self._b.budget_left(cid)

    def held_pools(self, cid: str) -> tuple[int, int]:
        """``(bonuses it may hand out, penalties it may impose)`` now (R7.5)."""
        return self._b.held_pools(cid)

    @property
    def pending_attack(self) -> dict | None:
        """The attack awaiting a reaction: attacker, target, melee, dms, range_m; or None."""
        p = self._b.pending_attack
        if p is None:
            return None
        return {"attacker": p.attacker, "target": p.target, "melee": p.melee,
                "dms": dict(p.dms), "range_m": p.range_m}

    def why_illegal(self, action: str | Action) -> str | None:
        """Why the deciding combatant cannot take ``action`` now (None when it can)."""
        return self._b.why_illegal(parse_action(action) if isinstance(action, str) else action)

    def legal_labels(self) -> list[str]:
        """Labels of every legal action for the deciding combatant."""
        return [a.label for a in self._b.legal_actions()]

    def simulate(self, seed: int) -> Battle:
        """An independent copy of the battle for look-ahead search, with *fresh* dice seeded
        by ``seed`` (a copy of the real dice would reveal future rolls). Changing the copy
        never affects the real battle."""
        twin = self._b.clone()
        twin.dice = Dice(seed)
        return twin
