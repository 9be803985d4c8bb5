// One battle: state, rules and event log (traveller_env/rules/battle.py, sequencing.py,
// kinds.py, snapshot.py; defined in the .cpp files of those names). Flat state: the combatants
// in one vector, the queues and pools reserved once at construction; stepping allocates nothing
// except the event log's growth when it is recorded.
//
// Actions are indices into the scenario's action catalogue (traveller_env.encoding
// .ActionCatalogue), laid out in kinds.KINDS order:
//   end_turn | move (8 directions x 1..max_move_squares) | stance x3 | draw | reload |
//   aim x N | attack x N | leadership | direct x N | hamper x N | react x3 | haste x2
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attack.hpp"
#include "budget.hpp"
#include "damage.hpp"
#include "combatant.hpp"
#include "events.hpp"
#include "grid.hpp"
#include "leadership.hpp"
#include "options.hpp"
#include "pending.hpp"
#include "reactions.hpp"
#include "rng.hpp"

namespace traveller {

// The action kinds, in kinds.KINDS order.
enum class Kind : std::uint8_t {
    end_turn, move, stance, draw, reload, aim, attack, leadership, direct, hamper, react, haste
};
inline constexpr int kNumKinds = 12;
inline const char* const kKindNames[kNumKinds] = {
    "end_turn", "move", "stance", "draw", "reload", "aim", "attack", "leadership", "direct",
    "hamper", "react", "haste"};

enum class Phase : std::uint8_t { start, haste, turn, reaction, over };
inline const char* phase_name(Phase p) noexcept {
    static const char* const names[] = {"start", "haste", "turn", "reaction", "over"};
    return names[static_cast<int>(p)];
}

enum class Cost : std::uint8_t { minor, significant, free, end, answer };

struct KindInfo {
    Phase phase;
    Cost cost;
    bool keeps_ready;
};
inline constexpr KindInfo kKindInfo[kNumKinds] = {
    {Phase::turn, Cost::end, false},         {Phase::turn, Cost::minor, false},
    {Phase::turn, Cost::minor, false},       {Phase::turn, Cost::minor, true},
    {Phase::turn, Cost::minor, true},        {Phase::turn, Cost::minor, false},
    {Phase::turn, Cost::significant, false}, {Phase::turn, Cost::significant, false},
    {Phase::turn, Cost::free, false},        {Phase::turn, Cost::free, false},
    {Phase::reaction, Cost::answer, false},  {Phase::haste, Cost::answer, false}};

struct Action {
    Kind kind = Kind::end_turn;
    int arg = -1;      // target combatant, stance, reaction, or haste (0 yes, 1 no)
    int dir = -1;      // move direction (grid.DIRECTIONS order)
    int squares = 0;   // move squares
};

// Names the event log and the refusal reasons need (fixed for the battle).
struct Names {
    std::vector<std::string> ids;           // per combatant: <side>_<index>
    std::vector<std::string> weapons;       // per combatant: the weapon's name
    std::vector<std::string> damage_dice;   // per combatant: str(DiceExpr), e.g. "3D-3"
    std::string sides[2];
};

struct Summary {
    std::vector<int> damage_dealt, damage_taken;
    int dropouts = 0;
};

class Battle {
public:
    Battle(std::shared_ptr<const Grid> grid, std::vector<Combatant> combatants, Names names,
           RulesOptions options, std::uint64_t seed, bool record_events);

    // ---- queries
    int num_combatants() const noexcept { return static_cast<int>(cs_.size()); }
    const Combatant& combatant(int i) const { return cs_[static_cast<std::size_t>(i)]; }
    const Names& names() const noexcept { return names_; }
    // The map, shared by the battles of one scenario (in-core policies key their caches on it).
    const std::shared_ptr<const Grid>& grid_ptr() const noexcept { return grid_; }
    Phase phase() const noexcept { return phase_; }
    int decider() const noexcept { return done_ ? -1 : decider_; }
    bool done() const noexcept { return done_; }
    bool truncated() const noexcept { return truncated_; }
    int winner() const noexcept { return winner_; }
    int round() const noexcept { return round_; }
    int max_move_squares() const noexcept { return max_move_; }
    const Summary& summary() const noexcept { return summary_; }
    const PendingAttack& pending() const noexcept { return pending_; }
    const Pools& pools() const noexcept { return pools_; }
    const std::vector<Event>& events() const noexcept { return events_; }
    const std::vector<std::int32_t>& pool_ints() const noexcept { return ints_; }
    const std::vector<std::string>& strings() const noexcept { return strings_; }
    const rng::Pcg32& dice() const noexcept { return dice_; }
    const Grid& grid() const noexcept { return *grid_; }
    const RulesOptions& options() const noexcept { return options_; }

    // ---- the action catalogue
    int num_actions() const noexcept { return n_actions_; }
    Action decode(int index) const noexcept;
    // The catalogue index of an action (decode's inverse; a move needs 1 <= squares <= max).
    int encode(const Action& a) const noexcept;
    std::string label(int index) const;
    // The mask over the catalogue (1: legal now), written into out[num_actions()].
    void legal_mask(std::uint8_t* out) const;
    // Why the action is refused now (kinds' and the budget's reasons, word for word), or "".
    std::string why_illegal(int index) const;
    // Take a legal action (the caller checked legality: why_illegal(index).empty()).
    void apply(int index);
    // Record an illegal choice and take the do-nothing default (Battle.forfeit).
    void forfeit(const std::string& label, const std::string& reason);
    // Start another battle of the same scenario in place: the combatants as given (their state
    // before Initiative, as the constructor takes them), a new seed; every buffer is reused, so
    // a batched stepper's automatic reset allocates nothing. Plays exactly as a new Battle.
    void restart(const std::vector<Combatant>& initial, std::uint64_t seed);
    // An independent copy for look-ahead search (BattleView.simulate): the same state with
    // fresh dice seeded by `seed` (a copy of the real dice would reveal future rolls). With
    // record_events false the copy starts with an empty log and records nothing (cheap).
    Battle simulation(std::uint64_t seed, bool record_events) const;
    // The complete state, dice included, as bytes (traveller_env/rules/snapshot.py documents
    // the format; the Python engine reads and writes the same bytes). The event log's entries
    // are not state: only their count is kept.
    std::string snapshot() const;
    // Put a snapshot back (a battle of the same scenario); std::invalid_argument naming what is
    // wrong (magic, version, checksum, scenario, a value out of range) leaves it unchanged.
    // The event log restarts empty.
    void restore(const std::string& data);
    // FNV-1a 64 of the scenario's fixed data (snapshot.fingerprint_text), checked on restore.
    std::uint64_t fingerprint() const;
    // Bytes this battle holds (itself, its buffers' capacity, its names), the map excluded
    // (shared by every battle of a scenario).
    std::size_t memory_bytes() const noexcept;

private:
    // ---- sequencing (sequencing.py)
    void roll_initiative();
    void start_round();
    void declare_haste(int c, bool yes);
    void change_initiative(int c, int delta, int reason);
    void next_turn();
    void finish_group();
    void begin_turn(int c);
    void end_turn(int reason);
    bool check_end();
    void finish(int winner, int reason, bool truncated);
    bool order_key_less(const Combatant& a, const Combatant& b) const noexcept;

    // ---- the kinds (kinds.py)
    void kind_legal_mask(Kind k, int actor, std::uint8_t* out) const;
    std::string kind_why_not(const Action& a, int actor) const;
    void kind_apply(const Action& a, int actor);
    std::string target_refusal(int actor, int t, const char* what) const;
    void reach(int actor, int out[kNumDirs]) const;
    std::string walk_refusal(int actor, int dir, int squares) const;
    bool free_action_possible(int actor) const;
    bool direct_legal(int actor, int r) const;
    bool hamper_legal(int actor, int r, unsigned penalised) const;

    // ---- effects (battle.py)
    void maybe_auto_end(int actor);
    void break_aim(int c);
    bool ready_step(int actor, int kind, int needed);
    void apply_held(int c, Dms& dms, int check);
    void declare_attack(int actor, int target);
    void react(int target, int choice);
    void resolve_attack(int reaction);
    void take_damage(int c, int damage);
    void incapacitate(int c, int by);
    void lapse(int pool_index, int reason);
    Event& emit(EventType t);

    std::shared_ptr<const Grid> grid_;
    std::vector<Combatant> cs_;
    Names names_;
    RulesOptions options_;
    rng::Pcg32 dice_;
    bool record_;
    std::vector<Event> events_;
    std::vector<std::int32_t> ints_;
    std::vector<std::string> strings_;
    Event scratch_;  // the event target when the log is not recorded

    int round_ = 0;
    Phase phase_ = Phase::start;
    bool done_ = false;
    bool truncated_ = false;
    int winner_ = -1;
    int turn_actor_ = -1;
    int decider_ = -1;
    std::vector<int> haste_queue_;
    std::size_t haste_head_ = 0;
    std::vector<int> group_;
    std::vector<int> group_queue_;
    std::size_t group_head_ = 0;
    Pools pools_;
    PendingAttack pending_;
    Summary summary_;
    int max_move_ = 1;

    // Catalogue offsets.
    int off_move_ = 1, off_stance_ = 0, off_draw_ = 0, off_reload_ = 0, off_aim_ = 0,
        off_attack_ = 0, off_leadership_ = 0, off_direct_ = 0, off_hamper_ = 0, off_react_ = 0,
        off_haste_ = 0, n_actions_ = 0;
};

}  // namespace traveller
