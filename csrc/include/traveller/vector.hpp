// Batched battles: N battles stepped per call into caller-owned buffers (traveller_env/vector.py's
// contract; its _PythonBackend is the reference this mirrors).
//
// Each row holds one Battle, restarted in place when it ends (Battle::restart: nothing is
// allocated per step or per reset), the reward bookkeeping of the AEC env (TravellerEnv._score,
// term for term and in the same order, so the float sums agree to the bit) and the in-core
// opponents of its seats. The caller (the binding) has checked every index and buffer; the
// legality of the learner actions is checked here again, for all rows before any is applied.
//
// Over a scenario set (the second constructor; traveller_env/scenario_set.py): K scenarios that
// fit one layout. Battle e of row r keeps its seed battle_seed(vector_seed, r, e) and plays
// scenario derive_seed(seed, kScenarioStream) % K; a row whose next battle plays another
// scenario rebuilds its Battle, bookkeeping and policies (the same scenario: restarted in
// place). The seats are the layout's columns (side * side_limit + rank within the side), the
// mask written is over the layout's slot-relative actions and step() takes those, translated
// with the row's scenario's table (seat x relative -> absolute; num_actions of that scenario
// for an action it lacks, never legal). Rewards are scored per scenario seat as above and
// written to the seat's column (empty columns 0).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "battle.hpp"
#include "observation.hpp"
#include "policies.hpp"

namespace traveller {

// The scenario's `rewards` (scenario.RewardSpec).
struct RewardSpec {
    double win = 1.0, loss = -1.0, draw = 0.0;
    double damage_dealt = 0.0, damage_taken = 0.0, per_round = 0.0;
    bool shared = true;
};

// One scenario of a set, as the constructor takes it.
struct VecScenario {
    std::shared_ptr<const Grid> grid;
    std::vector<Combatant> initial;  // before Initiative, as the Battle constructor takes them
    Names names;
    RulesOptions options;
    RewardSpec rewards;
    std::vector<int> columns;           // per seat: its layout column
    std::vector<std::int64_t> relative;  // [seats * n_relative]: the absolute index, or
                                         // num_actions for an action the scenario lacks
};

// The sub-stream of a battle seed that picks its scenario (scenario_set.SCENARIO_STREAM).
inline constexpr std::uint64_t kScenarioStream = 0x53434E;

// Where step/reset write (rows x columns, C-contiguous; checked by the binding).
struct VecOut {
    float* obs = nullptr;               // [N, obs_dim]
    std::uint8_t* mask = nullptr;       // [N, num_actions()] (a set: the relative actions)
    float* rewards = nullptr;           // [N, num_agents()] (a set: by layout column)
    bool* terminated = nullptr;         // [N]
    bool* truncated = nullptr;          // [N]
    std::int64_t* agent = nullptr;      // [N]
    std::int64_t* episode = nullptr;    // [N]
    std::uint64_t* battle_seed = nullptr;  // [N]
    std::int8_t* winner = nullptr;      // [N]
    // Optional (VecBattles::set_relative): the deciding seat's mask over the slot-relative
    // actions, [N, n_relative]; written with the absolute mask, in the row's own thread.
    std::uint8_t* relative_mask = nullptr;
};

// A fixed set of worker threads that live as long as their owner. The in-core policies keep
// per-thread caches (thread_local tables of the map, the planner's), which threads spawned
// for each call would rebuild at every step; these keep them warm from one step to the next.
class RowWorkers {
public:
    RowWorkers() = default;
    RowWorkers(const RowWorkers&) = delete;
    RowWorkers& operator=(const RowWorkers&) = delete;
    ~RowWorkers();
    // job(0) .. job(workers - 1) at once, job(0) on the calling thread; returns when every
    // one is done, rethrowing the first exception one of them threw.
    void run(int workers, const std::function<void(int)>& job);
    int threads() const noexcept { return static_cast<int>(threads_.size()) + 1; }

private:
    void loop(int index, std::uint64_t seen);

    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(int)>* job_ = nullptr;
    std::exception_ptr error_;
    std::uint64_t round_ = 0;
    int active_ = 0, pending_ = 0;
    bool stop_ = false;
};

// What a step could not do, for the caller's error message (nothing was applied then).
struct StepRefusal {
    int row = -1;          // -1: the step went through
    int action = -1;
    bool opponent = false;  // an opponent policy chose an illegal action (a core bug)
};

class VecBattles {
public:
    // One scenario. `opponents[seat]`: the in-core policy kind playing that seat, -1 a learner.
    VecBattles(std::shared_ptr<const Grid> grid, std::vector<Combatant> initial, Names names,
               RulesOptions options, RewardSpec rewards, std::vector<int> opponents,
               int num_envs, bool move_view = false, bool aim_view = false,
               bool attack_view = false, const std::optional<ObsLayout>& layout = std::nullopt);
    // A scenario set under `layout` (see the file comment): `opponents[column]` as above, per
    // layout column (2 * side_limit). The caller has checked the columns and tables; a scenario
    // that does not fit the layout is refused (std::invalid_argument naming it).
    VecBattles(std::vector<VecScenario> scenarios, const ObsLayout& layout, int n_relative,
               std::vector<int> opponents, int num_envs, bool move_view, bool aim_view,
               bool attack_view);

    int num_envs() const noexcept { return static_cast<int>(rows_.size()); }
    // The reward columns: the scenario's seats, or a set's layout columns.
    int num_agents() const noexcept { return num_columns_; }
    // The width of the mask and the range of step()'s actions: the scenario's catalogue, or a
    // set's relative actions.
    int num_actions() const noexcept { return set_mode_ ? n_relative_ : specs_[0].n_actions; }
    int obs_dim() const noexcept { return specs_[0].observer->size(); }
    bool set_mode() const noexcept { return set_mode_; }
    int num_scenarios() const noexcept { return static_cast<int>(specs_.size()); }
    std::int64_t battles_skipped() const noexcept { return skipped_; }
    const Battle& battle(int row) const { return *rows_[static_cast<std::size_t>(row)].battle; }
    // The scenario row's battle plays (an index into the set; 0 for one scenario).
    int scenario(int row) const { return rows_[static_cast<std::size_t>(row)].spec; }
    // Row's action (as step() takes it: a set's relative action) as an index into its battle's
    // catalogue, -1 when its scenario lacks it. The caller checks 0 <= action < num_actions().
    int absolute_action(int row, int action) const;
    const Observer& observer() const noexcept { return *specs_[0].observer; }
    // Bytes the rows hold (battles, bookkeeping, policies), the caller's buffers and the
    // shared map excluded.
    std::size_t memory_bytes() const noexcept;

    // Start every row's next battle (battle 0 again when `restart`), play opponents up to the
    // first learner decision, write obs, mask, agent, episode and battle_seed.
    // Returns false (and writes the row into *stuck) when a row's battles keep ending before a
    // learner decides (kMaxSkipped in a row).
    bool reset(std::uint64_t seed, bool restart, const VecOut& out, int* stuck);
    // Apply each row's absolute action (rows with forfeit[r] != 0 forfeit instead, with the
    // label and reason at labels[r]/reasons[r]; forfeit may be null), play opponents, auto-reset
    // ended battles. Checks legality of every row first: on an illegal action nothing changes
    // and the refusal says where. threads > 1 steps row chunks in parallel.
    StepRefusal step(const std::int64_t* actions, const std::uint8_t* forfeit,
                     const std::vector<std::string>* labels,
                     const std::vector<std::string>* reasons, const VecOut& out, int threads,
                     int* stuck);

    // One scenario only: publish each row's mask over slot-relative actions too (into
    // out.relative_mask): table[seat * n_relative + j] is relative action j's absolute index for
    // that seat, or num_actions() for an empty slot (never legal). The caller has checked the
    // table.
    void set_relative(std::vector<std::int64_t> table, int n_relative);
    int num_relative() const noexcept { return n_relative_; }

    // The rows' complete state as bytes (format "TVRS", version 2, little-endian): the vector's
    // seed and skip count, the number of rows and the scenario's seats (0 over a set), the set
    // section (a set flag, the number of scenarios, each row's scenario index and seat count),
    // then per row its battle's snapshot (Battle::snapshot), episode counters, seed, pending
    // rewards, reward ledger and each in-core opponent's generator and plan (sized by the row's
    // seats). restore() on a stepper made with the same arguments continues exactly as this one
    // would (a set's row gets a Battle of its saved scenario first); it checks every part first
    // (std::invalid_argument naming the fault) and changes nothing when one is wrong. It reads
    // version 1 too (no set section: one scenario's rows) for a stepper over one scenario. The
    // caller's buffers are not included.
    std::string snapshot() const;
    void restore(const std::string& data);

    static constexpr int kMaxSkipped = 1000;
    // step() with several threads: rows are handed out in blocks of about
    // n / (threads * kBlocksPerWorker), each to the first worker that comes free.
    static constexpr int kBlocksPerWorker = 8;

private:
    // What the rows of one scenario share (every row's, or a set's k-th).
    struct Spec {
        std::shared_ptr<const Grid> grid;
        std::vector<Combatant> initial;
        Names names;
        RulesOptions options;
        RewardSpec rewards;
        std::vector<int> side;       // per seat
        std::vector<int> column;     // per seat: its reward column and out.agent value
        std::vector<int> opponents;  // per seat: an in-core policy kind, -1 a learner
        std::unique_ptr<Observer> observer;
        std::vector<std::int64_t> relative;  // [seats * n_relative_] (empty: none)
        int n_actions = 0;
        int seats() const noexcept { return static_cast<int>(initial.size()); }
    };

    struct Row {
        int spec = 0;  // the scenario of the battle
        std::unique_ptr<Battle> battle;
        std::int64_t episode = 0, next_episode = 0;
        std::uint64_t seed = 0;
        std::vector<double> acc, g;
        bool gained = false;
        std::vector<std::uint8_t> live;
        std::vector<int> last_dealt, last_taken;
        int last_dropouts = 0, last_round = 0;
        std::vector<CorePolicy> policies;  // one per seat (used only where opponents[seat] >= 0)
        std::vector<std::uint8_t> scratch_mask;
    };

    // A new Battle of specs_[k] for the row (seeded `seed`), its bookkeeping sized to its seats
    // and its policies.
    void enter(Row& row, int k, std::uint64_t seed);
    static Spec make_spec(std::shared_ptr<const Grid> grid, std::vector<Combatant> initial,
                          Names names, RulesOptions options, RewardSpec rewards);

    bool begin(int r, Row& row, const VecOut& out, std::int64_t& skipped);
    void start_battle(int r, Row& row);
    bool play_opponents(Row& row);
    void score(Row& row, int penalized);
    void give(Row& row, int i, double amount);
    void publish(int r, Row& row, const VecOut& out) const;
    bool step_row(int r, Row& row, std::int64_t action, bool forfeit, const std::string* label,
                  const std::string* reason, const VecOut& out, std::int64_t& skipped);

    std::vector<Spec> specs_;
    bool set_mode_ = false;
    int num_columns_ = 0;
    int max_actions_ = 0;  // the largest catalogue of the scenarios (the rows' scratch masks)
    std::vector<Row> rows_;
    std::uint64_t vector_seed_ = 0;
    std::int64_t skipped_ = 0;
    int n_relative_ = 0;
    RowWorkers workers_;
};

}  // namespace traveller
