// Leadership (R4.2, R7): traveller_env/rules/leadership.py.
#pragma once

#include <vector>

#include "attack.hpp"
#include "combatant.hpp"
#include "grid.hpp"

namespace traveller {

// R4.2: Leadership skill + the best of INT, EDU, SOC DM (ties to the first) + haste.
inline Dms leadership_dms(const Combatant& leader) {
    Dms dms;
    dms.set(DmName::skill, skill_dm(leader.skills.leadership));
    int best = kINT;
    for (int ch : {kEDU, kSOC}) {
        if (leader.dm(ch) > leader.dm(best)) best = ch;
    }
    dms.set(best == kINT ? DmName::INT : best == kEDU ? DmName::EDU : DmName::SOC, leader.dm(best));
    if (leader.hasty) dms.set(DmName::haste, kHasteDm);
    return dms;
}

// R7.2: within comms range, or both with radios.
inline bool can_communicate(const Combatant& a, const Combatant& b, double comms_range_m) {
    if (a.radio && b.radio) return true;
    return Grid::distance_m(a.x, a.y, b.x, b.y) <= comms_range_m;
}

enum PoolKind : int { kPoolBonus = 0, kPoolPenalty = 1 };

struct Pool {
    int leader;
    int kind;
    int count;
    int leader_side;
};

// The battle's pools, in creation order (LeadershipPools). Each leader holds at most one pool
// at a time (one Significant action a turn; pools lapse at its next turn), so the storage is
// reserved once for all combatants and never grows in the hot path.
class Pools {
public:
    void reserve(std::size_t n) { pools_.reserve(n + 1); }
    void clear() noexcept { pools_.clear(); }
    std::size_t capacity_bytes() const noexcept { return pools_.capacity() * sizeof(Pool); }
    bool empty() const noexcept { return pools_.empty(); }
    const std::vector<Pool>& all() const noexcept { return pools_; }

    void add(int leader, int side, int kind, int count) {
        if (count) pools_.push_back(Pool{leader, kind, count, side});
    }
    int bonus_pool(int leader) const noexcept {
        for (std::size_t i = 0; i < pools_.size(); ++i) {
            if (pools_[i].kind == kPoolBonus && pools_[i].leader == leader) return static_cast<int>(i);
        }
        return -1;
    }
    int penalty_pool(int against_side) const noexcept {
        for (std::size_t i = 0; i < pools_.size(); ++i) {
            if (pools_[i].kind == kPoolPenalty && pools_[i].leader_side == against_side) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }
    // Bit s set: side s may have a penalty imposed on it.
    unsigned penalised_sides() const noexcept {
        unsigned bits = 0;
        for (const auto& p : pools_) {
            if (p.kind == kPoolPenalty) bits |= 1u << p.leader_side;
        }
        return bits;
    }
    // (bonuses cid may hand out, penalties cid may impose).
    void held(int cid, int side, int& bonuses, int& penalties) const noexcept {
        bonuses = penalties = 0;
        for (const auto& p : pools_) {
            if (p.kind == kPoolBonus && p.leader == cid) bonuses += p.count;
            if (p.kind == kPoolPenalty && p.leader_side != side) penalties += p.count;
        }
    }
    void take_one(int index) {
        auto& p = pools_[static_cast<std::size_t>(index)];
        if (--p.count == 0) pools_.erase(pools_.begin() + index);
    }
    // Index of the first pool of `leader` at or after `from`, or -1.
    int next_of_leader(int leader, int from = 0) const noexcept {
        for (std::size_t i = static_cast<std::size_t>(from); i < pools_.size(); ++i) {
            if (pools_[i].leader == leader) return static_cast<int>(i);
        }
        return -1;
    }
    Pool remove(int index) {
        const Pool p = pools_[static_cast<std::size_t>(index)];
        pools_.erase(pools_.begin() + index);
        return p;
    }

private:
    std::vector<Pool> pools_;
};

}  // namespace traveller
