// The observation vector and the global state (traveller_env/observations.py).
//
// Every entry equals the Python ObservationBuilder's float32 value bit for bit: it is computed in
// double with the same operations in the same order (`1.0 - chars / max`, `x / W`,
// `min(1.0, dist / (4 * range))`, the clamp `_unit`, ...) and cast to float once, as
// struct.pack('f') and NumPy's float32 assignment do (round to nearest).
//
// Layout (ObservationBuilder.labels): the observer's own block (kSelfFields entries, SELF_FIELDS
// order), then one block of kSlotFields entries (SLOT_FIELDS order) per slot. Slots are relative
// to the observer: its allies in scenario order without itself, padded to (largest side - 1),
// then its enemies in scenario order, padded to the largest side. With the move view on
// (observations.move_view), kMoveViewFields entries follow for the observer's square and the end
// square of each move action (kDir order, then 1..max_move_squares). With the aim view on
// (ObservationBuilder.aim_view_entries), kAimViewFields entries per slot follow: the aim DM that
// slot's combatant holds on the observer / 6 (0: empty slot, out of play, aiming elsewhere). With
// the attack view on (ObservationBuilder.attack_view_entries), kAttackViewFields entries per slot
// (hit, hits_me) and kAttackSquareFields per move-view square (best_hit, threat) follow. The state
// (ObservationBuilder.state_labels): kStateFields entries (STATE_FIELDS order) per combatant in
// scenario order, then the three phase flags and the round.
//
// With a fixed layout (ObsLayout, traveller_env/layout.py Layout): layout.allies ally and
// layout.enemies enemy slots (filled as above, the rest empty); every position divided by
// layout.map_size instead of the map's width and height; layout.max_move_squares squares per
// direction in the move and attack views (squares beyond the scenario's best move described all
// the same); the state holds 2 * side_limit blocks, side 0's combatants in scenario order padded
// with empty (zero) blocks to side_limit, then side 1's likewise. A scenario that does not fit
// (Layout.problems) is refused with std::invalid_argument naming the limit.
//
// An Observer holds the per-scenario tables (slots, starting characteristics and spare
// magazines, skill DMs). Build it from a battle at its start (before any action: the starting
// characteristics are the "max" the wounds are measured against, as Combatant.max_chars in
// Python); it then serves every battle of that scenario. observe() and state() allocate nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "battle.hpp"

namespace traveller {

inline constexpr int kSelfFields = 31;   // len(SELF_FIELDS)
inline constexpr int kSlotFields = 28;   // len(SLOT_FIELDS)
inline constexpr int kStateFields = 19;  // len(STATE_FIELDS)
inline constexpr int kMoveViewFields = 3;  // len(MOVE_VIEW_FIELDS)
inline constexpr int kAimViewFields = 1;   // len(AIM_VIEW_FIELDS)
inline constexpr int kAttackViewFields = 2;    // len(ATTACK_VIEW_FIELDS), per slot
inline constexpr int kAttackSquareFields = 2;  // len(ATTACK_SQUARE_FIELDS), per move-view square
inline constexpr double kInitScale = 30.0;
inline constexpr double kPoolScale = 10.0;

// A fixed observation layout (traveller_env/layout.py Layout, the name aside).
struct ObsLayout {
    int allies = 0;            // ally slots, [0, 64]
    int enemies = 0;           // enemy slots, [1, 64]
    int map_size = 0;          // positions divided by this, [1, 1000]
    int max_move_squares = 0;  // squares per direction of the move and attack views, [1, 64]
    // The most combatants a side may have (Layout.side_limit).
    int side_limit() const noexcept { return allies + 1 < enemies ? allies + 1 : enemies; }
    // Layout.__post_init__'s range checks: empty when valid, else what is wrong.
    std::string malformed() const;
    // Layout.problems for battle b, joined by "; " (empty: it fits).
    std::string problems(const Battle& b) const;
};

class Observer {
public:
    // `layout`: the fixed layout, or nullopt for the scenario's own (std::invalid_argument when
    // it is malformed or b does not fit it).
    explicit Observer(const Battle& b, bool move_view = false, bool aim_view = false,
                      bool attack_view = false,
                      const std::optional<ObsLayout>& layout = std::nullopt);

    // This observer with other views (the same scenario's tables and layout: a battle's copy
    // mid-battle cannot rebuild them, its characteristics are no longer the starting ones).
    Observer with_views(bool move_view, bool aim_view, bool attack_view) const;
    bool move_view() const noexcept { return move_view_; }
    bool aim_view() const noexcept { return aim_view_; }
    bool attack_view() const noexcept { return attack_view_; }
    const std::optional<ObsLayout>& layout() const noexcept { return layout_; }
    // Squares per direction of the move and attack views (the battle's best move, or the
    // layout's max_move_squares).
    int view_squares() const noexcept { return view_squares_; }

    int size() const noexcept { return size_; }              // len(ObservationBuilder.labels)
    int state_size() const noexcept { return state_size_; }  // ObservationBuilder.state_size
    int num_combatants() const noexcept { return n_; }
    int num_slots() const noexcept { return n_slots_; }
    int num_ally_slots() const noexcept { return n_ally_slots_; }
    // The combatant index in slot k of seat's view, -1 for an empty slot (or out of range).
    int slot(int seat, int k) const noexcept {
        if (seat < 0 || seat >= n_ || k < 0 || k >= n_slots_) return -1;
        return slots_[static_cast<std::size_t>(seat * n_slots_ + k)];
    }
    // ObservationBuilder.observe(battle, ids[seat]) into out[size()]. The caller checks the
    // seat (0 <= seat < num_combatants()) and that b is a battle of this observer's scenario.
    void observe(const Battle& b, int seat, float* out) const noexcept;
    // ObservationBuilder.state(battle) into out[state_size()].
    void state(const Battle& b, float* out) const noexcept;

private:
    void set_size() noexcept;

    struct Fixed {               // per combatant, fixed for the scenario
        double max_chars[3];     // starting STR, DEX, END
        double init_spares;      // max(1, starting spare magazines)
        double skill_dm;         // _unit(weapon skill DM / 6)
        double leadership_dm;    // _unit(sum(leadership_dms(c, hasty=False)) / 10)
    };

    // observations.move_view: the shares for each square the observer could end a move on.
    float* write_move_view(const Battle& b, int seat, float* o) const noexcept;
    // ObservationBuilder.aim_view_entries: who holds an aim on the observer, per slot.
    float* write_aim_view(const Battle& b, int seat, float* o) const noexcept;
    // ObservationBuilder.attack_view_entries: hit chances per slot, then per move-view square.
    float* write_attack_view(const Battle& b, int seat, float* o) const noexcept;

    bool move_view_ = false;
    bool aim_view_ = false;
    bool attack_view_ = false;
    int n_ = 0;
    int n_ally_slots_ = 0;
    int n_slots_ = 0;
    int size_ = 0;
    int state_size_ = 0;
    int view_squares_ = 0;
    int map_size_ = 0;  // 0: divide positions by the map's width and height
    std::optional<ObsLayout> layout_;
    std::vector<int> slots_;        // [n_ * n_slots_], -1 empty
    std::vector<int> state_seats_;  // the combatant of each state block, -1 empty
    std::vector<Fixed> fixed_;
};

}  // namespace traveller
