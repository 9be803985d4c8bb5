// _core.Battle's C++ side, shared by battle_binding.cpp (creation, stepping, the event log) and
// policies_binding.cpp (the in-core policies act on it).
#pragma once

#include <memory>

#include "traveller/battle.hpp"

namespace traveller::binding {

struct PyBattle {
    std::shared_ptr<const Grid> grid;
    std::unique_ptr<Battle> battle;
};

}  // namespace traveller::binding
