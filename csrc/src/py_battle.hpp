// _core.Battle's C++ side, shared by battle_binding.cpp (creation, stepping, the event log),
// observation_binding.cpp (the observation vector and the global state) and
// policies_binding.cpp (the in-core policies act on it).
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "traveller/battle.hpp"
#include "traveller/observation.hpp"

namespace traveller::binding {

struct PyBattle {
    std::shared_ptr<const Grid> grid;
    std::unique_ptr<Battle> battle;
    // built from the battle at its start; shared with its look-ahead copies (simulate)
    std::shared_ptr<const Observer> observer;
    std::vector<std::uint8_t> scratch;         // the mask, for a cheap legality test in step
    mutable nanobind::object id_strs;          // the ids as a list of str (events), made once
};

}  // namespace traveller::binding
