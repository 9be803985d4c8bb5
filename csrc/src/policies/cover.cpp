// The in-core cover NPC: traveller_agents/cover.py CoverPolicy with its default parameters, function for
// function; once in cover it shoots as marksman (marksman.cpp).
#include <cmath>

#include "policies/common.hpp"
#include "policies/npcs.hpp"
#include "traveller/checks.hpp"
#include "traveller/reactions.hpp"

namespace traveller::npc {

namespace {

constexpr int kCoverStance = kCrouch;   // CoverPolicy.stance
constexpr double kCoverSearchM = 15.0;  // CoverPolicy.search_m
constexpr double kCoverMinDrop = 0.08;  // CoverPolicy.dodge_min_drop

// CoverPolicy.exposure: the sum over ranged enemies that can see (x, y) without cover of their
// hit chance on it there, down in the cover stance.
double cover_exposure(const Ctx& ctx, int x, int y) {
    double total = 0.0;
    for (int e : ctx.enemies()) {
        const Combatant& en = ctx.c(e);
        if (en.weapon.melee) continue;
        const int dm = attack_dm(ctx, e, ctx.me, en.x, en.y, x, y, -1, true, kCoverStance);
        if (dm == kNoShot) continue;
        if (ctx.g.cover_between(en.x, en.y, x, y)) continue;
        total += success_probability(dm);
    }
    return total;
}

// Python's round(exposure, 6), as an integer of millionths. An exposure is a sum of hit chances,
// multiples of 1/36 up to rounding error far below 1e-9, and no multiple of 1/36 lies within
// 5e-8 of a rounding boundary of the sixth decimal (28N mod 36 is never 18), so llround gives
// the same order and the same ties as Python's correctly rounded round().
long long round6(double x) { return std::llround(x * 1e6); }

// CoverPolicy.can_shoot_from: some enemy is in line of sight and range from (x, y).
bool cover_can_shoot_from(const Ctx& ctx, int x, int y) {
    for (int e : ctx.enemies()) {
        const Combatant& en = ctx.c(e);
        if (in_attack_reach(ctx.m.weapon, ctx.g, x, y, en.x, en.y)) return true;
    }
    return false;
}

// CoverPolicy.cover_spot: the square to hold, in (sx, sy); false (None) when the map has no low
// cover. Key (0 if it can shoot from there else 1, rounded exposure, path cost), the smallest
// wins; the candidates in sorted (x, y) order, so ties keep the first.
bool cover_spot(const Ctx& ctx, int& sx, int& sy) {
    if (!ctx.g.has_cover()) return false;
    sx = ctx.m.x;
    sy = ctx.m.y;
    int k0 = cover_can_shoot_from(ctx, sx, sy) ? 0 : 1;
    long long k1 = round6(cover_exposure(ctx, sx, sy));
    double k2 = 0.0;
    const int width = ctx.g.width();
    for (const int site : ctx.ws.cover_sites(ctx.b)) {
        const int x = site % width, y = site / width;
        if (ctx.occupied(x, y) || (x == ctx.m.x && y == ctx.m.y)) continue;
        const double cost = ctx.ws.path_cost(ctx.b, x, y, ctx.m.x, ctx.m.y);
        if (cost > kCoverSearchM) continue;
        if (!cover_can_shoot_from(ctx, x, y)) continue;
        const long long exposure = round6(cover_exposure(ctx, x, y));
        if (0 < k0 || (0 == k0 && (exposure < k1 || (exposure == k1 && cost < k2)))) {
            sx = x;
            sy = y;
            k0 = 0;
            k1 = exposure;
            k2 = cost;
        }
    }
    return true;
}

}  // namespace

// CoverPolicy.react: dodge or parry only after its own turn this round, when the dodge lowers the
// hit chance by at least dodge_min_drop, and when it pays (best_reaction with that floor).
int cover_react(const Ctx& ctx) {
    const int none = ctx.index(Kind::react, kReactNone);
    const PendingAttack& p = ctx.b.pending();
    if (!p.active || !ctx.m.turn_begun) return none;
    const int total = p.dms.total();  // sum(p["dms"].values()): the held DMs not counted here
    if (success_probability(total) - success_probability(total - 1) < kCoverMinDrop) return none;
    return best_reaction(ctx, kCoverMinDrop);
}

// CoverPolicy.turn: move to cover, get down, then shoot as marksman.
Prefs cover_turn(const Ctx& ctx) {
    Prefs first;
    if (ranged_turn_prologue(ctx, first)) return first;
    int sx = 0, sy = 0;
    const bool spot = cover_spot(ctx, sx, sy);
    const int want = spot ? kCoverStance : kProne;
    if (spot && (sx != ctx.m.x || sy != ctx.m.y) && ctx.minors > 0) {
        const int crouch = ctx.index(Kind::stance, kCrouch);
        if (ctx.m.stance == kProne && ctx.legal(crouch)) return {crouch};  // crawling: 1/4 speed
        const int mv = move_toward(ctx, sx, sy);
        if (mv >= 0) return {mv};
    }
    const int stance = ctx.index(Kind::stance, want);
    if (ctx.m.stance != want && ctx.minors > 0 && ctx.legal(stance)) return {stance};
    return marksman_shoot_or_advance(ctx);
}

}  // namespace traveller::npc
