// The shared toolkit of the in-core scripted policies: traveller_agents/tactics.py's ScriptedPolicy helpers
// and shared evaluations, function for function (declared in common.hpp, with the inline attack
// arithmetic and the per-thread Workspace).
#include "policies/common.hpp"

#include <algorithm>
#include <vector>

#include "traveller/attack.hpp"
#include "traveller/reactions.hpp"

namespace traveller::npc {

Workspace& workspace() {
    thread_local Workspace ws;
    return ws;
}

// ---------------------------------------------------------------------------- movement
// ScriptedPolicy.nearest_enemy: the enemy closest by path (ties: straight line, then order).
int nearest_enemy(const Ctx& ctx) {
    int best = -1;
    double k0 = 0.0, k1 = 0.0;
    for (int e : ctx.enemies()) {
        const Combatant& c = ctx.c(e);
        const double p = ctx.ws.path_cost(ctx.b, c.x, c.y, ctx.m.x, ctx.m.y);
        const double d = Grid::distance_m(ctx.m.x, ctx.m.y, c.x, c.y);
        if (best < 0 || key_less(p, d, k0, k1)) {
            best = e;
            k0 = p;
            k1 = d;
        }
    }
    return best;
}

// ScriptedPolicy.move_toward: the legal Move that brings it closest (by path) to the goal; -1
// when none gets closer.
int move_toward(const Ctx& ctx, int gx, int gy) {
    const double here = ctx.ws.path_cost(ctx.b, gx, gy, ctx.m.x, ctx.m.y);
    int best = -1;
    double b0 = here - 1e-9, b1 = 0.0;
    for_each_move(ctx, [&](int index, int x, int y) {
        const double k0 = ctx.ws.path_cost(ctx.b, gx, gy, x, y);
        const double k1 = Grid::distance_m(x, y, gx, gy);
        if (key_less(k0, k1, b0, b1)) {
            best = index;
            b0 = k0;
            b1 = k1;
        }
    });
    return best;
}

// ---------------------------------------------------------------------------- shared evaluations
// best_attacks(ctx)[0]: the legal attack of highest value (ties: the smaller id), or -1.
int best_attack(const Ctx& ctx, double kill_weight) {
    int best = -1, best_e = -1;
    double best_v = 0.0;
    for (int e : ctx.enemies()) {
        const int index = ctx.index(Kind::attack, e);
        if (!ctx.legal(index)) continue;
        const int dm = attack_dm_now(ctx, ctx.me, e);
        if (dm == kNoShot) continue;
        const double v = attack_value(ctx, ctx.me, e, dm, kill_weight);
        if (best < 0 || v > best_v || (v == best_v && ctx.id_less(e, best_e))) {
            best = index;
            best_e = e;
            best_v = v;
        }
    }
    return best;
}

// common.threat: the best expected damage of enemy's attack on any of the deciding side now.
double threat(const Ctx& ctx, int enemy) {
    const Combatant& en = ctx.c(enemy);
    double best = 0.0;
    const auto consider = [&](int mi) {
        const Combatant& mem = ctx.c(mi);
        int dm;
        if (en.weapon.melee) {
            if (chebyshev(en.x, en.y, mem.x, mem.y) > 1 + squares_per_move(en.movement_m)) return;
            dm = attack_dm(ctx, enemy, mi, mem.x, mem.y, mem.x, mem.y);
        } else {
            dm = attack_dm_now(ctx, enemy, mi);
        }
        if (dm != kNoShot) best = std::max(best, attack_value(ctx, enemy, mi, dm, 0.0));
    };
    consider(ctx.me);
    for (int a : ctx.allies()) consider(a);
    return best;
}

// common.bonus_value: what a leadership bonus (DM +1) adds to ally's best attack now.
double bonus_value(const Ctx& ctx, int ally) {
    const Combatant& al = ctx.c(ally);
    double best = 0.0;
    for (int e : ctx.enemies()) {
        const Combatant& en = ctx.c(e);
        int dm;
        if (al.weapon.melee && chebyshev(al.x, al.y, en.x, en.y) > 1) {
            const int reach = 1 + squares_per_move(al.movement_m);
            if (chebyshev(al.x, al.y, en.x, en.y) > reach) continue;
            dm = attack_dm(ctx, ally, e, en.x, en.y, en.x, en.y, -1, false);
        } else {
            dm = attack_dm_now(ctx, ally, e, -1, false);
        }
        if (dm == kNoShot) continue;
        const double gain = attack_value(ctx, ally, e, dm + 1, kKillWeight) -
                            attack_value(ctx, ally, e, dm, kKillWeight);
        best = std::max(best, gain);
    }
    return best * (!al.turn_begun ? 1.0 : 0.8);
}

// common.best_reaction with its default costs: dodge or parry when the damage saved beats its
// cost and the hit chance drops by at least min_drop.
int best_reaction(const Ctx& ctx, double min_drop) {
    const int none = ctx.index(Kind::react, kReactNone);
    const PendingAttack& p = ctx.b.pending();
    if (!p.active) return none;
    const Combatant& attacker = ctx.c(p.attacker);
    Dms held;
    held_dms(attacker, held);
    const int total = p.dms.total() + held.total();
    const Weapon& w = attacker.weapon;
    const int hp = damage_to_down(ctx.m);
    const Outcome o0 = ctx.ws.outcome(total, w.damage_count, w.damage_modifier, ctx.m.protection, hp);
    double cost = ctx.m.turn_begun ? kInitCostActed : kInitCostWaiting;
    if (ctx.m.aim_target >= 0 && ctx.m.aim_dm) {
        const int t = ctx.m.aim_target;
        if (!ctx.c(t).out) {
            const int dm = attack_dm_now(ctx, ctx.me, t);
            if (dm != kNoShot) {
                cost += (attack_value(ctx, ctx.me, t, dm, kKillWeight) -
                         attack_value(ctx, ctx.me, t, dm - ctx.m.aim_dm, kKillWeight));
            }
        }
    }
    int best = none;
    double best_gain = 0.0;
    for (const int choice : {kReactDodge, kReactParry}) {
        const int index = ctx.index(Kind::react, choice);
        if (!ctx.legal(index)) continue;
        const Outcome o1 = ctx.ws.outcome(total + reaction_dm(ctx.m, choice), w.damage_count,
                                          w.damage_modifier, ctx.m.protection, hp);
        if (o0.p_hit - o1.p_hit < min_drop) continue;
        const double gain = (o0.expected - o1.expected) + 5.0 * (o0.p_down - o1.p_down) - cost;
        if (gain > best_gain) {
            best = index;
            best_gain = gain;
        }
    }
    return best;
}

// ScriptedPolicy.free_action: impose a penalty on the most dangerous enemy, hand a bonus to the
// ally whose attack it helps most; -1 for none.
int free_action(const Ctx& ctx) {
    int bonuses = 0, penalties = 0;
    if (!ctx.b.pools().empty()) ctx.b.pools().held(ctx.me, ctx.m.side, bonuses, penalties);
    if (penalties) {
        int best = -1;
        double best_t = 0.0;
        for (int e : ctx.enemies()) {  // sorted(enemies, key=-threat): stable, first legal
            const int index = ctx.index(Kind::hamper, e);
            if (!ctx.legal(index)) continue;
            const double t = threat(ctx, e);
            if (best < 0 || t > best_t) {
                best = index;
                best_t = t;
            }
        }
        if (best >= 0) return best;
    }
    if (bonuses) {
        int best = -1, best_a = -1;
        double best_v = 0.0;
        for (int a : ctx.allies()) {  // max of (bonus_value, id)
            const int index = ctx.index(Kind::direct, a);
            if (!ctx.legal(index)) continue;
            const double v = bonus_value(ctx, a);
            if (best < 0 || v > best_v || (v == best_v && ctx.id_less(best_a, a))) {
                best = index;
                best_a = a;
                best_v = v;
            }
        }
        if (best >= 0) return best;
    }
    return -1;
}

// ScriptedPolicy.draw_or_reload.
int draw_or_reload(const Ctx& ctx) {
    const int draw = ctx.index(Kind::draw);
    if (!ctx.m.drawn && ctx.legal(draw)) return draw;
    const int reload = ctx.index(Kind::reload);
    if (!ctx.m.weapon.melee && ctx.m.ammo <= 0 && ctx.legal(reload)) return reload;
    return -1;
}

// ScriptedPolicy.melee_turn.
Prefs melee_turn(const Ctx& ctx) {
    const int end = ctx.index(Kind::end_turn);
    const int ready = draw_or_reload(ctx);
    if (ready >= 0) return {ready};
    const int attack = best_attack(ctx);
    if (ctx.sig && attack >= 0) return {attack, end};
    const int target = nearest_enemy(ctx);
    const int mv = target >= 0 ? move_toward(ctx, ctx.c(target).x, ctx.c(target).y) : -1;
    return {mv, end};
}

// ScriptedPolicy.ranged_turn_prologue: a melee weapon fights in melee, otherwise draw/reload if
// needed (into out); false when the weapon is ready to fire.
bool ranged_turn_prologue(const Ctx& ctx, Prefs& out) {
    if (ctx.m.weapon.melee) {
        out = melee_turn(ctx);
        return true;
    }
    const int ready = draw_or_reload(ctx);
    if (ready < 0) return false;
    out = {ready};
    return true;
}

}  // namespace traveller::npc
