// VecBattles: the batched stepper (see vector.hpp). Mirrors traveller_env/vector.py's
// _PythonBackend method for method: begin/start_battle/play_opponents/score/give/publish.
#include "traveller/vector.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>

namespace traveller {

VecBattles::Spec VecBattles::make_spec(std::shared_ptr<const Grid> grid,
                                       std::vector<Combatant> initial, Names names,
                                       RulesOptions options, RewardSpec rewards) {
    Spec sp;
    sp.grid = std::move(grid);
    sp.initial = std::move(initial);
    sp.names = std::move(names);
    sp.options = options;
    sp.rewards = rewards;
    for (const Combatant& c : sp.initial) sp.side.push_back(c.side);
    return sp;
}

VecBattles::VecBattles(std::shared_ptr<const Grid> grid, std::vector<Combatant> initial,
                       Names names, RulesOptions options, RewardSpec rewards,
                       std::vector<int> opponents, int num_envs, bool move_view, bool aim_view,
                       bool attack_view, const std::optional<ObsLayout>& layout) {
    if (opponents.size() != initial.size()) {
        throw std::invalid_argument("VecBattles: one opponent per seat");
    }
    if (num_envs < 1) throw std::invalid_argument("VecBattles: num_envs must be >= 1");
    Spec sp = make_spec(std::move(grid), std::move(initial), std::move(names), options, rewards);
    const Battle first(sp.grid, sp.initial, sp.names, sp.options, 0, false);
    sp.observer = std::make_unique<Observer>(first, move_view, aim_view, attack_view, layout);
    sp.n_actions = first.num_actions();
    sp.opponents = std::move(opponents);
    for (int i = 0; i < sp.seats(); ++i) sp.column.push_back(i);
    num_columns_ = sp.seats();
    max_actions_ = sp.n_actions;
    specs_.push_back(std::move(sp));
    rows_.resize(static_cast<std::size_t>(num_envs));
    for (Row& row : rows_) enter(row, 0, 0);
}

VecBattles::VecBattles(std::vector<VecScenario> scenarios, const ObsLayout& layout,
                       int n_relative, std::vector<int> opponents, int num_envs, bool move_view,
                       bool aim_view, bool attack_view)
    : set_mode_(true), num_columns_(2 * layout.side_limit()), n_relative_(n_relative) {
    if (scenarios.empty()) throw std::invalid_argument("VecBattles: an empty scenario set");
    if (num_envs < 1) throw std::invalid_argument("VecBattles: num_envs must be >= 1");
    if (n_relative < 1) throw std::invalid_argument("VecBattles: n_relative must be >= 1");
    if (static_cast<int>(opponents.size()) != num_columns_) {
        throw std::invalid_argument("VecBattles: one opponent per layout column");
    }
    specs_.reserve(scenarios.size());
    for (std::size_t k = 0; k < scenarios.size(); ++k) {
        VecScenario& in = scenarios[k];
        Spec sp = make_spec(std::move(in.grid), std::move(in.initial), std::move(in.names),
                            in.options, in.rewards);
        const Battle first(sp.grid, sp.initial, sp.names, sp.options, 0, false);
        try {
            sp.observer = std::make_unique<Observer>(first, move_view, aim_view, attack_view,
                                                     layout);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("scenarios[" + std::to_string(k) + "]: " + e.what());
        }
        sp.n_actions = first.num_actions();
        const auto seats = static_cast<std::size_t>(sp.seats());
        if (in.columns.size() != seats ||
            in.relative.size() != seats * static_cast<std::size_t>(n_relative)) {
            throw std::invalid_argument("VecBattles: scenarios[" + std::to_string(k) +
                                        "]: one column and one table row per seat");
        }
        sp.column = std::move(in.columns);
        sp.relative = std::move(in.relative);
        for (std::int64_t x : sp.relative) {
            if (x < 0 || x > sp.n_actions) {
                throw std::invalid_argument(
                    "tables[" + std::to_string(k) + "] values must lie in [0, " +
                    std::to_string(sp.n_actions) + "] (" + std::to_string(sp.n_actions) +
                    ": an action the scenario lacks), got " + std::to_string(x));
            }
        }
        for (int c : sp.column) sp.opponents.push_back(opponents[static_cast<std::size_t>(c)]);
        max_actions_ = std::max(max_actions_, sp.n_actions);
        specs_.push_back(std::move(sp));
    }
    rows_.resize(static_cast<std::size_t>(num_envs));
    for (Row& row : rows_) enter(row, 0, 0);
}

void VecBattles::enter(Row& row, int k, std::uint64_t seed) {
    const Spec& sp = specs_[static_cast<std::size_t>(k)];
    row.spec = k;
    row.battle = std::make_unique<Battle>(sp.grid, sp.initial, sp.names, sp.options, seed, false);
    const auto n = static_cast<std::size_t>(sp.seats());
    row.acc.assign(n, 0.0);
    row.g.assign(n, 0.0);
    row.live.assign(n, 1);
    row.last_dealt.assign(n, 0);
    row.last_taken.assign(n, 0);
    row.policies.clear();
    for (std::size_t s = 0; s < n; ++s) {
        const int id = sp.opponents[s] < 0 ? 0 : sp.opponents[s];
        row.policies.push_back(CorePolicy::from_id(id));  // a scripted kind or a search
    }
    row.scratch_mask.resize(static_cast<std::size_t>(max_actions_), 0);
}

int VecBattles::absolute_action(int row, int action) const {
    const Row& the = rows_[static_cast<std::size_t>(row)];
    if (!set_mode_) return action;
    const Spec& sp = specs_[static_cast<std::size_t>(the.spec)];
    const int seat = the.battle->decider();
    if (seat < 0) return -1;
    const std::int64_t a = sp.relative[static_cast<std::size_t>(seat) *
                                           static_cast<std::size_t>(n_relative_) +
                                       static_cast<std::size_t>(action)];
    return a < sp.n_actions ? static_cast<int>(a) : -1;
}

std::size_t VecBattles::memory_bytes() const noexcept {
    std::size_t n = sizeof(*this) + rows_.capacity() * sizeof(Row) +
                    specs_.capacity() * sizeof(Spec);
    for (const Spec& sp : specs_) {
        n += sp.initial.capacity() * sizeof(Combatant) +
             (sp.side.capacity() + sp.column.capacity() + sp.opponents.capacity()) * sizeof(int) +
             sp.relative.capacity() * sizeof(std::int64_t);
    }
    for (const Row& row : rows_) {
        n += row.battle->memory_bytes() + (row.acc.capacity() + row.g.capacity()) * sizeof(double) +
             row.live.capacity() + row.scratch_mask.capacity() +
             (row.last_dealt.capacity() + row.last_taken.capacity()) * sizeof(int) +
             (row.policies.capacity() - row.policies.size()) * sizeof(CorePolicy);
        for (const CorePolicy& policy : row.policies) n += policy.memory_bytes();
    }
    return n;
}

// ------------------------------------------------------------------------ reset / step
bool VecBattles::reset(std::uint64_t seed, bool restart, const VecOut& out, int* stuck) {
    vector_seed_ = seed;
    for (int r = 0; r < num_envs(); ++r) {
        Row& row = rows_[static_cast<std::size_t>(r)];
        if (restart) row.next_episode = 0;
        if (!begin(r, row, out, skipped_)) {
            *stuck = r;
            return false;
        }
        publish(r, row, out);
    }
    return true;
}

StepRefusal VecBattles::step(const std::int64_t* actions, const std::uint8_t* forfeit,
                             const std::vector<std::string>* labels,
                             const std::vector<std::string>* reasons, const VecOut& out,
                             int threads, int* stuck) {
    // Every row's action is checked before any is applied, against the mask this stepper
    // published for the row (out.mask: the caller's private copy, never handed to users).
    const int n = num_envs();
    const int width = num_actions();
    for (int r = 0; r < n; ++r) {
        if (forfeit && forfeit[r]) continue;
        const std::int64_t a = actions[r];
        if (a < 0 || a >= width ||
            !out.mask[static_cast<std::size_t>(r) * static_cast<std::size_t>(width) +
                      static_cast<std::size_t>(a)]) {
            StepRefusal refusal;
            refusal.row = r;
            refusal.action = static_cast<int>(a);
            return refusal;
        }
    }
    const int workers = std::max(1, std::min(threads, n));
    auto step_rows = [&](int lo, int hi, std::int64_t& skipped) -> int {
        for (int r = lo; r < hi; ++r) {
            Row& row = rows_[static_cast<std::size_t>(r)];
            const bool f = forfeit && forfeit[r];
            if (!step_row(r, row, actions[r], f, f ? &(*labels)[static_cast<std::size_t>(r)] : nullptr,
                          f ? &(*reasons)[static_cast<std::size_t>(r)] : nullptr, out, skipped)) {
                return r;
            }
        }
        return -1;
    };
    auto refused = [](int r) {
        StepRefusal refusal;
        refusal.row = r;
        refusal.opponent = true;
        return refusal;
    };
    if (workers == 1) {
        const int r = step_rows(0, n, skipped_);
        if (r >= 0) {
            *stuck = r;
            return refused(r);
        }
        return StepRefusal{};
    }
    // Rows are independent: the workers (the same threads every call) take blocks of rows
    // as they come free, each with its own skip count, so a step does not wait for one
    // worker's fixed share when its thread was displaced or its rows plan longer. A row's
    // result does not depend on the thread that steps it.
    std::vector<std::int64_t> skipped(static_cast<std::size_t>(workers), 0);
    std::vector<int> failed(static_cast<std::size_t>(workers), -1);
    const int block = std::max(1, n / (workers * kBlocksPerWorker));
    std::atomic<int> next{0};
    const std::function<void(int)> job = [&](int w) {
        const auto k = static_cast<std::size_t>(w);
        for (;;) {
            const int lo = next.fetch_add(block, std::memory_order_relaxed);
            if (lo >= n) return;
            const int r = step_rows(lo, std::min(n, lo + block), skipped[k]);
            if (r >= 0) {  // this worker stops; the lowest stuck row is reported
                failed[k] = r;
                return;
            }
        }
    };
    workers_.run(workers, job);
    for (auto s : skipped) skipped_ += s;
    int first = -1;
    for (int r : failed) {
        if (r >= 0 && (first < 0 || r < first)) first = r;
    }
    if (first >= 0) {
        *stuck = first;
        return refused(first);
    }
    return StepRefusal{};
}

bool VecBattles::step_row(int r, Row& row, std::int64_t action, bool forfeit,
                          const std::string* label, const std::string* reason, const VecOut& out,
                          std::int64_t& skipped) {
    Battle& b = *row.battle;
    if (forfeit) {
        const int seat = b.decider();
        b.forfeit(*label, *reason);
        score(row, seat);
    } else {
        // (legal: it was in the published mask, so a set's action names one of this battle's)
        b.apply(absolute_action(r, static_cast<int>(action)));
        score(row, -1);
    }
    if (!play_opponents(row)) return false;
    float* rewards = out.rewards + static_cast<std::size_t>(r) * static_cast<std::size_t>(num_columns_);
    // The rewards not yet returned, each seat's into its column (the caller zeroed the rest).
    auto pay = [&row, rewards](const Spec& sp) {
        for (std::size_t i = 0; i < row.acc.size(); ++i) {
            rewards[static_cast<std::size_t>(sp.column[i])] = static_cast<float>(row.acc[i]);
        }
        std::fill(row.acc.begin(), row.acc.end(), 0.0);
        row.gained = false;
    };
    if (b.done()) {
        if (b.truncated()) {
            out.truncated[r] = true;
        } else {
            out.terminated[r] = true;
        }
        out.winner[r] = static_cast<std::int8_t>(b.winner());
        if (row.gained) {
            pay(specs_[static_cast<std::size_t>(row.spec)]);
        } else {
            std::fill(row.acc.begin(), row.acc.end(), 0.0);
        }
        if (!begin(r, row, out, skipped)) return false;
    } else if (row.gained) {
        pay(specs_[static_cast<std::size_t>(row.spec)]);
    }
    publish(r, row, out);
    return true;
}

// ------------------------------------------------------------------------ internals
void VecBattles::publish(int r, Row& row, const VecOut& out) const {
    const Battle& b = *row.battle;
    const Spec& sp = specs_[static_cast<std::size_t>(row.spec)];
    const int seat = b.decider();
    const Observer& ob = *sp.observer;
    ob.observe(b, seat, out.obs + static_cast<std::size_t>(r) * static_cast<std::size_t>(ob.size()));
    out.agent[r] = sp.column[static_cast<std::size_t>(seat)];
    const std::size_t k = static_cast<std::size_t>(n_relative_);
    std::uint8_t* rel = nullptr;
    std::uint8_t* mask = nullptr;
    if (set_mode_) {  // the absolute mask only in the row's scratch; the relative one published
        mask = row.scratch_mask.data();
        rel = out.mask + static_cast<std::size_t>(r) * k;
    } else {
        mask = out.mask + static_cast<std::size_t>(r) * static_cast<std::size_t>(sp.n_actions);
        if (out.relative_mask && n_relative_ > 0) rel = out.relative_mask + static_cast<std::size_t>(r) * k;
    }
    b.legal_mask(mask);
    if (rel != nullptr) {
        const std::int64_t* table = sp.relative.data() + static_cast<std::size_t>(seat) * k;
        for (std::size_t j = 0; j < k; ++j) {
            rel[j] = table[j] < sp.n_actions ? mask[table[j]] : std::uint8_t{0};
        }
    }
}

void VecBattles::set_relative(std::vector<std::int64_t> table, int n_relative) {
    if (set_mode_) {
        throw std::logic_error("VecBattles::set_relative: a scenario set publishes its relative "
                               "mask already");
    }
    specs_[0].relative = std::move(table);
    n_relative_ = n_relative;
}

// ------------------------------------------------------------------------ snapshot / restore
namespace {

constexpr char kRowsMagic[4] = {'T', 'V', 'R', 'S'};
constexpr std::uint8_t kRowsVersion = 2;

// Little-endian plain values appended to a byte string (the machines this builds for are
// little-endian; the format says so).
struct Writer {
    std::string bytes;
    template <class T>
    void put(const T& value) {
        bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
    }
    void put_bytes(const std::string& data) {
        put(static_cast<std::uint64_t>(data.size()));
        bytes.append(data);
    }
};

struct Reader {
    const std::string& bytes;
    std::size_t at = 0;
    void need(std::size_t n) const {
        if (bytes.size() - at < n) {
            throw std::invalid_argument("vector rows snapshot: cut short (read past its end)");
        }
    }
    template <class T>
    T get() {
        need(sizeof(T));
        T value;
        std::memcpy(&value, bytes.data() + at, sizeof(T));
        at += sizeof(T);
        return value;
    }
    std::string get_bytes() {
        const auto n = get<std::uint64_t>();
        need(static_cast<std::size_t>(n));
        std::string out = bytes.substr(at, static_cast<std::size_t>(n));
        at += static_cast<std::size_t>(n);
        return out;
    }
};

}  // namespace

std::string VecBattles::snapshot() const {
    Writer w;
    w.bytes.append(kRowsMagic, 4);
    w.put(kRowsVersion);
    w.put(vector_seed_);
    w.put(skipped_);
    w.put(static_cast<std::uint32_t>(rows_.size()));
    w.put(static_cast<std::uint32_t>(set_mode_ ? 0 : specs_[0].seats()));
    // the set section (version 2): each row's scenario and its seat count
    w.put(static_cast<std::uint8_t>(set_mode_));
    w.put(static_cast<std::uint32_t>(specs_.size()));
    for (const Row& row : rows_) {
        w.put(static_cast<std::uint32_t>(row.spec));
        w.put(static_cast<std::uint32_t>(row.acc.size()));
    }
    for (const Row& row : rows_) {
        w.put_bytes(row.battle->snapshot());
        w.put(row.episode);
        w.put(row.next_episode);
        w.put(row.seed);
        for (double x : row.acc) w.put(x);
        w.put(static_cast<std::uint8_t>(row.gained));
        for (std::uint8_t x : row.live) w.put(x);
        for (int x : row.last_dealt) w.put(static_cast<std::int32_t>(x));
        for (int x : row.last_taken) w.put(static_cast<std::int32_t>(x));
        w.put(static_cast<std::int32_t>(row.last_dropouts));
        w.put(static_cast<std::int32_t>(row.last_round));
        for (const CorePolicy& policy : row.policies) {
            w.put(policy.generator().state);
            w.put(policy.generator().inc);
            const TacticianPlan& plan = policy.plan();
            w.put(static_cast<std::uint8_t>(plan.active));
            w.put(static_cast<std::int32_t>(plan.n));
            for (int a : plan.actions) w.put(static_cast<std::int32_t>(a));
            w.put(static_cast<std::uint32_t>(plan.signature.size()));
            for (std::int32_t x : plan.signature) w.put(x);
        }
    }
    return w.bytes;
}

void VecBattles::restore(const std::string& data) {
    struct Saved {
        int spec = 0;
        std::uint32_t seats = 0;
        std::string battle;
        std::int64_t episode = 0, next_episode = 0;
        std::uint64_t seed = 0;
        std::vector<double> acc;
        bool gained = false;
        std::vector<std::uint8_t> live;
        std::vector<int> last_dealt, last_taken;
        int last_dropouts = 0, last_round = 0;
        std::vector<std::pair<rng::Pcg32, TacticianPlan>> policies;
    };
    Reader r{data};
    r.need(5);
    if (data.compare(0, 4, kRowsMagic, 4) != 0) {
        throw std::invalid_argument("vector rows snapshot: not one (its magic is not TVRS)");
    }
    r.at = 4;
    const auto version = r.get<std::uint8_t>();
    if (version != 1 && version != kRowsVersion) {
        throw std::invalid_argument("vector rows snapshot: format version " +
                                    std::to_string(version) + "; this core reads versions 1 and " +
                                    std::to_string(kRowsVersion));
    }
    const auto seed = r.get<std::uint64_t>();
    const auto skipped = r.get<std::int64_t>();
    const auto n_rows = r.get<std::uint32_t>();
    const auto n_seats = r.get<std::uint32_t>();
    const auto mine = static_cast<std::uint32_t>(set_mode_ ? 0 : specs_[0].seats());
    std::vector<Saved> saved;
    if (version == 1) {  // one scenario's rows (before scenario sets)
        if (set_mode_) {
            throw std::invalid_argument("vector rows snapshot: format version 1 holds the rows "
                                        "of one scenario; this stepper plays a scenario set");
        }
    } else {
        const bool set = r.get<std::uint8_t>() != 0;
        const auto n_scenarios = r.get<std::uint32_t>();
        if (set != set_mode_) {
            throw std::invalid_argument(
                std::string("vector rows snapshot: taken over ") +
                (set ? "a scenario set of " + std::to_string(n_scenarios) + " scenarios"
                     : std::string("one scenario")) +
                "; this stepper plays " +
                (set_mode_ ? "a scenario set of " + std::to_string(specs_.size()) + " scenarios"
                           : std::string("one scenario")));
        }
        if (n_scenarios != specs_.size()) {
            throw std::invalid_argument(
                "vector rows snapshot: taken over a set of " + std::to_string(n_scenarios) +
                " scenarios; this stepper's set has " + std::to_string(specs_.size()));
        }
    }
    if (n_rows != rows_.size() || n_seats != mine) {
        throw std::invalid_argument(
            "vector rows snapshot: taken with " + std::to_string(n_rows) + " rows of " +
            std::to_string(n_seats) + " seats; this stepper has " + std::to_string(rows_.size()) +
            " rows of " + std::to_string(mine));
    }
    saved.resize(n_rows);
    for (std::size_t k = 0; k < saved.size(); ++k) {
        Saved& s = saved[k];
        if (version == 1) {
            s.seats = n_seats;
            continue;
        }
        const auto spec = r.get<std::uint32_t>();
        s.seats = r.get<std::uint32_t>();
        if (spec >= specs_.size()) {
            throw std::invalid_argument("vector rows snapshot: row " + std::to_string(k) +
                                        " plays scenario " + std::to_string(spec) +
                                        " of a set of " + std::to_string(specs_.size()));
        }
        s.spec = static_cast<int>(spec);
        const auto seats = static_cast<std::uint32_t>(specs_[spec].seats());
        if (s.seats != seats) {
            throw std::invalid_argument(
                "vector rows snapshot: row " + std::to_string(k) + " has " +
                std::to_string(s.seats) + " seats; scenario " + std::to_string(spec) +
                " of this stepper has " + std::to_string(seats));
        }
    }
    for (Saved& s : saved) {
        const std::uint32_t n = s.seats;
        s.battle = r.get_bytes();
        s.episode = r.get<std::int64_t>();
        s.next_episode = r.get<std::int64_t>();
        s.seed = r.get<std::uint64_t>();
        for (std::uint32_t i = 0; i < n; ++i) s.acc.push_back(r.get<double>());
        s.gained = r.get<std::uint8_t>() != 0;
        for (std::uint32_t i = 0; i < n; ++i) s.live.push_back(r.get<std::uint8_t>());
        for (std::uint32_t i = 0; i < n; ++i) s.last_dealt.push_back(r.get<std::int32_t>());
        for (std::uint32_t i = 0; i < n; ++i) s.last_taken.push_back(r.get<std::int32_t>());
        s.last_dropouts = r.get<std::int32_t>();
        s.last_round = r.get<std::int32_t>();
        for (std::uint32_t i = 0; i < n; ++i) {
            rng::Pcg32 g;
            g.state = r.get<std::uint64_t>();
            g.inc = r.get<std::uint64_t>();
            TacticianPlan plan;
            plan.active = r.get<std::uint8_t>() != 0;
            plan.n = r.get<std::int32_t>();
            for (int& a : plan.actions) a = r.get<std::int32_t>();
            if (plan.n < 0 || plan.n > TacticianPlan::kMax) {
                throw std::invalid_argument("vector rows snapshot: a tactician plan of " +
                                            std::to_string(plan.n) + " actions");
            }
            const auto k = r.get<std::uint32_t>();
            r.need(static_cast<std::size_t>(k) * sizeof(std::int32_t));
            for (std::uint32_t j = 0; j < k; ++j) plan.signature.push_back(r.get<std::int32_t>());
            s.policies.emplace_back(g, std::move(plan));
        }
    }
    if (r.at != data.size()) {
        throw std::invalid_argument("vector rows snapshot: " + std::to_string(data.size() - r.at) +
                                    " bytes after its end");
    }
    // every battle checked on a scratch battle of its scenario first, so a bad one changes no
    // row
    std::vector<std::unique_ptr<Battle>> scratch(specs_.size());
    for (const Saved& s : saved) {
        auto& b = scratch[static_cast<std::size_t>(s.spec)];
        if (!b) {
            const Spec& sp = specs_[static_cast<std::size_t>(s.spec)];
            b = std::make_unique<Battle>(sp.grid, sp.initial, sp.names, sp.options, 0, false);
        }
        b->restore(s.battle);
    }
    for (std::size_t k = 0; k < rows_.size(); ++k) {
        Row& row = rows_[k];
        Saved& s = saved[k];
        if (row.spec != s.spec) enter(row, s.spec, s.seed);  // its scenario's battle and seats
        row.battle->restore(s.battle);
        row.episode = s.episode;
        row.next_episode = s.next_episode;
        row.seed = s.seed;
        row.acc = std::move(s.acc);
        row.gained = s.gained;
        row.live = std::move(s.live);
        row.last_dealt = std::move(s.last_dealt);
        row.last_taken = std::move(s.last_taken);
        row.last_dropouts = s.last_dropouts;
        row.last_round = s.last_round;
        for (std::size_t i = 0; i < row.policies.size(); ++i) {
            row.policies[i].set_state(s.policies[i].first, std::move(s.policies[i].second));
        }
    }
    vector_seed_ = seed;
    skipped_ = skipped;
}

// ------------------------------------------------------------------------ RowWorkers
RowWorkers::~RowWorkers() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

void RowWorkers::run(int workers, const std::function<void(int)>& job) {
    if (workers <= 1) {
        job(0);
        return;
    }
    while (static_cast<int>(threads_.size()) < workers - 1) {
        const int index = static_cast<int>(threads_.size()) + 1;
        const std::uint64_t seen = round_;  // only this (the calling) thread changes round_
        threads_.emplace_back([this, index, seen] { loop(index, seen); });
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &job;
        error_ = nullptr;
        active_ = workers;
        pending_ = workers - 1;
        ++round_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
        job(0);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
}

void RowWorkers::loop(int index, std::uint64_t seen) {
    for (;;) {
        const std::function<void(int)>* job = nullptr;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || round_ != seen; });
            if (stop_) return;
            seen = round_;
            if (index < active_) job = job_;
        }
        if (job == nullptr) continue;
        std::exception_ptr failure;
        try {
            (*job)(index);
        } catch (...) {
            failure = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure && !error_) error_ = failure;
        if (--pending_ == 0) done_.notify_one();
    }
}

bool VecBattles::begin(int r, Row& row, const VecOut& out, std::int64_t& skipped) {
    for (int k = 0; k <= kMaxSkipped; ++k) {
        start_battle(r, row);
        if (!play_opponents(row)) return false;
        if (!row.battle->done()) {
            out.episode[r] = row.episode;
            out.battle_seed[r] = row.seed;
            return true;
        }
        skipped += 1;
    }
    return false;
}

void VecBattles::start_battle(int r, Row& row) {
    row.episode = row.next_episode;
    row.next_episode += 1;
    row.seed = rng::battle_seed(vector_seed_, static_cast<std::uint64_t>(r),
                                static_cast<std::uint64_t>(row.episode));
    // scenario_set.scenario_index: 0 for a set of one
    const std::uint64_t count = specs_.size();
    const int k = count == 1 ? 0
                             : static_cast<int>(rng::derive_seed(row.seed, kScenarioStream) % count);
    const Spec& sp = specs_[static_cast<std::size_t>(k)];
    if (k == row.spec) {
        row.battle->restart(sp.initial, row.seed);
    } else {
        enter(row, k, row.seed);  // another scenario: its own battle, bookkeeping and policies
    }
    std::fill(row.live.begin(), row.live.end(), 1);
    const Summary& s = row.battle->summary();
    std::copy(s.damage_dealt.begin(), s.damage_dealt.end(), row.last_dealt.begin());
    std::copy(s.damage_taken.begin(), s.damage_taken.end(), row.last_taken.begin());
    row.last_dropouts = s.dropouts;
    row.last_round = row.battle->round();
    std::fill(row.acc.begin(), row.acc.end(), 0.0);
    row.gained = false;
    for (std::size_t i = 0; i < sp.opponents.size(); ++i) {
        if (sp.opponents[i] >= 0) row.policies[i].reset(rng::derive_seed(row.seed, 1 + i));
    }
}

bool VecBattles::play_opponents(Row& row) {
    Battle& b = *row.battle;
    const Spec& sp = specs_[static_cast<std::size_t>(row.spec)];
    while (!b.done()) {
        const int seat = b.decider();
        if (sp.opponents[static_cast<std::size_t>(seat)] < 0) return true;
        std::uint8_t* mask = row.scratch_mask.data();
        b.legal_mask(mask);
        const int a = row.policies[static_cast<std::size_t>(seat)].act(b, seat, mask);
        if (a < 0 || a >= sp.n_actions || !mask[a]) return false;  // never, by the policies' tests
        b.apply(a);
        score(row, -1);
    }
    return true;
}

// TravellerEnv._score / _PythonBackend._score, term for term.
void VecBattles::score(Row& row, int penalized) {
    const Battle& b = *row.battle;
    const Summary& s = b.summary();
    const Spec& sp = specs_[static_cast<std::size_t>(row.spec)];
    const RewardSpec& rw = sp.rewards;
    const std::vector<int>& side = sp.side;
    const std::size_t n = side.size();
    std::vector<double>& g = row.g;
    bool any = false, dones = false;
    auto need = [&] {
        if (!any) {
            std::fill(g.begin(), g.end(), 0.0);
            any = true;
        }
    };
    if (rw.damage_dealt != 0.0 || rw.damage_taken != 0.0) {
        for (std::size_t i = 0; i < n; ++i) {
            const int d = s.damage_dealt[i] - row.last_dealt[i];
            if (d) {
                need();
                give(row, static_cast<int>(i), rw.damage_dealt * d);
            }
            const int t = s.damage_taken[i] - row.last_taken[i];
            if (t) {
                need();
                give(row, static_cast<int>(i), rw.damage_taken * t);
            }
        }
    }
    if (rw.per_round != 0.0 && b.round() > row.last_round) {
        need();
        for (std::size_t i = 0; i < n; ++i) {
            if (row.live[i] && !b.combatant(static_cast<int>(i)).out) {
                g[i] += rw.per_round * (b.round() - row.last_round);
            }
        }
    }
    if (s.dropouts != row.last_dropouts) dones = true;
    if (b.done()) {
        dones = true;
        need();
        const int winner = b.winner();
        for (std::size_t i = 0; i < n; ++i) {
            if (!row.live[i]) continue;
            if (winner < 0) {
                g[i] += rw.draw;
            } else if (side[i] == winner) {
                g[i] += rw.win;
            } else {
                g[i] += rw.loss;
            }
        }
    }
    row.last_round = b.round();
    if (any || dones) {
        std::copy(s.damage_dealt.begin(), s.damage_dealt.end(), row.last_dealt.begin());
        std::copy(s.damage_taken.begin(), s.damage_taken.end(), row.last_taken.begin());
        row.last_dropouts = s.dropouts;
    }
    if (penalized >= 0) {
        need();
        g[static_cast<std::size_t>(penalized)] += -1.0;
    }
    if (any) {
        for (std::size_t i = 0; i < n; ++i) row.acc[i] += g[i];
        row.gained = true;
    }
    if (dones) {
        for (std::size_t i = 0; i < n; ++i) {
            if (row.live[i] && (b.done() || b.combatant(static_cast<int>(i)).out)) row.live[i] = 0;
        }
    }
}

void VecBattles::give(Row& row, int i, double amount) {
    if (amount == 0.0) return;
    const Spec& sp = specs_[static_cast<std::size_t>(row.spec)];
    const RewardSpec& rw = sp.rewards;
    const std::vector<int>& side = sp.side;
    std::vector<double>& g = row.g;
    if (rw.shared) {
        const int mine = side[static_cast<std::size_t>(i)];
        for (std::size_t j = 0; j < g.size(); ++j) {
            if (row.live[j] && side[j] == mine) g[j] += amount;
        }
    } else if (row.live[static_cast<std::size_t>(i)]) {
        g[static_cast<std::size_t>(i)] += amount;
    }
}

}  // namespace traveller
