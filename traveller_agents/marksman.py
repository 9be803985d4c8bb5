"""``marksman``: aim while aiming pays, fire, keep the distance."""

from __future__ import annotations

from collections.abc import Iterable

from traveller_agents.context import Context
from traveller_agents.paths import move_options
from traveller_agents.tactics import (
    ScriptedPolicy,
    aim_plan,
    attack_dm,
    attack_value,
    best_reaction,
)
from traveller_env.rules.attack import chebyshev
from traveller_env.rules.movement import squares_per_move

__all__ = ["MarksmanPolicy"]


class MarksmanPolicy(ScriptedPolicy):
    """``marksman``: the patient rifleman.

    * Target: the enemy in line of sight and range whose attack offers the best expected
      value per Minor-action equivalent (expected damage after armour, capped at what the
      target can still take, plus ``kill_weight`` x the chance of knocking it out), counting
      the aim already held on it.
    * Aim or fire: ``common.aim_plan`` compares, from the exact 2D6 distribution, firing now
      with aiming ``k`` more times (R4.3, up to +6): aiming is worth it while the extra
      expected value beats what the lost time earns at the best fire-and-aim cycle rate (a
      round is three Minor-equivalents, the attack costs two). At long range (the 2x Range
      band) that means aiming several times; at short range, firing at once. Minor actions
      left over after the attack aim at the next shot's target (aim carries over rounds).
    * Distance: when an enemy comes within ``keep_away_m`` (or a melee enemy could reach it
      next round), it spends its spare Minor action backing away (the legal Move that
      maximises the distance to the nearest enemy, keeping a shot on its target).
    * No shot (no line of sight or beyond 4x Range): moves toward the nearest enemy.
    * With a melee weapon it closes in and strikes like ``rush``.
    * Reactions: dodges or parries only when the damage saved beats the Initiative −2 and
      the aim it would lose (``common.best_reaction``). Never hastens.

    Args:
        seed: seed of the policy's own generator (used only for fallbacks).
        keep_away_m: back away from enemies closer than this (metres).
        kill_weight: value of knocking a target out, in points of damage.
        max_aim: the most aim DM it builds up (the rules cap it at +6).
    """

    name = "marksman"

    def __init__(self, seed: int | None = None, keep_away_m: float = 9.0,
                 kill_weight: float = 5.0, max_aim: int = 6) -> None:
        super().__init__(seed)
        self.keep_away_m = keep_away_m
        self.kill_weight = kill_weight
        self.max_aim = max_aim

    def react(self, ctx: Context) -> str:
        """Dodge/parry only when it pays (see ``common.best_reaction``)."""
        return best_reaction(ctx)

    # ------------------------------------------------------------------ shooting
    def shot_values(self, ctx: Context, target):
        """``value_at(aim)`` for an attack on ``target`` from here, or ``None`` if no shot."""
        view, me = ctx.view, ctx.me
        base = attack_dm(view, me, target, aim=0)
        if base is None:
            return None
        kw = self.kill_weight
        return lambda a: attack_value(view, me, target, base + a, kw)

    def best_target(self, ctx: Context):
        """``(target, value_at, aim held on it)`` with the best achievable rate, or None."""
        me = ctx.me
        best, best_rate = None, -1.0
        for e in ctx.enemies:
            value_at = self.shot_values(ctx, e)
            if value_at is None:
                continue
            held = me.aim_dm if me.aim_target == e.id else 0
            k = aim_plan(value_at, held, me.minors, self.max_aim)
            rate = value_at(held + k) / (k + 2)
            if rate > best_rate + 1e-12:
                best, best_rate = (e, value_at, held), rate
        return best

    def fire_or_aim(self, ctx: Context) -> list[str | None]:
        """Attack or aim at the best target per ``aim_plan``; None-list if no target."""
        sig, minors = ctx.budget
        best = self.best_target(ctx)
        if best is None:
            return []
        target, value_at, held = best
        if sig:
            k = aim_plan(value_at, held, ctx.me.minors, self.max_aim)
            if k == 0:
                return [f"attack:{target.id}", f"aim:{target.id}"]
            return [f"aim:{target.id}", f"attack:{target.id}"]
        if minors > 0 and held < self.max_aim:
            return [f"aim:{target.id}"]
        return []

    def shoot_or_advance(self, ctx: Context) -> list[str | None]:
        """Aim or fire (then end the turn); with no shot at anyone, move toward the nearest
        enemy."""
        shot = self.fire_or_aim(ctx)
        if shot:
            return [*shot, "end_turn"]
        _, minors = ctx.budget
        if minors > 0 and not self.best_target(ctx):
            target = self.nearest_enemy(ctx)
            if target is not None:
                return [self.move_toward(ctx, target.pos), "end_turn"]
        return ["end_turn"]

    # ------------------------------------------------------------------ distance
    def too_close(self, ctx: Context) -> bool:
        """An enemy within ``keep_away_m``, or a melee enemy that could reach it next round."""
        me = ctx.me
        for e in ctx.enemies:
            if ctx.view.distance_m(me.id, e.id) < self.keep_away_m:
                return True
            if e.weapon.is_melee:
                reach = 1 + 3 * squares_per_move(e.movement_m)
                if chebyshev(me.pos, e.pos) <= reach:
                    return True
        return False

    def back_away(self, ctx: Context) -> str | None:
        """The legal Move that most increases the distance to the nearest enemy, keeping a
        shot on some enemy when possible; ``None`` if no Move increases it."""
        grid, me = ctx.view.grid, ctx.me
        enemies = ctx.enemies
        if not enemies:
            return None

        def score(sq):
            nearest = min(grid.distance_m(sq, e.pos) for e in enemies)
            shot = any(attack_dm(ctx.view, me, e, apos=sq) is not None for e in enemies)
            return (shot, nearest)

        here = score(me.pos)
        best, best_key = None, (here[0], here[1] + 1e-9)
        for label, dest in move_options(ctx):
            key = score(dest)
            if key > best_key:
                best, best_key = label, key
        return best

    # ------------------------------------------------------------------ the turn
    def turn(self, ctx: Context) -> Iterable[str | None]:
        """Ready the weapon, keep the distance, aim or fire (see the class docstring)."""
        first = self.ranged_turn_prologue(ctx)
        if first is not None:
            return first
        if ctx.spare_minor and self.too_close(ctx):
            mv = self.back_away(ctx)
            if mv is not None:
                return [mv]
        return self.shoot_or_advance(ctx)
