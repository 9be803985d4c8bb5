"""The battle engine: a sequence of decision points over the rules R1-R8.

At every moment ``Battle.decision`` says who must decide and what kind of decision it is:

* ``"haste"``: a haste declaration at the start of a round (R3.5);
* ``"turn"``: an action in the combatant's turn (R2.1-R2.3);
* ``"reaction"``: a reaction to an attack in progress (R3.6); the attack waits for the answer.

``why_illegal(action)`` says why an action cannot be taken now (``None`` when it can),
``legal_actions()`` lists the candidates that can, and ``apply(action)`` takes one, refusing an
illegal one with ``IllegalActionError``. Every roll and every change is appended to ``events``
as a JSON-serialisable dict (``events.EVENT_KINDS``).

The parts: the arithmetic of each rule is a pure function (``checks``, ``budget``,
``attack``, ``reactions``, ``movement``, ``leadership``, ``damage``); each action kind is
described once in ``kinds.KINDS`` (legality, explanation, effect); turn order lives in
``sequencing.TurnSequencing``; leadership pools in ``leadership.LeadershipPools``; the
rules switches in ``options.RulesOptions``; the attack awaiting a reaction in
``pending.PendingAttack``. This class holds the state and ties them together. The kinds
reach it only through ``effects.BattleEffects`` (``reach``, ``walk_refusal``, ``emit``,
``end_turn``, ``ready_step``, ``break_aim``, ``apply_held``, ``declare_attack``, ``react``,
``declare_haste``), which it implements: public, but meant for action kinds; everyone else
takes actions with ``apply``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from . import attack as attack_rules
from . import snapshot as snapshot_format
from .budget import BUDGET_STATES, Budget
from .checks import roll_check
from .combatant import Combatant
from .damage import apply_damage, is_dead, is_incapacitated
from .dice import Dice
from .events import ALL, EVENT_KINDS
from .grid import DIRECTIONS, SQUARE_M, GridMap
from .kinds import KINDS, ActionKind, KindContext, parse_action, phase_dispatch
from .leadership import LeadershipPools, Pool
from .movement import move_budget_m
from .options import RulesOptions
from .pending import PendingAttack
from .reactions import REACTION_INITIATIVE_COST, reaction_dm, recoil_cost
from .rng import Pcg32
from .sequencing import TurnSequencing
from .vocabulary import Action

__all__ = ["Battle", "BattleSummary", "Decision", "IllegalActionError", "TurnOptions"]


class IllegalActionError(ValueError):
    """An action refused by the engine; the message names the action and the reason."""

    def __init__(self, agent: str | None, label: str, reason: str) -> None:
        self.agent, self.label, self.reason = agent, label, reason
        who = f"{agent}: " if agent else ""
        super().__init__(f"{who}illegal action {label!r}: {reason}")


class TurnOptions(dict):
    """What the deciding combatant may do now: each action kind's legal arguments
    (``kinds.ActionKind.legal``), by kind name; kinds the budget rules out map to an empty
    tuple. ``significant`` and ``minors`` give the budget left (R2.1)."""

    __slots__ = ("minors", "significant")


class Decision(NamedTuple):
    """Who must decide now, and what kind of decision: ``haste``, ``turn`` or ``reaction``."""

    kind: str
    agent: str


@dataclass(slots=True)
class BattleSummary:
    """Running totals that rewards are computed from (instead of parsing events):
    damage dealt and taken per combatant (after armour), and how many combatants have
    dropped out of play."""

    damage_dealt: dict[str, int]
    damage_taken: dict[str, int]
    dropouts: int = 0

    def copy(self) -> BattleSummary:
        """An independent copy."""
        return BattleSummary(dict(self.damage_dealt), dict(self.damage_taken), self.dropouts)


_PHASE_REFUSAL = {
    "haste": "only haste:yes or haste:no can be chosen during haste declarations (R3.5)",
    "reaction": "an attack awaits this combatant's reaction: react:none|dodge|parry (R3.6)",
}


def _budget_refusal(kind: ActionKind, budget: Budget) -> str | None:
    """Why R2.1 refuses an action of ``kind`` with ``budget`` left, or ``None``."""
    if budget.allows(kind.cost):
        return None
    if kind.cost == "significant":
        return ("no Significant action left this turn (R2.1: one Significant after at most "
                "one Minor)")
    return "no Minor action left this turn (R2.1)"


class Battle(TurnSequencing):
    """One battle: state, rules and event log. Build it with ``traveller_env.scenario``.

    Parameters: the combatants (in scenario order), the two side names, the map, the rules
    options and the dice. Creating a battle rolls Initiative and Tactics (R3.1-R3.3) and
    starts round 1.

    ``version`` counts changes to the battle; each combatant's ``version`` is the battle's
    version at its last change, so caches can key on them.
    """

    def __init__(self, combatants: Sequence[Combatant], side_names: Sequence[str],
                 grid: GridMap, options: RulesOptions, dice) -> None:
        self.combatants: list[Combatant] = list(combatants)
        self.by_id: dict[str, Combatant] = {c.id: c for c in self.combatants}
        self._ids = [c.id for c in self.combatants]
        self.side_names = list(side_names)
        self.grid = grid
        self.options = options
        self.dice = dice
        self.events: list[dict] = []
        self.version = 0
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
        self.pools = LeadershipPools({c.id: c.side for c in self.combatants})
        self._pending: PendingAttack | None = None
        self._summary = BattleSummary(dict.fromkeys(self._ids, 0), dict.fromkeys(self._ids, 0))
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
    def pending_attack(self) -> PendingAttack | None:
        """The attack waiting for its target's reaction (R3.6): ``attacker``, ``target``,
        ``melee``, ``dms`` (before the reaction) and ``range_m``; ``None`` otherwise."""
        return self._pending

    @property
    def summary(self) -> BattleSummary:
        """Damage dealt and taken per combatant so far, and dropouts (a live object: copy it
        to keep a snapshot)."""
        return self._summary

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
        """Every action label that could ever concern a combatant of this battle, in
        action-catalogue order (``kinds.KINDS``)."""
        out: list[Action] = []
        for kind in KINDS.values():
            out += kind.candidates(self._ids, self.max_move_squares)
        return out

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

    def budget(self, cid: str) -> Budget:
        """What the combatant has spent of its turn's budget (R2.1)."""
        c = self.by_id[cid]
        return BUDGET_STATES[c.minors, c.significant].budget

    def budget_left(self, cid: str) -> tuple[bool, int]:
        """``(significant_available, minors_available)`` for the combatant's turn (R2.1)."""
        c = self.by_id[cid]
        state = BUDGET_STATES[c.minors, c.significant]
        return state.significant_left, state.minors_left

    def held_pools(self, cid: str) -> tuple[int, int]:
        """``(bonuses it may hand out, penalties it may impose)`` right now (R7.5)."""
        if not self.pools.entries:
            return 0, 0
        return self.pools.held(cid)

    def attack_dms(self, attacker: str, target: str) -> dict[str, int]:
        """The DMs an attack would take now, before any reaction and leadership bonus
        (``attack.attack_dms``)."""
        return attack_rules.attack_dms(self.by_id[attacker], self.by_id[target], self.grid)

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
        twin.pools = self.pools.clone()
        twin._summary = self._summary.copy()
        if self._pending is not None:
            p = self._pending
            twin._pending = PendingAttack(p.attacker, p.target, p.melee, dict(p.dms), p.range_m)
        return twin

    # ------------------------------------------------------------------ snapshots
    def _fingerprint(self) -> int:
        """The scenario fingerprint a snapshot is checked against (``snapshot.fingerprint``)."""
        return snapshot_format.fingerprint(snapshot_format.fingerprint_text(
            self._ids, self.side_names, self.grid.width, self.grid.height,
            self.max_move_squares, [c.weapon.name for c in self.combatants],
            [str(c.weapon.damage) for c in self.combatants]))

    def _snapshot_rng(self, what: str) -> Pcg32:
        """The dice's PCG32 generator; ``TypeError`` for other dice (scripted, Mersenne)."""
        dice = self.dice
        if not isinstance(dice, Dice) or type(dice).roll is not Dice.roll \
                or dice.generator != "pcg" or dice._pcg is None:
            raise TypeError(f"{what} needs the shared PCG32 dice (Dice(seed)); these dice are "
                            f"{type(dice).__name__}({getattr(dice, 'generator', None)!r})")
        return dice._pcg

    def snapshot(self) -> bytes:
        """The complete state of this battle, dice included, as bytes (the format of
        ``traveller_env.rules.snapshot``; the compiled core reads it too). Needs PCG32 dice."""
        pcg = self._snapshot_rng("snapshot()")
        idx = {cid: i for i, cid in enumerate(self._ids)}

        def at(cid: str | None) -> int:
            return -1 if cid is None else idx[cid]

        pending = None
        if self._pending is not None:
            p = self._pending
            pending = (idx[p.attacker], idx[p.target], p.melee, p.range_m,
                       [(snapshot_format.DM_NAMES.index(k), v) for k, v in p.dms.items()])
        state = snapshot_format.BattleState(
            fingerprint=self._fingerprint(), dice=pcg.getstate(), round=self.round,
            phase=snapshot_format.PHASES.index(self.phase), done=self.done,
            truncated=self.truncated,
            winner=-1 if self.winner is None else self.side_names.index(self.winner),
            turn_actor=at(self.turn_actor), decider=-1 if self.done else at(self._decider),
            haste_queue=[idx[c] for c in self._haste_queue], group=[idx[c] for c in self._group],
            group_queue=[idx[c] for c in self._group_queue],
            pools=[(idx[p.leader], snapshot_format.POOL_KINDS.index(p.kind), p.count)
                   for p in self.pools.entries],
            pending=pending, damage_dealt=[self._summary.damage_dealt[c] for c in self._ids],
            damage_taken=[self._summary.damage_taken[c] for c in self._ids],
            dropouts=self._summary.dropouts, events_before=len(self.events),
            combatants=[snapshot_format.CombatantState(
                tuple(c.chars[k] for k in snapshot_format.CHARACTERISTICS), c.pos[0], c.pos[1],
                snapshot_format.STANCES.index(c.stance), c.drawn, c.ammo, c.spares,
                c.initiative, c.init_mod_now, c.init_mod_next, c.hasty, c.turn_begun, c.minors,
                c.significant, at(c.aim_target), c.aim_dm,
                snapshot_format.READY_KINDS.index(c.ready_kind), c.ready_count, c.bonus,
                c.penalty, c.down, c.dead, c.out) for c in self.combatants])
        return snapshot_format.encode(state)

    def restore(self, data: bytes) -> None:
        """Put a ``snapshot()`` (of this engine or the core's) back into this battle, which must
        be of the same scenario; ``SnapshotError`` (a ``ValueError``) naming what is wrong
        leaves it unchanged. The event log restarts empty (a snapshot keeps state, not the
        log's entries) and ``version`` moves on (see ``traveller_env.rules.snapshot``)."""
        pcg = self._snapshot_rng("restore()")
        s = snapshot_format.decode(data, self._fingerprint(), len(self.combatants))
        ids = self._ids

        def name(i: int) -> str | None:
            return None if i < 0 else ids[i]

        pcg.setstate(s.dice)
        self.round, self.phase = s.round, snapshot_format.PHASES[s.phase]
        self.done, self.truncated = s.done, s.truncated
        self.winner = None if s.winner < 0 else self.side_names[s.winner]
        self.turn_actor, self._decider = name(s.turn_actor), name(s.decider)
        self._haste_queue = [ids[i] for i in s.haste_queue]
        self._group = [ids[i] for i in s.group]
        self._group_queue = [ids[i] for i in s.group_queue]
        self.pools.entries[:] = [Pool(ids[leader], snapshot_format.POOL_KINDS[kind], count)
                                 for leader, kind, count in s.pools]
        self._pending = None
        if s.pending is not None:
            attacker, target, melee, range_m, dms = s.pending
            self._pending = PendingAttack(ids[attacker], ids[target], melee,
                                          {snapshot_format.DM_NAMES[k]: v for k, v in dms},
                                          range_m)
        self._summary = BattleSummary(dict(zip(ids, s.damage_dealt, strict=True)),
                                      dict(zip(ids, s.damage_taken, strict=True)), s.dropouts)
        self.version += 1
        for c, cs in zip(self.combatants, s.combatants, strict=True):
            c.chars = dict(c.chars)
            c.chars.update(zip(snapshot_format.CHARACTERISTICS, cs.chars, strict=True))
            c.pos = (cs.x, cs.y)
            c.stance, c.drawn = snapshot_format.STANCES[cs.stance], cs.drawn
            c.ammo, c.spares = cs.ammo, cs.spares
            c.initiative, c.init_mod_now, c.init_mod_next = (cs.initiative, cs.init_mod_now,
                                                             cs.init_mod_next)
            c.hasty, c.turn_begun = cs.hasty, cs.turn_begun
            c.minors, c.significant = cs.minors, cs.significant
            c.aim_target, c.aim_dm = name(cs.aim_target), cs.aim_dm
            c.ready_kind = snapshot_format.READY_KINDS[cs.ready_kind]
            c.ready_count = cs.ready_count
            c.bonus, c.penalty = cs.bonus, cs.penalty
            c.down, c.dead, c.out = cs.down, cs.dead, cs.out
            c.version = self.version
        self.events = []

    # ------------------------------------------------------------------ legality
    def _context(self) -> KindContext:
        actor = self.by_id[self._decider]
        return KindContext(self, actor, BUDGET_STATES[actor.minors, actor.significant].budget)

    def why_illegal(self, action: Action | str) -> str | None:
        """Why ``action`` cannot be taken now by the deciding combatant, or ``None`` if it can:
        the decision's phase, the budget (R2.1), then the kind's own explanation."""
        if isinstance(action, str):
            action = parse_action(action)
        if self.done:
            return "the battle is over"
        kind = KINDS.get(action.kind)
        if kind is None:
            return f"unknown action kind {action.kind!r}"
        if kind.phase != self.phase:
            return _PHASE_REFUSAL.get(self.phase, f"{kind.name} is not possible during a turn")
        ctx = self._context()
        refusal = _budget_refusal(kind, ctx.budget)
        if refusal is not None:
            return refusal
        return kind.why_not(ctx, action)

    def legal_options(self) -> TurnOptions:
        """Every action kind's legal arguments for the current decision, grouped by kind.

        The same answer as asking ``why_illegal`` about every action (tests check this on
        seeded and fuzzed battles), from each kind's grouped ``legal`` instead of once per
        action, and without building the reasons.
        """
        if self.done:
            raise RuntimeError("legal_options() needs a decision: the battle is over")
        actor = self.by_id[self._decider]
        state = BUDGET_STATES[actor.minors, actor.significant]
        # R2.1 asked once per budget, not once per kind (``_budget_refusal`` gives the reason);
        # kinds whose legal arguments are ``always`` the same come in the template.
        template, calls = phase_dispatch(self.phase, state, bool(self.pools.entries))
        opts = TurnOptions(template)
        opts.significant, opts.minors = state.significant_left, state.minors_left
        if calls:
            ctx = KindContext(self, actor, state.budget)
            for name, legal in calls:
                opts[name] = legal(ctx)
        return opts

    def turn_options(self) -> TurnOptions:
        """``legal_options`` for a turn decision (``RuntimeError`` in other phases)."""
        if self.done or self.phase != "turn":
            raise RuntimeError(f"turn_options() needs a turn decision (phase: {self.phase})")
        return self.legal_options()

    def move_reach(self, cid: str) -> dict[str, int]:
        """For each direction, the most squares a Move action can cover now (0: none)."""
        return dict(zip(DIRECTIONS, self.reach(self.by_id[cid]), strict=True))

    def reach(self, c: Combatant) -> tuple[int, ...]:
        """``move_reach`` of a combatant in ``DIRECTIONS`` order: the map's static reach, cut
        short where another combatant in play stands on the path."""
        static, blockers = self.grid.reach(c.pos, move_budget_m(c.movement_m, c.stance),
                                           self.max_move_squares)
        reach = list(static)
        for o in self.combatants:
            if o is not c and not o.out:
                hit = blockers.get(o.pos)
                if hit is not None and hit[1] < reach[hit[0]]:
                    reach[hit[0]] = hit[1]
        return tuple(reach)

    def walk_refusal(self, actor: Combatant, direction: str, squares: int) -> str | None:
        """Why a move of ``squares`` squares towards ``direction`` is refused (R4.6, R8.1):
        the first step that enters an occupied square (checked before the step's cost), a
        wall, a corner, the map's edge or too much movement; ``None`` when it is legal."""
        budget = move_budget_m(actor.movement_m, actor.stance)
        path, reason, _ = self.grid.walk(actor.pos, direction, budget, squares)
        occupied = {c.pos for c in self.combatants if not c.out and c is not actor}
        for i, sq in enumerate(path):
            if sq in occupied:
                return f"step {i + 1} enters an occupied square {list(sq)} (R8.1)"
        return reason

    def _free_action_possible(self, actor: Combatant) -> bool:
        """R2.3: some free action (a ``free`` kind) is legal for ``actor`` now (none without a
        leadership pool, R7.5)."""
        if not self.pools.entries:
            return False
        ctx = KindContext(self, actor, BUDGET_STATES[actor.minors, actor.significant].budget)
        return any(kind.legal(ctx) for kind in KINDS.values() if kind.cost == "free")

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
        actor = self.by_id[self._decider]
        kind = KINDS[action.kind]
        cost = kind.cost
        if cost in ("minor", "significant"):
            if cost == "minor":
                actor.minors += 1
            else:
                actor.significant = True
            # R4.3 / R4.5: anything else breaks aim and draw/reload progress.
            if actor.aim_target is not None and not kind.keeps_aim(actor, action):
                self.break_aim(actor)
            if not kind.keeps_ready:
                actor.ready_kind, actor.ready_count = None, 0
        kind.apply(self, actor, action)
        if cost in ("minor", "significant", "free") and self.phase == "turn":
            self._maybe_auto_end(actor)

    def forfeit(self, label: str, reason: str) -> None:
        """Record an illegal choice and take the do-nothing default instead: ``haste:no`` in a
        declaration, ``react:none`` in a reaction, ``end_turn`` in a turn (used by an
        environment's ``illegal_action: penalize`` mode)."""
        if self.done:
            return
        self.emit({"type": "illegal_action", "actor": self._decider, "label": label,
                   "reason": reason})
        actor = self.by_id[self._decider]
        if self.phase == "haste":
            self.declare_haste(actor, False)
        elif self.phase == "reaction":
            self.react(actor, "none")
        else:
            self.end_turn("illegal action")

    # ------------------------------------------------------------------ effects (kinds)
    def emit(self, event: dict) -> None:
        """Append an event and stamp the combatants it touches (``events.EVENT_KINDS``)."""
        self.events.append(event)
        self.version = v = self.version + 1
        touches = EVENT_KINDS[event["type"]].touches
        if touches is ALL:
            for c in self.combatants:
                c.version = v
        else:
            by_id = self.by_id
            for field in touches:
                by_id[event[field]].version = v

    def _touch(self, c: Combatant) -> None:
        """A change that emits no event (declaring an attack): bump the versions."""
        self.version += 1
        c.version = self.version

    def _maybe_auto_end(self, actor: Combatant) -> None:
        """R2.3: the turn passes by itself once the budget is spent, unless free leadership
        actions remain possible."""
        if self.done or self.phase != "turn" or self._decider != actor.id:
            return  # not (or no longer) this combatant's turn: never end another's turn
        if not BUDGET_STATES[actor.minors, actor.significant].spent:
            return
        if self._free_action_possible(actor):
            return
        self.end_turn("budget spent")

    def break_aim(self, c: Combatant) -> None:
        """R4.3: lose the aim ``c`` holds, if any (logged)."""
        if c.aim_target is not None:
            self.emit({"type": "aim_lost", "actor": c.id, "target": c.aim_target})
            c.aim_target, c.aim_dm = None, 0

    def ready_step(self, actor: Combatant, kind: str, needed: int) -> bool:
        """R4.5: one more consecutive Minor action of draw/reload progress; True when done."""
        if actor.ready_kind == kind:
            actor.ready_count += 1
        else:
            actor.ready_kind, actor.ready_count = kind, 1
        done = actor.ready_count >= needed
        self.emit({"type": kind, "actor": actor.id, "weapon": actor.weapon.name,
                   "progress": actor.ready_count, "needed": needed, "done": done})
        if done:
            actor.ready_kind, actor.ready_count = None, 0
        return done

    def apply_held(self, c: Combatant, dms: dict[str, int], check: str) -> None:
        """R7.3: a held bonus and/or penalty applies to (and is used by) the next check."""
        held = attack_rules.held_dms(c)
        if not held:
            return
        dms.update(held)
        if c.bonus:
            c.bonus = False
            self.emit({"type": "bonus_used", "actor": c.id, "check": check})
        if c.penalty:
            c.penalty = False
            self.emit({"type": "penalty_used", "actor": c.id, "check": check})

    # ------------------------------------------------------------------ attacks (R4.1, R3.6)
    def declare_attack(self, actor: Combatant, target: Combatant) -> None:
        """Spend ammunition and aim, pay recoil, then wait for the target's reaction."""
        w = actor.weapon
        dms = attack_rules.attack_dms(actor, target, self.grid)
        if not w.is_melee:
            actor.ammo -= 1
        # The aim is spent by this attack whatever its target (R4.3).
        actor.aim_target, actor.aim_dm = None, 0
        self._touch(actor)
        cost = recoil_cost(w.str_requirement, actor.chars["STR"])
        if cost:
            self._change_initiative(actor, -cost, "recoil")  # R3.7
        self._pending = PendingAttack(actor.id, target.id, w.is_melee, dms,
                                      self.grid.distance_m(actor.pos, target.pos))
        if self.options.reactions:
            self.phase, self._decider = "reaction", target.id
            return
        self._resolve_attack("none")

    def react(self, target: Combatant, choice: str) -> None:
        """R3.6: the target's reaction, then the attack is resolved."""
        self.emit({"type": "reaction", "actor": target.id, "reaction": choice,
                   "attacker": self._pending.attacker})
        if choice != "none":
            self.break_aim(target)
            self._change_initiative(target, -REACTION_INITIATIVE_COST, "reaction")
        self._resolve_attack(choice)

    def _resolve_attack(self, reaction: str) -> None:
        p = self._pending
        self._pending = None
        attacker, target = self.by_id[p.attacker], self.by_id[p.target]
        dms = dict(p.dms)
        if reaction != "none":
            dms[reaction] = reaction_dm(target, reaction)
        self.apply_held(attacker, dms, "attack")
        was_down = target.down
        roll, total, effect = roll_check(self.dice, dms)
        hit = effect >= 0
        damage_roll: list[int] | None = None
        damage = 0
        if hit:
            dmg = attacker.weapon.damage
            damage_roll = self.dice.roll(dmg.count)
            damage = attack_rules.damage_on_hit(sum(damage_roll), dmg.modifier, effect,
                                                target.armour.protection)
            self._take_damage(target, damage)
            self._summary.damage_dealt[attacker.id] += damage
            self._summary.damage_taken[target.id] += damage
        self.emit({
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
        self.emit({"type": "incapacitated", "actor": c.id, "by": by.id,
                   "state": "dead" if c.dead else "unconscious", "stays_until_group_ends": stays})
        self._summary.dropouts += 1
        for p in self.pools.of_leader(c.id):
            self._lapse(p, "leader incapacitated")
        if not stays:
            c.out = True

    def _lapse(self, pool: Pool, why: str) -> None:
        self.pools.remove(pool)
        self.emit({"type": "lapse", "actor": pool.leader, "kind": pool.kind,
                   "count": pool.count, "reason": why})
