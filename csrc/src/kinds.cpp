// The action kinds (traveller_env/rules/kinds.py): each kind's legal arguments (the mask's fast
// path), its refusal reasons (word for word) and its effect, one `case` per kind.
#include <cstdio>
#include <string>

#include "traveller/battle.hpp"

namespace traveller {

namespace {

std::string fmt_g(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string fmt_1f(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string square(int x, int y) { return "[" + std::to_string(x) + ", " + std::to_string(y) + "]"; }

}  // namespace

// ------------------------------------------------------------------------ movement (R4.6, R8.1)
void Battle::reach(int actor, int out[kNumDirs]) const {
    const Combatant& c = cs_[static_cast<std::size_t>(actor)];
    const double budget = move_budget_m(c.movement_m, c.stance);
    int fixed[kNumDirs];
    for (int d = 0; d < kNumDirs; ++d) {
        fixed[d] = out[d] = grid_->static_reach(c.x, c.y, d, budget, max_move_);
    }
    // A combatant in play standing on a path cuts that direction short (R8.1).
    for (int i = 0; i < num_combatants(); ++i) {
        const Combatant& o = cs_[static_cast<std::size_t>(i)];
        if (i == actor || o.out) continue;
        const int dx = o.x - c.x, dy = o.y - c.y;
        const int ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
        if (!(dx == 0 || dy == 0 || ax == ay) || (dx == 0 && dy == 0)) continue;
        const int sx = (dx > 0) - (dx < 0), sy = (dy > 0) - (dy < 0);
        int d = 0;
        while (kDirDx[d] != sx || kDirDy[d] != sy) ++d;
        const int step = (ax > ay ? ax : ay) - 1;
        if (step < fixed[d] && step < out[d]) out[d] = step;
    }
}

std::string Battle::walk_refusal(int actor, int dir, int squares) const {
    const Combatant& c = cs_[static_cast<std::size_t>(actor)];
    const double budget = move_budget_m(c.movement_m, c.stance);
    Walk w;
    grid_->walk(c.x, c.y, dir, budget, squares, w);
    for (int i = 0; i < w.n; ++i) {
        for (int j = 0; j < num_combatants(); ++j) {
            const Combatant& o = cs_[static_cast<std::size_t>(j)];
            if (j == actor || o.out || o.x != w.px[i] || o.y != w.py[i]) continue;
            return "step " + std::to_string(i + 1) + " enters an occupied square " +
                   square(w.px[i], w.py[i]) + " (R8.1)";
        }
    }
    switch (w.stop) {
        case WalkStop::none: return "";
        case WalkStop::leaves_map: return "step " + std::to_string(w.step) + " leaves the map";
        case WalkStop::wall:
            return "step " + std::to_string(w.step) + " enters a wall at " + square(w.fx, w.fy);
        case WalkStop::corner:
            return "step " + std::to_string(w.step) + " cuts the corner of a wall (R8.1)";
        case WalkStop::cost:
            return std::to_string(squares) + " squares " + kDirNames[dir] + " cost " +
                   fmt_g(w.spent) + " m, more than the " + fmt_g(budget) +
                   " m of movement (R4.6)";
    }
    return "";
}

// ------------------------------------------------------------------------ leadership targets
bool Battle::direct_legal(int actor, int r) const {
    const Combatant& a = cs_[static_cast<std::size_t>(actor)];
    const Combatant& o = cs_[static_cast<std::size_t>(r)];
    return !o.out && o.side == a.side && r != actor && !o.bonus &&
           can_communicate(a, o, options_.comms_range_m);
}

bool Battle::hamper_legal(int, int r, unsigned penalised) const {
    const Combatant& o = cs_[static_cast<std::size_t>(r)];
    return !o.out && ((penalised >> o.side) & 1u) && !o.penalty;
}

bool Battle::free_action_possible(int actor) const {
    if (pools_.empty()) return false;
    if (pools_.bonus_pool(actor) >= 0) {
        for (int r = 0; r < num_combatants(); ++r) {
            if (direct_legal(actor, r)) return true;
        }
    }
    const unsigned penalised =
        pools_.penalised_sides() & ~(1u << cs_[static_cast<std::size_t>(actor)].side);
    if (penalised) {
        for (int r = 0; r < num_combatants(); ++r) {
            if (hamper_legal(actor, r, penalised)) return true;
        }
    }
    return false;
}

// ------------------------------------------------------------------------ legal arguments
void Battle::kind_legal_mask(Kind k, int actor, std::uint8_t* out) const {
    const Combatant& a = cs_[static_cast<std::size_t>(actor)];
    const int n = num_combatants();
    switch (k) {
        case Kind::end_turn: out[0] = 1; return;
        case Kind::move: {
            int r[kNumDirs];
            reach(actor, r);
            for (int d = 0; d < kNumDirs; ++d) {
                for (int s = 1; s <= r[d]; ++s) out[off_move_ + d * max_move_ + s - 1] = 1;
            }
            return;
        }
        case Kind::stance:
            for (int s = 0; s < 3; ++s) {
                if (s != a.stance) out[off_stance_ + s] = 1;
            }
            return;
        case Kind::draw:
            if (a.weapon.needs_draw && !a.drawn) out[off_draw_] = 1;
            return;
        case Kind::reload:
            if (!a.weapon.melee && a.ammo <= 0 && a.spares > 0) out[off_reload_] = 1;
            return;
        case Kind::aim:
            if (a.weapon.melee || !a.drawn) return;
            for (int t = 0; t < n; ++t) {
                const Combatant& o = cs_[static_cast<std::size_t>(t)];
                if (!o.out && o.side != a.side && grid_->line_of_sight(a.x, a.y, o.x, o.y)) {
                    out[off_aim_ + t] = 1;
                }
            }
            return;
        case Kind::attack:
            if (!a.weapon_ready() || (!a.weapon.melee && a.ammo <= 0)) return;
            for (int t = 0; t < n; ++t) {
                const Combatant& o = cs_[static_cast<std::size_t>(t)];
                if (!o.out && o.side != a.side && in_attack_reach(a.weapon, *grid_, a.x, a.y, o.x, o.y)) {
                    out[off_attack_ + t] = 1;
                }
            }
            return;
        case Kind::leadership: out[off_leadership_] = 1; return;
        case Kind::direct:
            if (pools_.empty() || pools_.bonus_pool(actor) < 0) return;
            for (int r = 0; r < n; ++r) {
                if (direct_legal(actor, r)) out[off_direct_ + r] = 1;
            }
            return;
        case Kind::hamper: {
            if (pools_.empty()) return;
            const unsigned penalised = pools_.penalised_sides() & ~(1u << a.side);
            if (!penalised) return;
            for (int r = 0; r < n; ++r) {
                if (hamper_legal(actor, r, penalised)) out[off_hamper_ + r] = 1;
            }
            return;
        }
        case Kind::react:
            out[off_react_ + kReactNone] = 1;
            out[off_react_ + kReactDodge] = 1;
            if (can_parry(a, pending_.melee)) out[off_react_ + kReactParry] = 1;
            return;
        case Kind::haste:
            out[off_haste_] = 1;
            out[off_haste_ + 1] = 1;
            return;
    }
}


// ------------------------------------------------------------------------ refusals
std::string Battle::target_refusal(int actor, int t, const char* what) const {
    const Combatant& o = cs_[static_cast<std::size_t>(t)];
    const std::string& tid = names_.ids[static_cast<std::size_t>(t)];
    if (o.out) return tid + " is out of the fight";
    if (o.side == cs_[static_cast<std::size_t>(actor)].side) {
        return tid + " is on " + names_.ids[static_cast<std::size_t>(actor)] +
               "'s own side; only enemies can be " + what;
    }
    return "";
}

std::string Battle::kind_why_not(const Action& act, int actor) const {
    const Combatant& a = cs_[static_cast<std::size_t>(actor)];
    const std::string& wname = names_.weapons[static_cast<std::size_t>(actor)];
    switch (act.kind) {
        case Kind::end_turn:
        case Kind::leadership:
        case Kind::haste: return "";
        case Kind::move: return walk_refusal(actor, act.dir, act.squares);
        case Kind::stance:
            return a.stance == act.arg ? std::string("already ") + kStanceNames[act.arg] : "";
        case Kind::draw:
            if (!a.weapon.needs_draw) return "bare hands need no draw (R4.5)";
            return a.drawn ? "weapon already drawn" : "";
        case Kind::reload:
            if (a.weapon.melee) return "a melee weapon has nothing to reload";
            if (a.ammo > 0) return "the magazine is not empty (R4.5)";
            return a.spares > 0 ? "" : "no spare magazine left (R4.5)";
        case Kind::aim: {
            std::string r = target_refusal(actor, act.arg, "aimed at");
            if (!r.empty()) return r;
            const Combatant& t = cs_[static_cast<std::size_t>(act.arg)];
            if (a.weapon.melee) return "aiming needs a ranged weapon (R4.3)";
            if (!a.drawn) return "the " + wname + " is not drawn (R4.3)";
            if (!grid_->line_of_sight(a.x, a.y, t.x, t.y)) {
                return "no line of sight to " + names_.ids[static_cast<std::size_t>(act.arg)] + " (R4.3)";
            }
            return "";
        }
        case Kind::attack: {
            std::string r = target_refusal(actor, act.arg, "attacked");
            if (!r.empty()) return r;
            const Combatant& t = cs_[static_cast<std::size_t>(act.arg)];
            const std::string& tid = names_.ids[static_cast<std::size_t>(act.arg)];
            if (!a.weapon_ready()) return "the " + wname + " is not drawn (R4.1)";
            if (a.weapon.melee) {
                if (in_attack_reach(a.weapon, *grid_, a.x, a.y, t.x, t.y)) return "";
                return tid + " is not adjacent: a melee attack needs an adjacent target (R4.1)";
            }
            if (a.ammo <= 0) return "the " + wname + " is empty: reload first (R4.1)";
            if (!grid_->line_of_sight(a.x, a.y, t.x, t.y)) {
                return "no line of sight to " + tid + " (R4.1, R8.1)";
            }
            if (!in_attack_reach(a.weapon, *grid_, a.x, a.y, t.x, t.y)) {
                return tid + " is " + fmt_1f(Grid::distance_m(a.x, a.y, t.x, t.y)) +
                       " m away, beyond 4x the " + wname + "'s range of " +
                       fmt_g(a.weapon.range_m) + " m (R5.1)";
            }
            return "";
        }
        case Kind::direct: {
            const Combatant& r = cs_[static_cast<std::size_t>(act.arg)];
            const std::string& tid = names_.ids[static_cast<std::size_t>(act.arg)];
            if (r.out) return tid + " is out of the fight";
            if (pools_.bonus_pool(actor) < 0) return "no leadership bonus to hand out (R7.1)";
            if (r.side != a.side || act.arg == actor) {
                return "bonuses go to other combatants of the leader's own side (R7.1)";
            }
            if (r.bonus) return tid + " already holds a bonus (R7.3)";
            if (!can_communicate(a, r, options_.comms_range_m)) {
                return tid + " is beyond communication range (" + fmt_g(options_.comms_range_m) +
                       " m, or both with radios) (R7.2)";
            }
            return "";
        }
        case Kind::hamper: {
            const Combatant& r = cs_[static_cast<std::size_t>(act.arg)];
            const std::string& tid = names_.ids[static_cast<std::size_t>(act.arg)];
            if (r.out) return tid + " is out of the fight";
            if (r.side == a.side) return "penalties are imposed on the other side (R7.4)";
            if (pools_.penalty_pool(r.side) < 0) {
                return "no leadership penalty available against " +
                       names_.sides[r.side] + " (R7.4)";
            }
            if (r.penalty) return tid + " already holds a penalty (R7.3)";
            return "";
        }
        case Kind::react:
            if (act.arg == kReactParry) {
                if (!pending_.melee) return "parry is possible only against melee attacks (R3.6)";
                if (!can_parry(a, true)) {
                    return "parry needs a drawn melee weapon, or no weapon drawn to parry unarmed "
                           "(R3.6)";
                }
            }
            return "";
    }
    return "";
}

// ------------------------------------------------------------------------ effects
void Battle::kind_apply(const Action& act, int actor) {
    Combatant& a = cs_[static_cast<std::size_t>(actor)];
    switch (act.kind) {
        case Kind::end_turn: end_turn(kChosen); return;
        case Kind::move: {
            Walk w;
            grid_->walk(a.x, a.y, act.dir, move_budget_m(a.movement_m, a.stance), act.squares, w);
            double metres = 0.0;
            for (int i = 0; i < w.n; ++i) metres += grid_->step_cost_m(w.px[i], w.py[i]);
            const int fx = a.x, fy = a.y;
            a.x = w.px[w.n - 1];
            a.y = w.py[w.n - 1];
            Event& e = emit(EventType::move);
            e.a = static_cast<std::int16_t>(actor);
            e.v[0] = fx;
            e.v[1] = fy;
            e.v[2] = a.x;
            e.v[3] = a.y;
            e.f = metres;
            return;
        }
        case Kind::stance: {
            Event& e = emit(EventType::stance);
            e.a = static_cast<std::int16_t>(actor);
            e.v[0] = a.stance;
            e.v[1] = act.arg;
            a.stance = act.arg;
            return;
        }
        case Kind::draw:
            if (ready_step(actor, kReadyDraw, a.weapon.draw_actions)) a.drawn = true;
            return;
        case Kind::reload:
            if (ready_step(actor, kReadyReload, a.weapon.reload_actions)) {
                a.spares -= 1;
                a.ammo = a.weapon.magazine;
            }
            return;
        case Kind::aim: {
            if (a.aim_target >= 0 && a.aim_target != act.arg) break_aim(actor);
            a.aim_dm = next_aim_dm(a.aim_target, a.aim_dm, act.arg);
            a.aim_target = act.arg;
            Event& e = emit(EventType::aim);
            e.a = static_cast<std::int16_t>(actor);
            e.b = static_cast<std::int16_t>(act.arg);
            e.v[0] = a.aim_dm;
            return;
        }
        case Kind::attack: declare_attack(actor, act.arg); return;
        case Kind::leadership: {
            Dms dms = leadership_dms(a);
            apply_held(actor, dms, 0);
            const CheckResult r = roll_check(dice_, dms);
            const int bonuses = r.effect > 0 ? r.effect : 0;
            const int penalties = r.effect < 0 ? -r.effect : 0;
            Event& e = emit(EventType::leadership);
            e.a = static_cast<std::int16_t>(actor);
            e.has_roll = true;
            e.roll[0] = static_cast<std::int8_t>(r.roll[0]);
            e.roll[1] = static_cast<std::int8_t>(r.roll[1]);
            e.dms = dms;
            e.v[0] = r.total;
            e.v[1] = r.effect;
            e.v[2] = bonuses;
            e.v[3] = penalties;
            pools_.add(actor, a.side, kPoolBonus, bonuses);
            pools_.add(actor, a.side, kPoolPenalty, penalties);
            return;
        }
        case Kind::direct: {
            const int pool = pools_.bonus_pool(actor);
            cs_[static_cast<std::size_t>(act.arg)].bonus = true;
            Event& e = emit(EventType::bonus_granted);
            e.a = static_cast<std::int16_t>(actor);
            e.b = static_cast<std::int16_t>(act.arg);
            pools_.take_one(pool);
            return;
        }
        case Kind::hamper: {
            Combatant& r = cs_[static_cast<std::size_t>(act.arg)];
            const int pool = pools_.penalty_pool(r.side);
            r.penalty = true;
            Event& e = emit(EventType::penalty_imposed);
            e.a = static_cast<std::int16_t>(actor);
            e.b = static_cast<std::int16_t>(act.arg);
            e.c = static_cast<std::int16_t>(pools_.all()[static_cast<std::size_t>(pool)].leader);
            pools_.take_one(pool);
            return;
        }
        case Kind::react: react(actor, act.arg); return;
        case Kind::haste: declare_haste(actor, act.arg == 0); return;
    }
}

}  // namespace traveller
