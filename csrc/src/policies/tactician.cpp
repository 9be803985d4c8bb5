// The in-core tactician NPC: traveller_agents/tactician.py TacticianPolicy with its default parameters,
// function for function: its haste rule, and its plan search (_Planner) over the rest of its
// turn, memoised in per-thread tables. Leadership is scored as leader.cpp does.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "policies/common.hpp"
#include "policies/npcs.hpp"
#include "traveller/attack.hpp"
#include "traveller/checks.hpp"
#include "traveller/movement.hpp"

namespace traveller::npc {

namespace {

// TacticianPolicy's defaults.
constexpr double kFuture = 0.9, kDefence = 2.0, kKillHorizon = 2.0, kApproach = 0.05;
// (use_leadership=True; reaction_cost=1.0, so its reactions are best_reaction's defaults.)

// (a0, a1) < (b0, b1) for tuples of ints.
bool pair_less(int a0, int a1, int b0, int b1) { return a0 < b0 || (a0 == b0 && a1 < b1); }

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

// The tactician's scratch, kept per thread (as common.hpp's Workspace) and shared by every
// tactician on the thread: per-seat values, the leadership receivers, the signature of the
// battle, and the plan search's memo tables (emptied at each search).
struct PlannerTables {
    std::vector<double> threat, others;
    std::vector<int> receivers;
    std::vector<std::int32_t> signature;
    KeyCache<int> base;         // _Planner._base
    KeyCache<double> incoming;  // _Planner._incoming
    KeyCache<double> end;       // _Planner._end
    KeyCache<PlanValue> memo;   // _Planner.memo
};

PlannerTables& planner_tables() {
    thread_local PlannerTables tables;
    return tables;
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
    Planner(const Ctx& ctx, PlannerTables& tables)
        : ctx_(ctx),
          tables_(tables),
          me_(ctx.m),
          melee_(ctx.m.weapon.melee),
          needs_draw_(ctx.m.weapon.needs_draw),
          hypothetical_(ctx.m) {
        tables.base.clear();
        tables.incoming.clear();
        tables.end.clear();
        tables.memo.clear();
        const auto n = static_cast<std::size_t>(ctx.b.num_combatants());
        tables.threat.assign(n, 0.0);
        tables.others.assign(n, 0.0);
        for (int e : ctx.enemies()) tables.threat[static_cast<std::size_t>(e)] = threat(ctx, e);
        // What the enemies' attacks on the rest of the side are worth (for target shares).
        for (int e : ctx.enemies()) {
            double total = 0.0;
            for (int a : ctx.allies()) {
                const Combatant& al = ctx.c(a);
                const int dm = enemy_dm(e, a, al.x, al.y, al.stance);
                if (dm != kNoShot) total += attack_value(ctx, e, a, dm, 0.0);
            }
            tables.others[static_cast<std::size_t>(e)] = total;
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
            leader_receivers(ctx, tables.receivers);
            if (!tables.receivers.empty()) {
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
    PlannerTables& tables_;
    const Combatant& me_;
    bool melee_, needs_draw_;
    double self_value_ = 0.0;
    bool has_lead_ = false;
    double lead_value_ = 0.0;
    bool memo_ok_ = true;
    Combatant hypothetical_;  // base_dm's attacker: itself elsewhere

    double threat_of(int t) const { return tables_.threat[static_cast<std::size_t>(t)]; }
    double others_of(int e) const { return tables_.others[static_cast<std::size_t>(e)]; }

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
            if (const int* hit = tables_.base.find(key)) return *hit;
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
        if (cacheable) tables_.base.put(key, dm);
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
            if (const double* hit = tables_.incoming.find(key)) return *hit;
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
        if (memo_ok_) tables_.incoming.put(key, total);
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
            if (const double* hit = tables_.end.find(key)) return *hit;
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
        if (memo_ok_) tables_.end.put(key, value);
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
            if (const PlanValue* hit = tables_.memo.find(key)) return *hit;
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
        if (memo) tables_.memo.put(key, best);
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

}  // namespace

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

// TacticianPolicy.turn: the first action of the best plan, or the next one of the current plan
// when the battle has not changed under it (_signature) and that action is legal.
Prefs tactician_turn(const Ctx& ctx, TacticianPlan& plan) {
    const int end = ctx.index(Kind::end_turn);
    PlannerTables& tables = planner_tables();
    std::vector<std::int32_t>& sig = tables.signature;
    tactician_signature(ctx, sig);
    if (plan.active && plan.signature == sig && plan.n > 0) {
        const int nxt = plan.actions[0];
        if (ctx.legal(nxt)) {
            for (int k = 1; k < plan.n; ++k) plan.actions[k - 1] = plan.actions[k];
            plan.n -= 1;
            return {nxt, end};
        }
    }
    const PlanValue best = Planner(ctx, tables).best_plan();
    plan.active = true;
    plan.signature = sig;
    plan.n = best.n - 1;
    for (int k = 1; k < best.n; ++k) plan.actions[k - 1] = best.actions[k];
    return {best.actions[0], end};
}

}  // namespace traveller::npc
