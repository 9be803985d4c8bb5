// A scenario's flat data, checked at the binding boundary (battle_binding.cpp): what
// _core.Battle.create and _core.VecBattles.create both take (traveller_env/core/engine.py
// flatten_scenario).
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "traveller/battle.hpp"
#include "traveller/observation.hpp"

namespace traveller::binding {

struct BattleSpec {
    std::shared_ptr<const Grid> grid;
    std::vector<Combatant> combatants;  // before Initiative, as the Battle constructor takes them
    Names names;
    RulesOptions options;
};

// Every value checked, with a ValueError naming the field.
BattleSpec parse_battle(std::shared_ptr<Grid> grid, nanobind::handle ints_obj,
                        nanobind::handle floats_obj, std::vector<std::string> ids,
                        std::vector<std::string> weapons, std::vector<std::string> damage_dice,
                        std::vector<std::string> sides, bool hastening, bool reactions,
                        double comms_range_m, nanobind::handle max_rounds);

// A fixed observation layout from Python: None (nullopt: the scenario's own) or a tuple of
// four ints (allies, enemies, map_size, max_move_squares), each checked for its range
// (ObsLayout::malformed); a ValueError naming `fn` and the field otherwise. Whether a scenario
// fits it is the Observer's check.
std::optional<ObsLayout> parse_layout(nanobind::handle layout, const char* fn);

}  // namespace traveller::binding
