// Movement (R4.6): traveller_env/rules/movement.py.
#pragma once

#include <cmath>

namespace traveller {

inline constexpr double kSquareM = 1.5;
inline constexpr double kProneMoveFactor = 0.25;

enum Stance : int { kStand = 0, kCrouch = 1, kProne = 2 };

// Metres one Move action may cover: the Movement score, quartered when prone.
constexpr double move_budget_m(double movement_m, int stance) noexcept {
    return stance == kProne ? movement_m * kProneMoveFactor : movement_m;
}

// Python's float floor division `a // b` (CPython float_floor_div).
inline double py_floordiv(double a, double b) noexcept {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
    if (div != 0.0) {
        double floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
        return floordiv;
    }
    return std::copysign(0.0, a / b);
}

// Open squares one Move action crosses with budget_m metres, at least one (squares_per_move).
inline int squares_per_move(double budget_m) noexcept {
    const int k = static_cast<int>(py_floordiv(budget_m, kSquareM));
    return k > 1 ? k : 1;
}

}  // namespace traveller
