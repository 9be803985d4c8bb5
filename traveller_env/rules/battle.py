"""The battle engine: a sequence of decision points over the rules R1-R8.

At every moment ``Battle.decision`` says who must decide and what kind of decision it is:

* ``"haste"``: a haste declaration at the start of a round (R3.5);
* ``"turn"``: an action in the combatant's turn (R2.1-R2.3);
* ``"reaction"``: a reaction to an attack in progress (R3.6); the attack waits for the answer.

``why_illegal(action)`` says why an action cannot be taken now (``None`` when it can),
``legal_actions()`` lists the candidates that can, and ``apply(action)`` takes one, refusing an
illegal one with ``IllegalActionError``. Every roll and every change is appended to ``events``
as a JSON-serialisable dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .actions import (
    MINOR_KINDS,
    SIGNIFICANT_KINDS,
    STANCES,
    Action,
    parse_action,
)
from .checks import characteristic_dm, roll_check, skill_dm, skill_level
from .combatant import Combatant
from .damage import apply_damage, is_dead, is_incapacitated
from .grid import DIRECTIONS, SQUARE_M, GridMap

__all__ = ["Battle", "Decision", "IllegalActionError", "RulesOptions", "TurnOptions", "range_dm"]


class IllegalActionError(ValueError):
    """An action refused by the engine; the message names the action and the reason."""

    def __init__(self, agent: str | None, label: str, reason: str) -> None:
        self.agent, self.label, self.reason = agent, label, reason
        who = f"{agent}: " if agent else ""
        super().__init__(f"{who}illegal action {label!r}: {reason}")


@dataclass(frozen=True)
class RulesOptions:
    """Rules switches a scenario may set (see README, "Rulings")."""

    hastening: bool = True
    reactions: bool = True
    comms_range_m: float = 30.0
    max_rounds: int = 20


class TurnOptions(NamedTuple):
    """What the deciding combatant may do in its turn (see ``Battle.turn_options``).
    ``leadership`` is legal whenever a Significant action is (R4.2, R7.4)."""

    significant: bool
    minors: int
    move_reach: dict[str, int]
    stances: tuple[str, ...]
    draw: bool
    reload: bool
    aim: tuple[str, ...]
    attack: tuple[str, ...]
    leadership: bool
    direct: tuple[str, ...]
    hamper: tuple[str, ...]


class Decision(NamedTuple):
    """Who must decide now, and what kind of decision: ``haste``, ``turn`` or ``reaction``."""

    kind: str
    agent: str


@dataclass(slots=True)
class _Pool:
    """Leadership bonuses (for the leader to hand out) or penalties (for the other side)."""

    leader: str
    kind: str  # "bonus" | "penalty"
    count: int


@dataclass(slots=True)
class _PendingAttack:
    attacker: str
    target: str
    melee: bool
    dms: dict[str, int]
    range_m: float


_OTHER_STANCES = {st: tuple(o for o in STANCES if o != st) for st in STANCES}


def _move_budget_m(c: Combatant) -> float:
    """Metres one Move action may cover (R4.6: the Movement score, quartered when prone)."""
    return c.movement_m / 4 if c.stance == "prone" else c.movement_m


def range_dm(distance_m: float, weapon_range_m: float) -> int | None:
    """R5.1: DM for a ranged attack at ``distance_m``; ``None`` when beyond 4x Range."""
    if distance_m <= weapon_range_m / 4:
        return 1
    if distance_m <= weapon_range_m:
        return 0
    if distance_m <= 2 * weapon_range_m:
        return -2
    if distance_m <= 4 * weapon_range_m:
        return -4
    return None


class Battle:
    """One battle: state, rules and event log. Build it with ``traveller_env.scenario``.

    Parameters: the combatants (in scenario order), the two side names, the map, the rules
    options and the dice. Creating a battle rolls Initiative and Tactics (R3.1-R3.3) and
    starts round 1.
    """

    def __init__(self, combatants: Sequence[Combatant], side_names: Sequence[str],
                 grid: GridMap, options: RulesOptions, dice) -> None:
        self.combatants: list[Combatant] = list(combatants)
        self.by_id: dict[str, Combatant] = {c.id: c for c in self.combatants}
        self.side_names = list(side_names)
        self.grid = grid
        self.options = options
        self.dice = dice
        self.events: list[dict] = []
        self.round = 0
        self.phase = "start"
        self.done = False
        self.truncated = False
        self.winner: str | None = None
        self.turn_actor: str | None = None
        self._decider: str | None = None
        self._haste_queue: list[str] = []
        self._group: list[str] = []  # tied group (R2.5), fixed when its first member begins
        self._group_queue: list[str] = []
        self._pools: list[_Pool] = []
        self._pending: _PendingAttack | None = None
        # The most squares a Move action can cover in this battle (R4.6: 4 for humans).
        self.max_move_squares = max(1, max(int(c.movement_m // SQUARE_M)
                                           for c in self.combatants))
        self._roll_initiative()
        self._start_round()

    # ------------------------------------------------------------------ public queries
    @property
    def decision(self) -> Decision | None:
        """Who decides now and the kind of decision; ``None`` once the battle is over."""
        if self.done:
            return None
        return Decision(self.phase, self._decider)

    @property
    def current_agent(self) -> str | None:
        """The combatant that must decide now (``None`` once the battle is over)."""
        return None if self.done else self._decider

    @property
    def pending_attack(self) -> _PendingAttack | None:
        """The attack waiting for its target's reaction (R3.6): ``attacker``, ``target``,
        ``melee``, ``dms`` (before the reaction) and ``range_m``; ``None`` otherwise."""
        return self._pending

    def in_play(self, cid: str) -> bool:
        """True while the combatant takes part (R2.5: a downed member of the acting tied group
        stays in play until the group has finished)."""
        return not self.by_id[cid].out

    def able_ids(self) -> list[str]:
        """Ids of combatants still in play, in scenario order."""
        return [c.id for c in self.combatants if not c.out]

    def legal_actions(self, candidates: Iterable[Action] | None = None) -> list[Action]:
        """The legal actions among ``candidates`` (default: every action that could apply to
        the deciding combatant)."""
        if candidates is None:
            candidates = self.candidate_actions()
        return [a for a in candidates if self.why_illegal(a) is None]

    def candidate_actions(self) -> list[Action]:
        """Every action label that could ever concern the deciding combatant in this battle."""
        ids = [c.id for c in self.combatants]
        squares = self.max_move_squares
        acts = [Action("end_turn")]
        acts += [Action("move", None, d, n) for d in DIRECTIONS for n in range(1, squares + 1)]
        acts += [Action("stance", s) for s in STANCES]
        acts += [Action("draw"), Action("reload")]
        acts += [Action("aim", i) for i in ids]
        acts += [Action("attack", i) for i in ids]
        acts += [Action("leadership")]
        acts += [Action("direct", i) for i in ids]
        acts += [Action("hamper", i) for i in ids]
        acts += [Action("react", r) for r in ("none", "dodge", "parry")]
        acts += [Action("haste", h) for h in ("yes", "no")]
        return acts


    def distance_m(self, a: str, b: str) -> float:
        """Range in metres between two combatants (R8.1)."""
        return self.grid.distance_m(self.by_id[a].pos, self.by_id[b].pos)

    def line_of_sight(self, a: str, b: str) -> bool:
        """Line of sight between two combatants (R8.1)."""
        return self.grid.line_of_sight(self.by_id[a].pos, self.by_id[b].pos)

    def in_cover_from(self, shooter: str, target: str) -> bool:
        """R5.3/R8.1: the target is crouched or prone behind low cover next to it."""
        t = self.by_id[target]
        return t.stance != "stand" and self.grid.cover_between(self.by_id[shooter].pos, t.pos)

    def budget_left(self, cid: str) -> tuple[bool, int]:
        """``(significant_available, minors_available)`` for the combatant's turn (R2.1)."""
        c = self.by_id[cid]
        sig = not c.significant and c.minors <= 1
        minors = (1 if c.significant else 3) - c.minors
        return sig, max(0, minors)

    def held_pools(self, cid: str) -> tuple[int, int]:
        """``(bonuses it may hand out, penalties it may impose)`` right now (R7.5)."""
        if not self._pools:
            return 0, 0
        c = self.by_id[cid]
        bonuses = sum(p.count for p in self._pools if p.kind == "bonus" and p.leader == cid)
        penalties = sum(p.count for p in self._pools
                        if p.kind == "penalty" and self.by_id[p.leader].side != c.side)
        return bonuses, penalties

    def attack_dms(self, attacker: str, target: str) -> dict[str, int]:
        """The DMs an attack would take now, before any reaction and leadership bonus."""
        a, t = self.by_id[attacker], self.by_id[target]
        w = a.weapon
        dms = {"skill": skill_dm(a.skills, w.skill)}
        if w.is_melee:
            str_dm, dex_dm = a.dm("STR"), a.dm("DEX")
            if str_dm >= dex_dm:
                dms["STR"] = str_dm
            else:
                dms["DEX"] = dex_dm
        else:
            dms["DEX"] = a.dm("DEX")
            rdm = range_dm(self.grid.distance_m(a.pos, t.pos), w.range_m)
            # Beyond 4x Range the attack is illegal; -99 keeps hit chances at 0 for scoring.
            dms["range"] = rdm if rdm is not None else -99
            if a.aim_target == target and a.aim_dm:
                dms["aim"] = a.aim_dm
            if self.in_cover_from(attacker, target):
                dms["cover"] = -2
            if t.stance == "prone":
                dms["prone"] = -1
        if a.hasty:
            dms["haste"] = -1
        return dms

    def clone(self) -> Battle:
        """An independent copy (for search agents and tests); shares only the immutable map."""
        twin = Battle.__new__(Battle)
        twin.__dict__.update(self.__dict__)
        twin.combatants = [c.copy() for c in self.combatants]
        twin.by_id = {c.id: c for c in twin.combatants}
        twin.side_names = list(self.side_names)
        twin.dice = self.dice.clone()
        twin.events = list(self.events)
        twin._haste_queue = list(self._haste_queue)
        twin._group = list(self._group)
        twin._group_queue = list(self._group_queue)
        twin._pools = [_Pool(p.leader, p.kind, p.count) for p in self._pools]
        if self._pending is not None:
            p = self._pending
            twin._pending = _PendingAttack(p.attacker, p.target, p.melee, dict(p.dms), p.range_m)
        return twin

    # ------------------------------------------------------------------ legality
    def why_illegal(self, action: Action | str) -> str | None:
        """Why ``action`` cannot be taken now by the deciding combatant, or ``None`` if it can."""
        if isinstance(action, str):
            action = parse_action(action)
        if self.done:
            return "the battle is over"
        kind = action.kind
        actor = self.by_id[self._decider]
        if self.phase == "haste":
            if kind != "haste":
                return "only haste:yes or haste:no can be chosen during haste declarations (R3.5)"
            return None
        if self.phase == "reaction":
            if kind != "react":
                return "an attack awaits this combatant's reaction: react:none|dodge|parry (R3.6)"
            if action.arg == "parry":
                if not self._pending.melee:
                    return "parry is possible only against melee attacks (R3.6)"
                if not (actor.weapon.is_melee and (actor.drawn or not actor.weapon.needs_draw)):
                    return "parry needs a drawn melee weapon or bare hands (R3.6)"
            return None
        # turn phase
        if kind in ("haste", "react"):
            return f"{kind} is not possible during a turn"
        if kind == "end_turn":
            return None
        if kind in ("direct", "hamper"):
            return self._why_not_free(actor, action)
        sig, minors = self.budget_left(actor.id)
        if kind in SIGNIFICANT_KINDS and not sig:
            return ("no Significant action left this turn (R2.1: one Significant after at most "
                    "one Minor)")
        if kind in MINOR_KINDS and minors <= 0:
            return "no Minor action left this turn (R2.1)"
        if kind == "attack":
            return self._why_not_attack(actor, action.arg)
        if kind == "leadership":
            return None
        if kind == "aim":
            return self._why_not_aim(actor, action.arg)
        if kind == "stance":
            return f"already {action.arg}" if actor.stance == action.arg else None
        if kind == "draw":
            return self._why_not_draw(actor)
        if kind == "reload":
            return self._why_not_reload(actor)
        if kind == "move":
            path = self._move_path(actor, action.direction, action.squares)
            return path if isinstance(path, str) else None
        return f"unknown action kind {kind!r}"

    def turn_options(self) -> TurnOptions:
        """Everything the deciding combatant may do in its turn now, grouped by kind.

        The same answer as asking ``why_illegal`` about every action (tests check this on
        seeded and fuzzed battles), from the same rules checked once per kind and target
        instead of once per action, and without building the reasons.
        """
        if self.done or self.phase != "turn":
            raise RuntimeError(f"turn_options() needs a turn decision (phase: {self.phase})")
        actor = self.by_id[self._decider]
        sig, minors = self.budget_left(actor.id)
        w = actor.weapon
        ranged = not w.is_melee
        pos = actor.pos
        los = self.grid.line_of_sight
        enemies = [c for c in self.combatants if not c.out and c.side != actor.side]
        reach: dict[str, int] = {}
        stances: tuple[str, ...] = ()
        draw = reload = False
        aim: tuple[str, ...] = ()
        if minors > 0:  # R4.3, R4.5, R4.6
            reach = dict(zip(DIRECTIONS, self._reach(actor), strict=True))
            stances = _OTHER_STANCES[actor.stance]
            draw = w.needs_draw and not actor.drawn
            reload = ranged and actor.ammo <= 0 and actor.spares > 0
            if ranged and actor.drawn:
                aim = tuple(t.id for t in enemies if los(pos, t.pos))
        attack: tuple[str, ...] = ()
        if sig and (actor.drawn or not w.needs_draw):  # R4.1, R5.1
            if not ranged:
                attack = tuple(t.id for t in enemies
                               if max(abs(pos[0] - t.pos[0]), abs(pos[1] - t.pos[1])) <= 1)
            elif actor.ammo > 0:
                limit, dist = 4 * w.range_m, self.grid.distance_m
                attack = tuple(t.id for t in enemies
                               if los(pos, t.pos) and dist(pos, t.pos) <= limit)
        direct, hamper = self._free_targets(actor) if self._pools else ((), ())
        return TurnOptions(sig, minors, reach, stances, draw, reload, aim, attack, sig,
                           direct, hamper)

    def _free_targets(self, actor: Combatant) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Who ``actor`` may hand a bonus (``direct``) and impose a penalty on (``hamper``)
        now (R7.1-R7.4); the grouped form of ``_why_not_free``."""
        direct: tuple[str, ...] = ()
        hamper: tuple[str, ...] = ()
        if any(p.kind == "bonus" and p.leader == actor.id for p in self._pools):
            direct = tuple(r.id for r in self.combatants
                           if not r.out and r.side == actor.side and r is not actor
                           and not r.bonus and self._can_communicate(actor, r))
        penalised = {self.by_id[p.leader].side for p in self._pools if p.kind == "penalty"}
        penalised.discard(actor.side)
        if penalised:
            hamper = tuple(r.id for r in self.combatants
                           if not r.out and r.side in penalised and not r.penalty)
        return direct, hamper

    def _why_not_draw(self, actor: Combatant) -> str | None:
        if not actor.weapon.needs_draw:
            return "bare hands need no draw (R4.5)"
        return "weapon already drawn" if actor.drawn else None

    def _why_not_reload(self, actor: Combatant) -> str | None:
        if actor.weapon.is_melee:
            return "a melee weapon has nothing to reload"
        if actor.ammo > 0:
            return "the magazine is not empty (R4.5)"
        return None if actor.spares > 0 else "no spare magazine left (R4.5)"

    def _target(self, actor: Combatant, tid: str | None, what: str) -> Combatant | str:
        t = self.by_id.get(tid)
        if t is None:
            return f"no combatant named {tid!r}"
        if t.out:
            return f"{tid} is out of the fight"
        if t.side == actor.side:
            return f"{tid} is on {actor.id}'s own side; only enemies can be {what}"
        return t

    def _why_not_attack(self, actor: Combatant, tid: str | None) -> str | None:
        t = self._target(actor, tid, "attacked")
        if isinstance(t, str):
            return t
        w = actor.weapon
        if w.needs_draw and not actor.drawn:
            return f"the {w.name} is not drawn (R4.1)"
        if w.is_melee:
            if max(abs(actor.pos[0] - t.pos[0]), abs(actor.pos[1] - t.pos[1])) > 1:
                return f"{tid} is not adjacent: a melee attack needs an adjacent target (R4.1)"
            return None
        if actor.ammo <= 0:
            return f"the {w.name} is empty: reload first (R4.1)"
        if not self.grid.line_of_sight(actor.pos, t.pos):
            return f"no line of sight to {tid} (R4.1, R8.1)"
        dist = self.grid.distance_m(actor.pos, t.pos)
        if dist > 4 * w.range_m:
            return (f"{tid} is {dist:.1f} m away, beyond 4x the {w.name}'s range of "
                    f"{w.range_m:g} m (R5.1)")
        return None

    def _why_not_aim(self, actor: Combatant, tid: str | None) -> str | None:
        t = self._target(actor, tid, "aimed at")
        if isinstance(t, str):
            return t
        if actor.weapon.is_melee:
            return "aiming needs a ranged weapon (R4.3)"
        if not actor.drawn:
            return f"the {actor.weapon.name} is not drawn (R4.3)"
        if not self.grid.line_of_sight(actor.pos, t.pos):
            return f"no line of sight to {tid} (R4.3)"
        return None

    def _why_not_free(self, actor: Combatant, action: Action) -> str | None:
        tid = action.arg
        r = self.by_id.get(tid)
        if r is None:
            return f"no combatant named {tid!r}"
        if r.out:
            return f"{tid} is out of the fight"
        if action.kind == "direct":
            if not any(p.kind == "bonus" and p.leader == actor.id for p in self._pools):
                return "no leadership bonus to hand out (R7.1)"
            if r.side != actor.side or r is actor:
                return "bonuses go to other combatants of the leader's own side (R7.1)"
            if r.bonus:
                return f"{tid} already holds a bonus (R7.3)"
            if not self._can_communicate(actor, r):
                return (f"{tid} is beyond communication range "
                        f"({self.options.comms_range_m:g} m, or both with radios) (R7.2)")
            return None
        if r.side == actor.side:
            return "penalties are imposed on the other side (R7.4)"
        if not any(p.kind == "penalty" and self.by_id[p.leader].side == r.side
                   for p in self._pools):
            return f"no leadership penalty available against {self.side_names[r.side]} (R7.4)"
        if r.penalty:
            return f"{tid} already holds a penalty (R7.3)"
        return None

    def _can_communicate(self, a: Combatant, b: Combatant) -> bool:
        if a.radio and b.radio:
            return True
        return self.grid.distance_m(a.pos, b.pos) <= self.options.comms_range_m

    def _move_path(self, actor: Combatant, direction: str,
                   squares: int) -> list[tuple[int, int]] | str:
        """The squares a move enters, or why it cannot be made (R4.6, R8.1)."""
        path, reason = self._walk(actor, direction, squares)
        return path if reason is None else reason

    def _walk(self, actor: Combatant, direction: str,
              squares: int) -> tuple[list[tuple[int, int]], str | None]:
        """Walk up to ``squares`` steps; return the legal prefix and, if it stopped short,
        why the next step is refused. Legality is monotone: every prefix of a legal move is
        legal, so the prefix length is the longest legal move in that direction."""
        budget = _move_budget_m(actor)
        path, reason, cost_failure = self.grid.walk(actor.pos, direction, budget, squares)
        occupied = self._occupied(actor)
        for i, sq in enumerate(path):
            if sq in occupied:  # checked before the step's cost (R8.1)
                return list(path[:i]), f"step {i + 1} enters an occupied square {list(sq)} (R8.1)"
        if cost_failure:
            return list(path[:-1]), reason
        return list(path), reason

    def _occupied(self, actor: Combatant) -> set[tuple[int, int]]:
        return {c.pos for c in self.combatants if not c.out and c is not actor}

    def move_reach(self, cid: str) -> dict[str, int]:
        """For each direction, the most squares a Move action can cover now (0: none)."""
        return dict(zip(DIRECTIONS, self._reach(self.by_id[cid]), strict=True))

    def _reach(self, c: Combatant) -> list[int]:
        """``move_reach`` as a list in ``DIRECTIONS`` order: the map's static reach, cut
        short where another combatant in play stands on the path."""
        budget = _move_budget_m(c)
        static, blockers = self.grid.reach(c.pos, budget, self.max_move_squares)
        reach = list(static)
        for o in self.combatants:
            if o is not c and not o.out:
                hit = blockers.get(o.pos)
                if hit is not None and hit[1] < reach[hit[0]]:
                    reach[hit[0]] = hit[1]
        return reach

    # ------------------------------------------------------------------ applying actions
    def apply(self, action: Action | str, *, validated: bool = False) -> None:
        """Take ``action`` for the deciding combatant; raise ``IllegalActionError`` if illegal.

        ``validated=True`` skips the legality check, for a caller that has just established
        it from the same rules (the environment's action mask); an illegal action taken that
        way corrupts the battle.
        """
        if isinstance(action, str):
            action = parse_action(action)
        if not validated:
            reason = self.why_illegal(action)
            if reason is not None:
                raise IllegalActionError(self._decider, action.label, reason)
        if self.phase == "haste":
            self._do_haste(action.arg == "yes")
        elif self.phase == "reaction":
            self._do_reaction(action.arg)
        else:
            self._do_turn_action(action)

    def forfeit(self, label: str, reason: str) -> None:
        """Record an illegal choice and take the do-nothing default instead: ``haste:no`` in a
        declaration, ``react:none`` in a reaction, ``end_turn`` in a turn (used by an
        environment's ``illegal_action: penalize`` mode)."""
        if self.done:
            return
        self._emit({"type": "illegal_action", "actor": self._decider, "label": label,
                    "reason": reason})
        if self.phase == "haste":
            self._do_haste(False)
        elif self.phase == "reaction":
            self._do_reaction("none")
        else:
            self._end_turn("illegal action")

    def _emit(self, event: dict) -> None:
        self.events.append(event)

    def _do_turn_action(self, action: Action) -> None:
        actor = self.by_id[self._decider]
        kind = action.kind
        if kind == "end_turn":
            self._end_turn("chosen")
            return
        if kind in ("direct", "hamper"):
            self._do_free(actor, action)
        else:
            if kind in MINOR_KINDS:
                actor.minors += 1
            else:
                actor.significant = True
            # R4.3 / R4.5: anything else breaks aim and draw/reload progress.
            if kind != "aim" and not (kind == "attack" and action.arg == actor.aim_target):
                self._break_aim(actor)
            if kind not in ("draw", "reload"):
                actor.ready_kind, actor.ready_count = None, 0
            _DO[kind](self, actor, action)
            if self.phase != "turn":  # waiting for a reaction, or the battle ended
                return
        self._maybe_auto_end(actor)

    def _maybe_auto_end(self, actor: Combatant) -> None:
        """R2.3: the turn passes by itself once the budget is spent, unless free leadership
        actions remain possible."""
        if self.done or self.phase != "turn" or self._decider != actor.id:
            return  # not (or no longer) this combatant's turn: never end another's turn
        sig, minors = self.budget_left(actor.id)
        if sig or minors > 0:
            return
        if self._free_action_possible(actor):
            return
        self._end_turn("budget spent")

    def _free_action_possible(self, actor: Combatant) -> bool:
        if not self._pools:
            return False
        direct, hamper = self._free_targets(actor)
        return bool(direct or hamper)

    def _break_aim(self, c: Combatant) -> None:
        if c.aim_target is not None:
            self._emit({"type": "aim_lost", "actor": c.id, "target": c.aim_target})
            c.aim_target, c.aim_dm = None, 0

    def _do_aim(self, actor: Combatant, action: Action) -> None:
        if actor.aim_target == action.arg:
            actor.aim_dm = min(6, actor.aim_dm + 1)
        else:
            if actor.aim_target is not None:
                self._emit({"type": "aim_lost", "actor": actor.id, "target": actor.aim_target})
            actor.aim_target, actor.aim_dm = action.arg, 1
        self._emit({"type": "aim", "actor": actor.id, "target": action.arg, "aim": actor.aim_dm})

    def _do_stance(self, actor: Combatant, action: Action) -> None:
        before = actor.stance
        actor.stance = action.arg
        self._emit({"type": "stance", "actor": actor.id, "from": before, "to": action.arg})

    def _ready_step(self, actor: Combatant, kind: str, needed: int) -> bool:
        if actor.ready_kind == kind:
            actor.ready_count += 1
        else:
            actor.ready_kind, actor.ready_count = kind, 1
        done = actor.ready_count >= needed
        self._emit({"type": kind, "actor": actor.id, "weapon": actor.weapon.name,
                    "progress": actor.ready_count, "needed": needed, "done": done})
        if done:
            actor.ready_kind, actor.ready_count = None, 0
        return done

    def _do_draw(self, actor: Combatant, action: Action) -> None:
        if self._ready_step(actor, "draw", actor.weapon.draw_actions):
            actor.drawn = True

    def _do_reload(self, actor: Combatant, action: Action) -> None:
        if self._ready_step(actor, "reload", actor.weapon.reload_actions):
            actor.spares -= 1
            actor.ammo = actor.weapon.magazine

    def _do_move(self, actor: Combatant, action: Action) -> None:
        budget = _move_budget_m(actor)
        # Legal, so the map's cached walk is the whole path (occupancy was checked).
        path = self.grid.walk(actor.pos, action.direction, budget, action.squares)[0]
        metres = sum(self.grid.step_cost_m(sq) for sq in path)
        before = actor.pos
        actor.pos = path[-1]
        self._emit({"type": "move", "actor": actor.id, "from": list(before),
                    "to": list(actor.pos), "metres": metres})

    def _do_leadership(self, actor: Combatant, action: Action) -> None:
        dms = {"skill": skill_dm(actor.skills, "leadership")}
        best = max(("INT", "EDU", "SOC"), key=lambda k: actor.dm(k))  # ties: INT, EDU, SOC
        dms[best] = actor.dm(best)
        if actor.hasty:
            dms["haste"] = -1
        self._apply_held(actor, dms, "leadership")
        roll, total, effect = roll_check(self.dice, dms)
        bonuses, penalties = max(0, effect), max(0, -effect)
        self._emit({"type": "leadership", "actor": actor.id, "roll": roll, "dms": dms,
                    "total": total, "effect": effect, "bonuses": bonuses,
                    "penalties": penalties})
        if bonuses:
            self._pools.append(_Pool(actor.id, "bonus", bonuses))
        if penalties:
            self._pools.append(_Pool(actor.id, "penalty", penalties))

    def _apply_held(self, c: Combatant, dms: dict[str, int], check: str) -> None:
        """R7.3: a held bonus and/or penalty applies to (and is used by) the next check."""
        if c.bonus:
            dms["leadership_bonus"] = 1
            c.bonus = False
            self._emit({"type": "bonus_used", "actor": c.id, "check": check})
        if c.penalty:
            dms["leadership_penalty"] = -1
            c.penalty = False
            self._emit({"type": "penalty_used", "actor": c.id, "check": check})

    def _do_free(self, actor: Combatant, action: Action) -> None:
        r = self.by_id[action.arg]
        if action.kind == "direct":
            pool = next(p for p in self._pools if p.kind == "bonus" and p.leader == actor.id)
            r.bonus = True
            self._emit({"type": "bonus_granted", "actor": actor.id, "target": r.id})
        else:
            pool = next(p for p in self._pools
                        if p.kind == "penalty" and self.by_id[p.leader].side == r.side)
            r.penalty = True
            self._emit({"type": "penalty_imposed", "actor": actor.id, "target": r.id,
                        "leader": pool.leader})
        pool.count -= 1
        if pool.count == 0:
            self._pools.remove(pool)

    def _do_attack(self, actor: Combatant, action: Action) -> None:
        t = self.by_id[action.arg]
        w = actor.weapon
        dms = self.attack_dms(actor.id, t.id)
        if not w.is_melee:
            actor.ammo -= 1
        # The aim is spent by this attack whatever its target (R4.3).
        actor.aim_target, actor.aim_dm = None, 0
        self._recoil(actor)
        self._pending = _PendingAttack(actor.id, t.id, w.is_melee, dms,
                                       self.grid.distance_m(actor.pos, t.pos))
        if self.options.reactions:
            self.phase, self._decider = "reaction", t.id
            return
        self._resolve_attack("none")

    def _recoil(self, actor: Combatant) -> None:
        """R3.7: a weapon heavier than the attacker can handle costs Initiative."""
        req = actor.weapon.str_requirement
        if req <= 0:
            return
        diff = characteristic_dm(req) - actor.dm("STR")
        if diff > 0:
            self._change_initiative(actor, -diff, "recoil")

    def _do_reaction(self, choice: str) -> None:
        target = self.by_id[self._decider]
        self._emit({"type": "reaction", "actor": target.id, "reaction": choice,
                    "attacker": self._pending.attacker})
        if choice != "none":
            self._break_aim(target)
            self._change_initiative(target, -2, "reaction")
        self._resolve_attack(choice)

    def _resolve_attack(self, reaction: str) -> None:
        p = self._pending
        self._pending = None
        attacker, target = self.by_id[p.attacker], self.by_id[p.target]
        dms = dict(p.dms)
        if reaction == "dodge":
            level = skill_level(target.skills, "athletics.dexterity") or 0
            dms["dodge"] = -max(1, level)
        elif reaction == "parry":
            level = skill_level(target.skills, target.weapon.skill) or 0
            dms["parry"] = -max(1, level)
        self._apply_held(attacker, dms, "attack")
        was_down = target.down
        roll, total, effect = roll_check(self.dice, dms)
        hit = effect >= 0
        damage_roll: list[int] | None = None
        damage = 0
        if hit:
            dmg = attacker.weapon.damage
            damage_roll = self.dice.roll(dmg.count)
            damage = max(0, sum(damage_roll) + dmg.modifier + effect - target.armour.protection)
            self._take_damage(target, damage)
        self._emit({
            "type": "attack", "actor": attacker.id, "target": target.id,
            "weapon": attacker.weapon.name, "damage_dice": str(attacker.weapon.damage),
            "melee": p.melee, "range_m": round(p.range_m, 3),
            "actor_pos": list(attacker.pos), "target_pos": list(target.pos),
            "ammo_left": attacker.ammo if not p.melee else None,
            "reaction": reaction, "roll": roll, "dms": dms, "total": total, "effect": effect,
            "hit": hit, "damage_roll": damage_roll, "damage": damage,
            "protection": target.armour.protection,
            "target_after": {k: target.chars[k] for k in ("STR", "DEX", "END")},
        })
        if target.down and not was_down:
            self._incapacitate(target, attacker)
        self.phase, self._decider = "turn", attacker.id
        if self._check_end():
            return
        self._maybe_auto_end(attacker)

    def _take_damage(self, c: Combatant, damage: int) -> None:
        """R6.2-R6.3 (see ``damage.apply_damage``)."""
        ch = c.chars
        ch["STR"], ch["DEX"], ch["END"] = apply_damage(ch["STR"], ch["DEX"], ch["END"], damage)
        if is_incapacitated(ch["STR"], ch["DEX"], ch["END"]):
            c.down = True
            c.dead = is_dead(ch["STR"], ch["DEX"], ch["END"])

    def _incapacitate(self, c: Combatant, by: Combatant) -> None:
        stays = c.id in self._group  # R2.5: downed by a member of its own tied group
        self._emit({"type": "incapacitated", "actor": c.id, "by": by.id,
                    "state": "dead" if c.dead else "unconscious", "stays_until_group_ends": stays})
        lapsed = [p for p in self._pools if p.leader == c.id]
        for p in lapsed:
            self._lapse(p, "leader incapacitated")
        if not stays:
            c.out = True

    def _lapse(self, pool: _Pool, why: str) -> None:
        self._pools.remove(pool)
        self._emit({"type": "lapse", "actor": pool.leader, "kind": pool.kind,
                    "count": pool.count, "reason": why})

    def _change_initiative(self, c: Combatant, delta: int, reason: str) -> None:
        """R3.4: this round if the combatant has yet to begin its turn, else the next round."""
        if c.turn_begun:
            c.init_mod_next += delta
            applies = "next_round"
        else:
            c.init_mod_now += delta
            applies = "current_round"
        self._emit({"type": "initiative_change", "actor": c.id, "change": delta,
                    "reason": reason, "applies_to": applies,
                    "initiative": c.current_initiative,
                    "next_round_change": c.init_mod_next})

    def _do_haste(self, yes: bool) -> None:
        c = self.by_id[self._decider]
        c.hasty = yes
        if yes:
            c.init_mod_now += 2
        self._emit({"type": "haste", "actor": c.id, "haste": yes,
                    "initiative": c.current_initiative})
        self._haste_queue.pop(0)
        if self._haste_queue:
            self._decider = self._haste_queue[0]
        else:
            self._next_turn()

    # ------------------------------------------------------------------ sequencing
    def _order_key(self, c: Combatant) -> tuple[int, int]:
        return (c.current_initiative, c.chars["DEX"])

    def _roll_initiative(self) -> None:
        """R3.1-R3.3: Initiative rolls (or the ambush's automatic 12), then Tactics."""
        prepared = [c.prepared for c in self.combatants]
        ambush = any(prepared) and not all(prepared)
        for c in self.combatants:
            dex = c.dm("DEX")
            if ambush and c.prepared:
                roll, base = None, 12
            else:
                roll = self.dice.roll(2)
                base = sum(roll)
            c.initiative = base + dex
            self._emit({"type": "initiative", "actor": c.id, "roll": roll, "dms": {"DEX": dex},
                        "initiative": c.initiative, "ambush": ambush and c.prepared})
        for side, name in enumerate(self.side_names):
            unit = [c for c in self.combatants if c.side == side]
            tacticians = [c for c in unit if skill_level(c.skills, "tactics") is not None]
            if not tacticians:
                continue
            best = max(tacticians, key=lambda c: (skill_level(c.skills, "tactics"),
                                                  c.chars["INT"], -c.order))
            dms = {"skill": skill_level(best.skills, "tactics"), "INT": best.dm("INT")}
            roll, total, effect = roll_check(self.dice, dms)
            for c in unit:
                c.initiative += effect
            self._emit({"type": "tactics", "actor": best.id, "unit": name, "roll": roll,
                        "dms": dms, "total": total, "effect": effect, "added": effect})

    def _start_round(self) -> None:
        if self.round >= self.options.max_rounds:
            self._finish(None, "max_rounds", truncated=True)
            return
        self.round += 1
        self._emit({"type": "round", "round": self.round})
        for c in self.combatants:
            c.init_mod_now, c.init_mod_next = c.init_mod_next, 0
            c.hasty = False
            c.turn_begun = False
        able = [c for c in self.combatants if not c.out]
        if self.options.hastening:
            able.sort(key=lambda c: (-c.current_initiative, -c.chars["DEX"], c.order))
            self._haste_queue = [c.id for c in able]
            self.phase, self._decider = "haste", self._haste_queue[0]
        else:
            self._next_turn()

    def _next_turn(self) -> None:
        if self._group_queue:
            self._begin_turn(self.by_id[self._group_queue.pop(0)])
            return
        self._finish_group()
        if self._check_end():
            return
        waiting = [c for c in self.combatants if not c.out and not c.turn_begun]
        if not waiting:
            self._start_round()
            return
        best = max(self._order_key(c) for c in waiting)
        group = [c.id for c in waiting if self._order_key(c) == best]  # scenario order
        self._group = group
        self._group_queue = group[1:]
        if len(group) > 1:
            self._emit({"type": "simultaneous", "group": list(group),
                        "initiative": best[0], "DEX": best[1]})
        self._begin_turn(self.by_id[group[0]])

    def _finish_group(self) -> None:
        """R2.5: combatants downed within their own tied group drop out when it has finished.
        R7.5: a pool such a combatant made in its turn after being downed lapses now: its
        leader is incapacitated and will have no next turn."""
        for cid in self._group:
            c = self.by_id[cid]
            if c.down and not c.out:
                c.out = True
                self._emit({"type": "out", "actor": cid})
                for p in [p for p in self._pools if p.leader == cid]:
                    self._lapse(p, "leader out of play")
        self._group = []

    def _begin_turn(self, c: Combatant) -> None:
        c.turn_begun = True
        c.minors, c.significant = 0, False
        self.phase, self._decider, self.turn_actor = "turn", c.id, c.id
        for p in [p for p in self._pools if p.leader == c.id]:
            self._lapse(p, "leader's next turn")  # R7.5
        self._emit({"type": "turn", "actor": c.id, "initiative": c.current_initiative,
                    "round": self.round})

    def _end_turn(self, reason: str) -> None:
        self._emit({"type": "end_turn", "actor": self._decider, "reason": reason})
        self.turn_actor = None
        self._next_turn()

    def _check_end(self) -> bool:
        """R8.2: combat ends when at most one side has combatants able to act."""
        sides = {c.side for c in self.combatants if not c.out}
        if len(sides) > 1:
            return False
        winner = self.side_names[sides.pop()] if sides else None
        self._finish(winner, "victory" if winner else "all_out", truncated=False)
        return True

    def _finish(self, winner: str | None, reason: str, truncated: bool) -> None:
        self.done, self.truncated, self.winner = True, truncated, winner
        self.phase, self._decider = "over", None
        self._emit({"type": "end", "round": self.round, "winner": winner, "reason": reason})


# The handler of each action kind in a turn (``_do_turn_action``).
_DO = {kind: getattr(Battle, "_do_" + kind)
       for kind in ("move", "stance", "draw", "reload", "aim", "attack", "leadership")}
