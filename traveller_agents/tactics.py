"""Tactical arithmetic of the scripted policies, and their base class.

* exact attack arithmetic: ``attack_outcome`` (hit chance, expected damage after armour and
  capped at what the target can still take, chance of knocking it out), from the exact 2D6
  and damage-dice distributions; ``attack_dm`` for hypothetical squares, stances and aims;
  ``attack_value`` and ``damage_to_down``.
* the marksman's aim-or-fire rule (``aim_plan``).
* shared evaluations of a decision: the best attacks (``best_attacks``), how dangerous an
  enemy is (``threat``), what a leadership bonus adds (``bonus_value``) and a value-based
  reaction rule (``best_reaction``).
* ``ScriptedPolicy``: the base class. ``act`` dispatches on the decision kind (haste
  declaration, reaction, turn, the R2.3 free-action state) to overridable methods that return
  action *labels* in order of preference; the first legal one is played, and a legal
  fallback (``haste:no``, ``react:none``, ``end_turn``, else a random legal action from the
  policy's own generator, the shared PCG32 of ``traveller_env.policy.policy_rng``) is used
  when every preference is masked.

Everything here *reads* the battle through ``env.view`` (a read-only ``BattleView``) and the
environment's public action vocabulary; nothing mutates the engine. The decision context is
``traveller_agents.context``'s, path finding ``traveller_agents.paths``'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from traveller_agents.context import Context, Square, unwrap
from traveller_agents.paths import move_options, path_cost
from traveller_env.policy import policy_rng
from traveller_env.rules.attack import (
    attack_dms,
    chebyshev,
    damage_on_hit,
    held_dms,
    in_attack_reach,
    total_dm,
)
from traveller_env.rules.budget import Budget
from traveller_env.rules.checks import dice_sum_distribution, effect_distribution
from traveller_env.rules.damage import damage_to_incapacitate
from traveller_env.rules.movement import squares_per_move
from traveller_env.rules.reactions import reaction_dm
from traveller_env.view import BattleView, CombatantView

__all__ = ["ScriptedPolicy", "aim_plan", "attack_dm", "attack_outcome", "attack_value",
           "best_attacks", "best_reaction", "bonus_value", "damage_to_down", "threat"]


# ============================================================================ attack arithmetic
def _damage_dice(count: int) -> tuple[tuple[int, float], ...]:
    """Exact distribution of ``count``D6 as ``((sum, probability), ...)``."""
    return tuple(sorted(dice_sum_distribution(count).items()))


@lru_cache(maxsize=200_000)
def attack_outcome(dm: int, count: int, modifier: int, protection: int,
                   hp: int) -> tuple[float, float, float]:
    """``(p_hit, expected damage, p_down)`` of one attack with total DM ``dm`` (R1.2, R6.1).

    Damage on a hit is the weapon dice + ``modifier`` + the Effect − ``protection`` (never
    below 0), capped at ``hp`` (what the target can still take before going down; damage
    beyond it is wasted). ``p_down`` is the chance the hit takes at least ``hp``.
    """
    dm = max(-20, min(20, dm))
    dice = _damage_dice(count)
    p_hit = expected = p_down = 0.0
    for effect, pe in effect_distribution(dm).items():
        if effect < 0:
            continue
        p_hit += pe
        for value, pv in dice:
            dmg = damage_on_hit(value, modifier, effect, protection)
            p = pe * pv
            if dmg >= hp:
                p_down += p
                expected += p * hp
            else:
                expected += p * dmg
    return p_hit, expected, p_down


def damage_to_down(c: CombatantView) -> int:
    """Damage one hit must do to knock ``c`` out now (R6.2-R6.3): END, then the higher of
    STR and DEX (a single hit takes the higher one first)."""
    ch = c.chars
    if c.down:
        return 0
    return max(1, damage_to_incapacitate(ch["STR"], ch["DEX"], ch["END"]))


def attack_dm(view: BattleView, attacker: CombatantView, target: CombatantView, *,
              apos: Square | None = None, tpos: Square | None = None,
              tstance: str | None = None, aim: int | None = None, hasty: bool | None = None,
              held: bool = True) -> int | None:
    """Total DM of ``attacker``'s attack on ``target`` in a hypothetical position.

    ``apos``/``tpos``/``tstance`` default to the current ones; ``aim`` (default: the aim the
    attacker holds on that target) and ``hasty`` override the attacker's; ``held`` adds a
    held leadership bonus (+1) or penalty (−1). Returns ``None`` when the attack would be
    impossible from there (no line of sight, beyond 4x Range, not adjacent for melee). The
    weapon being drawn and loaded is not checked. With every argument left at its default the
    result equals ``sum(view.attack_dms(...).values())`` (+ held bonus/penalty).
    """
    grid = view.grid
    if not in_attack_reach(attacker.weapon, grid, attacker.pos if apos is None else apos,
                           target.pos if tpos is None else tpos):
        return None
    dms = attack_dms(attacker, target, grid, apos=apos, tpos=tpos, tstance=tstance, aim=aim,
                     hasty=hasty)
    if held:
        dms.update(held_dms(attacker))
    return total_dm(dms)


def attack_value(view: BattleView, attacker: CombatantView, target: CombatantView, dm: int,
                 kill_weight: float = 0.0) -> float:
    """Expected damage of an attack at total DM ``dm`` (capped at what the target can take),
    plus ``kill_weight`` times the chance of knocking the target out."""
    w = attacker.weapon
    _, ed, p_down = attack_outcome(dm, w.damage.count, w.damage.modifier,
                                   target.armour.protection, damage_to_down(target))
    return ed + kill_weight * p_down


# ============================================================================ aiming (R4.3)
def _feasible(minors_used: int, k: int) -> bool:
    """Can the attack follow ``k`` more aims, given ``minors_used`` this turn (R2.1)?"""
    return Budget.significant_after_minors(minors_used, k)


def aim_plan(value_at: Callable[[int], float], aim: int, minors_used: int,
             max_aim: int = 6) -> int:
    """How many more times to aim before firing (0: fire now), by exact expected values.

    ``value_at(a)`` is the expected value of the attack with aim DM ``a``. Time is counted in
    Minor-action equivalents (a round holds three; the attack, a Significant action, costs
    two). ``rate`` is the best long-run value per Minor of a fire-and-aim cycle starting from
    no aim (aim once and fire every round, aim four times and fire every second round, or
    seven times, capped at +6, every third). Aiming ``k`` more times is worth it when the
    extra value ``value_at(aim + k) - value_at(aim)`` beats what ``k`` Minor actions earn at
    that rate; only ``k`` that let the attack fit the turn budget are considered. Ties go to
    firing sooner.
    """
    rate = max(value_at(min(max_aim, 3 * n - 2)) / (3 * n) for n in (1, 2, 3))
    best_k, best = 0, value_at(aim) - 2 * rate if _feasible(minors_used, 0) else -math.inf
    for k in range(1, 7):
        if aim + k > max_aim or not _feasible(minors_used, k):
            continue
        v = value_at(aim + k) - rate * (k + 2)
        if v > best + 1e-9:
            best_k, best = k, v
    return best_k


# ============================================================================ shared evaluations
def best_attacks(ctx: Context, kill_weight: float = 5.0) -> list[str]:
    """Legal attack labels, the most valuable first (expected damage + kill chance)."""
    view, me = ctx.view, ctx.me
    scored = []
    for e in ctx.enemies:
        label = f"attack:{e.id}"
        if not ctx.legal(label):
            continue
        dm = attack_dm(view, me, e)
        if dm is None:
            continue
        scored.append((attack_value(view, me, e, dm, kill_weight), e.id, label))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [label for _, _, label in scored]


def threat(ctx: Context, enemy: CombatantView) -> float:
    """How dangerous ``enemy`` is to the deciding combatant's side: the best expected damage
    of its attack on any of them now (melee fighters count as if they could close in)."""
    view = ctx.view
    best = 0.0
    for m in [ctx.me, *ctx.allies]:
        if enemy.weapon.is_melee:
            if chebyshev(enemy.pos, m.pos) > 1 + squares_per_move(enemy.movement_m):
                continue
            dm = attack_dm(view, enemy, m, apos=m.pos, tpos=m.pos)
        else:
            dm = attack_dm(view, enemy, m)
        if dm is not None:
            best = max(best, attack_value(view, enemy, m, dm))
    return best


def bonus_value(ctx: Context, ally: CombatantView) -> float:
    """What a leadership bonus (DM +1) adds to ``ally``'s best attack now (expected damage,
    and knock-out chance), more if it has yet to act this round."""
    view = ctx.view
    best = 0.0
    for e in ctx.enemies:
        if ally.weapon.is_melee and chebyshev(ally.pos, e.pos) > 1:
            reach = 1 + squares_per_move(ally.movement_m)
            if chebyshev(ally.pos, e.pos) > reach:
                continue
            dm = attack_dm(view, ally, e, apos=e.pos, held=False)
        else:
            dm = attack_dm(view, ally, e, held=False)
        if dm is None:
            continue
        gain = (attack_value(view, ally, e, dm + 1, 5.0) - attack_value(view, ally, e, dm, 5.0))
        best = max(best, gain)
    return best * (1.0 if not ally.acted else 0.8)


def best_reaction(ctx: Context, init_cost_waiting: float = 1.0, init_cost_acted: float = 0.5,
                  min_drop: float = 0.0) -> str:
    """Dodge or parry (R3.6) when the damage it saves beats its cost, else ``react:none``.

    Saved: the drop in expected damage (capped at what the combatant can take) plus five
    times the drop in the chance of being knocked out. Cost: Initiative −2 (worth
    ``init_cost_waiting`` before its own turn this round, ``init_cost_acted`` after it) and
    the aim it would lose (the value of its aimed attack with and without the aim).
    ``min_drop`` is a floor on the drop in hit chance.
    """
    view, me = ctx.view, ctx.me
    p = view.pending_attack
    if p is None:
        return "react:none"
    attacker = view.combatant(p["attacker"])
    total = total_dm(p["dms"]) + total_dm(held_dms(attacker))
    w = attacker.weapon
    hp = damage_to_down(me)
    p0, ed0, k0 = attack_outcome(total, w.damage.count, w.damage.modifier,
                                 me.armour.protection, hp)
    cost = init_cost_acted if me.acted else init_cost_waiting
    if me.aim_target is not None and me.aim_dm:
        target = view.combatant(me.aim_target)
        if target.in_play:
            dm = attack_dm(view, me, target)
            if dm is not None:
                cost += (attack_value(view, me, target, dm, 5.0)
                         - attack_value(view, me, target, dm - me.aim_dm, 5.0))
    best, best_gain = "react:none", 0.0
    for choice in ("dodge", "parry"):
        label = f"react:{choice}"
        if not ctx.legal(label):
            continue
        p1, ed1, k1 = attack_outcome(total + reaction_dm(me, choice), w.damage.count,
                                     w.damage.modifier, me.armour.protection, hp)
        if p0 - p1 < min_drop:
            continue
        gain = (ed0 - ed1) + 5.0 * (k0 - k1) - cost
        if gain > best_gain:
            best, best_gain = label, gain
    return best


# ============================================================================ base class
class ScriptedPolicy:
    """Base class of the scripted behaviours (see the module docstring).

    Subclasses override ``haste``, ``react``, ``turn`` and possibly ``free_action``; each
    returns one label or a list of labels in order of preference.
    """

    name = "scripted"
    needs_observation = False  # decides from the view and the mask

    def __init__(self, seed: int | None = None) -> None:
        self.rng = policy_rng(seed)
        self._env_ref: Any = None
        self._labels: list[str] = []
        self._index: dict[str, int] = {}

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the policy's generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = policy_rng(seed)

    # ------------------------------------------------------------------ the Policy protocol
    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """A legal action index for ``agent``, chosen from ``env.view`` (read-only)."""
        env = unwrap(env)
        if self._env_ref is not env:
            self._env_ref = env
            self._labels = env.action_labels
            self._index = {label: i for i, label in enumerate(self._labels)}
        ctx = Context(env, agent, np.asarray(action_mask), self._labels, self._index)
        return self.choose(ctx, self.decide(ctx))

    def decide(self, ctx: Context) -> str | Iterable[str | None] | None:
        """The labels to try, by decision kind."""
        phase = ctx.view.phase
        if phase == "haste":
            return self.haste(ctx)
        if phase == "reaction":
            return self.react(ctx)
        free = self.free_action(ctx)
        if free is not None:
            return free
        sig, minors = ctx.budget
        if not sig and minors <= 0:  # R2.3: only free actions and end_turn remain
            return "end_turn"
        return self.turn(ctx)

    def choose(self, ctx: Context, prefs: str | Iterable[str | None] | None) -> int:
        """The index of the first legal preference, else a legal fallback."""
        if isinstance(prefs, str):
            prefs = [prefs]
        for label in prefs or ():
            if label is not None and ctx.legal(label):
                return ctx.index[label]
        for label in ("end_turn", "react:none", "haste:no"):
            if ctx.legal(label):
                return ctx.index[label]
        legal = np.flatnonzero(ctx.mask)
        return int(legal[self.rng.below(len(legal))])

    # ------------------------------------------------------------------ overridable parts
    def haste(self, ctx: Context) -> str | Iterable[str]:
        """Haste declaration (R3.5); default: no haste."""
        return "haste:no"

    def react(self, ctx: Context) -> str | Iterable[str]:
        """Reaction to ``view.pending_attack`` (R3.6); default: react when it pays."""
        return best_reaction(ctx)

    def turn(self, ctx: Context) -> str | Iterable[str | None]:
        """An action in the combatant's own turn; default: end the turn."""
        return "end_turn"

    def free_action(self, ctx: Context) -> str | None:
        """A free leadership action (R7.5) worth taking now, or ``None``: impose a penalty
        on the most dangerous enemy, hand a bonus to the ally with the most valuable attack."""
        bonuses, penalties = ctx.view.held_pools(ctx.agent)
        if penalties:
            ranked = sorted(ctx.enemies, key=lambda e: -threat(ctx, e))
            for e in ranked:
                if ctx.legal(f"hamper:{e.id}"):
                    return f"hamper:{e.id}"
        if bonuses:
            scored = [(bonus_value(ctx, a), a.id) for a in ctx.allies
                      if ctx.legal(f"direct:{a.id}")]
            scored.sort(reverse=True)
            if scored:
                return f"direct:{scored[0][1]}"
        return None

    # ------------------------------------------------------------------ shared tactics
    def draw_or_reload(self, ctx: Context) -> str | None:
        """``draw`` / ``reload`` when the weapon is not ready and the action is legal."""
        me = ctx.me
        if not me.drawn and ctx.legal("draw"):
            return "draw"
        if not me.weapon.is_melee and me.ammo <= 0 and ctx.legal("reload"):
            return "reload"
        return None

    def ranged_turn_prologue(self, ctx: Context) -> list[str | None] | None:
        """What every shooter does first: fight in melee with a melee weapon, otherwise ready
        its weapon (draw/reload) if needed; ``None`` when the weapon is ready to fire."""
        if ctx.me.weapon.is_melee:
            return self.melee_turn(ctx)
        ready = self.draw_or_reload(ctx)
        return [ready] if ready else None

    def nearest_enemy(self, ctx: Context) -> CombatantView | None:
        """The enemy closest by path (ties: straight-line distance, then scenario order)."""
        if not ctx.enemies:
            return None
        grid, me = ctx.view.grid, ctx.me
        return min(ctx.enemies, key=lambda e: (path_cost(grid, e.pos, me.pos),
                                               ctx.view.distance_m(me.id, e.id)))

    def move_toward(self, ctx: Context, goal: Square,
                    ok: Callable[[Square], bool] | None = None) -> str | None:
        """The legal Move that brings the combatant closest (by path) to ``goal``; ``None``
        when no Move gets closer. ``ok`` filters destinations."""
        grid, me = ctx.view.grid, ctx.me
        here = path_cost(grid, goal, me.pos)
        best, best_key = None, (here - 1e-9, 0.0)
        for label, dest in move_options(ctx):
            if ok is not None and not ok(dest):
                continue
            key = (path_cost(grid, goal, dest), grid.distance_m(dest, goal))
            if key < best_key:
                best, best_key = label, key
        return best

    def melee_turn(self, ctx: Context) -> list[str | None]:
        """Close in on the nearest enemy and strike (melee weapons, or a ranged fighter with
        nothing else to do): attack an adjacent enemy (the one most likely to go down),
        otherwise move toward the nearest one and attack if that made one adjacent."""
        ready = self.draw_or_reload(ctx)
        if ready:
            return [ready]
        sig, _ = ctx.budget
        attacks = best_attacks(ctx)
        if sig and attacks:
            return [*attacks, "end_turn"]
        target = self.nearest_enemy(ctx)
        mv = self.move_toward(ctx, target.pos) if target is not None else None
        return [mv, "end_turn"]
