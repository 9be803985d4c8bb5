// The in-core marksman NPC: traveller_agents/marksman.py MarksmanPolicy with its default parameters,
// function for function. cover.cpp and leader.cpp reuse its shooting (npcs.hpp).
#include <algorithm>

#include "policies/common.hpp"
#include "policies/npcs.hpp"

namespace traveller::npc {

namespace {

constexpr double kKeepAwayM = 9.0;  // MarksmanPolicy.keep_away_m

// MarksmanPolicy.fire_or_aim (n == 0: no shot).
Prefs marksman_fire_or_aim(const Ctx& ctx) {
    const Target best = marksman_best_target(ctx);
    if (best.e < 0) return {};
    const int attack = ctx.index(Kind::attack, best.e), aim = ctx.index(Kind::aim, best.e);
    if (ctx.sig) {
        const auto value_at = [&](int a) {
            return attack_value(ctx, ctx.me, best.e, best.base + a, kKillWeight);
        };
        const int k = aim_plan(value_at, best.held, ctx.m.minors, kMaxAim);
        if (k == 0) return {attack, aim};
        return {aim, attack};
    }
    if (ctx.minors > 0 && best.held < kMaxAim) return {aim};
    return {};
}

// MarksmanPolicy.too_close.
bool marksman_too_close(const Ctx& ctx) {
    for (int e : ctx.enemies()) {
        const Combatant& en = ctx.c(e);
        if (Grid::distance_m(ctx.m.x, ctx.m.y, en.x, en.y) < kKeepAwayM) return true;
        if (en.weapon.melee) {
            const int reach = 1 + 3 * squares_per_move(en.movement_m);
            if (chebyshev(ctx.m.x, ctx.m.y, en.x, en.y) <= reach) return true;
        }
    }
    return false;
}

// MarksmanPolicy.back_away: the legal Move that most increases the distance to the nearest
// enemy, keeping a shot on some enemy when possible; -1 if none increases it.
int marksman_back_away(const Ctx& ctx) {
    if (ctx.enemies().empty()) return -1;
    const auto score = [&](int x, int y, bool& shot, double& nearest) {
        nearest = kInf;
        shot = false;
        for (int e : ctx.enemies()) {
            const Combatant& en = ctx.c(e);
            nearest = std::min(nearest, Grid::distance_m(x, y, en.x, en.y));
        }
        for (int e : ctx.enemies()) {
            const Combatant& en = ctx.c(e);
            if (in_attack_reach(ctx.m.weapon, ctx.g, x, y, en.x, en.y)) {
                shot = true;
                break;
            }
        }
    };
    bool best_shot;
    double best_near;
    score(ctx.m.x, ctx.m.y, best_shot, best_near);
    best_near += 1e-9;
    int best = -1;
    for_each_move(ctx, [&](int index, int x, int y) {
        bool shot;
        double nearest;
        score(x, y, shot, nearest);
        if (shot != best_shot ? shot : nearest > best_near) {  // (shot, nearest) > best key
            best = index;
            best_shot = shot;
            best_near = nearest;
        }
    });
    return best;
}

}  // namespace

// MarksmanPolicy.best_target: the enemy with the best achievable rate of value per Minor.
Target marksman_best_target(const Ctx& ctx) {
    Target best;
    double best_rate = -1.0;
    for (int e : ctx.enemies()) {
        const int base = attack_dm_now(ctx, ctx.me, e, 0);
        if (base == kNoShot) continue;
        const auto value_at = [&](int a) { return attack_value(ctx, ctx.me, e, base + a, kKillWeight); };
        const int held = ctx.m.aim_target == e ? ctx.m.aim_dm : 0;
        const int k = aim_plan(value_at, held, ctx.m.minors, kMaxAim);
        const double rate = value_at(held + k) / static_cast<double>(k + 2);
        if (rate > best_rate + 1e-12) {
            best = Target{e, base, held};
            best_rate = rate;
        }
    }
    return best;
}


// MarksmanPolicy.shoot_or_advance: aim or fire (then end the turn); with no shot anywhere, move
// toward the nearest enemy.
Prefs marksman_shoot_or_advance(const Ctx& ctx) {
    const int end = ctx.index(Kind::end_turn);
    Prefs shot = marksman_fire_or_aim(ctx);
    if (shot.n) {
        shot.add(end);
        return shot;
    }
    if (ctx.minors > 0 && marksman_best_target(ctx).e < 0) {
        const int target = nearest_enemy(ctx);
        if (target >= 0) return {move_toward(ctx, ctx.c(target).x, ctx.c(target).y), end};
    }
    return {end};
}

Prefs marksman_turn(const Ctx& ctx) {
    Prefs first;
    if (ranged_turn_prologue(ctx, first)) return first;
    if (ctx.spare_minor() && marksman_too_close(ctx)) {
        const int mv = marksman_back_away(ctx);
        if (mv >= 0) return {mv};
    }
    return marksman_shoot_or_advance(ctx);
}

}  // namespace traveller::npc
