// The battle's Python binding: _core.Grid and _core.Battle.
//
// The Python side (traveller_env/core/engine.py) loads and validates the scenario and hands the
// core flat data; every index and value is checked again here, at the boundary, with a
// ValueError naming the field. Events leave as the same dicts the Python engine appends to
// Battle.events (same types, same fields in the same order, same values): they are built here
// as Python objects, and range_m is rounded by Python's own round(x, 3), so json.dumps writes
// them byte for byte as it writes the Python engine's.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "checks.hpp"
#include "py_battle.hpp"
#include "traveller/battle.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using traveller::binding::Buffer;
using traveller::binding::checked_buffer;
using traveller::binding::Shape;
using traveller::binding::to_count;
using traveller::binding::to_u64;

namespace traveller::binding {

// Columns of the combatants' int32 table (traveller_env/core/engine.py INT_COLUMNS).
enum Col : int {
    cSide, cSTR, cDEX, cEND, cINT, cEDU, cSOC, cX, cY, cStance, cDrawn, cRadio, cPrepared,
    cMelee, cMagazine, cSpares, cStrReq, cDrawActions, cReloadActions, cDamageCount,
    cDamageModifier, cNeedsDraw, cProtection, cLvlWeapon, cLvlUnarmed, cLvlDodge,
    cLvlLeadership, cLvlTactics, cHasTactics, kIntColumns
};
static const char* const kColNames[kIntColumns] = {
    "side", "STR", "DEX", "END", "INT", "EDU", "SOC", "x", "y", "stance", "drawn", "radio",
    "prepared", "melee", "magazine", "spare_magazines", "str_requirement", "draw_actions",
    "reload_actions", "damage_count", "damage_modifier", "needs_draw", "protection",
    "skill_weapon", "skill_unarmed", "skill_dodge", "skill_leadership", "skill_tactics",
    "has_tactics"};
enum FCol : int { fMovement, fRange, kFloatColumns };

namespace {

[[noreturn]] void bad(const std::string& msg) { throw nb::value_error(msg.c_str()); }

int checked(const std::int32_t* row, int col, int lo, int hi, int i) {
    const int v = row[col];
    if (v < lo || v > hi) {
        bad("Battle: combatants[" + std::to_string(i) + "]." + kColNames[col] + " must be in [" +
            std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    }
    return v;
}

std::shared_ptr<Grid> make_grid(nb::handle width_obj, nb::handle height_obj, nb::bytes terrain) {
    const auto width = static_cast<int>(to_count(width_obj, "width", 1000));
    const auto height = static_cast<int>(to_count(height_obj, "height", 1000));
    if (width < 1 || height < 1) bad("Grid: width and height must be at least 1");
    const auto n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    if (terrain.size() != n) {
        bad("Grid: terrain must hold width*height = " + std::to_string(n) + " bytes, got " +
            std::to_string(terrain.size()));
    }
    std::vector<std::uint8_t> cells(n);
    const auto* src = reinterpret_cast<const std::uint8_t*>(terrain.c_str());
    for (std::size_t i = 0; i < n; ++i) {
        if (src[i] > kWall) {
            bad("Grid: terrain[" + std::to_string(i) + "] must be 0 (open), 1 (difficult), 2 "
                "(cover) or 3 (wall), got " + std::to_string(src[i]));
        }
        cells[i] = src[i];
    }
    return std::make_shared<Grid>(width, height, std::move(cells));
}

PyBattle make_battle(std::shared_ptr<Grid> grid, nb::handle ints_obj, nb::handle floats_obj,
                     std::vector<std::string> ids, std::vector<std::string> weapons,
                     std::vector<std::string> damage_dice, std::vector<std::string> sides,
                     bool hastening, bool reactions, double comms_range_m, nb::handle max_rounds,
                     nb::handle seed, bool record_events) {
    if (!grid) bad("Battle: grid must be a _core.Grid");
    const Buffer<std::int32_t> ints =
        checked_buffer<std::int32_t>(ints_obj, "Battle", "ints", Shape{{-1, kIntColumns}, {"N", ""}}, false);
    const std::int64_t n = ints.shape[0];
    const Buffer<double> floats =
        checked_buffer<double>(floats_obj, "Battle", "floats", Shape{{n, kFloatColumns}, {"N", ""}}, false);
    if (n < 2 || n > 4096) bad("Battle: between 2 and 4096 combatants, got " + std::to_string(n));
    const auto un = static_cast<std::size_t>(n);
    if (ids.size() != un || weapons.size() != un || damage_dice.size() != un) {
        bad("Battle: ids, weapons and damage_dice must each hold one string per combatant (" +
            std::to_string(n) + ")");
    }
    if (sides.size() != 2) bad("Battle: side_names must hold 2 names, got " + std::to_string(sides.size()));
    if (!(comms_range_m >= 0) || !std::isfinite(comms_range_m)) {
        bad("Battle: comms_range_m must be a finite number >= 0");
    }
    const auto rounds = static_cast<int>(to_count(max_rounds, "max_rounds", 10000));
    if (rounds < 1) bad("Battle: max_rounds must be in [1, 10000], got 0");
    const std::uint64_t s = to_u64(seed, "seed");
    std::vector<Combatant> cs(un);
    std::vector<std::uint8_t> taken(static_cast<std::size_t>(grid->width()) *
                                    static_cast<std::size_t>(grid->height()), 0);
    bool has_side[2] = {false, false};
    for (int i = 0; i < static_cast<int>(n); ++i) {
        const std::int32_t* row = ints.data + static_cast<std::int64_t>(i) * kIntColumns;
        const double* frow = floats.data + static_cast<std::int64_t>(i) * kFloatColumns;
        Combatant& c = cs[static_cast<std::size_t>(i)];
        c.side = checked(row, cSide, 0, 1, i);
        has_side[c.side] = true;
        c.order = i;
        for (int ch = 0; ch < kNumChars; ++ch) c.chars[ch] = checked(row, cSTR + ch, 1, 15, i);
        c.x = checked(row, cX, 0, grid->width() - 1, i);
        c.y = checked(row, cY, 0, grid->height() - 1, i);
        if (grid->at(c.x, c.y) == kWall) {
            bad("Battle: combatants[" + std::to_string(i) + "] stands inside a wall");
        }
        auto& cell = taken[static_cast<std::size_t>(c.y) * static_cast<std::size_t>(grid->width()) +
                           static_cast<std::size_t>(c.x)];
        if (cell) bad("Battle: combatants[" + std::to_string(i) + "] shares its square (R8.1)");
        cell = 1;
        c.stance = checked(row, cStance, 0, 2, i);
        c.drawn = checked(row, cDrawn, 0, 1, i) != 0;
        c.radio = checked(row, cRadio, 0, 1, i) != 0;
        c.prepared = checked(row, cPrepared, 0, 1, i) != 0;
        Weapon& w = c.weapon;
        w.melee = checked(row, cMelee, 0, 1, i) != 0;
        w.magazine = checked(row, cMagazine, w.melee ? 0 : 1, w.melee ? 0 : 1000000, i);
        w.spare_magazines = checked(row, cSpares, 0, 1000000, i);
        w.str_requirement = checked(row, cStrReq, 0, 15, i);
        w.draw_actions = checked(row, cDrawActions, 1, 6, i);
        w.reload_actions = checked(row, cReloadActions, 1, 6, i);
        w.damage_count = checked(row, cDamageCount, 1, 100, i);
        w.damage_modifier = checked(row, cDamageModifier, -1000, 1000, i);
        w.needs_draw = checked(row, cNeedsDraw, 0, 1, i) != 0;
        c.protection = checked(row, cProtection, 0, 30, i);
        c.skills.weapon = checked(row, cLvlWeapon, kNoSkill, 6, i);
        c.skills.unarmed = checked(row, cLvlUnarmed, kNoSkill, 6, i);
        c.skills.dodge = checked(row, cLvlDodge, kNoSkill, 6, i);
        c.skills.leadership = checked(row, cLvlLeadership, kNoSkill, 6, i);
        c.skills.tactics = checked(row, cLvlTactics, kNoSkill, 6, i);
        c.skills.has_tactics = checked(row, cHasTactics, 0, 1, i) != 0;
        c.movement_m = frow[fMovement];
        if (!(c.movement_m > 0 && c.movement_m <= 60)) {
            bad("Battle: combatants[" + std::to_string(i) + "].movement must be in (0, 60] metres");
        }
        w.range_m = frow[fRange];
        if (w.melee ? w.range_m != 0.0 : !(w.range_m > 0 && std::isfinite(w.range_m))) {
            bad("Battle: combatants[" + std::to_string(i) + "].range must be a positive finite "
                "number of metres (0 for a melee weapon)");
        }
        c.ammo = w.magazine;
        c.spares = w.spare_magazines;
    }
    if (!has_side[0] || !has_side[1]) bad("Battle: each side needs at least one combatant");
    Names names{std::move(ids), std::move(weapons), std::move(damage_dice), {sides[0], sides[1]}};
    RulesOptions options{hastening, reactions, comms_range_m, rounds};
    PyBattle out;
    out.grid = grid;
    out.battle = std::make_unique<Battle>(grid, std::move(cs), std::move(names), options, s, record_events);
    return out;
}

nb::object roll_obj(const Event& e) {
    if (!e.has_roll) return nb::none();
    nb::list l;
    l.append(static_cast<int>(e.roll[0]));
    l.append(static_cast<int>(e.roll[1]));
    return l;
}

nb::dict dms_obj(const Dms& d) {
    nb::dict out;
    for (int i = 0; i < d.n; ++i) out[dm_name(d.name[i])] = d.value[i];
    return out;
}

nb::list pos(int x, int y) {
    nb::list l;
    l.append(x);
    l.append(y);
    return l;
}

// One event as the Python engine's dict (rules/events.py: fields in log order).
nb::dict event_obj(const Battle& b, const Event& e, nb::handle py_round) {
    const Names& nm = b.names();
    auto id = [&](int i) -> nb::object {
        if (i < 0) return nb::none();
        return nb::str(nm.ids[static_cast<std::size_t>(i)].c_str());
    };
    nb::dict d;
    d["type"] = event_type_name(e.type);
    switch (e.type) {
        case EventType::initiative:
            d["actor"] = id(e.a);
            d["roll"] = roll_obj(e);
            d["dms"] = dms_obj(e.dms);
            d["initiative"] = e.v[0];
            d["ambush"] = e.v[1] != 0;
            break;
        case EventType::tactics:
            d["actor"] = id(e.a);
            d["unit"] = nm.sides[e.v[0]];
            d["roll"] = roll_obj(e);
            d["dms"] = dms_obj(e.dms);
            d["total"] = e.v[1];
            d["effect"] = e.v[2];
            d["added"] = e.v[2];
            break;
        case EventType::round: d["round"] = e.v[0]; break;
        case EventType::haste:
            d["actor"] = id(e.a);
            d["haste"] = e.v[0] != 0;
            d["initiative"] = e.v[1];
            break;
        case EventType::simultaneous: {
            nb::list g;
            for (std::uint32_t k = 0; k < e.pool_n; ++k) g.append(id(b.pool_ints()[e.pool_off + k]));
            d["group"] = g;
            d["initiative"] = e.v[0];
            d["DEX"] = e.v[1];
            break;
        }
        case EventType::turn:
            d["actor"] = id(e.a);
            d["initiative"] = e.v[0];
            d["round"] = e.v[1];
            break;
        case EventType::end_turn:
            d["actor"] = id(e.a);
            d["reason"] = kEndTurnReasons[e.v[0]];
            break;
        case EventType::move:
            d["actor"] = id(e.a);
            d["from"] = pos(e.v[0], e.v[1]);
            d["to"] = pos(e.v[2], e.v[3]);
            d["metres"] = e.f;
            break;
        case EventType::stance:
            d["actor"] = id(e.a);
            d["from"] = kStanceNames[e.v[0]];
            d["to"] = kStanceNames[e.v[1]];
            break;
        case EventType::draw:
        case EventType::reload:
            d["actor"] = id(e.a);
            d["weapon"] = nm.weapons[static_cast<std::size_t>(e.a)];
            d["progress"] = e.v[0];
            d["needed"] = e.v[1];
            d["done"] = e.v[2] != 0;
            break;
        case EventType::aim:
            d["actor"] = id(e.a);
            d["target"] = id(e.b);
            d["aim"] = e.v[0];
            break;
        case EventType::aim_lost:
        case EventType::bonus_granted:
            d["actor"] = id(e.a);
            d["target"] = id(e.b);
            break;
        case EventType::leadership:
            d["actor"] = id(e.a);
            d["roll"] = roll_obj(e);
            d["dms"] = dms_obj(e.dms);
            d["total"] = e.v[0];
            d["effect"] = e.v[1];
            d["bonuses"] = e.v[2];
            d["penalties"] = e.v[3];
            break;
        case EventType::bonus_used:
        case EventType::penalty_used:
            d["actor"] = id(e.a);
            d["check"] = kCheckNames[e.v[0]];
            break;
        case EventType::penalty_imposed:
            d["actor"] = id(e.a);
            d["target"] = id(e.b);
            d["leader"] = id(e.c);
            break;
        case EventType::reaction:
            d["actor"] = id(e.a);
            d["reaction"] = kReactionNames[e.v[0]];
            d["attacker"] = id(e.b);
            break;
        case EventType::attack: {
            const bool melee = e.v[0] != 0;
            d["actor"] = id(e.a);
            d["target"] = id(e.b);
            d["weapon"] = nm.weapons[static_cast<std::size_t>(e.a)];
            d["damage_dice"] = nm.damage_dice[static_cast<std::size_t>(e.a)];
            d["melee"] = melee;
            d["range_m"] = py_round(e.f, 3);
            d["actor_pos"] = pos(e.v[1], e.v[2]);
            d["target_pos"] = pos(e.v[3], e.v[4]);
            d["ammo_left"] = melee ? nb::object(nb::none()) : nb::object(nb::int_(e.v[5]));
            d["reaction"] = kReactionNames[e.v[6]];
            d["roll"] = roll_obj(e);
            d["dms"] = dms_obj(e.dms);
            d["total"] = e.v[7];
            d["effect"] = e.v[8];
            d["hit"] = e.v[9] != 0;
            if (e.v[9]) {
                nb::list dr;
                for (std::uint32_t k = 0; k < e.pool_n; ++k) dr.append(b.pool_ints()[e.pool_off + k]);
                d["damage_roll"] = dr;
            } else {
                d["damage_roll"] = nb::none();
            }
            d["damage"] = e.v[10];
            d["protection"] = e.v[11];
            nb::dict after;
            after["STR"] = e.v[12];
            after["DEX"] = e.v[13];
            after["END"] = e.v[14];
            d["target_after"] = after;
            break;
        }
        case EventType::incapacitated:
            d["actor"] = id(e.a);
            d["by"] = id(e.b);
            d["state"] = e.v[0] ? "dead" : "unconscious";
            d["stays_until_group_ends"] = e.v[1] != 0;
            break;
        case EventType::out: d["actor"] = id(e.a); break;
        case EventType::lapse:
            d["actor"] = id(e.a);
            d["kind"] = kPoolKindNames[e.v[0]];
            d["count"] = e.v[1];
            d["reason"] = kLapseReasons[e.v[2]];
            break;
        case EventType::initiative_change:
            d["actor"] = id(e.a);
            d["change"] = e.v[0];
            d["reason"] = kInitChangeReasons[e.v[1]];
            d["applies_to"] = e.v[2] ? "next_round" : "current_round";
            d["initiative"] = e.v[3];
            d["next_round_change"] = e.v[4];
            break;
        case EventType::illegal_action:
            d["actor"] = id(e.a);
            d["label"] = b.strings()[static_cast<std::size_t>(e.v[0])];
            d["reason"] = b.strings()[static_cast<std::size_t>(e.v[0]) + 1];
            break;
        case EventType::end:
            d["round"] = e.v[0];
            d["winner"] = e.v[1] < 0 ? nb::object(nb::none()) : nb::object(nb::str(nm.sides[e.v[1]].c_str()));
            d["reason"] = kEndReasons[e.v[2]];
            break;
    }
    return d;
}

int checked_action(const Battle& b, nb::handle index_obj) {
    const std::int64_t limit = b.num_actions() - 1;
    return static_cast<int>(to_count(index_obj, "action", limit));
}

}  // namespace

void bind_battle(nb::module_& m) {
    nb::class_<Grid>(m, "Grid", "A battle map (R8.1): terrain codes 0 open, 1 difficult, 2 cover, 3 wall.")
        .def_static("create", &make_grid, "width"_a.none(), "height"_a.none(), "terrain"_a,
                    "A map of width x height squares from row-major terrain codes (bytes).")
        .def_prop_ro("width", &Grid::width)
        .def_prop_ro("height", &Grid::height)
        .def("line_of_sight", [](const Grid& g, int ax, int ay, int bx, int by) {
            if (!g.in_bounds(ax, ay) || !g.in_bounds(bx, by)) bad("Grid.line_of_sight: square off the map");
            return g.line_of_sight(ax, ay, bx, by);
        })
        .def("cover_between", [](const Grid& g, int ax, int ay, int bx, int by) {
            if (!g.in_bounds(ax, ay) || !g.in_bounds(bx, by)) bad("Grid.cover_between: square off the map");
            return g.cover_between(ax, ay, bx, by);
        })
        .def_static("distance_m", &Grid::distance_m);

    nb::class_<PyBattle>(m, "Battle", "One battle of the compiled core (see traveller_env.core.engine).")
        .def_static("create", &make_battle, "grid"_a, "ints"_a.none(), "floats"_a.none(), "ids"_a,
                    "weapons"_a, "damage_dice"_a, "side_names"_a, "hastening"_a, "reactions"_a,
                    "comms_range_m"_a, "max_rounds"_a.none(), "seed"_a.none(), "record_events"_a)
        .def_prop_ro("num_actions", [](const PyBattle& p) { return p.battle->num_actions(); })
        .def_prop_ro("max_move_squares", [](const PyBattle& p) { return p.battle->max_move_squares(); })
        .def_prop_ro("done", [](const PyBattle& p) { return p.battle->done(); })
        .def_prop_ro("truncated", [](const PyBattle& p) { return p.battle->truncated(); })
        .def_prop_ro("round", [](const PyBattle& p) { return p.battle->round(); })
        .def_prop_ro("phase", [](const PyBattle& p) { return std::string(phase_name(p.battle->phase())); })
        .def_prop_ro("decider", [](const PyBattle& p) { return p.battle->decider(); })
        .def_prop_ro("winner", [](const PyBattle& p) { return p.battle->winner(); })
        .def_prop_ro("num_events", [](const PyBattle& p) { return p.battle->events().size(); })
        .def("dice_state", [](const PyBattle& p) {
            return nb::make_tuple(p.battle->dice().state, p.battle->dice().inc);
        })
        .def("summary", [](const PyBattle& p) {
            const Summary& s = p.battle->summary();
            return nb::make_tuple(s.damage_dealt, s.damage_taken, s.dropouts);
        })
        .def("label", [](const PyBattle& p, nb::handle i) { return p.battle->label(checked_action(*p.battle, i)); })
        .def("mask", [](const PyBattle& p, nb::handle out_obj) {
            const Buffer<std::uint8_t> out = checked_buffer<std::uint8_t>(
                out_obj, "Battle.mask", "out", Shape{{p.battle->num_actions()}, {"A"}}, true);
            p.battle->legal_mask(out.data);
        }, "out"_a.none(), "Write the action mask (1: legal) into out (uint8[num_actions]).")
        .def("why_illegal", [](const PyBattle& p, nb::handle i) -> nb::object {
            const std::string r = p.battle->why_illegal(checked_action(*p.battle, i));
            if (r.empty()) return nb::none();
            return nb::str(r.c_str());
        })
        .def("step", [](PyBattle& p, nb::handle i) {
            Battle& b = *p.battle;
            const int index = checked_action(b, i);
            const std::string r = b.why_illegal(index);
            if (!r.empty()) {
                const std::string who = b.done() ? "" : b.names().ids[static_cast<std::size_t>(b.decider())] + ": ";
                bad(who + "illegal action '" + b.label(index) + "' (index " + std::to_string(index) + "): " + r);
            }
            b.apply(index);
        }, "action"_a.none(), "Take a legal action (ValueError naming the label and the reason otherwise).")
        .def("forfeit", [](PyBattle& p, const std::string& label, const std::string& reason) {
            p.battle->forfeit(label, reason);
        })
        .def("events", [](const PyBattle& p, nb::handle start_obj) {
            const Battle& b = *p.battle;
            const auto start = static_cast<std::size_t>(
                to_count(start_obj, "start", static_cast<std::int64_t>(b.events().size())));
            nb::object py_round = nb::module_::import_("builtins").attr("round");
            nb::list out;
            for (std::size_t k = start; k < b.events().size(); ++k) out.append(event_obj(b, b.events()[k], py_round));
            return out;
        }, "start"_a.none() = 0, "The event log from index `start`, as the Python engine's dicts.");
}

}  // namespace traveller::binding
