// Attack arithmetic (R4.1, R4.3, R5, R6.1, R7.3): traveller_env/rules/attack.py.
#pragma once

#include <cstdlib>

#include "combatant.hpp"
#include "grid.hpp"

namespace traveller {

inline constexpr int kAimMax = 6;
inline constexpr int kCoverDm = -2;
inline constexpr int kProneDm = -1;
inline constexpr int kHasteDm = -1;
inline constexpr int kBeyondRangeDm = -99;
inline constexpr int kNoBand = -1000;  // Python's None: beyond 4x Range

constexpr int chebyshev(int ax, int ay, int bx, int by) noexcept {
    const int dx = ax > bx ? ax - bx : bx - ax, dy = ay > by ? ay - by : by - ay;
    return dx > dy ? dx : dy;
}

// R5.1: the range band's DM, kNoBand beyond 4x Range.
constexpr int range_dm(double distance_m, double weapon_range_m) noexcept {
    if (distance_m <= weapon_range_m / 4) return 1;
    if (distance_m <= weapon_range_m) return 0;
    if (distance_m <= 2 * weapon_range_m) return -2;
    if (distance_m <= 4 * weapon_range_m) return -4;
    return kNoBand;
}

// R4.1: melee needs adjacency; ranged needs line of sight and 4x Range.
inline bool in_attack_reach(const Weapon& w, const Grid& g, int ax, int ay, int tx, int ty) {
    if (w.melee) return chebyshev(ax, ay, tx, ty) <= 1;
    return g.line_of_sight(ax, ay, tx, ty) && Grid::distance_m(ax, ay, tx, ty) <= 4 * w.range_m;
}

// The DMs of a's attack on t (index t_index), before reactions and leadership.
inline Dms attack_dms(const Combatant& a, const Combatant& t, int t_index, const Grid& g) {
    Dms dms;
    dms.set(DmName::skill, skill_dm(a.skills.weapon));
    if (a.weapon.melee) {
        const int s = a.dm(kSTR), d = a.dm(kDEX);
        if (s >= d) {
            dms.set(DmName::STR, s);
        } else {
            dms.set(DmName::DEX, d);
        }
    } else {
        dms.set(DmName::DEX, a.dm(kDEX));
        const int band = range_dm(Grid::distance_m(a.x, a.y, t.x, t.y), a.weapon.range_m);
        dms.set(DmName::range, band == kNoBand ? kBeyondRangeDm : band);
        const int aim = a.aim_target == t_index ? a.aim_dm : 0;
        if (aim) dms.set(DmName::aim, aim);
        if (t.stance != kStand && g.cover_between(a.x, a.y, t.x, t.y)) dms.set(DmName::cover, kCoverDm);
        if (t.stance == kProne) dms.set(DmName::prone, kProneDm);
    }
    if (a.hasty) dms.set(DmName::haste, kHasteDm);
    return dms;
}

// R7.3: the leadership bonus (+1) and/or penalty (-1) the combatant holds (held_dms).
inline void held_dms(const Combatant& c, Dms& dms) noexcept {
    if (c.bonus) dms.set(DmName::leadership_bonus, 1);
    if (c.penalty) dms.set(DmName::leadership_penalty, -1);
}

// The total DM of a's attack on t (index t_index) with a at (ax, ay) and t at (tx, ty): attack_dms
// with apos/tpos, an aim DM (aim; -1: the aim a holds on t), a target stance (tstance; -1: t's
// own) and haste (hasty; -1: a's own, 0 False, 1 True), + held_dms when held. Reach is the
// caller's to check (in_attack_reach).
inline int attack_dm_at(const Combatant& a, const Combatant& t, int t_index, const Grid& g, int ax,
                        int ay, int tx, int ty, int aim = -1, bool held = true, int tstance = -1,
                        int hasty = -1) {
    Combatant ha = a;  // the hypothetical attacker and target (attack_dms reads them)
    ha.x = ax;
    ha.y = ay;
    if (aim >= 0) {
        ha.aim_target = t_index;
        ha.aim_dm = aim;
    }
    if (hasty >= 0) ha.hasty = hasty != 0;
    Combatant ht = t;
    ht.x = tx;
    ht.y = ty;
    if (tstance >= 0) ht.stance = tstance;
    Dms dms = attack_dms(ha, ht, t_index, g);
    if (held) held_dms(a, dms);
    return dms.total();
}

// attack.hit_probability: the chance a's attack on t hits with a at (ax, ay), t at (tx, ty) and
// an aim DM (-1: the one a holds on t), every DM and the held ones counted, before reactions;
// 0 out of reach (R4.1).
inline double hit_probability(const Combatant& a, const Combatant& t, int t_index, const Grid& g,
                              int ax, int ay, int tx, int ty, int aim = -1) {
    if (!in_attack_reach(a.weapon, g, ax, ay, tx, ty)) return 0.0;
    return success_probability(attack_dm_at(a, t, t_index, g, ax, ay, tx, ty, aim));
}

// R4.3: the aim DM after one more aim at `target`.
constexpr int next_aim_dm(int aim_target, int aim_dm, int target) noexcept {
    if (aim_target == target) return aim_dm + 1 < kAimMax ? aim_dm + 1 : kAimMax;
    return 1;
}

// R6.1: damage dice + modifier + Effect - protection, never below 0.
constexpr int damage_on_hit(int dice_total, int modifier, int effect, int protection) noexcept {
    const int d = dice_total + modifier + effect - protection;
    return d > 0 ? d : 0;
}

}  // namespace traveller
