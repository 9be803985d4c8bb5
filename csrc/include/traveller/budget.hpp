// The turn budget (R2.1): traveller_env/rules/budget.py.
#pragma once

namespace traveller {

inline constexpr int kMinorsWithSignificant = 1;
inline constexpr int kMinorsWithoutSignificant = 3;

struct Budget {
    int minors_used = 0;
    bool significant_used = false;

    constexpr bool significant_left() const noexcept {
        return !significant_used && minors_used <= kMinorsWithSignificant;
    }
    constexpr int minors_left() const noexcept {
        const int cap = significant_used ? kMinorsWithSignificant : kMinorsWithoutSignificant;
        return cap - minors_used > 0 ? cap - minors_used : 0;
    }
    constexpr bool spent() const noexcept { return !significant_left() && minors_left() <= 0; }

    // Can a Significant action follow `more` further Minor actions, when each turn starts afresh
    // after three Minors (Budget.significant_after_minors: the planning view over several turns)?
    static constexpr bool significant_after_minors(int minors_used, int more) noexcept {
        return Budget{(minors_used + more) % kMinorsWithoutSignificant, false}.significant_left();
    }
};

}  // namespace traveller
