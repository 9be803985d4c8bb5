// Characteristic DMs, skill DMs and checks (R1.2-R1.4): traveller_env/rules/checks.py.
//
// Skill levels arrive resolved (the Python side runs `checks.skill_level` once per combatant and
// skill the rules ask about); kNoSkill stands for Python's None (unskilled).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "rng.hpp"

namespace traveller {

inline constexpr int kTargetNumber = 8;
inline constexpr int kUnskilledDm = -3;
inline constexpr int kNoSkill = -1;

// Characteristics, in the order of checks.CHARACTERISTICS.
enum Char : int { kSTR = 0, kDEX, kEND, kINT, kEDU, kSOC, kNumChars };

// R1.3, indexed by characteristic value 0..15 (15+ clamps to the last entry).
constexpr int characteristic_dm(int value) noexcept {
    constexpr int table[16] = {-3, -2, -2, -1, -1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3};
    if (value <= 0) return -3;
    return table[value > 15 ? 15 : value];
}

// The DM a skill gives a check: its level, or -3 when unskilled (R1.4).
constexpr int skill_dm(int level) noexcept { return level == kNoSkill ? kUnskilledDm : level; }

// The names a DM can carry in the event log, in no particular order.
enum class DmName : std::uint8_t {
    skill, STR, DEX, END, INT, EDU, SOC, range, aim, cover, prone, haste, dodge, parry,
    leadership_bonus, leadership_penalty
};

inline const char* dm_name(DmName n) noexcept {
    static const char* const names[] = {"skill", "STR",   "DEX",   "END",   "INT",
                                        "EDU",   "SOC",   "range", "aim",   "cover",
                                        "prone", "haste", "dodge", "parry", "leadership_bonus",
                                        "leadership_penalty"};
    return names[static_cast<int>(n)];
}

// An ordered set of named DMs (a Python dict of str -> int, in insertion order).
struct Dms {
    static constexpr int kMax = 12;
    int n = 0;
    DmName name[kMax] = {};
    int value[kMax] = {};

    // dms[name] = value: replaces an existing entry in place, else appends.
    void set(DmName nm, int v) noexcept {
        for (int i = 0; i < n; ++i) {
            if (name[i] == nm) {
                value[i] = v;
                return;
            }
        }
        name[n] = nm;
        value[n] = v;
        ++n;
    }
    int total() const noexcept {
        int t = 0;
        for (int i = 0; i < n; ++i) t += value[i];
        return t;
    }
};

struct CheckResult {
    int roll[2];
    int total;
    int effect;
};

// P(2D == s) for s in 2..12, exactly as checks._P2D6: (6 - |s - 7|) / 36.
constexpr double p2d6(int s) noexcept {
    const int d = s > 7 ? s - 7 : 7 - s;
    return static_cast<double>(6 - d) / 36.0;
}

// checks.success_probability: P(2D + dm >= 8), summed over s = 2..12 in the same order.
constexpr double success_probability(int dm) noexcept {
    double p = 0.0;
    for (int s = 2; s <= 12; ++s) {
        if (s + dm >= kTargetNumber) p += p2d6(s);
    }
    return p;
}

// The exact distribution of the sum of n six-sided dice (checks.dice_sum_distribution), the same
// additions in the same order: out[s] = P(sum == s) for s in 0..6n (0 below n).
inline void dice_sum_distribution(int n, std::vector<double>& out) {
    out.assign(static_cast<std::size_t>(6 * n + 1), 0.0);
    std::vector<double> cur(out.size(), 0.0);
    cur[0] = 1.0;
    for (int k = 0; k < n; ++k) {
        std::fill(out.begin(), out.end(), 0.0);
        for (int s = k; s <= 6 * k; ++s) {  // the sums present after k dice, ascending
            const double p = cur[static_cast<std::size_t>(s)];
            for (int face = 1; face <= 6; ++face) out[static_cast<std::size_t>(s + face)] += p / 6;
        }
        cur.swap(out);
    }
    out.swap(cur);
}

// Roll 2D + DMs (R1.2); success is effect >= 0.
inline CheckResult roll_check(rng::Pcg32& dice, const Dms& dms) noexcept {
    CheckResult r{};
    r.roll[0] = dice.d6();
    r.roll[1] = dice.d6();
    r.total = r.roll[0] + r.roll[1] + dms.total();
    r.effect = r.total - kTargetNumber;
    return r;
}

}  // namespace traveller
