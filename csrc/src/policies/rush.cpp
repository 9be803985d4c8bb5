// The in-core rush NPC: traveller_agents/rush.py RushPolicy with its default parameters, function for
// function (its haste and reaction choices are in scripted.cpp's dispatcher).
#include <algorithm>

#include "policies/common.hpp"
#include "policies/npcs.hpp"

namespace traveller::npc {

namespace {

constexpr double kStopFraction = 0.25;  // RushPolicy.stop_fraction

bool rush_close_enough(const Ctx& ctx, int target) {
    const Combatant& t = ctx.c(target);
    if (ctx.m.weapon.melee) return chebyshev(ctx.m.x, ctx.m.y, t.x, t.y) <= 1;
    return ctx.g.line_of_sight(ctx.m.x, ctx.m.y, t.x, t.y) &&
           Grid::distance_m(ctx.m.x, ctx.m.y, t.x, t.y) <=
               std::max(1.5, kStopFraction * ctx.m.weapon.range_m);
}

}  // namespace

Prefs rush_turn(const Ctx& ctx) {
    const int end = ctx.index(Kind::end_turn);
    const int ready = draw_or_reload(ctx);
    if (ready >= 0) return {ready};
    const int target = nearest_enemy(ctx);
    if (target < 0) return {end};
    const Combatant& t = ctx.c(target);
    if (ctx.spare_minor() && !rush_close_enough(ctx, target)) {
        const int mv = move_toward(ctx, t.x, t.y);
        if (mv >= 0) return {mv};  // [mv, *best_attacks, end_turn]: mv is legal
    }
    if (ctx.sig) {
        const int attack = best_attack(ctx);
        if (attack >= 0) return {attack, end};
    }
    if (ctx.minors > 0) return {move_toward(ctx, t.x, t.y), end};
    return {end};
}

}  // namespace traveller::npc
