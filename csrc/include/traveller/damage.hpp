// Damage to characteristics (R6.2-R6.3): traveller_env/rules/damage.py.
#pragma once

namespace traveller {

// STR, DEX, END after `damage` points: END first, then the higher of STR and DEX (STR on a
// tie), then the other; nothing below 0.
constexpr void apply_damage(int& str, int& dex, int& end, int damage) noexcept {
    int take = damage < end ? damage : end;
    end -= take;
    const int rest = damage - take;
    if (str >= dex) {
        take = rest < str ? rest : str;
        str -= take;
        const int more = rest - take < dex ? rest - take : dex;
        dex -= more;
    } else {
        take = rest < dex ? rest : dex;
        dex -= take;
        const int more = rest - take < str ? rest - take : str;
        str -= more;
    }
}

constexpr bool is_incapacitated(int str, int dex, int end) noexcept {
    return end == 0 && (str == 0 || dex == 0);
}

constexpr bool is_dead(int str, int dex, int end) noexcept {
    return end == 0 && str == 0 && dex == 0;
}

// The least damage one hit must do to incapacitate: all of END, then the higher of STR and DEX;
// 0 when already incapacitated (damage_to_incapacitate).
constexpr int damage_to_incapacitate(int str, int dex, int end) noexcept {
    if (is_incapacitated(str, dex, end)) return 0;
    return end + (str > dex ? str : dex);
}

}  // namespace traveller
