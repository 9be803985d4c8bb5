"""The action kinds: one description per kind, in one table.

Each ``ActionKind`` says everything the rest of the project needs about one kind of action:

* ``phase``: the decision it answers (``turn``, ``haste`` or ``reaction``);
* ``cost``: ``minor`` or ``significant`` (R2.1), ``free`` (R7.5), ``end`` (``end_turn``) or
  ``answer`` (a haste declaration or a reaction);
* ``args``: how its labels name an argument (``none``, a target ``combatant``, one of
  ``choices``, or ``move`` for a direction and a number of squares);
* ``legal(ctx)``: its legal arguments now, grouped (the fast path of the action mask), or
  ``always``: the same legal arguments whenever the budget allows the kind;
* ``why_not(ctx, action)``: why one action of the kind is refused (``None``: it is legal),
  the readable reference the mask is tested against;
* ``apply(battle, actor, action)``: what it does to the battle.

A kind sees the battle only through ``effects.BattleEffects`` (what it may read, ask and
do: log an event, move, attack, end the turn, ...), which ``battle.Battle`` implements.

``KINDS`` (in action-catalogue order) is the table that the engine's legality and dispatch,
the action catalogue and mask (``traveller_env.encoding``), label parsing (``parse_action``,
here), the SB3 bridge's focus sets and the invariant checker all derive from. A new kind is
one subclass registered with ``register_kind`` (docs/environment.md, "Adding an action
kind"); the budget (R2.1), aim breaking (R4.3) and draw/reload progress (R4.5) are applied
generically from ``cost``, ``keeps_aim`` and ``keeps_ready``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from . import attack as attack_rules
from .budget import Budget, BudgetState
from .checks import roll_check
from .effects import BattleEffects
from .events import EVENT_KINDS, EventKind
from .grid import DIRECTIONS
from .leadership import can_communicate, leadership_dms
from .movement import move_budget_m
from .reactions import can_parry
from .vocabulary import REACTIONS, STANCES, Action

if TYPE_CHECKING:  # pragma: no cover
    from .combatant import Combatant

__all__ = ["KINDS", "ActionKind", "KindContext", "kind_names", "parse_action", "phase_dispatch",
           "register_kind", "unregister_kind"]

COSTS = ("minor", "significant", "free", "end", "answer")
ARG_FORMS = ("none", "combatant", "choice", "move")


class KindContext:
    """What every kind's ``legal`` and ``why_not`` read about the decision being made: the
    battle, the deciding combatant, its budget and (computed once, on demand) the enemies in
    play."""

    __slots__ = ("_enemies", "actor", "battle", "budget")

    def __init__(self, battle: BattleEffects, actor: Combatant, budget: Budget) -> None:
        self.battle = battle
        self.actor = actor
        self.budget = budget
        self._enemies: list[Combatant] | None = None

    @property
    def enemies(self) -> list[Combatant]:
        """Enemies still in play, in scenario order."""
        if self._enemies is None:
            side = self.actor.side
            self._enemies = [c for c in self.battle.combatants if not c.out and c.side != side]
        return self._enemies


class ActionKind:
    """One kind of action (see the module docstring). Subclasses set the class attributes
    and override ``legal``, ``why_not`` and ``apply``."""

    name: str = ""
    phase: str = "turn"
    cost: str = "minor"
    args: str = "none"
    choices: tuple[str, ...] = ()
    rules: str = ""
    #: Draw/reload progress (R4.5) survives this kind.
    keeps_ready: bool = False
    #: The legal arguments when they never depend on the battle (once the budget allows the
    #: cost): ``legal`` returns them and the mask's dispatch does not even ask. ``None``:
    #: they depend on it; override ``legal``.
    always: tuple | None = None
    #: New event types this kind emits (``events.EventKind`` by type), registered with it.
    events: dict[str, EventKind] = {}

    # ------------------------------------------------------------------ labels
    @property
    def pattern(self) -> str:
        """The label pattern, for error messages (``attack:<agent>``)."""
        if self.args == "none":
            return self.name
        if self.args == "combatant":
            return f"{self.name}:<agent>"
        if self.args == "choice":
            return f"{self.name}:<{'|'.join(self.choices)}>"
        return f"{self.name}:<{'|'.join(DIRECTIONS)}>:<n>"

    def candidates(self, ids: Sequence[str], max_squares: int) -> list[Action]:
        """Every action of this kind that could concern some combatant of the battle."""
        if self.args == "none":
            return [Action(self.name)]
        if self.args == "combatant":
            return [Action(self.name, i) for i in ids]
        if self.args == "choice":
            return [Action(self.name, c) for c in self.choices]
        return [Action(self.name, None, d, n) for d in DIRECTIONS
                for n in range(1, max_squares + 1)]

    def parse(self, parts: list[str]) -> Action | None:
        """The action a split label names, or ``None`` when it does not fit the pattern."""
        if self.args == "none":
            return Action(self.name) if len(parts) == 1 else None
        if self.args == "move":
            if len(parts) == 3 and parts[1] in DIRECTIONS and parts[2].isdigit():
                squares = int(parts[2])
                if squares >= 1:
                    return Action(self.name, None, parts[1], squares)
            return None
        if len(parts) != 2 or not parts[1]:
            return None
        if self.args == "choice" and parts[1] not in self.choices:
            return None
        return Action(self.name, parts[1])

    @staticmethod
    def key(action: Action) -> Any:
        """The argument by which ``legal`` names an action (``None``, a target, a choice, or
        ``(direction, squares)``)."""
        return action.arg if action.kind != "move" else (action.direction, action.squares)

    # ------------------------------------------------------------------ rules
    def keeps_aim(self, actor: Combatant, action: Action) -> bool:
        """Whether taking ``action`` leaves the actor's aim in place (R4.3: any other Minor or
        Significant action breaks it)."""
        return False

    def legal(self, ctx: KindContext) -> Any:
        """The legal arguments now, once the budget allows the kind's cost: a tuple of keys
        (``(None,)`` for a legal kind without argument), or for ``move`` the most squares per
        direction."""
        if self.always is not None:
            return self.always
        raise NotImplementedError

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        """Why ``action`` is refused once the budget allows the kind's cost, or ``None``."""
        raise NotImplementedError

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        """Carry out a legal action (the budget is already spent)."""
        raise NotImplementedError


# ============================================================================ targets
def _target(ctx: KindContext, tid: str | None, what: str) -> Combatant | str:
    """An enemy in play named ``tid``, or why it cannot be ``what`` (aimed at, attacked)."""
    t = ctx.battle.by_id.get(tid)
    if t is None:
        return f"no combatant named {tid!r}"
    if t.out:
        return f"{tid} is out of the fight"
    if t.side == ctx.actor.side:
        return f"{tid} is on {ctx.actor.id}'s own side; only enemies can be {what}"
    return t


def _weapon_ready(c: Combatant) -> bool:
    return c.drawn or not c.weapon.needs_draw


# ============================================================================ the kinds
class EndTurn(ActionKind):
    """``end_turn`` (R4.7): give up what is left of the budget."""

    name, cost, rules, always = "end_turn", "end", "R4.7 R2.3", (None,)

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        battle.end_turn("chosen")


class Move(ActionKind):
    """``move:<dir>:<n>`` (R4.6, R8.1): a straight move of ``n`` squares."""

    name, args, rules = "move", "move", "R4.6 R8.1"

    def legal(self, ctx: KindContext) -> tuple[int, ...]:
        return ctx.battle.reach(ctx.actor)

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        return ctx.battle.walk_refusal(ctx.actor, action.direction, action.squares)

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        budget = move_budget_m(actor.movement_m, actor.stance)
        # Legal, so the map's cached walk is the whole path (occupancy was checked).
        path, metres = battle.grid.walked(actor.pos, action.direction, budget, action.squares,
                                          battle.max_move_squares)
        before = actor.pos
        actor.pos = path[-1]
        battle.emit({"type": "move", "actor": actor.id, "from": list(before),
                    "to": list(actor.pos), "metres": metres})


_OTHER_STANCES = {st: tuple(o for o in STANCES if o != st) for st in STANCES}


class Stance(ActionKind):
    """``stance:<stand|crouch|prone>`` (R4.4)."""

    name, args, choices, rules = "stance", "choice", STANCES, "R4.4"

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        return _OTHER_STANCES[ctx.actor.stance]

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        return f"already {action.arg}" if ctx.actor.stance == action.arg else None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        before = actor.stance
        actor.stance = action.arg
        battle.emit({"type": "stance", "actor": actor.id, "from": before, "to": action.arg})


class Draw(ActionKind):
    """``draw`` (R4.5): ready the weapon, over ``draw_actions`` consecutive Minor actions."""

    name, rules, keeps_ready = "draw", "R4.5", True

    def legal(self, ctx: KindContext) -> tuple:
        a = ctx.actor
        return (None,) if a.weapon.needs_draw and not a.drawn else ()

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        if not ctx.actor.weapon.needs_draw:
            return "bare hands need no draw (R4.5)"
        return "weapon already drawn" if ctx.actor.drawn else None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        if battle.ready_step(actor, "draw", actor.weapon.draw_actions):
            actor.drawn = True


class Reload(ActionKind):
    """``reload`` (R4.5): refill an empty magazine from a spare."""

    name, rules, keeps_ready = "reload", "R4.5", True

    def legal(self, ctx: KindContext) -> tuple:
        a = ctx.actor
        return (None,) if not a.weapon.is_melee and a.ammo <= 0 and a.spares > 0 else ()

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        a = ctx.actor
        if a.weapon.is_melee:
            return "a melee weapon has nothing to reload"
        if a.ammo > 0:
            return "the magazine is not empty (R4.5)"
        return None if a.spares > 0 else "no spare magazine left (R4.5)"

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        if battle.ready_step(actor, "reload", actor.weapon.reload_actions):
            actor.spares -= 1
            actor.ammo = actor.weapon.magazine


class Aim(ActionKind):
    """``aim:<agent>`` (R4.3): +1 to the next ranged attack on that enemy, up to +6."""

    name, args, rules = "aim", "combatant", "R4.3 R5.2"

    def keeps_aim(self, actor: Combatant, action: Action) -> bool:
        return True  # aiming at another target breaks the old aim in ``apply``

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        a = ctx.actor
        if a.weapon.is_melee or not a.drawn:
            return ()
        los, pos = ctx.battle.grid.line_of_sight, a.pos
        return tuple(t.id for t in ctx.enemies if los(pos, t.pos))

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        t = _target(ctx, action.arg, "aimed at")
        if isinstance(t, str):
            return t
        a = ctx.actor
        if a.weapon.is_melee:
            return "aiming needs a ranged weapon (R4.3)"
        if not a.drawn:
            return f"the {a.weapon.name} is not drawn (R4.3)"
        if not ctx.battle.grid.line_of_sight(a.pos, t.pos):
            return f"no line of sight to {action.arg} (R4.3)"
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        if actor.aim_target not in (None, action.arg):
            battle.break_aim(actor)
        actor.aim_dm = attack_rules.next_aim_dm(actor.aim_target, actor.aim_dm, action.arg)
        actor.aim_target = action.arg
        battle.emit({"type": "aim", "actor": actor.id, "target": action.arg,
                    "aim": actor.aim_dm})


class Attack(ActionKind):
    """``attack:<agent>`` (R4.1, R5, R6): declared now, resolved after the target's
    reaction (R3.6)."""

    name, cost, args, rules = "attack", "significant", "combatant", "R4.1 R5 R6"

    def keeps_aim(self, actor: Combatant, action: Action) -> bool:
        return action.arg == actor.aim_target  # the attack spends it itself (R4.3)

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        a = ctx.actor
        w = a.weapon
        if not _weapon_ready(a) or (not w.is_melee and a.ammo <= 0):
            return ()
        reach = attack_rules.attack_reach(w, ctx.battle.grid, a.pos)
        return tuple(t.id for t in ctx.enemies if reach(t.pos))

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        tid = action.arg
        t = _target(ctx, tid, "attacked")
        if isinstance(t, str):
            return t
        a = ctx.actor
        w = a.weapon
        if not _weapon_ready(a):
            return f"the {w.name} is not drawn (R4.1)"
        grid = ctx.battle.grid
        if w.is_melee:
            if attack_rules.in_attack_reach(w, grid, a.pos, t.pos):
                return None
            return f"{tid} is not adjacent: a melee attack needs an adjacent target (R4.1)"
        if a.ammo <= 0:
            return f"the {w.name} is empty: reload first (R4.1)"
        if not grid.line_of_sight(a.pos, t.pos):
            return f"no line of sight to {tid} (R4.1, R8.1)"
        if not attack_rules.in_attack_reach(w, grid, a.pos, t.pos):
            dist = grid.distance_m(a.pos, t.pos)
            return (f"{tid} is {dist:.1f} m away, beyond 4x the {w.name}'s range of "
                    f"{w.range_m:g} m (R5.1)")
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        battle.declare_attack(actor, battle.by_id[action.arg])


class Leadership(ActionKind):
    """``leadership`` (R4.2, R7): a Leadership check whose Effect makes bonuses or
    penalties."""

    name, cost, rules = "leadership", "significant", "R4.2 R7"
    always = (None,)  # legal whenever a Significant action is (R7.4: unskilled too)

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        dms = leadership_dms(actor)
        battle.apply_held(actor, dms, "leadership")
        roll, total, effect = roll_check(battle.dice, dms)
        bonuses, penalties = max(0, effect), max(0, -effect)
        battle.emit({"type": "leadership", "actor": actor.id, "roll": roll, "dms": dms,
                    "total": total, "effect": effect, "bonuses": bonuses,
                    "penalties": penalties})
        battle.pools.add(actor.id, "bonus", bonuses)
        battle.pools.add(actor.id, "penalty", penalties)


class Direct(ActionKind):
    """``direct:<agent>`` (R7.1-R7.3, R7.5): hand one of the leader's bonuses to an ally."""

    name, cost, args, rules = "direct", "free", "combatant", "R7.1 R7.2 R7.3 R7.5"

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        b, a = ctx.battle, ctx.actor
        if not b.pools.entries or b.pools.bonus_pool(a.id) is None:
            return ()
        grid, comms = b.grid, b.options.comms_range_m
        return tuple(r.id for r in b.combatants
                     if not r.out and r.side == a.side and r is not a and not r.bonus
                     and can_communicate(a, r, grid, comms))

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        b, a, tid = ctx.battle, ctx.actor, action.arg
        r = b.by_id.get(tid)
        if r is None:
            return f"no combatant named {tid!r}"
        if r.out:
            return f"{tid} is out of the fight"
        if b.pools.bonus_pool(a.id) is None:
            return "no leadership bonus to hand out (R7.1)"
        if r.side != a.side or r is a:
            return "bonuses go to other combatants of the leader's own side (R7.1)"
        if r.bonus:
            return f"{tid} already holds a bonus (R7.3)"
        if not can_communicate(a, r, b.grid, b.options.comms_range_m):
            return (f"{tid} is beyond communication range "
                    f"({b.options.comms_range_m:g} m, or both with radios) (R7.2)")
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        r = battle.by_id[action.arg]
        pool = battle.pools.bonus_pool(actor.id)
        r.bonus = True
        battle.emit({"type": "bonus_granted", "actor": actor.id, "target": r.id})
        battle.pools.take_one(pool)


class Hamper(ActionKind):
    """``hamper:<agent>`` (R7.3-R7.5): impose one of a penalty pool on an enemy of it."""

    name, cost, args, rules = "hamper", "free", "combatant", "R7.3 R7.4 R7.5"

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        b, a = ctx.battle, ctx.actor
        if not b.pools.entries:
            return ()
        penalised = b.pools.penalised_sides()
        penalised.discard(a.side)
        if not penalised:
            return ()
        return tuple(r.id for r in b.combatants
                     if not r.out and r.side in penalised and not r.penalty)

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        b, a, tid = ctx.battle, ctx.actor, action.arg
        r = b.by_id.get(tid)
        if r is None:
            return f"no combatant named {tid!r}"
        if r.out:
            return f"{tid} is out of the fight"
        if r.side == a.side:
            return "penalties are imposed on the other side (R7.4)"
        if b.pools.penalty_pool(r.side) is None:
            return f"no leadership penalty available against {b.side_names[r.side]} (R7.4)"
        if r.penalty:
            return f"{tid} already holds a penalty (R7.3)"
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        r = battle.by_id[action.arg]
        pool = battle.pools.penalty_pool(r.side)
        r.penalty = True
        battle.emit({"type": "penalty_imposed", "actor": actor.id, "target": r.id,
                    "leader": pool.leader})
        battle.pools.take_one(pool)


class React(ActionKind):
    """``react:<none|dodge|parry>`` (R3.6): the target's answer to an attack."""

    name, phase, cost, args, choices, rules = ("react", "reaction", "answer", "choice",
                                               REACTIONS, "R3.6")

    def legal(self, ctx: KindContext) -> tuple[str, ...]:
        if can_parry(ctx.actor, ctx.battle.pending_attack.melee):
            return REACTIONS
        return ("none", "dodge")

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        if action.arg == "parry":
            if not ctx.battle.pending_attack.melee:
                return "parry is possible only against melee attacks (R3.6)"
            if not can_parry(ctx.actor, True):
                return ("parry needs a drawn melee weapon, or no weapon drawn to parry "
                        "unarmed (R3.6)")
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        battle.react(actor, action.arg)


class Haste(ActionKind):
    """``haste:<yes|no>`` (R3.5): a declaration at the start of the round."""

    name, phase, cost, args, choices, rules = ("haste", "haste", "answer", "choice",
                                               ("yes", "no"), "R3.5")
    always = choices

    def why_not(self, ctx: KindContext, action: Action) -> str | None:
        return None

    def apply(self, battle: BattleEffects, actor: Combatant, action: Action) -> None:
        battle.declare_haste(actor, action.arg == "yes")


#: Every action kind by name, in action-catalogue order.
KINDS: dict[str, ActionKind] = {
    k.name: k for k in (EndTurn(), Move(), Stance(), Draw(), Reload(), Aim(), Attack(),
                        Leadership(), Direct(), Hamper(), React(), Haste())
}


@lru_cache(maxsize=4096)
def parse_action(label: str) -> Action:
    """Parse an action label; raise ``ValueError`` naming the label when it is malformed."""
    if not isinstance(label, str):
        raise ValueError(f"action label must be a string, got {label!r}")
    parts = label.split(":")
    kind = KINDS.get(parts[0])
    action = kind.parse(parts) if kind is not None else None
    if action is None:
        patterns = [k.pattern for k in KINDS.values()]
        raise ValueError(f"unknown action label {label!r}; expected "
                         f"{', '.join(patterns[:-1])} or {patterns[-1]}")
    return action


def kind_names(**attrs: Any) -> frozenset[str]:
    """The names of the kinds whose attributes have the given values, e.g.
    ``kind_names(cost="minor")`` or ``kind_names(args="combatant")``."""
    return frozenset(k.name for k in KINDS.values()
                     if all(getattr(k, a) == v for a, v in attrs.items()))


_DISPATCH: dict[tuple, tuple[dict[str, tuple], tuple[tuple[str, Any], ...]]] = {}


def phase_dispatch(phase: str, state: BudgetState,
                   pools: bool) -> tuple[dict[str, tuple], tuple[tuple[str, Any], ...]]:
    """What ``Battle.legal_options`` walks for a decision of ``phase`` with budget ``state``
    (cached per phase, budget and ``pools``): a template of every kind of the phase in table
    order, mapping to ``()`` when R2.1 rules it out, to its legal arguments when they are
    ``always`` the same, else to ``()`` as a placeholder; and ``(name, bound legal)`` of each
    kind whose ``legal`` must be asked, in table order. Free actions hand out what a
    Leadership check left (R7.5), so ``free`` kinds are ruled out too when ``pools`` is
    false (no leadership pool exists)."""
    key = (phase, state.budget, pools)
    hit = _DISPATCH.get(key)
    if hit is None:
        allows = state.allows
        template: dict[str, tuple] = {}
        calls = []
        for k in KINDS.values():
            if k.phase != phase:
                continue
            if not allows.get(k.cost, True) or (k.cost == "free" and not pools):
                template[k.name] = ()
            elif k.always is not None:
                template[k.name] = k.always
            else:
                template[k.name] = ()
                calls.append((k.name, k.legal))
        hit = _DISPATCH[key] = (template, tuple(calls))
    return hit


def register_kind(kind: ActionKind) -> None:
    """Add a new kind at the end of the table (and so of the action catalogue). Battles and
    environments built afterwards offer it; ``ValueError`` on a clash or a bad description."""
    if not kind.name or ":" in kind.name or kind.name in KINDS:
        raise ValueError(f"action kind name {kind.name!r} is empty, has ':' or is taken")
    if kind.cost not in COSTS:
        raise ValueError(f"{kind.name}: cost {kind.cost!r}; allowed: {', '.join(COSTS)}")
    if kind.args not in ARG_FORMS:
        raise ValueError(f"{kind.name}: args {kind.args!r}; allowed: {', '.join(ARG_FORMS)}")
    if kind.phase not in ("turn", "haste", "reaction"):
        raise ValueError(f"{kind.name}: phase {kind.phase!r}; allowed: turn, haste, reaction")
    clash = sorted(set(kind.events) & set(EVENT_KINDS))
    if clash:
        raise ValueError(f"{kind.name}: event types {clash} already exist")
    EVENT_KINDS.update(kind.events)
    KINDS[kind.name] = kind
    _clear_caches()


def unregister_kind(name: str) -> None:
    """Remove a kind added by ``register_kind``, and its event types (tests clean up)."""
    kind = KINDS.pop(name)
    for event_type in kind.events:
        EVENT_KINDS.pop(event_type, None)
    _clear_caches()


def _clear_caches() -> None:
    _DISPATCH.clear()
    parse_action.cache_clear()
