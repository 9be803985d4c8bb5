"""``leader``: Leadership when it pays, bonuses to the best shots, penalties on the worst
threats; otherwise a marksman."""

from __future__ import annotations

from collections.abc import Iterable

from traveller_agents.context import Context
from traveller_agents.marksman import MarksmanPolicy
from traveller_agents.tactics import attack_dm, attack_value, bonus_value, threat
from traveller_env.rules.attack import held_dms, total_dm
from traveller_env.rules.checks import effect_distribution
from traveller_env.rules.leadership import can_communicate, leadership_dms

__all__ = ["AlwaysLeadPolicy", "LeaderPolicy", "NeverLeadPolicy"]


class LeaderPolicy(MarksmanPolicy):
    """``leader``: the sergeant.

    * Leadership (R4.2, R7): with its Significant action still available, it makes a
      Leadership check when (a) the chance of a positive Effect (exact, from 2D + Leadership
      + the best of INT/EDU/SOC DM + haste and held bonus/penalty) is at least
      ``min_success``, (b) at least one ally in play can receive a bonus (within comms range
      or both with radios, R7.2, not already holding one), and (c) the expected value of
      the check (for each Effect, the bonuses its allies can use, each worth what DM +1 adds
      to that ally's best attack, minus the penalties the enemy would impose, each worth what
      DM −1 takes from it) reaches ``value_ratio`` x the value of its own best shot now.
    * Bonuses (``direct``): handed at once (they lapse at its next turn), each to the ally
      for whom DM +1 adds the most to its best attack, preferring allies yet to act.
    * Penalties (``hamper``): imposed on the enemies with the most dangerous attack on its
      side.
    * Otherwise it fights like ``marksman`` (aim-or-fire, keeping its distance).

    Args:
        seed: seed of the policy's own generator (used only for fallbacks).
        min_success: least chance of a positive Effect worth trying for.
        value_ratio: Leadership must be worth this fraction of its own best shot.
        keep_away_m, kill_weight: as for ``marksman``.
    """

    name = "leader"

    def __init__(self, seed: int | None = None, min_success: float = 0.5,
                 value_ratio: float = 1.0, keep_away_m: float = 9.0,
                 kill_weight: float = 5.0) -> None:
        super().__init__(seed, keep_away_m=keep_away_m, kill_weight=kill_weight)
        self.min_success = min_success
        self.value_ratio = value_ratio

    # ------------------------------------------------------------------ leadership
    def leadership_dm(self, ctx: Context) -> int:
        """DM of its Leadership check now (R4.2): skill (or −3) + best of INT/EDU/SOC."""
        me = ctx.me
        return total_dm(leadership_dms(me)) + total_dm(held_dms(me))

    def receivers(self, ctx: Context) -> list:
        """Allies that could take a bonus now (in comms range or both with radios, R7.2,
        and not already holding one, R7.3)."""
        view, me = ctx.view, ctx.me
        out = []
        for a in ctx.allies:
            if a.bonus:
                continue
            if can_communicate(me, a, view.grid, view.comms_range_m):
                out.append(a)
        return out

    def leadership_value(self, ctx: Context) -> tuple[float, float]:
        """``(chance of a positive Effect, expected value of the check)``."""
        receivers = self.receivers(ctx)
        gains = sorted((bonus_value(ctx, a) for a in receivers), reverse=True)
        side = [ctx.me, *ctx.allies]
        losses = sorted((self.penalty_cost(ctx, m) for m in side), reverse=True)
        p_pos = value = 0.0
        for effect, p in effect_distribution(self.leadership_dm(ctx)).items():
            if effect > 0:
                p_pos += p
                value += p * sum(gains[:effect])
            elif effect < 0:
                value -= p * sum(losses[:-effect])
        return p_pos, value

    def penalty_cost(self, ctx: Context, member) -> float:
        """What DM −1 would take from ``member``'s best attack now."""
        view = ctx.view
        best = 0.0
        for e in ctx.enemies:
            dm = attack_dm(view, member, e, held=False)
            if dm is None:
                continue
            loss = (attack_value(view, member, e, dm, self.kill_weight)
                    - attack_value(view, member, e, dm - 1, self.kill_weight))
            best = max(best, loss)
        return best

    def own_shot_value(self, ctx: Context) -> float:
        """The value of its best attack this turn (with one more aim if it can still aim)."""
        best = self.best_target(ctx)
        if best is None:
            return 0.0
        _, value_at, held = best
        return value_at(min(self.max_aim, held + (1 if ctx.me.minors == 0 else 0)))

    def should_lead(self, ctx: Context) -> bool:
        """Criteria (a)-(c) of the class docstring."""
        sig, _ = ctx.budget
        if not sig or not ctx.legal("leadership") or not self.receivers(ctx):
            return False
        p_pos, value = self.leadership_value(ctx)
        return p_pos >= self.min_success and value > 0 and (
            value >= self.value_ratio * self.own_shot_value(ctx))

    # ------------------------------------------------------------------ free actions
    def free_action(self, ctx: Context) -> str | None:
        """Bonuses to the allies whose attack gains most; penalties on the worst threats."""
        bonuses, penalties = ctx.view.held_pools(ctx.agent)
        if bonuses:
            scored = sorted(((bonus_value(ctx, a), a.id) for a in ctx.allies
                             if ctx.legal(f"direct:{a.id}")), reverse=True)
            if scored:
                return f"direct:{scored[0][1]}"
        if penalties:
            for e in sorted(ctx.enemies, key=lambda e: (-threat(ctx, e), e.id)):
                if ctx.legal(f"hamper:{e.id}"):
                    return f"hamper:{e.id}"
        return None

    def turn(self, ctx: Context) -> Iterable[str | None]:
        """Lead when it pays, else fight like a marksman."""
        if self.should_lead(ctx):
            return ["leadership", *super().turn(ctx)]
        return super().turn(ctx)


class AlwaysLeadPolicy(LeaderPolicy):
    """``always_lead``: the ``leader`` that makes a Leadership check in every turn it can
    (Significant action available), whatever the odds; bonuses and penalties as ``leader``.
    A baseline for learned leadership."""

    name = "always_lead"

    def should_lead(self, ctx: Context) -> bool:
        """Lead whenever the Leadership action is legal."""
        sig, _ = ctx.budget
        return bool(sig) and ctx.legal("leadership")


class NeverLeadPolicy(LeaderPolicy):
    """``never_lead``: the ``leader`` that never makes a Leadership check (it still imposes
    penalties its side earns). A baseline for learned leadership."""

    name = "never_lead"

    def should_lead(self, ctx: Context) -> bool:
        """Never."""
        return False
