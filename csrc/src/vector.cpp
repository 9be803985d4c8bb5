// VecBattles: the batched stepper (see vector.hpp). Mirrors traveller_env/vector.py's
// _PythonBackend method for method: begin/start_battle/play_opponents/score/give/publish.
#include "traveller/vector.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>

namespace traveller {

VecBattles::VecBattles(std::shared_ptr<const Grid> grid, std::vector<Combatant> initial,
                       Names names, RulesOptions options, RewardSpec rewards,
                       std::vector<int> opponents, int num_envs, bool move_view, bool aim_view,
                       bool attack_view)
    : grid_(std::move(grid)),
      initial_(std::move(initial)),
      rewards_(rewards),
      opponents_(std::move(opponents)) {
    const std::size_t n = initial_.size();
    if (opponents_.size() != n) throw std::invalid_argument("VecBattles: one opponent per seat");
    if (num_envs < 1) throw std::invalid_argument("VecBattles: num_envs must be >= 1");
    side_.resize(n);
    for (std::size_t i = 0; i < n; ++i) side_[i] = initial_[i].side;
    rows_.resize(static_cast<std::size_t>(num_envs));
    for (Row& row : rows_) {
        row.battle = std::make_unique<Battle>(grid_, initial_, names, options, 0, false);
        row.acc.assign(n, 0.0);
        row.g.assign(n, 0.0);
        row.live.assign(n, 1);
        row.last_dealt.assign(n, 0);
        row.last_taken.assign(n, 0);
        for (std::size_t s = 0; s < n; ++s) {
            const int k = opponents_[s] < 0 ? 0 : opponents_[s];
            row.policies.emplace_back(static_cast<PolicyKind>(k));
        }
    }
    n_actions_ = rows_[0].battle->num_actions();
    for (Row& row : rows_) row.scratch_mask.assign(static_cast<std::size_t>(n_actions_), 0);
    observer_ = std::make_unique<Observer>(*rows_[0].battle, move_view, aim_view, attack_view);
}

std::size_t VecBattles::memory_bytes() const noexcept {
    std::size_t n = sizeof(*this) + rows_.capacity() * sizeof(Row) +
                    initial_.capacity() * sizeof(Combatant);
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
    for (int r = 0; r < n; ++r) {
        if (forfeit && forfeit[r]) continue;
        const std::int64_t a = actions[r];
        if (a < 0 || a >= n_actions_ ||
            !out.mask[static_cast<std::size_t>(r) * static_cast<std::size_t>(n_actions_) +
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
    // Rows are independent: contiguous chunks, one per worker (the same workers every call),
    // each with its own skip count.
    std::vector<std::int64_t> skipped(static_cast<std::size_t>(workers), 0);
    std::vector<int> failed(static_cast<std::size_t>(workers), -1);
    const std::function<void(int)> job = [&](int w) {
        const int lo = static_cast<int>(static_cast<std::int64_t>(n) * w / workers);
        const int hi = static_cast<int>(static_cast<std::int64_t>(n) * (w + 1) / workers);
        failed[static_cast<std::size_t>(w)] = step_rows(lo, hi, skipped[static_cast<std::size_t>(w)]);
    };
    workers_.run(workers, job);
    for (auto s : skipped) skipped_ += s;
    for (int r : failed) {
        if (r >= 0) {
            *stuck = r;
            return refused(r);
        }
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
        b.apply(static_cast<int>(action));
        score(row, -1);
    }
    if (!play_opponents(row)) return false;
    const std::size_t na = initial_.size();
    float* rewards = out.rewards + static_cast<std::size_t>(r) * na;
    if (b.done()) {
        if (b.truncated()) {
            out.truncated[r] = true;
        } else {
            out.terminated[r] = true;
        }
        out.winner[r] = static_cast<std::int8_t>(b.winner());
        if (row.gained) {
            for (std::size_t i = 0; i < na; ++i) rewards[i] = static_cast<float>(row.acc[i]);
        }
        std::fill(row.acc.begin(), row.acc.end(), 0.0);
        row.gained = false;
        if (!begin(r, row, out, skipped)) return false;
    } else if (row.gained) {
        for (std::size_t i = 0; i < na; ++i) rewards[i] = static_cast<float>(row.acc[i]);
        std::fill(row.acc.begin(), row.acc.end(), 0.0);
        row.gained = false;
    }
    publish(r, row, out);
    return true;
}

// ------------------------------------------------------------------------ internals
void VecBattles::publish(int r, Row& row, const VecOut& out) const {
    const Battle& b = *row.battle;
    const int seat = b.decider();
    observer_->observe(b, seat, out.obs + static_cast<std::size_t>(r) *
                                             static_cast<std::size_t>(observer_->size()));
    std::uint8_t* mask = out.mask + static_cast<std::size_t>(r) * static_cast<std::size_t>(n_actions_);
    b.legal_mask(mask);
    out.agent[r] = seat;
    if (out.relative_mask && n_relative_ > 0) {
        const std::size_t k = static_cast<std::size_t>(n_relative_);
        const std::int64_t* table = relative_.data() + static_cast<std::size_t>(seat) * k;
        std::uint8_t* rel = out.relative_mask + static_cast<std::size_t>(r) * k;
        for (std::size_t j = 0; j < k; ++j) {
            rel[j] = table[j] < n_actions_ ? mask[table[j]] : std::uint8_t{0};
        }
    }
}

void VecBattles::set_relative(std::vector<std::int64_t> table, int n_relative) {
    relative_ = std::move(table);
    n_relative_ = n_relative;
}

// ------------------------------------------------------------------------ snapshot / restore
namespace {

constexpr char kRowsMagic[4] = {'T', 'V', 'R', 'S'};
constexpr std::uint8_t kRowsVersion = 1;

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
    w.put(static_cast<std::uint32_t>(initial_.size()));
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
    if (const auto version = r.get<std::uint8_t>(); version != kRowsVersion) {
        throw std::invalid_argument("vector rows snapshot: format version " +
                                    std::to_string(version) + "; this core reads version 1");
    }
    const auto seed = r.get<std::uint64_t>();
    const auto skipped = r.get<std::int64_t>();
    const auto n_rows = r.get<std::uint32_t>();
    const auto n_seats = r.get<std::uint32_t>();
    if (n_rows != rows_.size() || n_seats != initial_.size()) {
        throw std::invalid_argument(
            "vector rows snapshot: taken with " + std::to_string(n_rows) + " rows of " +
            std::to_string(n_seats) + " seats; this stepper has " + std::to_string(rows_.size()) +
            " rows of " + std::to_string(initial_.size()));
    }
    std::vector<Saved> saved(n_rows);
    for (Saved& s : saved) {
        s.battle = r.get_bytes();
        s.episode = r.get<std::int64_t>();
        s.next_episode = r.get<std::int64_t>();
        s.seed = r.get<std::uint64_t>();
        for (std::uint32_t i = 0; i < n_seats; ++i) s.acc.push_back(r.get<double>());
        s.gained = r.get<std::uint8_t>() != 0;
        for (std::uint32_t i = 0; i < n_seats; ++i) s.live.push_back(r.get<std::uint8_t>());
        for (std::uint32_t i = 0; i < n_seats; ++i) s.last_dealt.push_back(r.get<std::int32_t>());
        for (std::uint32_t i = 0; i < n_seats; ++i) s.last_taken.push_back(r.get<std::int32_t>());
        s.last_dropouts = r.get<std::int32_t>();
        s.last_round = r.get<std::int32_t>();
        for (std::uint32_t i = 0; i < n_seats; ++i) {
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
    // every battle checked on a scratch copy first, so a bad one changes no row
    Battle scratch(*rows_[0].battle);
    for (const Saved& s : saved) scratch.restore(s.battle);
    for (std::size_t k = 0; k < rows_.size(); ++k) {
        Row& row = rows_[k];
        Saved& s = saved[k];
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
    row.battle->restart(initial_, row.seed);
    std::fill(row.live.begin(), row.live.end(), 1);
    const Summary& s = row.battle->summary();
    std::copy(s.damage_dealt.begin(), s.damage_dealt.end(), row.last_dealt.begin());
    std::copy(s.damage_taken.begin(), s.damage_taken.end(), row.last_taken.begin());
    row.last_dropouts = s.dropouts;
    row.last_round = row.battle->round();
    std::fill(row.acc.begin(), row.acc.end(), 0.0);
    row.gained = false;
    for (std::size_t i = 0; i < opponents_.size(); ++i) {
        if (opponents_[i] >= 0) row.policies[i].reset(rng::derive_seed(row.seed, 1 + i));
    }
}

bool VecBattles::play_opponents(Row& row) {
    Battle& b = *row.battle;
    while (!b.done()) {
        const int seat = b.decider();
        if (opponents_[static_cast<std::size_t>(seat)] < 0) return true;
        std::uint8_t* mask = row.scratch_mask.data();
        b.legal_mask(mask);
        const int a = row.policies[static_cast<std::size_t>(seat)].act(b, seat, mask);
        if (a < 0 || a >= n_actions_ || !mask[a]) return false;  // never, by the policies' tests
        b.apply(a);
        score(row, -1);
    }
    return true;
}

// TravellerEnv._score / _PythonBackend._score, term for term.
void VecBattles::score(Row& row, int penalized) {
    const Battle& b = *row.battle;
    const Summary& s = b.summary();
    const std::size_t n = initial_.size();
    std::vector<double>& g = row.g;
    bool any = false, dones = false;
    auto need = [&] {
        if (!any) {
            std::fill(g.begin(), g.end(), 0.0);
            any = true;
        }
    };
    if (rewards_.damage_dealt != 0.0 || rewards_.damage_taken != 0.0) {
        for (std::size_t i = 0; i < n; ++i) {
            const int d = s.damage_dealt[i] - row.last_dealt[i];
            if (d) {
                need();
                give(row, static_cast<int>(i), rewards_.damage_dealt * d);
            }
            const int t = s.damage_taken[i] - row.last_taken[i];
            if (t) {
                need();
                give(row, static_cast<int>(i), rewards_.damage_taken * t);
            }
        }
    }
    if (rewards_.per_round != 0.0 && b.round() > row.last_round) {
        need();
        for (std::size_t i = 0; i < n; ++i) {
            if (row.live[i] && !b.combatant(static_cast<int>(i)).out) {
                g[i] += rewards_.per_round * (b.round() - row.last_round);
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
                g[i] += rewards_.draw;
            } else if (side_[i] == winner) {
                g[i] += rewards_.win;
            } else {
                g[i] += rewards_.loss;
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
    std::vector<double>& g = row.g;
    if (rewards_.shared) {
        const int mine = side_[static_cast<std::size_t>(i)];
        for (std::size_t j = 0; j < g.size(); ++j) {
            if (row.live[j] && side_[j] == mine) g[j] += amount;
        }
    } else if (row.live[static_cast<std::size_t>(i)]) {
        g[static_cast<std::size_t>(i)] += amount;
    }
}

}  // namespace traveller
