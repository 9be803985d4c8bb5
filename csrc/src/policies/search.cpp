// The look-ahead search NPC, `search` (docs/search.md): a planner on top of a scripted base.
//
// At a decision the candidates are the base's choice (tactician by default), the first actions
// of the pool's NPCs (marksman, cover, rush, leader) where they differ, and, at a decision of at
// most three legal actions (haste, reactions), every legal action. When all of them agree, the
// base's choice is played at no cost. Otherwise each candidate is simulated `budget` times: a
// copy of the battle with fresh dice (Battle::simulation, seeded from this NPC's own generator:
// the real battle's future rolls never reach the search), the candidate applied, the rest of the
// deciding seat's turn played by the NPC that proposed it, every other decision by the model
// (a scripted NPC: never the real opponent), up to `horizon` rounds past the decision's round,
// then scored by the value below. The k-th simulation of every candidate uses the same dice
// seed (common random numbers), so the candidates are compared by paired differences with the
// base: a candidate replaces the base's choice only when its mean advantage exceeds z standard
// errors of that paired mean (with one simulation: any advantage). The dial is the budget:
// few simulations switch on noise (weak), many switch only on real gaps (strong).
//
// Value (for the deciding side): per side, the mean over its combatants of 0.5 + 0.5 x the
// share of END + STR + DEX kept since the decision for those still standing (0 for those down
// or out); mine minus theirs, plus 1 for a win (-1 a loss) when the battle ended.
//
// Names: "search", then "-<budget>" and "-<key>=<value>" parts (SearchParams in
// include/traveller/policies.hpp), parsed and checked here with an error naming the part.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "traveller/checks.hpp"
#include "traveller/policies.hpp"
#include "traveller/rng.hpp"

namespace traveller {

namespace {

// ---------------------------------------------------------------------------- names
constexpr int kMaxBudget = 100000;
constexpr int kMaxHorizon = 100;
constexpr int kAllLegalUpTo = 3;    // a decision with this few legal actions tries them all
constexpr int kMaxSimSteps = 5000;  // a safety stop for one simulation (battles end sooner)
constexpr PolicyKind kDefaultPool[] = {PolicyKind::marksman, PolicyKind::cover, PolicyKind::rush,
                                       PolicyKind::leader};

std::mutex g_mutex;
std::deque<SearchParams> g_configs;  // interned by name; a deque keeps their addresses

[[noreturn]] void fail(const std::string& name, const std::string& msg) {
    throw std::invalid_argument("policy '" + name + "': " + msg);
}

int parse_int(const std::string& name, const std::string& key, const std::string& v, int lo,
              int hi) {
    const bool digits = !v.empty() && v.size() <= 9 &&
                        std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long x = digits ? std::strtol(v.c_str(), nullptr, 10) : -1;
    if (!digits || x < lo || x > hi) {
        fail(name, key + " must be an integer from " + std::to_string(lo) + " to " +
                       std::to_string(hi) + ", got '" + v + "'");
    }
    return static_cast<int>(x);
}

double parse_number(const std::string& name, const std::string& key, const std::string& v,
                    double lo, double hi) {
    char* end = nullptr;
    const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < lo || x > hi) {
        fail(name, key + " must be a number from " + std::to_string(lo).substr(0, 3) + " to " +
                       std::to_string(static_cast<int>(hi)) + ", got '" + v + "'");
    }
    return x;
}

PolicyKind parse_kind(const std::string& name, const std::string& key, const std::string& v) {
    PolicyKind k;
    if (!core_policy_kind(v, &k)) {
        fail(name, key + " must name a scripted in-core NPC (" + kCorePolicyNames + "), got '" +
                       v + "'");
    }
    return k;
}

SearchParams parse_search(const std::string& name) {
    SearchParams p;
    p.name = name;
    for (const PolicyKind k : kDefaultPool) p.pool.push_back(k);
    if (name == "search") return p;
    std::vector<std::string> seen;
    std::size_t at = 7;  // past "search-"
    while (true) {
        const std::size_t dash = name.find('-', at);
        const std::string part = name.substr(at, dash == std::string::npos ? std::string::npos
                                                                             : dash - at);
        if (part.empty()) fail(name, "an empty part between '-'; expected search-<budget>-<key>=<value>...");
        const std::size_t eq = part.find('=');
        std::string key = eq == std::string::npos ? "budget" : part.substr(0, eq);
        const std::string value = eq == std::string::npos ? part : part.substr(eq + 1);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
            fail(name, key + " is given twice");
        }
        seen.push_back(key);
        if (key == "budget") {
            p.budget = parse_int(name, key, value, 1, kMaxBudget);
        } else if (key == "base") {
            p.base = parse_kind(name, key, value);
        } else if (key == "model") {
            p.model = parse_kind(name, key, value);
        } else if (key == "horizon") {
            p.horizon = parse_int(name, key, value, 0, kMaxHorizon);
        } else if (key == "z") {
            p.z = parse_number(name, key, value, 0.0, 10.0);
        } else if (key == "ms") {
            p.ms = parse_number(name, key, value, 0.0, 60000.0);
        } else if (key == "pool") {
            p.pool.clear();
            if (value != "none") {
                std::size_t from = 0;
                while (true) {
                    const std::size_t plus = value.find('+', from);
                    p.pool.push_back(parse_kind(
                        name, key, value.substr(from, plus == std::string::npos ? std::string::npos
                                                                                 : plus - from)));
                    if (plus == std::string::npos) break;
                    from = plus + 1;
                }
            }
        } else {
            fail(name, "unknown parameter '" + key + "'; the parameters: " + kSearchKeys +
                           " (e.g. search-64-model=marksman)");
        }
        if (dash == std::string::npos) break;
        at = dash + 1;
    }
    return p;
}

// ---------------------------------------------------------------------------- simulations
struct Candidate {
    int action = -1;
    PolicyKind cont = PolicyKind::tactician;  // plays the rest of the seat's turn
    std::vector<double> values;
};

// The per-thread scratch of a decision (the vector's threads each search their own rows).
struct Scratch {
    std::vector<std::uint8_t> mask;
    std::vector<CorePolicy> models;
    std::vector<int> hp0;
    std::vector<Candidate> cands;
};

Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

int hit_points(const Combatant& c) { return c.chars[kSTR] + c.chars[kDEX] + c.chars[kEND]; }

// The value of b for `side` (see the file comment), hp0 the combatants' END + STR + DEX at the
// decision.
double value(const Battle& b, int side, const std::vector<int>& hp0) {
    double sum[2] = {0.0, 0.0};
    int count[2] = {0, 0};
    for (int i = 0; i < b.num_combatants(); ++i) {
        const Combatant& c = b.combatant(i);
        const int s = c.side == side ? 0 : 1;
        ++count[s];
        if (c.out || c.down) continue;
        const int h0 = hp0[static_cast<std::size_t>(i)];
        const double kept = h0 > 0 ? static_cast<double>(hit_points(c)) / h0 : 0.0;
        sum[s] += 0.5 + 0.5 * std::min(1.0, std::max(0.0, kept));
    }
    double v = (count[0] ? sum[0] / count[0] : 0.0) - (count[1] ? sum[1] / count[1] : 0.0);
    if (b.done() && b.winner() >= 0) v += b.winner() == side ? 1.0 : -1.0;
    return v;
}

// One simulation of candidate c from `root` (an event-free copy of the real battle) with dice
// seeded `seed`; returns its value for the deciding side.
double simulate(const Battle& root, std::uint64_t seed, int seat, const Candidate& c,
                const SearchParams& p, Scratch& s) {
    Battle sim = root.simulation(seed, false);
    const int round0 = root.round();
    const bool own_turn = root.phase() == Phase::turn;
    const int side = root.combatant(seat).side;
    sim.apply(c.action);
    CorePolicy own(c.cont);
    own.reset(rng::derive_seed(seed, 0));
    for (std::size_t i = 0; i < s.models.size(); ++i) {
        s.models[i].reset(rng::derive_seed(seed, 1 + i));
    }
    const int stop = p.horizon > 0 ? round0 + p.horizon : INT_MAX;
    for (int step = 0; step < kMaxSimSteps && !sim.done() && sim.round() < stop; ++step) {
        const int d = sim.decider();
        sim.legal_mask(s.mask.data());
        const bool mine = own_turn && d == seat && sim.phase() == Phase::turn &&
                          sim.round() == round0;
        const int a = mine ? own.act(sim, d, s.mask.data())
                           : s.models[static_cast<std::size_t>(d)].act(sim, d, s.mask.data());
        if (a < 0 || !s.mask[static_cast<std::size_t>(a)]) break;  // never: the NPCs are legal
        sim.apply(a);
    }
    return value(sim, side, s.hp0);
}

}  // namespace

// ============================================================================ names
bool core_policy_id(const std::string& name, int* out, std::string* error) {
    PolicyKind k;
    if (core_policy_kind(name, &k)) {
        *out = static_cast<int>(k);
        return true;
    }
    if (name != "search" && name.rfind("search-", 0) != 0) {
        if (error != nullptr) error->clear();
        return false;
    }
    SearchParams p;
    try {
        p = parse_search(name);
    } catch (const std::invalid_argument& e) {
        if (error != nullptr) *error = e.what();
        return false;
    }
    const std::lock_guard<std::mutex> lock(g_mutex);
    for (std::size_t i = 0; i < g_configs.size(); ++i) {
        if (g_configs[i].name == name) {
            *out = kNumPolicyKinds + static_cast<int>(i);
            return true;
        }
    }
    g_configs.push_back(std::move(p));
    *out = kNumPolicyKinds + static_cast<int>(g_configs.size()) - 1;
    return true;
}

const SearchParams* search_params(int id) {
    if (id < kNumPolicyKinds) return nullptr;
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto i = static_cast<std::size_t>(id - kNumPolicyKinds);
    if (i >= g_configs.size()) throw std::invalid_argument("search_params: no such id");
    return &g_configs[i];
}

// ============================================================================ the decision
int CorePolicy::search_act(const Battle& b, int seat, const std::uint8_t* mask) {
    const SearchParams& p = *search_;
    const int base = act_as(p.base, b, seat, mask);
    if (base < 0) return base;
    Scratch& s = scratch();
    std::vector<Candidate>& cands = s.cands;
    cands.clear();
    const auto add = [&](int action, PolicyKind cont) {
        if (action < 0 || !mask[action]) return;
        for (const Candidate& c : cands) {
            if (c.action == action) return;
        }
        Candidate c;
        c.action = action;
        c.cont = cont;
        cands.push_back(std::move(c));
    };
    add(base, p.base);
    for (const PolicyKind k : p.pool) {
        CorePolicy q(k);  // a fresh NPC (seed 0): its first action at this state
        add(q.act(b, seat, mask), k);
    }
    int n_legal = 0;
    for (int i = 0; i < b.num_actions(); ++i) n_legal += mask[i] != 0;
    if (n_legal <= kAllLegalUpTo) {
        for (int i = 0; i < b.num_actions(); ++i) add(mask[i] ? i : -1, p.model);
    }
    if (cands.size() < 2) return base;

    // The decision's own key, from this NPC's generator (never from the battle's dice).
    const std::uint64_t key = (static_cast<std::uint64_t>(rng_.next_u32()) << 32) | rng_.next_u32();
    const Battle root = b.simulation(rng::derive_seed(key, ~std::uint64_t{0}), false);
    s.mask.assign(static_cast<std::size_t>(b.num_actions()), 0);
    s.hp0.resize(static_cast<std::size_t>(b.num_combatants()));
    for (int i = 0; i < b.num_combatants(); ++i) {
        s.hp0[static_cast<std::size_t>(i)] = hit_points(b.combatant(i));
    }
    if (s.models.size() != static_cast<std::size_t>(b.num_combatants()) ||
        (!s.models.empty() && s.models[0].kind() != p.model)) {
        s.models.assign(static_cast<std::size_t>(b.num_combatants()), CorePolicy(p.model));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < p.budget; ++k) {
        const std::uint64_t seed = rng::derive_seed(key, static_cast<std::uint64_t>(k));
        for (Candidate& c : cands) c.values.push_back(simulate(root, seed, seat, c, p, s));
        if (p.ms > 0.0) {
            const std::chrono::duration<double, std::milli> spent =
                std::chrono::steady_clock::now() - t0;
            if (spent.count() >= p.ms) break;
        }
    }

    // The base's choice unless a candidate's paired advantage clears z standard errors.
    const std::vector<double>& v0 = cands[0].values;
    const auto n = static_cast<double>(v0.size());
    int best = base;
    double best_score = 0.0;
    for (std::size_t j = 1; j < cands.size(); ++j) {
        double mean = 0.0;
        for (std::size_t k = 0; k < v0.size(); ++k) mean += cands[j].values[k] - v0[k];
        mean /= n;
        double var = 0.0;
        for (std::size_t k = 0; k < v0.size(); ++k) {
            const double d = cands[j].values[k] - v0[k] - mean;
            var += d * d;
        }
        const double se = v0.size() > 1 ? std::sqrt(var / (n - 1.0) / n) : 0.0;
        const double score = mean - p.z * se;
        if (mean > 1e-12 && score > 1e-12 && score > best_score) {
            best = cands[j].action;
            best_score = score;
        }
    }
    if (best != base) forget();  // the base's plan assumed its own action
    return best;
}

}  // namespace traveller
