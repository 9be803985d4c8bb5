// The in-core scripted policies (include/traveller/policies.hpp): agents/common.py, rush.py,
// marksman.py, leader.py, tactician.py, cover.py and traveller_env/policy.py, function for
// function.
// Python names are kept (with the Python they mirror quoted where the arithmetic must match bit
// for bit); the leader's and tactician's functions carry their class's name as a prefix.
#include "traveller/policies.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "traveller/attack.hpp"
#include "traveller/budget.hpp"
#include "traveller/checks.hpp"
#include "traveller/damage.hpp"
#include "traveller/grid.hpp"
#include "traveller/leadership.hpp"
#include "traveller/movement.hpp"
#include "traveller/reactions.hpp"

namespace traveller {

bool core_policy_kind(const std::string& name, PolicyKind* out) {
    for (int i = 0; i < kNumPolicyKinds; ++i) {
        if (name == kPolicyKindNames[i]) {
            *out = static_cast<PolicyKind>(i);
            return true;
        }
    }
    return false;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kNoShot = INT_MIN;  // common.attack_dm's None: no attack possible from there

// Default parameters of the Python policies.
constexpr double kKillWeight = 5.0;     // best_attacks, bonus_value, best_reaction, marksman
constexpr double kStopFraction = 0.25;  // RushPolicy.stop_fraction
constexpr double kKeepAwayM = 9.0;      // MarksmanPolicy.keep_away_m
constexpr int kMaxAim = 6;              // MarksmanPolicy.max_aim
constexpr double kInitCostWaiting = 1.0, kInitCostActed = 0.5, kMinDrop = 0.0;  // best_reaction
constexpr int kCoverStance = kCrouch;      // CoverPolicy.stance
constexpr double kCoverSearchM = 15.0;     // CoverPolicy.search_m
constexpr double kCoverMinDrop = 0.08;     // CoverPolicy.dodge_min_drop

struct Outcome {
    double p_hit = 0.0, expected = 0.0, p_down = 0.0;
};

// A hash table from 64-bit keys to values that is emptied in O(1) (a generation stamp) and keeps
// its storage from one decision to the next: the tactician's per-decision memo tables (its
// Python dicts _base, _incoming, _end and memo).
template <class V>
class KeyCache {
public:
    // Forget every entry (the next decision starts empty).
    void clear() noexcept {
        if (++gen_ == 0) {  // the stamp wrapped: really clear
            for (Slot& s : slots_) s.gen = 0;
            gen_ = 1;
        }
        count_ = 0;
    }
    // The value stored under key, or nullptr.
    const V* find(std::uint64_t key) const noexcept {
        if (slots_.empty()) return nullptr;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
            const Slot& s = slots_[i];
            if (s.gen != gen_) return nullptr;
            if (s.key == key) return &s.value;
        }
    }
    void put(std::uint64_t key, const V& value) {
        if (2 * (count_ + 1) > slots_.size()) grow();
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(key) & mask;; i = (i + 1) & mask) {
            Slot& s = slots_[i];
            if (s.gen != gen_) {
                s = Slot{key, gen_, value};
                ++count_;
                return;
            }
            if (s.key == key) {
                s.value = value;
                return;
            }
        }
    }

private:
    struct Slot {
        std::uint64_t key = 0;
        std::uint32_t gen = 0;
        V value{};
    };
    static std::size_t hash(std::uint64_t k) noexcept {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return static_cast<std::size_t>(k);
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.empty() ? 256 : 2 * old.size(), Slot{});
        const std::uint32_t live = gen_;
        gen_ = 1;
        count_ = 0;
        for (const Slot& s : old) {
            if (s.gen == live) put(s.key, s.value);
        }
    }

    std::vector<Slot> slots_;
    std::uint32_t gen_ = 1;
    std::size_t count_ = 0;
};

// One result of the tactician's search: a value and its plan (the labels, catalogue indices).
struct PlanValue {
    double value = 0.0;
    int n = 0;
    int actions[TacticianPlan::kMax] = {};
};

// Per-thread caches: what is fixed for a scenario (exact damage distributions, attack outcomes,
// path-cost fields around walls) and the scratch lists of one decision. Shared by every policy
// on the thread (a batched stepper runs thousands), so a policy itself stays small.
class Workspace {
public:
    std::vector<int> enemies, allies;  // of the decision being made
    // The tactician's (and leader's) scratch: per-seat values, sorted gains and losses, the
    // signature of the battle, and the plan search's memo tables.
    std::vector<double> threat, others, gains, losses;
    std::vector<int> receivers;
    std::vector<std::int32_t> signature;
    KeyCache<int> base;          // _Planner._base
    KeyCache<double> incoming;   // _Planner._incoming
    KeyCache<double> end;        // _Planner._end
    KeyCache<PlanValue> memo;    // _Planner.memo

    Workspace() : outcomes_(kOutcomeSlots) {}

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
    static constexpr int kGridSlots = 4;  // maps cached at once per thread

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
        for (Fields& f : grids_) {  // the map of the last decisions: the pointer suffices
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
    std::uint64_t clock_ = 0;
    std::vector<double> dist_;
    std::vector<Node> heap_;
};

Workspace& workspace() {
    thread_local Workspace ws;
    return ws;
}

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
int damage_to_down(const Combatant& c) {
    if (c.down) return 0;
    return std::max(1, damage_to_incapacitate(c.chars[kSTR], c.chars[kDEX], c.chars[kEND]));
}

// common.attack_dm: the total DM of a's attack on t with a at (ax, ay), t at (tx, ty), an aim
// DM (-1: the aim a holds on t), the held leadership bonus/penalty, a target stance (tstance;
// -1: t's own) and haste (hasty; -1: a's own, 0 False, 1 True); kNoShot out of reach.
int attack_dm(const Ctx& ctx, int ai, int ti, int ax, int ay, int tx, int ty, int aim = -1,
              bool held = true, int tstance = -1, int hasty = -1) {
    const Combatant& a = ctx.c(ai);
    if (!in_attack_reach(a.weapon, ctx.g, ax, ay, tx, ty)) return kNoShot;
    return attack_dm_at(a, ctx.c(ti), ti, ctx.g, ax, ay, tx, ty, aim, held, tstance, hasty);
}

int attack_dm_now(const Ctx& ctx, int ai, int ti, int aim = -1, bool held = true,
                  int hasty = -1) {
    const Combatant& a = ctx.c(ai);
    const Combatant& t = ctx.c(ti);
    return attack_dm(ctx, ai, ti, a.x, a.y, t.x, t.y, aim, held, -1, hasty);
}

// common.attack_value: expected damage (capped) + kill_weight x the chance of a knock-out.
double attack_value(const Ctx& ctx, int ai, int ti, int dm, double kill_weight) {
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
bool key_less(double a0, double a1, double b0, double b1) { return a0 < b0 || (a0 == b0 && a1 < b1); }

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
int best_attack(const Ctx& ctx, double kill_weight = kKillWeight) {
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
int best_reaction(const Ctx& ctx, double min_drop = kMinDrop) {
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

// ============================================================================ rush
bool rush_close_enough(const Ctx& ctx, int target) {
    const Combatant& t = ctx.c(target);
    if (ctx.m.weapon.melee) return chebyshev(ctx.m.x, ctx.m.y, t.x, t.y) <= 1;
    return ctx.g.line_of_sight(ctx.m.x, ctx.m.y, t.x, t.y) &&
           Grid::distance_m(ctx.m.x, ctx.m.y, t.x, t.y) <=
               std::max(1.5, kStopFraction * ctx.m.weapon.range_m);
}

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

// ============================================================================ marksman
struct Target {
    int e = -1;
    int base = 0;  // attack_dm with aim 0
    int held = 0;  // the aim held on it
};

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

// ============================================================================ cover
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

// ============================================================================ leader
// LeaderPolicy's defaults (min_success, value_ratio; keep_away_m and kill_weight as marksman).
constexpr double kLeaderMinSuccess = 0.5, kLeaderValueRatio = 1.0;

// LeaderPolicy.leadership_dm: DM of its Leadership check now (R4.2) + the held bonus/penalty.
int leader_leadership_dm(const Ctx& ctx) {
    Dms held;
    held_dms(ctx.m, held);
    return leadership_dms(ctx.m).total() + held.total();
}

// LeaderPolicy.receivers: allies that could take a bonus now (in comms range or both with radios,
// R7.2, and not already holding one, R7.3), into out.
void leader_receivers(const Ctx& ctx, std::vector<int>& out) {
    out.clear();
    for (int a : ctx.allies()) {
        const Combatant& al = ctx.c(a);
        if (al.bonus) continue;
        if (can_communicate(ctx.m, al, ctx.b.options().comms_range_m)) out.push_back(a);
    }
}

// LeaderPolicy.penalty_cost: what DM -1 would take from member's best attack now.
double leader_penalty_cost(const Ctx& ctx, int member) {
    double best = 0.0;
    for (int e : ctx.enemies()) {
        const int dm = attack_dm_now(ctx, member, e, -1, false);
        if (dm == kNoShot) continue;
        const double loss = (attack_value(ctx, member, e, dm, kKillWeight) -
                             attack_value(ctx, member, e, dm - 1, kKillWeight));
        best = std::max(best, loss);
    }
    return best;
}

// sum(values[:k]) (values sorted in descending order, as sorted(..., reverse=True)).
double sum_first(const std::vector<double>& values, int k) {
    double total = 0.0;
    for (int i = 0; i < k && i < static_cast<int>(values.size()); ++i) {
        total += values[static_cast<std::size_t>(i)];
    }
    return total;
}

// LeaderPolicy.leadership_value: (chance of a positive Effect, expected value of the check).
//     for effect, p in effect_distribution(self.leadership_dm(ctx)).items():
//         if effect > 0: p_pos += p; value += p * sum(gains[:effect])
//         elif effect < 0: value -= p * sum(losses[:-effect])
void leader_leadership_value(const Ctx& ctx, double& p_pos, double& value) {
    std::vector<double>& gains = ctx.ws.gains;
    std::vector<double>& losses = ctx.ws.losses;
    leader_receivers(ctx, ctx.ws.receivers);
    gains.clear();
    for (int a : ctx.ws.receivers) gains.push_back(bonus_value(ctx, a));
    std::sort(gains.begin(), gains.end(), [](double x, double y) { return x > y; });
    losses.clear();
    losses.push_back(leader_penalty_cost(ctx, ctx.me));
    for (int a : ctx.allies()) losses.push_back(leader_penalty_cost(ctx, a));
    std::sort(losses.begin(), losses.end(), [](double x, double y) { return x > y; });
    p_pos = value = 0.0;
    const int dm = leader_leadership_dm(ctx);
    for (int s = 2; s <= 12; ++s) {  // effect_distribution(dm), in 2D order
        const int effect = s + dm - kTargetNumber;
        const double p = p2d6(s);
        if (effect > 0) {
            p_pos += p;
            value += p * sum_first(gains, effect);
        } else if (effect < 0) {
            value -= p * sum_first(losses, -effect);
        }
    }
}

// LeaderPolicy.own_shot_value: its best attack this turn (one more aim if it can still aim).
double leader_own_shot_value(const Ctx& ctx) {
    const Target best = marksman_best_target(ctx);
    if (best.e < 0) return 0.0;
    const int aim = std::min(kMaxAim, best.held + (ctx.m.minors == 0 ? 1 : 0));
    return attack_value(ctx, ctx.me, best.e, best.base + aim, kKillWeight);
}

// LeaderPolicy.should_lead: criteria (a)-(c) of its docstring.
bool leader_should_lead(const Ctx& ctx) {
    if (!ctx.sig || !ctx.legal(ctx.index(Kind::leadership))) return false;
    leader_receivers(ctx, ctx.ws.receivers);
    if (ctx.ws.receivers.empty()) return false;
    double p_pos, value;
    leader_leadership_value(ctx, p_pos, value);
    return p_pos >= kLeaderMinSuccess && value > 0 &&
           value >= kLeaderValueRatio * leader_own_shot_value(ctx);
}

// LeaderPolicy.free_action: bonuses to the allies whose attack gains most; penalties on the worst
// threats (sorted by (-threat, id)); -1 for none.
int leader_free_action(const Ctx& ctx) {
    int bonuses = 0, penalties = 0;
    if (!ctx.b.pools().empty()) ctx.b.pools().held(ctx.me, ctx.m.side, bonuses, penalties);
    if (bonuses) {
        int best = -1, best_a = -1;
        double best_v = 0.0;
        for (int a : ctx.allies()) {  // sorted(((bonus_value, id), ...), reverse=True)[0]
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
    if (penalties) {
        int best = -1, best_e = -1;
        double best_t = 0.0;
        for (int e : ctx.enemies()) {  // the first legal in order of (-threat, id)
            const int index = ctx.index(Kind::hamper, e);
            if (!ctx.legal(index)) continue;
            const double t = threat(ctx, e);
            if (best < 0 || -t < -best_t || (-t == -best_t && ctx.id_less(e, best_e))) {
                best = index;
                best_e = e;
                best_t = t;
            }
        }
        if (best >= 0) return best;
    }
    return -1;
}

// LeaderPolicy.turn: lead when it pays, else fight like a marksman.
Prefs leader_turn(const Ctx& ctx) {
    if (leader_should_lead(ctx)) {
        const Prefs rest = marksman_turn(ctx);
        Prefs prefs{ctx.index(Kind::leadership)};
        for (int k = 0; k < rest.n; ++k) prefs.add(rest.v[k]);
        return prefs;
    }
    return marksman_turn(ctx);
}

// ============================================================================ tactician
// TacticianPolicy's defaults.
constexpr double kFuture = 0.9, kDefence = 2.0, kKillHorizon = 2.0, kApproach = 0.05;
// (use_leadership=True; reaction_cost=1.0, so its reactions are best_reaction's defaults.)

// (a0, a1) < (b0, b1) for tuples of ints.
bool pair_less(int a0, int a1, int b0, int b1) { return a0 < b0 || (a0 == b0 && a1 < b1); }

// TacticianPolicy.haste: haste when overtaking an enemy is worth the DM -1.
int tactician_haste(const Ctx& ctx) {
    const int yes = ctx.index(Kind::haste, 0), no = ctx.index(Kind::haste, 1);
    const Combatant& me = ctx.m;
    if (me.down || ctx.enemies().empty()) return no;
    const int mine0 = me.current_initiative(), mine1 = me.chars[kDEX];
    const int hasted0 = me.current_initiative() + 2;
    double gain = 0.0, best_now = 0.0, best_hasty = 0.0;
    for (int e : ctx.enemies()) {
        const int dm = attack_dm_now(ctx, ctx.me, e, -1, true, 0);  // hasty=False
        if (dm == kNoShot) continue;
        const double kw = kKillHorizon * threat(ctx, e);
        best_now = std::max(best_now, attack_value(ctx, ctx.me, e, dm, kw));
        best_hasty = std::max(best_hasty, attack_value(ctx, ctx.me, e, dm - 1, kw));
        const Combatant& en = ctx.c(e);
        const int theirs0 = en.current_initiative(), theirs1 = en.chars[kDEX];
        // mine < theirs < hasted or (theirs == mine and e.id < me.id)
        if ((pair_less(mine0, mine1, theirs0, theirs1) &&
             pair_less(theirs0, theirs1, hasted0, mine1)) ||
            (theirs0 == mine0 && theirs1 == mine1 && ctx.id_less(e, ctx.me))) {
            const Weapon& w = me.weapon;
            const double p_down = ctx.ws.outcome(dm - 1, w.damage_count, w.damage_modifier,
                                                 en.protection, damage_to_down(en))
                                      .p_down;
            const int their = attack_dm_now(ctx, e, ctx.me);
            if (their != kNoShot) gain += p_down * attack_value(ctx, e, ctx.me, their, 0.0);
        }
    }
    const double loss = best_now - best_hasty;
    return gain > loss && gain > 0 ? yes : no;
}

// TacticianPolicy._signature: (round, agent, per other combatant (id, pos, stance, out, down,
// aim_target, aim_dm, END, STR, DEX)), the id being the seat's place in the list.
void tactician_signature(const Ctx& ctx, std::vector<std::int32_t>& out) {
    out.clear();
    out.push_back(ctx.b.round());
    out.push_back(ctx.me);
    for (int i = 0; i < ctx.b.num_combatants(); ++i) {
        if (i == ctx.me) continue;
        const Combatant& c = ctx.c(i);
        for (const int v : {c.x, c.y, c.stance, static_cast<int>(c.out), static_cast<int>(c.down),
                            c.aim_target, c.aim_dm, c.chars[kEND], c.chars[kSTR], c.chars[kDEX]}) {
            out.push_back(v);
        }
    }
}

// v (a small non-negative number) at bit `shift` of a memo table's key.
constexpr std::uint64_t bits(int v, int shift) noexcept {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)) << shift;
}

// tactician._State: a hypothetical state of the deciding combatant within its turn.
struct TState {
    int x = 0, y = 0;
    int stance = 0;
    bool drawn = false, loaded = false;
    int aim_t = -1;  // None
    int aim_dm = 0;
    int minors = 0;
    bool sig = false;
    bool moved = false;
    bool aimed = false;  // aimed this turn (only aim/attack may follow)
    int changes = 0;     // stance changes this turn
};

// tactician._Planner: one turn's plan search (memoised over hypothetical states).
class Planner {
public:
    explicit Planner(const Ctx& ctx)
        : ctx_(ctx),
          me_(ctx.m),
          melee_(ctx.m.weapon.melee),
          needs_draw_(ctx.m.weapon.needs_draw),
          hypothetical_(ctx.m) {
        Workspace& ws = ctx.ws;
        ws.base.clear();
        ws.incoming.clear();
        ws.end.clear();
        ws.memo.clear();
        const auto n = static_cast<std::size_t>(ctx.b.num_combatants());
        ws.threat.assign(n, 0.0);
        ws.others.assign(n, 0.0);
        for (int e : ctx.enemies()) ws.threat[static_cast<std::size_t>(e)] = threat(ctx, e);
        // What the enemies' attacks on the rest of the side are worth (for target shares).
        for (int e : ctx.enemies()) {
            double total = 0.0;
            for (int a : ctx.allies()) {
                const Combatant& al = ctx.c(a);
                const int dm = enemy_dm(e, a, al.x, al.y, al.stance);
                if (dm != kNoShot) total += attack_value(ctx, e, a, dm, 0.0);
            }
            ws.others[static_cast<std::size_t>(e)] = total;
        }
        double own = 0.0;
        for (int e : ctx.enemies()) {
            const Combatant& en = ctx.c(e);
            const int dm = melee_ ? attack_dm(ctx, ctx.me, e, en.x, en.y, en.x, en.y)
                                  : attack_dm_now(ctx, ctx.me, e);
            if (dm != kNoShot) own = std::max(own, attack_value(ctx, ctx.me, e, dm, 0.0));
        }
        self_value_ = own;
        if (me_.skills.leadership != kNoSkill) {  // use_leadership, skill_level(...) is not None
            leader_receivers(ctx, ws.receivers);
            if (!ws.receivers.empty()) {
                double p_pos, value;
                leader_leadership_value(ctx, p_pos, value);
                if (p_pos >= 0.5 && value > 0) {
                    has_lead_ = true;
                    lead_value_ = value;
                }
            }
        }
        // The memo's key packs a state into 64 bits; for a battle too large for it (never in
        // practice) the search simply runs unmemoised, with the same result.
        memo_ok_ = ctx.g.width() <= 1024 && ctx.g.height() <= 1024 &&
                   ctx.b.num_combatants() < 65535;
    }

    // _Planner.best_plan: the labels of the best plan (the first one is legal now).
    PlanValue best_plan() {
        TState root;
        root.x = me_.x;
        root.y = me_.y;
        root.stance = me_.stance;
        root.drawn = me_.drawn || !needs_draw_;
        root.loaded = melee_ || me_.ammo > 0;
        root.aim_t = me_.aim_target;
        root.aim_dm = me_.aim_dm;
        root.minors = me_.minors;
        root.sig = me_.significant;
        PlanValue best = search(root, true);
        if (best.n == 0) {  // `plan or ["end_turn"]` (never empty)
            best.n = 1;
            best.actions[0] = ctx_.index(Kind::end_turn);
        }
        return best;
    }

private:
    const Ctx& ctx_;
    const Combatant& me_;
    bool melee_, needs_draw_;
    double self_value_ = 0.0;
    bool has_lead_ = false;
    double lead_value_ = 0.0;
    bool memo_ok_ = true;
    Combatant hypothetical_;  // base_dm's attacker: itself elsewhere

    double threat_of(int t) const { return ctx_.ws.threat[static_cast<std::size_t>(t)]; }
    double others_of(int e) const { return ctx_.ws.others[static_cast<std::size_t>(e)]; }

    // _Planner._enemy_dm: e's attack DM on target standing at (x, y) in stance (melee: if it can
    // close in).
    int enemy_dm(int e, int target, int x, int y, int stance) const {
        const Combatant& en = ctx_.c(e);
        if (en.weapon.melee) {
            const int reach = 1 + squares_per_move(en.movement_m);
            if (chebyshev(en.x, en.y, x, y) > reach) return kNoShot;
            return attack_dm(ctx_, e, target, x, y, x, y);
        }
        return attack_dm(ctx_, e, target, en.x, en.y, x, y, -1, true, stance);
    }

    // _Planner.base_dm: my attack DM on t from (x, y) without aim (hasty: -1 None, 0 False):
    // attack_dm(view, me, t, apos=pos, aim=0, hasty=hasty, held=False), on a copy of itself kept
    // for the search (attack_dm's hypothetical attacker, without copying it at every call).
    int base_dm(int x, int y, int t, int hasty = -1) {
        const std::uint64_t key = bits(x, 0) | bits(y, 16) | bits(t, 32) | bits(hasty + 1, 62);
        const bool cacheable = memo_ok_;
        if (cacheable) {
            if (const int* hit = ctx_.ws.base.find(key)) return *hit;
        }
        const Combatant& tc = ctx_.c(t);
        int dm = kNoShot;
        if (in_attack_reach(me_.weapon, ctx_.g, x, y, tc.x, tc.y)) {
            Combatant& ha = hypothetical_;
            ha.x = x;
            ha.y = y;
            ha.aim_target = t;
            ha.aim_dm = 0;
            ha.hasty = hasty < 0 ? me_.hasty : hasty != 0;
            dm = attack_dms(ha, tc, t, ctx_.g).total();
        }
        if (cacheable) ctx_.ws.base.put(key, dm);
        return dm;
    }

    // _Planner.attack_worth: expected damage + knock-out chance x kill_horizon x its threat.
    double attack_worth(int t, int dm) const {
        return attack_value(ctx_, ctx_.me, t, dm, kKillHorizon * threat_of(t));
    }

    // _Planner.incoming: damage (and knock-out risk) expected before its next turn at (x, y) in
    // stance.
    double incoming(int x, int y, int stance) const {
        const std::uint64_t key = bits(x, 0) | bits(y, 20) | bits(stance, 40);
        if (memo_ok_) {
            if (const double* hit = ctx_.ws.incoming.find(key)) return *hit;
        }
        double total = 0.0;
        const double kill = kKillHorizon * self_value_;
        const int hp = damage_to_down(me_);
        for (int e : ctx_.enemies()) {
            const int dm = enemy_dm(e, ctx_.me, x, y, stance);
            if (dm == kNoShot) continue;
            const Weapon& w = ctx_.c(e).weapon;
            const Outcome o =
                ctx_.ws.outcome(dm, w.damage_count, w.damage_modifier, me_.protection, hp);
            const double ed = o.expected;
            if (ed <= 0) continue;
            const double share = ed / (ed + others_of(e));
            total += share * (ed + kill * o.p_down);
        }
        if (memo_ok_) ctx_.ws.incoming.put(key, total);
        return total;
    }

    // _Planner.next_offence: the value of its best attack next turn from the end state.
    double next_offence(const TState& s) {
        double best = 0.0;
        if (melee_) {
            const int reach = 1 + squares_per_move(move_budget_m(me_.movement_m, s.stance));
            for (int t : ctx_.enemies()) {
                const Combatant& tc = ctx_.c(t);
                const int d = chebyshev(s.x, s.y, tc.x, tc.y);
                if (d > reach) continue;
                const int dm = base_dm(tc.x, tc.y, t, 0);
                if (dm != kNoShot) {
                    best = std::max(best, attack_worth(t, dm) * (d <= 1 ? 1.0 : 0.9));
                }
            }
            return best;
        }
        const bool ready = (s.drawn || !needs_draw_) && s.loaded;
        for (int t : ctx_.enemies()) {
            const int dm = base_dm(s.x, s.y, t, 0);
            if (dm == kNoShot) continue;
            const int held = s.aim_t == t ? s.aim_dm : 0;
            const int aim = ready ? next_aim_dm(t, held, t) : held;
            // A held aim beyond what next turn needs frees its Minor action: a small tie-break.
            best = std::max(best, attack_worth(t, dm + aim) + 0.01 * held);
        }
        return best;
    }

    // _Planner.end_value: the value of ending the turn in state s.
    //     value = p.future * off - p.defence * self.incoming(s.pos, s.stance)
    //     if (off <= 0 or self.melee) and self.enemies: value -= p.approach * near (if finite)
    double end_value(const TState& s) {
        const std::uint64_t key = bits(s.x, 0) | bits(s.y, 10) | bits(s.stance, 20) |
                                  bits(s.drawn, 22) | bits(s.loaded, 23) | bits(s.aim_dm, 24) |
                                  bits(s.aim_t + 1, 32);
        if (memo_ok_) {
            if (const double* hit = ctx_.ws.end.find(key)) return *hit;
        }
        const double off = next_offence(s);
        double value = kFuture * off - kDefence * incoming(s.x, s.y, s.stance);
        if ((off <= 0 || melee_) && !ctx_.enemies().empty()) {
            double near = kInf;
            for (int t : ctx_.enemies()) {
                const Combatant& tc = ctx_.c(t);
                near = std::min(near, ctx_.ws.path_cost(ctx_.b, tc.x, tc.y, s.x, s.y));
            }
            if (near != kInf) value -= kApproach * near;
        }
        if (memo_ok_) ctx_.ws.end.put(key, value);
        return value;
    }

    // The memo's key: every field of the state (x, y < 1024; aim_t + 1 < 65536).
    static std::uint64_t state_key(const TState& s) {
        return bits(s.x, 0) | bits(s.y, 10) | bits(s.stance, 20) | bits(s.drawn, 22) |
               bits(s.loaded, 23) | bits(s.aim_dm, 24) | bits(s.minors, 27) | bits(s.sig, 30) |
               bits(s.moved, 31) | bits(s.aimed, 32) | bits(s.changes, 33) |
               bits(s.aim_t + 1, 35);
    }
    // Whether state_key represents s exactly (aim DM and minors stay small by construction).
    bool keyable(const TState& s) const {
        return memo_ok_ && s.aim_dm >= 0 && s.aim_dm < 8 && s.minors >= 0 && s.minors < 8 &&
               s.changes < 4;
    }

    // _Planner.search: the best (value, plan) from state s.
    PlanValue search(const TState& s, bool top) {
        const bool memo = !top && keyable(s);
        const std::uint64_t key = memo ? state_key(s) : 0;
        if (memo) {
            if (const PlanValue* hit = ctx_.ws.memo.find(key)) return *hit;
        }
        PlanValue best;
        best.value = end_value(s);
        best.n = 1;
        best.actions[0] = ctx_.index(Kind::end_turn);
        children(s, top, [&](int label, double value, const TState& nxt) {
            if (top && !ctx_.legal(label)) return;
            const PlanValue rest = search(nxt, false);
            const double v = rest.value + value;  // v, rest = self.search(nxt); v += value
            if (v > best.value + 1e-9 && rest.n < TacticianPlan::kMax) {
                best.value = v;
                best.n = rest.n + 1;
                best.actions[0] = label;
                for (int k = 0; k < rest.n; ++k) best.actions[k + 1] = rest.actions[k];
            }
        });
        if (memo) ctx_.ws.memo.put(key, best);
        return best;
    }

    // The catalogue index of move:<dir>:<n> (-1 when the catalogue has no such move: not legal).
    int move_index(int dir, int n) const {
        if (n < 1 || n > ctx_.b.max_move_squares()) return -1;
        Action a;
        a.kind = Kind::move;
        a.dir = dir;
        a.squares = n;
        return ctx_.b.encode(a);
    }

    // _Planner.moves_from: the moves from a hypothetical state (the engine's path rules,
    // read-only): f(label, destination x, destination y).
    //     for n in range(1, n_max + 1):
    //         path = move_path(self.grid, occupied, s.pos, d, n, budget)
    //         if path is None: break
    // The walk of n squares is the first n steps of the walk of n_max (each step's checks do
    // not depend on how many follow), and its path is blocked once any of its squares is
    // occupied: so one walk per direction gives every n, in the same order.
    template <class F>
    void moves_from(const TState& s, F&& f) const {
        const double budget = move_budget_m(me_.movement_m, s.stance);
        const int n_max = squares_per_move(me_.movement_m);
        Walk w;
        for (int d = 0; d < kNumDirs; ++d) {
            ctx_.g.walk(s.x, s.y, d, budget, n_max, w);
            // Steps passed: all of them, or those before the refused one (a cost refusal
            // appends the square it could not pay for).
            const int passed = w.stop == WalkStop::none ? w.n : w.cost_failure() ? w.n - 1 : w.n;
            for (int n = 1; n <= passed; ++n) {
                const int x = w.px[n - 1], y = w.py[n - 1];
                if (ctx_.occupied(x, y)) break;
                f(move_index(d, n), x, y);
            }
        }
    }

    // _Planner.children: visit(label, immediate value, next state) for each action worth
    // considering, in the Python's order.
    template <class Visit>
    void children(const TState& s, bool top, Visit&& visit) {
        const int minors_left = (s.sig ? 1 : 3) - s.minors;
        const bool sig_avail = !s.sig && s.minors <= 1;
        const auto cleared = [&](TState n) {  // **aim_cleared
            if (s.aim_t >= 0) {
                n.aim_t = -1;
                n.aim_dm = 0;
            }
            return n;
        };
        if (minors_left > 0 && !s.aimed) {
            if (!s.moved) {
                const auto on_move = [&](int label, int x, int y) {
                    TState n = s;
                    n.x = x;
                    n.y = y;
                    n.minors = s.minors + 1;
                    n.moved = true;
                    visit(label, 0.0, cleared(n));
                };
                if (top) {
                    for_each_move(ctx_, on_move);  // move_options(ctx)
                } else {
                    moves_from(s, on_move);
                }
            }
            if (s.changes < 2) {
                for (int st = 0; st < 3; ++st) {  // STANCES
                    if (st == s.stance) continue;
                    TState n = s;
                    n.stance = st;
                    n.minors = s.minors + 1;
                    n.changes = s.changes + 1;
                    visit(ctx_.index(Kind::stance, st), 0.0, cleared(n));
                }
            }
            if (!s.drawn) {
                TState n = s;
                n.drawn = true;
                n.minors = s.minors + 1;
                visit(ctx_.index(Kind::draw), 0.0, cleared(n));
            }
            if (!s.loaded && me_.spares > 0) {
                TState n = s;
                n.loaded = true;
                n.minors = s.minors + 1;
                visit(ctx_.index(Kind::reload), 0.0, cleared(n));
            }
        }
        if (minors_left > 0 && !melee_ && s.drawn) {
            for (int t : ctx_.enemies()) {
                const Combatant& tc = ctx_.c(t);
                if (!ctx_.g.line_of_sight(s.x, s.y, tc.x, tc.y)) continue;
                int dm;
                if (s.aim_t == t) {
                    if (s.aim_dm >= 6) continue;
                    dm = s.aim_dm + 1;
                } else {
                    dm = 1;
                }
                if (base_dm(s.x, s.y, t) == kNoShot && s.aim_t != t) continue;  // could not shoot
                TState n = s;
                n.aim_t = t;
                n.aim_dm = dm;
                n.minors = s.minors + 1;
                n.aimed = true;
                visit(ctx_.index(Kind::aim, t), 0.0, n);
            }
        }
        if (sig_avail) {
            if (s.drawn && s.loaded) {
                Dms held;
                held_dms(me_, held);
                for (int t : ctx_.enemies()) {
                    int dm = base_dm(s.x, s.y, t);
                    if (dm == kNoShot) continue;
                    if (s.aim_t == t) dm += s.aim_dm;
                    dm += held.total();
                    TState n = s;
                    n.sig = true;
                    n.aim_t = -1;
                    n.aim_dm = 0;
                    n.aimed = false;
                    n.loaded = melee_ || me_.ammo > 1;
                    visit(ctx_.index(Kind::attack, t), attack_worth(t, dm), n);
                }
            }
            if (has_lead_) {
                TState n = s;
                n.sig = true;
                n.aim_t = -1;
                n.aim_dm = 0;
                n.aimed = false;
                visit(ctx_.index(Kind::leadership), lead_value_, n);
            }
        }
    }
};

// TacticianPolicy.turn: the first action of the best plan, or the next one of the current plan
// when the battle has not changed under it (_signature) and that action is legal.
Prefs tactician_turn(const Ctx& ctx, TacticianPlan& plan) {
    const int end = ctx.index(Kind::end_turn);
    std::vector<std::int32_t>& sig = ctx.ws.signature;
    tactician_signature(ctx, sig);
    if (plan.active && plan.signature == sig && plan.n > 0) {
        const int nxt = plan.actions[0];
        if (ctx.legal(nxt)) {
            for (int k = 1; k < plan.n; ++k) plan.actions[k - 1] = plan.actions[k];
            plan.n -= 1;
            return {nxt, end};
        }
    }
    const PlanValue best = Planner(ctx).best_plan();
    plan.active = true;
    plan.signature = sig;
    plan.n = best.n - 1;
    for (int k = 1; k < best.n; ++k) plan.actions[k - 1] = best.actions[k];
    return {best.actions[0], end};
}

// The k-th legal action (k < number of legal actions).
int nth_legal(const std::uint8_t* mask, int n_actions, std::uint32_t k) {
    for (int i = 0; i < n_actions; ++i) {
        if (mask[i] && k-- == 0) return i;
    }
    return -1;
}

int count_legal(const std::uint8_t* mask, int n_actions) {
    int n = 0;
    for (int i = 0; i < n_actions; ++i) n += mask[i] != 0;
    return n;
}

}  // namespace

// ============================================================================ CorePolicy
CorePolicy::CorePolicy(PolicyKind k) noexcept : kind_(k), rng_(rng::Pcg32::from_seed(0)) {}

void CorePolicy::reset(std::uint64_t seed) noexcept {
    rng_ = rng::Pcg32::from_seed(seed);
    forget();
}

void CorePolicy::forget() noexcept {
    plan_.active = false;
    plan_.n = 0;
}

int CorePolicy::act(const Battle& b, int seat, const std::uint8_t* mask) {
    const int n_actions = b.num_actions();
    const int n_legal = count_legal(mask, n_actions);
    if (n_legal == 0) return -1;
    if (kind_ == PolicyKind::random) {  // RandomPolicy.act
        return nth_legal(mask, n_actions, rng_.boundedrand(static_cast<std::uint32_t>(n_legal)));
    }
    Ctx ctx(b, seat, mask, workspace());
    const int end = ctx.index(Kind::end_turn);
    const int haste_no = ctx.index(Kind::haste, 1);
    const int react_none = ctx.index(Kind::react, kReactNone);
    if (kind_ == PolicyKind::passive) {  // PassivePolicy.act
        for (const int i : {end, haste_no, react_none}) {
            if (mask[i]) return i;
        }
        return nth_legal(mask, n_actions, 0);
    }
    // ScriptedPolicy.decide
    Prefs prefs;
    const Phase phase = b.phase();
    const bool leads = kind_ == PolicyKind::leader || kind_ == PolicyKind::tactician;
    if (phase == Phase::haste) {
        // rush (haste=False), marksman, leader and cover never hasten
        prefs = {kind_ == PolicyKind::tactician ? tactician_haste(ctx) : haste_no};
    } else if (phase == Phase::reaction) {
        if (kind_ == PolicyKind::rush) {
            const int parry = ctx.index(Kind::react, kReactParry);
            prefs = {ctx.legal(parry) ? parry : react_none};
        } else if (kind_ == PolicyKind::cover) {
            prefs = {cover_react(ctx)};
        } else {  // tactician: best_reaction(ctx, reaction_cost, reaction_cost / 2) = defaults
            prefs = {best_reaction(ctx)};
        }
    } else {
        const int free = leads ? leader_free_action(ctx) : free_action(ctx);
        if (free >= 0) {
            prefs = {free};
        } else if (!ctx.sig && ctx.minors <= 0) {  // R2.3: only free actions and end_turn
            prefs = {end};
        } else {
            switch (kind_) {
                case PolicyKind::rush: prefs = rush_turn(ctx); break;
                case PolicyKind::leader: prefs = leader_turn(ctx); break;
                case PolicyKind::tactician: prefs = tactician_turn(ctx, plan_); break;
                case PolicyKind::cover: prefs = cover_turn(ctx); break;
                default: prefs = marksman_turn(ctx); break;
            }
        }
    }
    // ScriptedPolicy.choose: the first legal preference, else a legal fallback.
    for (int k = 0; k < prefs.n; ++k) {
        if (ctx.legal(prefs.v[k])) return prefs.v[k];
    }
    for (const int i : {end, react_none, haste_no}) {
        if (mask[i]) return i;
    }
    return nth_legal(mask, n_actions, rng_.boundedrand(static_cast<std::uint32_t>(n_legal)));
}

}  // namespace traveller
