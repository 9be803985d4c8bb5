// The event log's vocabulary: traveller_env/rules/events.py. The core records one flat Event per
// roll and per change; the binding turns them into the same dicts as the Python engine (same
// types, same fields in the same order, same values).
#pragma once

#include <cstdint>

#include "checks.hpp"

namespace traveller {

enum class EventType : std::uint8_t {
    initiative, tactics, round, haste, simultaneous, turn, end_turn, move, stance, draw, reload,
    aim, aim_lost, leadership, bonus_used, penalty_used, bonus_granted, penalty_imposed,
    reaction, attack, incapacitated, out, lapse, initiative_change, illegal_action, end
};

inline const char* event_type_name(EventType t) noexcept {
    static const char* const names[] = {
        "initiative", "tactics", "round", "haste", "simultaneous", "turn", "end_turn", "move",
        "stance", "draw", "reload", "aim", "aim_lost", "leadership", "bonus_used",
        "penalty_used", "bonus_granted", "penalty_imposed", "reaction", "attack",
        "incapacitated", "out", "lapse", "initiative_change", "illegal_action", "end"};
    return names[static_cast<int>(t)];
}

// Fixed strings some events carry (their enum values index these tables).
inline const char* const kEndTurnReasons[] = {"chosen", "budget spent", "illegal action"};
enum EndTurnReason : int { kChosen = 0, kBudgetSpent = 1, kIllegalAction = 2 };
inline const char* const kLapseReasons[] = {"leader's next turn", "leader incapacitated",
                                            "leader out of play"};
enum LapseReason : int { kLeaderNextTurn = 0, kLeaderIncapacitated = 1, kLeaderOut = 2 };
inline const char* const kEndReasons[] = {"victory", "all_out", "max_rounds"};
enum EndReason : int { kVictory = 0, kAllOut = 1, kMaxRounds = 2 };
inline const char* const kInitChangeReasons[] = {"recoil", "reaction"};
enum InitChangeReason : int { kRecoil = 0, kReaction = 1 };
inline const char* const kStanceNames[] = {"stand", "crouch", "prone"};
inline const char* const kReactionNames[] = {"none", "dodge", "parry"};
inline const char* const kPoolKindNames[] = {"bonus", "penalty"};
inline const char* const kCheckNames[] = {"leadership", "attack"};

// One event. `a`, `b`, `c` are combatant indices (-1: none); `v` holds the type's integers;
// `pool_off`/`pool_n` a slice of Battle's integer pool (a damage roll, a tied group's ids).
// Field meanings per type are in the binding's converter (src/events_py.cpp).
struct Event {
    EventType type = EventType::round;
    std::int16_t a = -1, b = -1, c = -1;
    std::int32_t v[16] = {};
    double f = 0.0;
    std::int8_t roll[2] = {0, 0};
    bool has_roll = false;
    std::uint32_t pool_off = 0, pool_n = 0;
    Dms dms;
};

}  // namespace traveller
