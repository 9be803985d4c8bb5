// Movement (R4.6): traveller_env/rules/movement.py.
#pragma once

namespace traveller {

inline constexpr double kSquareM = 1.5;
inline constexpr double kProneMoveFactor = 0.25;

enum Stance : int { kStand = 0, kCrouch = 1, kProne = 2 };

// Metres one Move action may cover: the Movement score, quartered when prone.
constexpr double move_budget_m(double movement_m, int stance) noexcept {
    return stance == kProne ? movement_m * kProneMoveFactor : movement_m;
}

}  // namespace traveller
