"""``rush``: draw, close in on the nearest enemy, attack."""

from __future__ import annotations

from collections.abc import Iterable

from traveller_agents.context import Context
from traveller_agents.tactics import ScriptedPolicy, best_attacks
from traveller_env.rules.attack import chebyshev
from traveller_env.rules.movement import squares_per_move

__all__ = ["RushPolicy"]


class RushPolicy(ScriptedPolicy):
    """``rush``: the aggressive brawler.

    Each turn: draw (or reload) if the weapon is not ready; then spend the spare Minor action
    moving toward the nearest enemy (by path, around walls) unless already close enough;
    then attack (the attack most likely to hurt, among the legal ones); with no attack
    possible, keep moving in. "Close enough" is adjacent for a melee weapon, and within
    ``stop_fraction`` of the weapon's Range (default ¼: the DM +1 band, R5.1) with line of
    sight for a ranged one. Reactions: parries melee attacks when ``parry`` (default) and
    never dodges; declares haste (R3.5) only when ``haste`` is set and a melee weapon can
    reach an enemy this round. Never aims, never changes stance.

    Args:
        seed: seed of the policy's own generator (used only for fallbacks).
        stop_fraction: fraction of the weapon's Range at which a ranged rusher stops closing.
        parry: parry melee attacks when the mask allows it.
        haste: declare haste when a melee charge can land this round.
    """

    name = "rush"

    def __init__(self, seed: int | None = None, stop_fraction: float = 0.25, parry: bool = True,
                 haste: bool = False) -> None:
        super().__init__(seed)
        self.stop_fraction = stop_fraction
        self.parry = parry
        self.hasten = haste

    def haste(self, ctx: Context) -> str:
        """Haste only for a melee charge that can land this round (if enabled)."""
        me = ctx.me
        if self.hasten and me.weapon.is_melee:
            reach = 1 + 3 * squares_per_move(me.movement_m)
            if any(chebyshev(me.pos, e.pos) <= reach for e in ctx.enemies):
                return "haste:yes"
        return "haste:no"

    def react(self, ctx: Context) -> str:
        """Parry melee attacks (when enabled and legal); otherwise no reaction."""
        if self.parry and ctx.legal("react:parry"):
            return "react:parry"
        return "react:none"

    def close_enough(self, ctx: Context, target) -> bool:
        """Adjacent (melee) or within ``stop_fraction`` x Range with line of sight."""
        me = ctx.me
        if me.weapon.is_melee:
            return chebyshev(me.pos, target.pos) <= 1
        return (ctx.view.line_of_sight(me.id, target.id)
                and ctx.view.distance_m(me.id, target.id)
                <= max(1.5, self.stop_fraction * me.weapon.range_m))

    def turn(self, ctx: Context) -> Iterable[str | None]:
        """Draw, close in, attack (see the class docstring)."""
        ready = self.draw_or_reload(ctx)
        if ready:
            return [ready]
        target = self.nearest_enemy(ctx)
        if target is None:
            return ["end_turn"]
        sig, minors = ctx.budget
        if ctx.spare_minor and not self.close_enough(ctx, target):
            mv = self.move_toward(ctx, target.pos)
            if mv is not None:
                return [mv, *best_attacks(ctx), "end_turn"]
        if sig:
            attacks = best_attacks(ctx)
            if attacks:
                return [*attacks, "end_turn"]
        if minors > 0:
            return [self.move_toward(ctx, target.pos), "end_turn"]
        return ["end_turn"]
