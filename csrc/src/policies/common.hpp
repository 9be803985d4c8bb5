// Private to the in-core scripted policies (csrc/src/policies/): the shared toolkit of the
// Python NPCs (traveller_agents/context.py: Context; paths.py: path costs and the moves toward
// a goal; tactics.py: the exact attack arithmetic, the shared evaluations and ScriptedPolicy's
// helpers), which every NPC file includes.
// Python names are kept (with the Python they mirror quoted where the arithmetic must match bit
// for bit). The small functions the NPCs call in their inner loops are defined here, inline; the
// rest are in common.cpp. See include/traveller/policies.hpp for the policies themselves.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "traveller/attack.hpp"
#include "traveller/battle.hpp"
#include "traveller/budget.hpp"
#include "traveller/checks.hpp"
#include "traveller/damage.hpp"
#include "traveller/grid.hpp"
#include "traveller/movement.hpp"

namespace traveller::npc {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr int kNoShot = INT_MIN;  // common.attack_dm's None: no attack possible from there

// Default parameters of the Python toolkit.
inline constexpr double kKillWeight = 5.0;  // best_attacks, bonus_value, best_reaction, marksman
// best_reaction's init_cost_waiting, init_cost_acted and min_drop.
inline constexpr double kInitCostWaiting = 1.0, kInitCostActed = 0.5, kMinDrop = 0.0;

struct Outcome {
    double p_hit = 0.0, expected = 0.0, p_down = 0.0;
};

// Per-thread caches: what is fixed for a scenario (exact damage distributions, attack outcomes,
// path-cost fields around walls, the squares next to low cover) and the scratch lists of one
// decision. Shared by every policy on the thread (a batched stepper runs thousands), so a policy
// itself stays small. (The leader's and the tactician's own scratch is kept per thread in
// leader.cpp and tactician.cpp.)
class Workspace {
public:
    std::vector<int> enemies, allies;  // of the decision being made

    Workspace() : outcomes_(kOutcomeSlots) {}
    Workspace(const Workspace&) = delete;  // last_ points into its own grids_
    Workspace& operator=(const Workspace&) = delete;

    // common.attack_outcome(dm, count, modifier, protection, hp), cached.
    Outcome outcome(int dm, int count, int modifier, int protection, int hp) {
        dm = std::max(-20, std::min(20, dm));
        const bool packable = count >= 0 && count < 256 && modifier >= -2048 && modifier < 2048 &&
                              protection >= 0 && protection < 256 && hp >= 0 && hp < 65536;
        if (!packable) return compute_outcome(dm, count, modifier, protection, hp);
        const std::uint64_t key = static_cast<std::uint64_t>(dm + 20) |
                                  static_cast<std::uint64_t>(count) << 6 |
                                  static_cast<std::uint64_t>(modifier + 2048) << 14 |
                                  static_cast<std::uint64_t>(protection) << 26 |
                                  static_cast<std::uint64_t>(hp) << 34;
        Slot& s = outcomes_[static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> (64 - kOutcomeBits))];
        if (s.key != key) {
            s.value = compute_outcome(dm, count, modifier, protection, hp);
            s.key = key;
        }
        return s.value;
    }

    // common.path_cost(grid, goal, sq): metres along the cheapest path, inf when unreachable.
    double path_cost(const Battle& b, int gx, int gy, int sx, int sy) {
        Fields& f = fields_for(b);
        if (f.simple) return chebyshev(gx, gy, sx, sy) * kSquareM;
        const std::size_t goal = static_cast<std::size_t>(gy * f.width + gx);
        std::int64_t at = f.slot[goal];
        if (at < 0) at = f.slot[goal] = dijkstra(b.grid(), f, gx, gy);
        return static_cast<double>(f.data[static_cast<std::size_t>(at) +
                                          static_cast<std::size_t>(sy * f.width + sx)]);
    }

    // CoverPolicy.sites(grid): the passable squares next to a low-cover square (y * width + x),
    // in Python's sorted((x, y)) order; cached with the map's path-cost fields.
    const std::vector<int>& cover_sites(const Battle& b) {
        Fields& f = fields_for(b);
        if (!f.sites_ready) {
            const Grid& g = b.grid();
            f.sites.clear();
            for (int x = 0; x < g.width(); ++x) {
                for (int y = 0; y < g.height(); ++y) {
                    if (g.at(x, y) == kWall) continue;
                    bool next_to_cover = false;  // DIRECTIONS is symmetric: a neighbour is cover
                    for (int k = 0; k < kNumDirs && !next_to_cover; ++k) {
                        next_to_cover = g.is_cover(x + kDirDx[k], y + kDirDy[k]);
                    }
                    if (next_to_cover) f.sites.push_back(y * g.width() + x);
                }
            }
            f.sites_ready = true;
        }
        return f.sites;
    }

private:
    static constexpr int kOutcomeBits = 12;
    static constexpr std::size_t kOutcomeSlots = std::size_t{1} << kOutcomeBits;
    // Maps cached at once per thread. A vector over a scenario set has a map per row, so a
    // thread meets hundreds in turn; 512 keeps them (squad-sized maps: about 40 MB a thread
    // over a long run; the set's vector ran at 1.19x with 512 against 4).
    static constexpr int kGridSlots = 512;

    struct Slot {
        std::uint64_t key = ~std::uint64_t{0};
        Outcome value;
    };
    // The fields of one map. They depend on its terrain alone, so a map with the same terrain
    // reuses them (a battle created from Python gets its own shared_ptr control block, so the
    // pointer alone would not survive from one battle to the next).
    struct Fields {
        std::weak_ptr<const Grid> grid;  // the map last seen (never kept alive from here)
        const Grid* raw = nullptr;
        int width = 0, height = 0;
        std::vector<std::uint8_t> terrain;  // row-major, to recognise the same map again
        bool simple = true;
        std::vector<std::int64_t> slot;  // per goal square: offset of its field in data, or -1
        std::vector<float> data;         // the fields (multiples of 1.5 m: exact in float)
        std::vector<int> sites;          // cover_sites, once sites_ready
        bool sites_ready = false;
        std::uint64_t used = 0;
    };

    const std::vector<double>& dice(int count) {
        if (static_cast<std::size_t>(count) >= dice_.size()) {
            dice_.resize(static_cast<std::size_t>(count) + 1);
        }
        std::vector<double>& d = dice_[static_cast<std::size_t>(count)];
        if (d.empty()) dice_sum_distribution(count, d);
        return d;
    }

    // attack_outcome's loops: effects in 2D order, damage dice ascending, the same sums.
    Outcome compute_outcome(int dm, int count, int modifier, int protection, int hp) {
        const std::vector<double>& dist = dice(count);
        Outcome o;
        for (int s = 2; s <= 12; ++s) {  // effect_distribution(dm): {s + dm - 8: P(2D == s)}
            const int effect = s + dm - kTargetNumber;
            if (effect < 0) continue;
            const double pe = p2d6(s);
            o.p_hit += pe;
            for (int value = count; value <= 6 * count; ++value) {
                const double pv = dist[static_cast<std::size_t>(value)];
                const int dmg = damage_on_hit(value, modifier, effect, protection);
                const double p = pe * pv;
                if (dmg >= hp) {
                    o.p_down += p;
                    o.expected += p * hp;
                } else {
                    o.expected += p * dmg;
                }
            }
        }
        return o;
    }

    static bool same_terrain(const Fields& f, const Grid& g) {
        if (f.width != g.width() || f.height != g.height()) return false;
        std::size_t i = 0;
        for (int y = 0; y < g.height(); ++y) {
            for (int x = 0; x < g.width(); ++x) {
                if (f.terrain[i++] != g.at(x, y)) return false;
            }
        }
        return true;
    }

    Fields& fields_for(const Battle& b) {
        const std::shared_ptr<const Grid>& g = b.grid_ptr();
        ++clock_;
        if (last_ != nullptr && last_->raw == g.get() && !last_->grid.expired()) {
            last_->used = clock_;  // the map of the last query: the usual case
            return *last_;
        }
        last_ = &fields_of(g);
        return *last_;
    }

    Fields& fields_of(const std::shared_ptr<const Grid>& g) {
        for (Fields& f : grids_) {  // a map of recent decisions: the pointer suffices
            if (f.raw == g.get() && !f.grid.expired()) {
                f.used = clock_;
                return f;
            }
        }
        for (Fields& f : grids_) {  // another Grid object (or a new one) with the same terrain
            if (f.raw != nullptr && same_terrain(f, *g)) {
                f.grid = g;
                f.raw = g.get();
                f.used = clock_;
                return f;
            }
        }
        Fields* victim = &grids_[0];
        for (Fields& f : grids_) {
            if (f.used < victim->used) victim = &f;
        }
        Fields& f = *victim;
        f.grid = g;
        f.raw = g.get();
        f.used = clock_;
        f.width = g->width();
        f.height = g->height();
        f.terrain.clear();
        f.simple = true;  // _simple(grid): no wall and no difficult terrain
        for (int y = 0; y < g->height(); ++y) {
            for (int x = 0; x < g->width(); ++x) {
                f.terrain.push_back(g->at(x, y));
                if (g->at(x, y) == kWall || g->at(x, y) == kDifficult) f.simple = false;
            }
        }
        const auto squares = static_cast<std::size_t>(g->width()) * static_cast<std::size_t>(g->height());
        f.slot.assign(f.simple ? 0 : squares, -1);
        f.data.clear();
        f.sites.clear();
        f.sites_ready = false;
        return f;
    }

    // common._dijkstra: the cost to reach the goal from every square (built from the goal with
    // the cost of the square entered); returns the field's offset in f.data.
    std::int64_t dijkstra(const Grid& g, Fields& f, int gx, int gy) {
        const int w = g.width(), h = g.height();
        const std::size_t n = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
        const std::size_t off = f.data.size();
        dist_.assign(n, kInf);
        heap_.clear();
        dist_[static_cast<std::size_t>(gy * w + gx)] = 0.0;
        heap_.push_back({0.0, gy * w + gx});
        const auto later = [](const Node& a, const Node& b2) { return a.d > b2.d; };
        while (!heap_.empty()) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            const Node top = heap_.back();
            heap_.pop_back();
            if (top.d > dist_[static_cast<std::size_t>(top.sq)]) continue;
            const int x = top.sq % w, y = top.sq / w;
            const double enter = g.step_cost_m(x, y);  // entering (x, y) from a neighbour
            for (int k = 0; k < kNumDirs; ++k) {
                const int nx = x + kDirDx[k], ny = y + kDirDy[k];
                if (!g.in_bounds(nx, ny) || g.at(nx, ny) == kWall || g.cuts_corner(nx, ny, x, y)) continue;
                const double nd = top.d + enter;
                double& cur = dist_[static_cast<std::size_t>(ny * w + nx)];
                if (nd < cur) {
                    cur = nd;
                    heap_.push_back({nd, ny * w + nx});
                    std::push_heap(heap_.begin(), heap_.end(), later);
                }
            }
        }
        f.data.resize(off + n);
        for (std::size_t i = 0; i < n; ++i) f.data[off + i] = static_cast<float>(dist_[i]);
        return static_cast<std::int64_t>(off);
    }

    struct Node {
        double d;
        int sq;
    };

    std::vector<Slot> outcomes_;
    std::vector<std::vector<double>> dice_;
    Fields grids_[kGridSlots];
    Fields* last_ = nullptr;  // the slot fields_for returned last
    std::uint64_t clock_ = 0;
    std::vector<double> dist_;
    std::vector<Node> heap_;
};

// The calling thread's Workspace.
Workspace& workspace();

// ============================================================================ one decision
// common.Context: the battle, the deciding combatant, the mask, its enemies and allies in play.
struct Ctx {
    const Battle& b;
    const Grid& g;
    int me;
    const Combatant& m;
    const std::uint8_t* mask;
    Workspace& ws;
    bool sig;    // a Significant action is available (budget_left)
    int minors;  // Minor actions available

    Ctx(const Battle& battle, int seat, const std::uint8_t* mk, Workspace& w)
        : b(battle), g(battle.grid()), me(seat), m(battle.combatant(seat)), mask(mk), ws(w) {
        const Budget budget{m.minors, m.significant};
        sig = budget.significant_left();
        minors = budget.minors_left();
        w.enemies.clear();
        w.allies.clear();
        for (int i = 0; i < battle.num_combatants(); ++i) {
            const Combatant& c = battle.combatant(i);
            if (c.out || c.down) continue;
            if (c.side != m.side) {
                w.enemies.push_back(i);
            } else if (i != seat) {
                w.allies.push_back(i);
            }
        }
    }

    const std::vector<int>& enemies() const { return ws.enemies; }
    const std::vector<int>& allies() const { return ws.allies; }
    const Combatant& c(int i) const { return b.combatant(i); }
    bool legal(int index) const { return index >= 0 && mask[index] != 0; }
    int index(Kind k, int arg = -1) const {
        Action a;
        a.kind = k;
        a.arg = arg;
        return b.encode(a);
    }
    // spare_minor: a Minor action can be spent without losing this turn's Significant action.
    bool spare_minor() const { return minors > 0 && (m.minors == 0 || !sig); }
    // Another combatant in play holds (x, y) (Context.occupied).
    bool occupied(int x, int y) const {
        for (int i = 0; i < b.num_combatants(); ++i) {
            const Combatant& o = b.combatant(i);
            if (i != me && !o.out && o.x == x && o.y == y) return true;
        }
        return false;
    }
    // Python's id comparison (ids[a] < ids[b] as strings).
    bool id_less(int a, int b2) const {
        return b.names().ids[static_cast<std::size_t>(a)] < b.names().ids[static_cast<std::size_t>(b2)];
    }
};

// Up to a few labels in order of preference (-1: None); ScriptedPolicy.choose plays the first
// legal one.
struct Prefs {
    int v[4] = {-1, -1, -1, -1};
    int n = 0;
    Prefs() = default;
    Prefs(std::initializer_list<int> items) {
        for (int i : items) add(i);
    }
    void add(int i) { v[n++] = i; }
};

// ---------------------------------------------------------------------------- attack arithmetic
// common.damage_to_down: damage one hit must do to knock c out now.
inline int damage_to_down(const Combatant& c) {
    if (c.down) return 0;
    return std::max(1, damage_to_incapacitate(c.chars[kSTR], c.chars[kDEX], c.chars[kEND]));
}

// common.attack_dm: the total DM of a's attack on t with a at (ax, ay), t at (tx, ty), an aim
// DM (-1: the aim a holds on t), the held leadership bonus/penalty, a target stance (tstance;
// -1: t's own) and haste (hasty; -1: a's own, 0 False, 1 True); kNoShot out of reach.
inline int attack_dm(const Ctx& ctx, int ai, int ti, int ax, int ay, int tx, int ty,
                     int aim = -1, bool held = true, int tstance = -1, int hasty = -1) {
    const Combatant& a = ctx.c(ai);
    if (!in_attack_reach(a.weapon, ctx.g, ax, ay, tx, ty)) return kNoShot;
    return attack_dm_at(a, ctx.c(ti), ti, ctx.g, ax, ay, tx, ty, aim, held, tstance, hasty);
}

inline int attack_dm_now(const Ctx& ctx, int ai, int ti, int aim = -1, bool held = true,
                         int hasty = -1) {
    const Combatant& a = ctx.c(ai);
    const Combatant& t = ctx.c(ti);
    return attack_dm(ctx, ai, ti, a.x, a.y, t.x, t.y, aim, held, -1, hasty);
}

// common.attack_value: expected damage (capped) + kill_weight x the chance of a knock-out.
inline double attack_value(const Ctx& ctx, int ai, int ti, int dm, double kill_weight) {
    const Weapon& w = ctx.c(ai).weapon;
    const Combatant& t = ctx.c(ti);
    const Outcome o =
        ctx.ws.outcome(dm, w.damage_count, w.damage_modifier, t.protection, damage_to_down(t));
    return o.expected + kill_weight * o.p_down;
}

// common.aim_plan: how many more aims before firing (0: fire now), by exact expected values.
template <class ValueAt>
int aim_plan(const ValueAt& value_at, int aim, int minors_used, int max_aim) {
    double rate = -kInf;
    for (int n = 1; n <= 3; ++n) {
        const double r = value_at(std::min(max_aim, 3 * n - 2)) / static_cast<double>(3 * n);
        if (n == 1 || r > rate) rate = r;
    }
    int best_k = 0;
    double best = Budget::significant_after_minors(minors_used, 0) ? value_at(aim) - 2 * rate : -kInf;
    for (int k = 1; k < 7; ++k) {
        if (aim + k > max_aim || !Budget::significant_after_minors(minors_used, k)) continue;
        const double v = value_at(aim + k) - rate * (k + 2);
        if (v > best + 1e-9) {
            best_k = k;
            best = v;
        }
    }
    return best_k;
}

// ---------------------------------------------------------------------------- movement
// Visit every legal Move (move_options): f(index, destination x, destination y), in catalogue
// order; a Move whose straight path is impossible or enters an occupied square is skipped.
template <class F>
void for_each_move(const Ctx& ctx, F&& f) {
    const double budget = move_budget_m(ctx.m.movement_m, ctx.m.stance);
    const int max_move = ctx.b.max_move_squares();
    Walk w;
    for (int d = 0; d < kNumDirs; ++d) {
        for (int s = 1; s <= max_move; ++s) {
            Action a;
            a.kind = Kind::move;
            a.dir = d;
            a.squares = s;
            const int index = ctx.b.encode(a);
            if (!ctx.mask[index]) continue;
            ctx.g.walk(ctx.m.x, ctx.m.y, d, budget, s, w);  // move_path
            if (w.stop != WalkStop::none || w.n == 0) continue;
            bool blocked = false;
            for (int k = 0; k < w.n && !blocked; ++k) blocked = ctx.occupied(w.px[k], w.py[k]);
            if (blocked) continue;
            f(index, w.px[w.n - 1], w.py[w.n - 1]);
        }
    }
}

// (a0, a1) < (b0, b1) as Python compares tuples of floats.
inline bool key_less(double a0, double a1, double b0, double b1) {
    return a0 < b0 || (a0 == b0 && a1 < b1);
}

// ScriptedPolicy.nearest_enemy: the enemy closest by path (ties: straight line, then order).
int nearest_enemy(const Ctx& ctx);

// ScriptedPolicy.move_toward: the legal Move that brings it closest (by path) to the goal; -1
// when none gets closer.
int move_toward(const Ctx& ctx, int gx, int gy);

// ---------------------------------------------------------------------------- shared evaluations
// best_attacks(ctx)[0]: the legal attack of highest value (ties: the smaller id), or -1.
int best_attack(const Ctx& ctx, double kill_weight = kKillWeight);

// common.threat: the best expected damage of enemy's attack on any of the deciding side now.
double threat(const Ctx& ctx, int enemy);

// common.bonus_value: what a leadership bonus (DM +1) adds to ally's best attack now.
double bonus_value(const Ctx& ctx, int ally);

// common.best_reaction with its default costs: dodge or parry when the damage saved beats its
// cost and the hit chance drops by at least min_drop.
int best_reaction(const Ctx& ctx, double min_drop = kMinDrop);

// ScriptedPolicy.free_action: impose a penalty on the most dangerous enemy, hand a bonus to the
// ally whose attack it helps most; -1 for none.
int free_action(const Ctx& ctx);

// ScriptedPolicy.draw_or_reload.
int draw_or_reload(const Ctx& ctx);

// ScriptedPolicy.melee_turn.
Prefs melee_turn(const Ctx& ctx);

// ScriptedPolicy.ranged_turn_prologue: a melee weapon fights in melee, otherwise draw/reload if
// needed (into out); false when the weapon is ready to fire.
bool ranged_turn_prologue(const Ctx& ctx, Prefs& out);

}  // namespace traveller::npc
