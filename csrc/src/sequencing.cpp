// Turn sequencing (R2.2-R2.5, R3.1-R3.5, R8.2): traveller_env/rules/sequencing.py's
// TurnSequencing, member for member: Initiative and Tactics, rounds, haste declarations, tied
// groups, whose turn it is, and the end of the battle.
#include <algorithm>

#include "traveller/battle.hpp"

namespace traveller {

namespace {

constexpr int kAmbushInitiative = 12;  // R3.2

}  // namespace

bool Battle::order_key_less(const Combatant& a, const Combatant& b) const noexcept {
    if (a.current_initiative() != b.current_initiative()) {
        return a.current_initiative() < b.current_initiative();
    }
    return a.chars[kDEX] < b.chars[kDEX];
}

void Battle::roll_initiative() {
    bool any = false, all = true;
    for (const auto& c : cs_) {
        any = any || c.prepared;
        all = all && c.prepared;
    }
    const bool ambush = any && !all;
    for (int i = 0; i < num_combatants(); ++i) {
        Combatant& c = cs_[static_cast<std::size_t>(i)];
        const int dex = c.dm(kDEX);
        int base = 0;
        int roll[2] = {0, 0};
        const bool automatic = ambush && c.prepared;
        if (automatic) {
            base = kAmbushInitiative;
        } else {
            roll[0] = dice_.d6();
            roll[1] = dice_.d6();
            base = roll[0] + roll[1];
        }
        c.initiative = base + dex;
        Event& e = emit(EventType::initiative);
        e.a = static_cast<std::int16_t>(i);
        e.has_roll = !automatic;
        e.roll[0] = static_cast<std::int8_t>(roll[0]);
        e.roll[1] = static_cast<std::int8_t>(roll[1]);
        e.dms.set(DmName::DEX, dex);
        e.v[0] = c.initiative;
        e.v[1] = automatic;
    }
    for (int side = 0; side < 2; ++side) {
        int best = -1;
        for (int i = 0; i < num_combatants(); ++i) {
            const Combatant& c = cs_[static_cast<std::size_t>(i)];
            if (c.side != side || !c.skills.has_tactics) continue;
            if (best < 0) {
                best = i;
                continue;
            }
            const Combatant& b = cs_[static_cast<std::size_t>(best)];
            // key (level, INT, -order): a later combatant wins only when strictly greater.
            if (c.skills.tactics > b.skills.tactics ||
                (c.skills.tactics == b.skills.tactics && c.chars[kINT] > b.chars[kINT])) {
                best = i;
            }
        }
        if (best < 0) continue;
        const Combatant& leader = cs_[static_cast<std::size_t>(best)];
        Dms dms;
        dms.set(DmName::skill, leader.skills.tactics == kNoSkill ? 0 : leader.skills.tactics);
        dms.set(DmName::INT, leader.dm(kINT));
        const CheckResult r = roll_check(dice_, dms);
        for (auto& c : cs_) {
            if (c.side == side) c.initiative += r.effect;
        }
        Event& e = emit(EventType::tactics);
        e.a = static_cast<std::int16_t>(best);
        e.v[0] = side;
        e.has_roll = true;
        e.roll[0] = static_cast<std::int8_t>(r.roll[0]);
        e.roll[1] = static_cast<std::int8_t>(r.roll[1]);
        e.dms = dms;
        e.v[1] = r.total;
        e.v[2] = r.effect;
    }
}

void Battle::start_round() {
    if (round_ >= options_.max_rounds) {
        finish(-1, kMaxRounds, true);
        return;
    }
    round_ += 1;
    emit(EventType::round).v[0] = round_;
    for (auto& c : cs_) {
        c.init_mod_now = c.init_mod_next;
        c.init_mod_next = 0;
        c.hasty = false;
        c.turn_begun = false;
    }
    if (options_.hastening) {
        haste_queue_.clear();
        haste_head_ = 0;
        for (int i = 0; i < num_combatants(); ++i) {
            if (!cs_[static_cast<std::size_t>(i)].out) haste_queue_.push_back(i);
        }
        std::sort(haste_queue_.begin(), haste_queue_.end(), [this](int a, int b) {
            const Combatant& x = cs_[static_cast<std::size_t>(a)];
            const Combatant& y = cs_[static_cast<std::size_t>(b)];
            if (x.current_initiative() != y.current_initiative()) {
                return x.current_initiative() > y.current_initiative();
            }
            if (x.chars[kDEX] != y.chars[kDEX]) return x.chars[kDEX] > y.chars[kDEX];
            return x.order < y.order;
        });
        phase_ = Phase::haste;
        decider_ = haste_queue_[0];
    } else {
        next_turn();
    }
}

void Battle::declare_haste(int ci, bool yes) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    c.hasty = yes;
    if (yes) c.init_mod_now += kHasteInitiative;
    Event& e = emit(EventType::haste);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = yes;
    e.v[1] = c.current_initiative();
    haste_head_ += 1;
    if (haste_head_ < haste_queue_.size()) {
        decider_ = haste_queue_[haste_head_];
    } else {
        next_turn();
    }
}

void Battle::change_initiative(int ci, int delta, int reason) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    int applies = 0;
    if (c.turn_begun) {
        c.init_mod_next += delta;
        applies = 1;
    } else {
        c.init_mod_now += delta;
    }
    Event& e = emit(EventType::initiative_change);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = delta;
    e.v[1] = reason;
    e.v[2] = applies;
    e.v[3] = c.current_initiative();
    e.v[4] = c.init_mod_next;
}

void Battle::next_turn() {
    if (group_head_ < group_queue_.size()) {
        begin_turn(group_queue_[group_head_++]);
        return;
    }
    finish_group();
    if (check_end()) return;
    int best = -1;
    for (int i = 0; i < num_combatants(); ++i) {
        const Combatant& c = cs_[static_cast<std::size_t>(i)];
        if (c.out || c.turn_begun) continue;
        if (best < 0 || order_key_less(cs_[static_cast<std::size_t>(best)], c)) best = i;
    }
    if (best < 0) {
        start_round();
        return;
    }
    const Combatant& top = cs_[static_cast<std::size_t>(best)];
    group_.clear();
    for (int i = 0; i < num_combatants(); ++i) {
        const Combatant& c = cs_[static_cast<std::size_t>(i)];
        if (c.out || c.turn_begun) continue;
        if (!order_key_less(c, top) && !order_key_less(top, c)) group_.push_back(i);
    }
    group_queue_.assign(group_.begin() + 1, group_.end());
    group_head_ = 0;
    if (group_.size() > 1) {
        Event& e = emit(EventType::simultaneous);
        if (record_) {
            e.pool_off = static_cast<std::uint32_t>(ints_.size());
            e.pool_n = static_cast<std::uint32_t>(group_.size());
            ints_.insert(ints_.end(), group_.begin(), group_.end());
        }
        e.v[0] = top.current_initiative();
        e.v[1] = top.chars[kDEX];
    }
    begin_turn(group_[0]);
}

void Battle::finish_group() {
    for (int ci : group_) {
        Combatant& c = cs_[static_cast<std::size_t>(ci)];
        if (c.down && !c.out) {
            c.out = true;
            emit(EventType::out).a = static_cast<std::int16_t>(ci);
            summary_.dropouts += 1;
            for (int p = pools_.next_of_leader(ci); p >= 0; p = pools_.next_of_leader(ci)) {
                lapse(p, kLeaderOut);
            }
        }
    }
    group_.clear();
}

void Battle::begin_turn(int ci) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    c.turn_begun = true;
    c.minors = 0;
    c.significant = false;
    phase_ = Phase::turn;
    decider_ = turn_actor_ = ci;
    for (int p = pools_.next_of_leader(ci); p >= 0; p = pools_.next_of_leader(ci)) {
        lapse(p, kLeaderNextTurn);  // R7.5
    }
    Event& e = emit(EventType::turn);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = c.current_initiative();
    e.v[1] = round_;
}

void Battle::end_turn(int reason) {
    Event& e = emit(EventType::end_turn);
    e.a = static_cast<std::int16_t>(decider_);
    e.v[0] = reason;
    turn_actor_ = -1;
    next_turn();
}

bool Battle::check_end() {
    unsigned sides = 0;
    for (const auto& c : cs_) {
        if (!c.out) sides |= 1u << c.side;
    }
    if (sides == 3u) return false;
    const int winner = sides == 1u ? 0 : sides == 2u ? 1 : -1;
    finish(winner, winner >= 0 ? kVictory : kAllOut, false);
    return true;
}

void Battle::finish(int winner, int reason, bool truncated) {
    done_ = true;
    truncated_ = truncated;
    winner_ = winner;
    phase_ = Phase::over;
    decider_ = -1;
    Event& e = emit(EventType::end);
    e.v[0] = round_;
    e.v[1] = winner;
    e.v[2] = reason;
}

}  // namespace traveller
