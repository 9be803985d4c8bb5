"""``tactician``: a utility AI that plans its turn by expected damage dealt and taken."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from traveller_agents.context import Context
from traveller_agents.leader import LeaderPolicy
from traveller_agents.paths import move_options, move_path, path_cost
from traveller_agents.tactics import (
    ScriptedPolicy,
    attack_dm,
    attack_outcome,
    attack_value,
    best_reaction,
    damage_to_down,
    threat,
)
from traveller_env.rules.attack import chebyshev, held_dms, next_aim_dm, total_dm
from traveller_env.rules.checks import skill_level
from traveller_env.rules.grid import DIRECTIONS
from traveller_env.rules.leadership import LEADERSHIP_SKILL
from traveller_env.rules.movement import move_budget_m, squares_per_move
from traveller_env.rules.vocabulary import STANCES

__all__ = ["TacticianPolicy"]


class _State(NamedTuple):
    """A hypothetical state of the deciding combatant within its turn."""

    pos: tuple[int, int]
    stance: str
    drawn: bool
    loaded: bool
    aim_t: str | None
    aim_dm: int
    minors: int
    sig: bool
    moved: bool
    aimed: bool      # aimed this turn (only aim/attack may follow: anything else breaks it)
    changes: int     # stance changes this turn


class TacticianPolicy(ScriptedPolicy):
    """``tactician``: scores every plan for the rest of its turn and plays the best one.

    A plan is a legal sequence of the turn's remaining actions (R2.1 budget): at most one
    Move (any legal one), stance changes, draw/reload, aims, and the attack (on any enemy it
    could hit) or Leadership, in any order the budget allows (so "shoot then step into
    cover", "move, crouch, aim" and "aim, aim, aim" are all candidates). Its score is

        value of the attack now (expected damage after armour, capped at what the target can
        take, + chance of knocking it out x ``kill_horizon`` x the target's threat)
      + ``future`` x the value of its best attack next turn from where it ends (aim it holds
        carried over, +1 for next turn's Minor aim; draw/reload accounted)
      − ``defence`` x the damage it expects to take per round (each enemy's best attack on
        it at the end square and stance: range bands, cover, prone, that enemy's aim; shared
        among the enemy's possible targets in proportion; knock-out chance weighted likewise;
        ``defence`` > 1 because a square and a stance are kept for more than one round)
      − ``approach`` x metres (by path) to the nearest enemy when it would have no attack.

    Range bands, cover and stance, aim and haste all enter through the exact DMs
    (``common.attack_dm``) and the exact 2D6/damage distributions (``common.attack_outcome``).
    Leadership is scored like ``leader`` does (expected bonuses its allies can use minus
    penalties). The plan is kept for the rest of the turn unless the battle changes under it.
    Haste: declared when acting first would let it overtake an enemy and the chance of
    knocking that enemy out before it acts outweighs the DM −1. Reactions, bonuses and
    penalties: as ``common.best_reaction`` and ``leader``.

    Args:
        seed: seed of the policy's own generator (used only for fallbacks).
        future: weight of next turn's attack.
        defence: weight of the damage expected to be taken.
        kill_horizon: rounds of an enemy's threat that knocking it out is worth.
        approach: value per metre of closing in when no attack is possible.
        use_leadership: consider Leadership (when it has the skill).
        reaction_cost: what Initiative −2 costs a reaction, in points of damage (half that
            once it has acted this round).
    """

    name = "tactician"

    def __init__(self, seed: int | None = None, future: float = 0.9, defence: float = 2.0,
                 kill_horizon: float = 2.0, approach: float = 0.05,
                 use_leadership: bool = True, reaction_cost: float = 1.0) -> None:
        super().__init__(seed)
        self.reaction_cost = reaction_cost
        self.future = future
        self.defence = defence
        self.kill_horizon = kill_horizon
        self.approach = approach
        self.use_leadership = use_leadership
        self._leader = LeaderPolicy()
        self._plan: tuple[Any, list[str]] | None = None

    def reset(self, seed: int | None = None) -> None:
        """Re-seed and forget any plan."""
        super().reset(seed)
        self._plan = None

    # ------------------------------------------------------------------ other decisions
    def react(self, ctx: Context) -> str:
        """Dodge/parry when the damage saved beats the cost (``common.best_reaction``)."""
        return best_reaction(ctx, init_cost_waiting=self.reaction_cost,
                             init_cost_acted=self.reaction_cost / 2)

    def free_action(self, ctx: Context) -> str | None:
        """Bonuses and penalties as ``leader`` hands them out."""
        return self._leader.free_action(ctx)

    def haste(self, ctx: Context) -> str:
        """Haste when overtaking an enemy is worth the DM −1 (see the class docstring)."""
        me, view = ctx.me, ctx.view
        if me.down or not ctx.enemies:
            return "haste:no"
        mine = (me.initiative, me.chars["DEX"])
        hasted = (me.initiative + 2, me.chars["DEX"])
        gain = loss = 0.0
        best_now = best_hasty = 0.0
        for e in ctx.enemies:
            dm = attack_dm(view, me, e, hasty=False)
            if dm is None:
                continue
            kw = self.kill_horizon * threat(ctx, e)
            best_now = max(best_now, attack_value(view, me, e, dm, kw))
            best_hasty = max(best_hasty, attack_value(view, me, e, dm - 1, kw))
            theirs = (e.initiative, e.chars["DEX"])
            if mine < theirs < hasted or (theirs == mine and e.id < me.id):
                w = me.weapon
                _, _, p_down = attack_outcome(dm - 1, w.damage.count, w.damage.modifier,
                                              e.armour.protection, damage_to_down(e))
                their = attack_dm(view, e, me)
                if their is not None:
                    gain += p_down * attack_value(view, e, me, their, 0.0)
        loss = best_now - best_hasty
        return "haste:yes" if gain > loss and gain > 0 else "haste:no"

    # ------------------------------------------------------------------ the turn
    def _signature(self, ctx: Context) -> tuple:
        view = ctx.view
        return (view.round, ctx.agent, tuple(
            (c.id, c.pos, c.stance, c.out, c.down, c.aim_target, c.aim_dm,
             c.chars["END"], c.chars["STR"], c.chars["DEX"])
            for c in view.combatants() if c.id != ctx.agent))

    def turn(self, ctx: Context) -> Iterable[str | None]:
        """The first action of the best plan (or the next one of the current plan)."""
        sig = self._signature(ctx)
        if self._plan is not None and self._plan[0] == sig and self._plan[1]:
            nxt = self._plan[1][0]
            if ctx.legal(nxt):
                self._plan = (sig, self._plan[1][1:])
                return [nxt, "end_turn"]
        plan = _Planner(self, ctx).best_plan()
        self._plan = (sig, plan[1:])
        return [*plan[:1], "end_turn"]


class _Planner:
    """One turn's plan search (memoised over hypothetical states)."""

    def __init__(self, policy: TacticianPolicy, ctx: Context) -> None:
        self.p = policy
        self.ctx = ctx
        self.view = ctx.view
        self.me = ctx.me
        self.grid = ctx.view.grid
        me = self.me
        self.enemies = ctx.enemies
        self.threat = {e.id: threat(ctx, e) for e in self.enemies}
        self.melee = me.weapon.is_melee
        self.needs_draw = me.weapon.needs_draw
        self.memo: dict[_State, tuple[float, list[str]]] = {}
        self._base: dict[tuple, int | None] = {}
        self._incoming: dict[tuple, float] = {}
        self._end: dict[tuple, float] = {}
        # What the enemies' attacks on the rest of the side are worth (for target shares).
        self.others: dict[str, float] = {}
        for e in self.enemies:
            total = 0.0
            for a in ctx.allies:
                dm = self._enemy_dm(e, a, a.pos, a.stance)
                if dm is not None:
                    total += attack_value(self.view, e, a, dm, 0.0)
            self.others[e.id] = total
        own = 0.0
        for e in self.enemies:
            dm = attack_dm(self.view, me, e, apos=e.pos if self.melee else None)
            if dm is not None:
                own = max(own, attack_value(self.view, me, e, dm, 0.0))
        self.self_value = own
        self.lead_value = None
        if (policy.use_leadership and skill_level(me.skills, LEADERSHIP_SKILL) is not None
                and policy._leader.receivers(ctx)):
            p_pos, value = policy._leader.leadership_value(ctx)
            if p_pos >= 0.5 and value > 0:
                self.lead_value = value

    # ------------------------------------------------------------------ evaluations
    def _enemy_dm(self, e, target, pos, stance) -> int | None:
        if e.weapon.is_melee:
            reach = 1 + squares_per_move(e.movement_m)
            if chebyshev(e.pos, pos) > reach:
                return None
            return attack_dm(self.view, e, target, apos=pos, tpos=pos)
        return attack_dm(self.view, e, target, tpos=pos, tstance=stance)

    def base_dm(self, pos, t, hasty: bool | None = None) -> int | None:
        """My attack DM on ``t`` from ``pos`` without aim (None: no attack from there)."""
        key = (pos, t.id, hasty)
        if key not in self._base:
            self._base[key] = attack_dm(self.view, self.me, t, apos=pos, aim=0, hasty=hasty,
                                        held=False)
        return self._base[key]

    def attack_worth(self, t, dm: int) -> float:
        """Expected damage + knock-out chance x kill_horizon x the target's threat."""
        return attack_value(self.view, self.me, t, dm,
                            self.p.kill_horizon * self.threat[t.id])

    def incoming(self, pos, stance) -> float:
        """Damage (and knock-out risk) expected before its next turn at ``pos``/``stance``."""
        key = (pos, stance)
        if key in self._incoming:
            return self._incoming[key]
        me = self.me
        total = 0.0
        kill = self.p.kill_horizon * self.self_value
        for e in self.enemies:
            dm = self._enemy_dm(e, me, pos, stance)
            if dm is None:
                continue
            w = e.weapon
            _, ed, p_down = attack_outcome(dm, w.damage.count, w.damage.modifier,
                                           me.armour.protection, damage_to_down(me))
            if ed <= 0:
                continue
            share = ed / (ed + self.others[e.id])
            total += share * (ed + kill * p_down)
        self._incoming[key] = total
        return total

    def next_offence(self, s: _State) -> float:
        """Value of its best attack next turn from the end state."""
        me = self.me
        best = 0.0
        if self.melee:
            reach = 1 + squares_per_move(move_budget_m(me.movement_m, s.stance))
            for t in self.enemies:
                d = chebyshev(s.pos, t.pos)
                if d > reach:
                    continue
                dm = self.base_dm(t.pos, t, hasty=False)
                if dm is not None:
                    best = max(best, self.attack_worth(t, dm) * (1.0 if d <= 1 else 0.9))
            return best
        ready = (s.drawn or not self.needs_draw) and s.loaded
        for t in self.enemies:
            dm = self.base_dm(s.pos, t, hasty=False)
            if dm is None:
                continue
            held = s.aim_dm if s.aim_t == t.id else 0
            aim = next_aim_dm(t.id, held, t.id) if ready else held
            # A held aim beyond what next turn needs frees its Minor action: a small tie-break.
            best = max(best, self.attack_worth(t, dm + aim) + 0.01 * held)
        return best

    def end_value(self, s: _State) -> float:
        """Value of ending the turn in state ``s``."""
        key = (s.pos, s.stance, s.drawn, s.loaded, s.aim_t, s.aim_dm)
        if key in self._end:
            return self._end[key]
        p = self.p
        off = self.next_offence(s)
        value = p.future * off - p.defence * self.incoming(s.pos, s.stance)
        if (off <= 0 or self.melee) and self.enemies:
            near = min(path_cost(self.grid, t.pos, s.pos) for t in self.enemies)
            if near != float("inf"):
                value -= p.approach * near
        self._end[key] = value
        return value

    # ------------------------------------------------------------------ search
    def best_plan(self) -> list[str]:
        """The labels of the best plan (the first one is legal now)."""
        me = self.me
        root = _State(me.pos, me.stance, me.drawn or not self.needs_draw,
                      self.melee or me.ammo > 0, me.aim_target, me.aim_dm, me.minors,
                      me.significant, False, False, 0)
        _, plan = self.search(root, top=True)
        return plan or ["end_turn"]

    def search(self, s: _State, top: bool = False) -> tuple[float, list[str]]:
        """Best ``(value, plan)`` from state ``s``."""
        if not top and s in self.memo:
            return self.memo[s]
        best_v, best_plan = self.end_value(s), ["end_turn"]
        for label, value, nxt in self.children(s, top):
            if top and not self.ctx.legal(label):
                continue
            v, rest = self.search(nxt)
            v += value
            if v > best_v + 1e-9:
                best_v, best_plan = v, [label, *rest]
        if not top:
            self.memo[s] = (best_v, best_plan)
        return best_v, best_plan

    def children(self, s: _State, top: bool):
        """``(label, immediate value, next state)`` for each action worth considering."""
        me, ctx = self.me, self.ctx
        minors_left = (1 if s.sig else 3) - s.minors
        sig_avail = not s.sig and s.minors <= 1
        aim_cleared = {"aim_t": None, "aim_dm": 0} if s.aim_t is not None else {}
        if minors_left > 0 and not s.aimed:
            if not s.moved:
                moves = move_options(ctx) if top else self.moves_from(s)
                for label, dest in moves:
                    yield label, 0.0, s._replace(pos=dest, minors=s.minors + 1, moved=True,
                                                 **aim_cleared)
            if s.changes < 2:
                for st in STANCES:
                    if st != s.stance:
                        yield (f"stance:{st}", 0.0,
                               s._replace(stance=st, minors=s.minors + 1,
                                          changes=s.changes + 1, **aim_cleared))
            if not s.drawn:
                yield "draw", 0.0, s._replace(drawn=True, minors=s.minors + 1, **aim_cleared)
            if not s.loaded and me.spares > 0:
                yield "reload", 0.0, s._replace(loaded=True, minors=s.minors + 1,
                                                **aim_cleared)
        if minors_left > 0 and not self.melee and s.drawn:
            for t in self.enemies:
                if not self.grid.line_of_sight(s.pos, t.pos):
                    continue
                if s.aim_t == t.id:
                    if s.aim_dm >= 6:
                        continue
                    dm = s.aim_dm + 1
                else:
                    dm = 1
                if self.base_dm(s.pos, t) is None and s.aim_t != t.id:
                    continue  # aiming at a target it could not shoot at
                yield (f"aim:{t.id}", 0.0,
                       s._replace(aim_t=t.id, aim_dm=dm, minors=s.minors + 1, aimed=True))
        if sig_avail:
            if s.drawn and s.loaded:
                for t in self.enemies:
                    dm = self.base_dm(s.pos, t)
                    if dm is None:
                        continue
                    if s.aim_t == t.id:
                        dm += s.aim_dm
                    dm += total_dm(held_dms(me))
                    loaded = self.melee or me.ammo > 1
                    yield (f"attack:{t.id}", self.attack_worth(t, dm),
                           s._replace(sig=True, aim_t=None, aim_dm=0, aimed=False,
                                      loaded=loaded))
            if self.lead_value is not None:
                yield ("leadership", self.lead_value,
                       s._replace(sig=True, aim_t=None, aim_dm=0, aimed=False))

    def moves_from(self, s: _State) -> list[tuple[str, tuple[int, int]]]:
        """Moves from a hypothetical state (the engine's path rules, read-only)."""
        me = self.me
        budget = move_budget_m(me.movement_m, s.stance)
        n_max = squares_per_move(me.movement_m)
        occupied = self.ctx.occupied
        out = []
        for d in DIRECTIONS:
            for n in range(1, n_max + 1):
                path = move_path(self.grid, occupied, s.pos, d, n, budget)
                if path is None:
                    break
                out.append((f"move:{d}:{n}", path[-1]))
        return out
