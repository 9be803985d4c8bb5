"""``cover``: get behind low cover, get down, then shoot."""

from __future__ import annotations

from collections.abc import Iterable

from traveller_agents.context import Context
from traveller_agents.marksman import MarksmanPolicy
from traveller_agents.paths import path_cost
from traveller_agents.tactics import attack_dm, best_reaction
from traveller_env.rules.checks import success_probability
from traveller_env.rules.grid import DIRECTIONS

__all__ = ["CoverPolicy"]


class CoverPolicy(MarksmanPolicy):
    """``cover``: the careful soldier.

    * Spot: the nearest square (by path, within ``search_m``) where, crouched or prone, it is
      *in cover* (R5.3/R8.1: a low-cover ``c`` square adjacent to it lies on the line from
      the shooter) from every enemy with a ranged weapon that can see it, while it can still
      shoot at one of them. If no square covers it from all of them, the one exposed to the
      least danger; squares already as good as its own are not worth a move.
    * It moves there (Moves that get closer by path), then takes its ``stance`` (crouch by
      default; prone when the map has no low cover at all, where only prone helps: DM −1),
      then shoots: aim-or-fire exactly like ``marksman``, its spare Minor actions aiming.
    * Dodges when it pays: when the dodge lowers the attack's hit chance by at least
      ``dodge_min_drop`` and it has already taken its turn this round (so the Initiative −2
      only matters next round), and the expected damage saved beats the cost
      (``common.best_reaction``); parries melee attacks on the same terms.
    * With a melee weapon it closes in and strikes like ``rush``.

    Args:
        seed: seed of the policy's own generator (used only for fallbacks).
        stance: ``crouch`` or ``prone`` once in cover.
        search_m: how far (metres of movement) it looks for cover.
        dodge_min_drop: least drop in the attack's hit chance that makes a dodge worth it.
        kill_weight: as for ``marksman``.
    """

    name = "cover"

    def __init__(self, seed: int | None = None, stance: str = "crouch", search_m: float = 15.0,
                 dodge_min_drop: float = 0.08, kill_weight: float = 5.0) -> None:
        super().__init__(seed, keep_away_m=0.0, kill_weight=kill_weight)
        if stance not in ("crouch", "prone"):
            raise ValueError(f"stance must be 'crouch' or 'prone', got {stance!r}")
        self.stance = stance
        self.search_m = search_m
        self.dodge_min_drop = dodge_min_drop
        self._cover_sites: dict[tuple, list[tuple[int, int]]] = {}

    # ------------------------------------------------------------------ reactions
    def react(self, ctx: Context) -> str:
        """Dodge/parry when the hit chance drops enough, after its own turn, and it pays."""
        view, me = ctx.view, ctx.me
        p = view.pending_attack
        if p is None or not me.acted:
            return "react:none"
        total = sum(p["dms"].values())
        if success_probability(total) - success_probability(total - 1) < self.dodge_min_drop:
            return "react:none"
        return best_reaction(ctx, min_drop=self.dodge_min_drop)

    # ------------------------------------------------------------------ cover spots
    def sites(self, grid) -> list[tuple[int, int]]:
        """Passable squares next to a low-cover square (cached per map)."""
        key = grid.rows
        sites = self._cover_sites.get(key)
        if sites is None:
            found = set()
            for (cx, cy) in grid.cover_squares:
                for dx, dy in DIRECTIONS.values():
                    sq = (cx + dx, cy + dy)
                    if grid.in_bounds(sq) and sq not in grid.walls:
                        found.add(sq)
            sites = self._cover_sites[key] = sorted(found)
        return sites

    def exposure(self, ctx: Context, sq: tuple[int, int]) -> float:
        """Danger at ``sq`` when down: the sum over ranged enemies that can see it without
        cover of their hit chance there."""
        view, me = ctx.view, ctx.me
        total = 0.0
        for e in ctx.enemies:
            if e.weapon.is_melee:
                continue
            dm = attack_dm(view, e, me, tpos=sq, tstance=self.stance)
            if dm is None:
                continue
            if view.grid.cover_between(e.pos, sq):
                continue
            total += success_probability(dm)
        return total

    def can_shoot_from(self, ctx: Context, sq: tuple[int, int]) -> bool:
        """Some enemy is in line of sight and range from ``sq``."""
        return any(attack_dm(ctx.view, ctx.me, e, apos=sq) is not None for e in ctx.enemies)

    def cover_spot(self, ctx: Context) -> tuple[int, int] | None:
        """The square to hold (see the class docstring), or None when the map has no cover."""
        grid, me = ctx.view.grid, ctx.me
        if not grid.cover_squares:
            return None
        here_exp = self.exposure(ctx, me.pos)
        here_ok = self.can_shoot_from(ctx, me.pos)
        best, best_key = me.pos, (0 if here_ok else 1, round(here_exp, 6), 0.0)
        occupied = ctx.occupied
        for sq in self.sites(grid):
            if sq in occupied or sq == me.pos:
                continue
            cost = path_cost(grid, sq, me.pos)
            if cost > self.search_m:
                continue
            if not self.can_shoot_from(ctx, sq):
                continue
            key = (0, round(self.exposure(ctx, sq), 6), cost)
            if key < best_key:
                best, best_key = sq, key
        return best

    # ------------------------------------------------------------------ the turn
    def turn(self, ctx: Context) -> Iterable[str | None]:
        """Move to cover, get down, then shoot (see the class docstring)."""
        first = self.ranged_turn_prologue(ctx)
        if first is not None:
            return first
        me = ctx.me
        _, minors = ctx.budget
        spot = self.cover_spot(ctx)
        want = self.stance if spot is not None else "prone"
        if spot is not None and spot != me.pos and minors > 0:
            if me.stance == "prone" and ctx.legal("stance:crouch"):
                return ["stance:crouch"]  # crawling is a quarter speed; get up to move
            mv = self.move_toward(ctx, spot)
            if mv is not None:
                return [mv]
        if me.stance != want and minors > 0 and ctx.legal(f"stance:{want}"):
            return [f"stance:{want}"]
        return self.shoot_or_advance(ctx)
