// _core.Battle's C++ side, shared by battle_binding.cpp (creation, stepping, the event log) and
// observation_binding.cpp (the observation vector and the global state).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "traveller/battle.hpp"
#include "traveller/observation.hpp"

namespace traveller::binding {

struct PyBattle {
    std::shared_ptr<const Grid> grid;
    std::unique_ptr<Battle> battle;
    std::unique_ptr<const Observer> observer;  // built from the battle at its start
    std::vector<std::uint8_t> scratch;         // the mask, for a cheap legality test in step
};

}  // namespace traveller::binding
