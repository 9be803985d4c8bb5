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
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "battle_spec.hpp"
#include "checks.hpp"
#include "py_battle.hpp"
#include "traveller/battle.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using traveller::binding::Buffer;
using traveller::binding::checked_buffer;
using traveller::binding::HotBuffer;
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

}  // namespace

BattleSpec parse_battle(std::shared_ptr<Grid> grid, nb::handle ints_obj, nb::handle floats_obj,
                     std::vector<std::string> ids, std::vector<std::string> weapons,
                     std::vector<std::string> damage_dice, std::vector<std::string> sides,
                        bool hastening, bool reactions, double comms_range_m,
                        nb::handle max_rounds) {
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
    BattleSpec spec;
    spec.grid = grid;
    spec.combatants = std::move(cs);
    spec.names = Names{std::move(ids), std::move(weapons), std::move(damage_dice), {sides[0], sides[1]}};
    spec.options = RulesOptions{hastening, reactions, comms_range_m, rounds};
    return spec;
}

std::optional<ObsLayout> parse_layout(nb::handle layout, const char* fn) {
    if (layout.is_none()) return std::nullopt;
    if (!PyTuple_Check(layout.ptr()) || PyTuple_GET_SIZE(layout.ptr()) != 4) {
        bad(std::string(fn) + ": layout must be None or a tuple (allies, enemies, map_size, "
            "max_move_squares) of ints, got " + py_repr(layout));
    }
    auto field = [&](int k, const char* name) {
        const std::string what = std::string(fn) + ": layout." + name;
        return static_cast<int>(to_count(PyTuple_GET_ITEM(layout.ptr(), k), what.c_str(), 1000));
    };
    ObsLayout out;
    out.allies = field(0, "allies");
    out.enemies = field(1, "enemies");
    out.map_size = field(2, "map_size");
    out.max_move_squares = field(3, "max_move_squares");
    const std::string why = out.malformed();
    if (!why.empty()) bad(std::string(fn) + ": " + why);
    return out;
}

namespace {

PyBattle make_battle(std::shared_ptr<Grid> grid, nb::handle ints_obj, nb::handle floats_obj,
                     std::vector<std::string> ids, std::vector<std::string> weapons,
                     std::vector<std::string> damage_dice, std::vector<std::string> sides,
                     bool hastening, bool reactions, double comms_range_m, nb::handle max_rounds,
                     nb::handle seed, bool record_events, bool move_view, bool aim_view,
                     bool attack_view, nb::handle layout_obj) {
    const std::optional<ObsLayout> layout = parse_layout(layout_obj, "Battle.create");
    BattleSpec spec = parse_battle(grid, ints_obj, floats_obj, std::move(ids), std::move(weapons),
                                   std::move(damage_dice), std::move(sides), hastening, reactions,
                                   comms_range_m, max_rounds);
    const std::uint64_t s = to_u64(seed, "seed");
    PyBattle out;
    out.grid = spec.grid;
    out.battle = std::make_unique<Battle>(spec.grid, std::move(spec.combatants),
                                          std::move(spec.names), spec.options, s, record_events);
    try {
        out.observer = std::make_unique<const Observer>(*out.battle, move_view, aim_view,
                                                        attack_view, layout);
    } catch (const std::invalid_argument& e) {
        bad(std::string("Battle.create: ") + e.what());
    }
    out.scratch.assign(static_cast<std::size_t>(out.battle->num_actions()), 0);
    return out;
}

nb::dict event_obj(const Battle& b, const Event& e, nb::handle py_round, nb::handle ids);

// An interned Python str for a constant C string (a field name, an event type, a stance, a
// reason): made once per distinct pointer and kept for the process, so building an event dict
// creates and hashes no key string. The GIL guards the table (events are built with it held).
nb::handle key(const char* s) {
    static std::unordered_map<const char*, PyObject*> cache;
    const auto it = cache.find(s);
    if (it != cache.end()) return it->second;
    PyObject* o = PyUnicode_InternFromString(s);
    if (o == nullptr) throw nb::python_error();
    cache.emplace(s, o);
    return o;
}

// The combatants' ids as a Python list of str, made once per battle (the events' actor fields).
nb::handle id_strs(const PyBattle& p) {
    if (!p.id_strs.is_valid()) {
        nb::list l;
        for (const std::string& s : p.battle->names().ids) l.append(nb::str(s.c_str()));
        p.id_strs = std::move(l);
    }
    return p.id_strs;
}

// The event log's entries [start, end) appended to `out` as the Python engine's dicts.
void append_events(const PyBattle& p, std::size_t start, nb::handle out) {
    // Looked up once and kept for the process (never released: no destructor at exit).
    static const nb::handle py_round = nb::object(nb::module_::import_("builtins").attr("round")).release();
    const Battle& b = *p.battle;
    nb::handle ids = id_strs(p);
    for (std::size_t k = start; k < b.events().size(); ++k) {
        nb::dict d = event_obj(b, b.events()[k], py_round, ids);
        if (PyList_Append(out.ptr(), d.ptr()) != 0) throw nb::python_error();
    }
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
    for (int i = 0; i < d.n; ++i) out[key(dm_name(d.name[i]))] = d.value[i];
    return out;
}

nb::list pos(int x, int y) {
    nb::list l;
    l.append(x);
    l.append(y);
    return l;
}

// One event as the Python engine's dict (rules/events.py: fields in log order).
nb::dict event_obj(const Battle& b, const Event& e, nb::handle py_round, nb::handle ids) {
    const Names& nm = b.names();
    auto id = [&](int i) -> nb::object {
        if (i < 0) return nb::none();
        return nb::borrow(PyList_GET_ITEM(ids.ptr(), i));
    };
    nb::dict d;
    d[key("type")] = key(event_type_name(e.type));
    switch (e.type) {
        case EventType::initiative:
            d[key("actor")] = id(e.a);
            d[key("roll")] = roll_obj(e);
            d[key("dms")] = dms_obj(e.dms);
            d[key("initiative")] = e.v[0];
            d[key("ambush")] = e.v[1] != 0;
            break;
        case EventType::tactics:
            d[key("actor")] = id(e.a);
            d[key("unit")] = nm.sides[e.v[0]];
            d[key("roll")] = roll_obj(e);
            d[key("dms")] = dms_obj(e.dms);
            d[key("total")] = e.v[1];
            d[key("effect")] = e.v[2];
            d[key("added")] = e.v[2];
            break;
        case EventType::round: d[key("round")] = e.v[0]; break;
        case EventType::haste:
            d[key("actor")] = id(e.a);
            d[key("haste")] = e.v[0] != 0;
            d[key("initiative")] = e.v[1];
            break;
        case EventType::simultaneous: {
            nb::list g;
            for (std::uint32_t k = 0; k < e.pool_n; ++k) g.append(id(b.pool_ints()[e.pool_off + k]));
            d[key("group")] = g;
            d[key("initiative")] = e.v[0];
            d[key("DEX")] = e.v[1];
            break;
        }
        case EventType::turn:
            d[key("actor")] = id(e.a);
            d[key("initiative")] = e.v[0];
            d[key("round")] = e.v[1];
            break;
        case EventType::end_turn:
            d[key("actor")] = id(e.a);
            d[key("reason")] = key(kEndTurnReasons[e.v[0]]);
            break;
        case EventType::move:
            d[key("actor")] = id(e.a);
            d[key("from")] = pos(e.v[0], e.v[1]);
            d[key("to")] = pos(e.v[2], e.v[3]);
            d[key("metres")] = e.f;
            break;
        case EventType::stance:
            d[key("actor")] = id(e.a);
            d[key("from")] = key(kStanceNames[e.v[0]]);
            d[key("to")] = key(kStanceNames[e.v[1]]);
            break;
        case EventType::draw:
        case EventType::reload:
            d[key("actor")] = id(e.a);
            d[key("weapon")] = nm.weapons[static_cast<std::size_t>(e.a)];
            d[key("progress")] = e.v[0];
            d[key("needed")] = e.v[1];
            d[key("done")] = e.v[2] != 0;
            break;
        case EventType::aim:
            d[key("actor")] = id(e.a);
            d[key("target")] = id(e.b);
            d[key("aim")] = e.v[0];
            break;
        case EventType::aim_lost:
        case EventType::bonus_granted:
            d[key("actor")] = id(e.a);
            d[key("target")] = id(e.b);
            break;
        case EventType::leadership:
            d[key("actor")] = id(e.a);
            d[key("roll")] = roll_obj(e);
            d[key("dms")] = dms_obj(e.dms);
            d[key("total")] = e.v[0];
            d[key("effect")] = e.v[1];
            d[key("bonuses")] = e.v[2];
            d[key("penalties")] = e.v[3];
            break;
        case EventType::bonus_used:
        case EventType::penalty_used:
            d[key("actor")] = id(e.a);
            d[key("check")] = key(kCheckNames[e.v[0]]);
            break;
        case EventType::penalty_imposed:
            d[key("actor")] = id(e.a);
            d[key("target")] = id(e.b);
            d[key("leader")] = id(e.c);
            break;
        case EventType::reaction:
            d[key("actor")] = id(e.a);
            d[key("reaction")] = key(kReactionNames[e.v[0]]);
            d[key("attacker")] = id(e.b);
            break;
        case EventType::attack: {
            const bool melee = e.v[0] != 0;
            d[key("actor")] = id(e.a);
            d[key("target")] = id(e.b);
            d[key("weapon")] = nm.weapons[static_cast<std::size_t>(e.a)];
            d[key("damage_dice")] = nm.damage_dice[static_cast<std::size_t>(e.a)];
            d[key("melee")] = melee;
            d[key("range_m")] = py_round(e.f, 3);
            d[key("actor_pos")] = pos(e.v[1], e.v[2]);
            d[key("target_pos")] = pos(e.v[3], e.v[4]);
            d[key("ammo_left")] = melee ? nb::object(nb::none()) : nb::object(nb::int_(e.v[5]));
            d[key("reaction")] = key(kReactionNames[e.v[6]]);
            d[key("roll")] = roll_obj(e);
            d[key("dms")] = dms_obj(e.dms);
            d[key("total")] = e.v[7];
            d[key("effect")] = e.v[8];
            d[key("hit")] = e.v[9] != 0;
            if (e.v[9]) {
                nb::list dr;
                for (std::uint32_t k = 0; k < e.pool_n; ++k) dr.append(b.pool_ints()[e.pool_off + k]);
                d[key("damage_roll")] = dr;
            } else {
                d[key("damage_roll")] = nb::none();
            }
            d[key("damage")] = e.v[10];
            d[key("protection")] = e.v[11];
            nb::dict after;
            after[key("STR")] = e.v[12];
            after[key("DEX")] = e.v[13];
            after[key("END")] = e.v[14];
            d[key("target_after")] = after;
            break;
        }
        case EventType::incapacitated:
            d[key("actor")] = id(e.a);
            d[key("by")] = id(e.b);
            d[key("state")] = key(e.v[0] ? "dead" : "unconscious");
            d[key("stays_until_group_ends")] = e.v[1] != 0;
            break;
        case EventType::out: d[key("actor")] = id(e.a); break;
        case EventType::lapse:
            d[key("actor")] = id(e.a);
            d[key("kind")] = key(kPoolKindNames[e.v[0]]);
            d[key("count")] = e.v[1];
            d[key("reason")] = key(kLapseReasons[e.v[2]]);
            break;
        case EventType::initiative_change:
            d[key("actor")] = id(e.a);
            d[key("change")] = e.v[0];
            d[key("reason")] = key(kInitChangeReasons[e.v[1]]);
            d[key("applies_to")] = key(e.v[2] ? "next_round" : "current_round");
            d[key("initiative")] = e.v[3];
            d[key("next_round_change")] = e.v[4];
            break;
        case EventType::illegal_action:
            d[key("actor")] = id(e.a);
            d[key("label")] = b.strings()[static_cast<std::size_t>(e.v[0])];
            d[key("reason")] = b.strings()[static_cast<std::size_t>(e.v[0]) + 1];
            break;
        case EventType::end:
            d[key("round")] = e.v[0];
            d[key("winner")] = e.v[1] < 0 ? nb::object(nb::none()) : nb::object(nb::str(nm.sides[e.v[1]].c_str()));
            d[key("reason")] = key(kEndReasons[e.v[2]]);
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
                    "comms_range_m"_a, "max_rounds"_a.none(), "seed"_a.none(), "record_events"_a,
                    "move_view"_a = false, "aim_view"_a = false, "attack_view"_a = false,
                    "layout"_a.none() = nb::none())
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
        .def("out", [](const PyBattle& p, nb::handle i) {
            const auto c = static_cast<int>(to_count(i, "combatant", p.battle->num_combatants() - 1));
            return p.battle->combatant(c).out;
        }, "combatant"_a.none(), "Whether combatant `i` is out of play (R2.5).")
        .def_prop_ro("dropouts", [](const PyBattle& p) { return p.battle->summary().dropouts; })
        .def("summary", [](const PyBattle& p) {
            const Summary& s = p.battle->summary();
            return nb::make_tuple(s.damage_dealt, s.damage_taken, s.dropouts);
        })
        .def("label", [](const PyBattle& p, nb::handle i) { return p.battle->label(checked_action(*p.battle, i)); })
        .def("mask", [](const PyBattle& p, nb::handle out_obj) {
            const HotBuffer<std::uint8_t> out(out_obj, "Battle.mask", "out", p.battle->num_actions(), "A");
            p.battle->legal_mask(out.data());
        }, "out"_a.none(), "Write the action mask (1: legal) into out (uint8[num_actions]).")
        .def("why_illegal", [](const PyBattle& p, nb::handle i) -> nb::object {
            const std::string r = p.battle->why_illegal(checked_action(*p.battle, i));
            if (r.empty()) return nb::none();
            return nb::str(r.c_str());
        })
        .def("step", [](PyBattle& p, nb::handle i) {
            Battle& b = *p.battle;
            const int index = checked_action(b, i);
            b.legal_mask(p.scratch.data());  // the refusal text only when refused
            const std::string r = p.scratch[static_cast<std::size_t>(index)] ? std::string() : b.why_illegal(index);
            if (!r.empty()) {
                const std::string who = b.done() ? "" : b.names().ids[static_cast<std::size_t>(b.decider())] + ": ";
                bad(who + "illegal action '" + b.label(index) + "' (index " + std::to_string(index) + "): " + r);
            }
            b.apply(index);
        }, "action"_a.none(), "Take a legal action (ValueError naming the label and the reason otherwise).")
        .def("snapshot", [](const PyBattle& p) {
            const std::string bytes = p.battle->snapshot();
            return nb::bytes(bytes.data(), bytes.size());
        }, "The complete state, dice included, as bytes (traveller_env.rules.snapshot's format).")
        .def("restore", [](PyBattle& p, nb::handle data) {
            if (!PyBytes_Check(data.ptr())) {
                throw nb::type_error(("a battle snapshot is bytes, got " +
                                      std::string(Py_TYPE(data.ptr())->tp_name)).c_str());
            }
            const nb::bytes b = nb::borrow<nb::bytes>(data);
            try {
                p.battle->restore(std::string(b.c_str(), b.size()));
            } catch (const std::invalid_argument& e) {
                bad(e.what());
            }
        }, "data"_a.none(), "Put a snapshot back (ValueError naming what is wrong; nothing changes then).")
        .def("simulate", [](const PyBattle& p, nb::handle seed, bool record_events,
                            nb::handle move_view, nb::handle aim_view, nb::handle attack_view) {
            const Observer& ob = *p.observer;
            auto flag = [](nb::handle v, bool same, const char* name) {
                if (v.is_none()) return same;
                if (!PyBool_Check(v.ptr())) bad(std::string("Battle.simulate: ") + name + " must be a bool or None");
                return v.ptr() == Py_True;
            };
            const bool mv = flag(move_view, ob.move_view(), "move_view");
            const bool av = flag(aim_view, ob.aim_view(), "aim_view");
            const bool kv = flag(attack_view, ob.attack_view(), "attack_view");
            PyBattle out;
            out.grid = p.grid;
            out.battle = std::make_unique<Battle>(p.battle->simulation(to_u64(seed, "seed"), record_events));
            if (mv == ob.move_view() && av == ob.aim_view() && kv == ob.attack_view()) {
                out.observer = p.observer;
            } else {
                out.observer = std::make_shared<const Observer>(
                    ob.with_views(mv, av, kv));
            }
            out.scratch = p.scratch;
            return out;
        }, "seed"_a.none(), "record_events"_a = false, "move_view"_a.none() = nb::none(),
           "aim_view"_a.none() = nb::none(), "attack_view"_a.none() = nb::none(),
           "An independent copy for look-ahead search with fresh dice seeded by `seed` (the "
           "Python engine's BattleView.simulate); record_events False: an empty log, nothing "
           "recorded. The views (None: this battle's) set what the copy's observe() writes.")
        .def("forfeit", [](PyBattle& p, const std::string& label, const std::string& reason) {
            p.battle->forfeit(label, reason);
        })
        .def("events", [](const PyBattle& p, nb::handle start_obj) {
            const Battle& b = *p.battle;
            const auto start = static_cast<std::size_t>(
                to_count(start_obj, "start", static_cast<std::int64_t>(b.events().size())));
            nb::list out;
            append_events(p, start, out);
            return out;
        }, "start"_a.none() = 0, "The event log from index `start`, as the Python engine's dicts.")
        // The AEC env's hot path (traveller_env/core/aec.py): one call per step each.
        .def("aec_step", [](PyBattle& p, nb::handle i) {
            Battle& b = *p.battle;
            const int index = checked_action(b, i);
            b.legal_mask(p.scratch.data());
            if (!p.scratch[static_cast<std::size_t>(index)]) return -2;  // refused: nothing changed
            b.apply(index);
            return b.decider();
        }, "action"_a.none(),
           "Take action `action` when it is legal and return the seat deciding next (-1 once the "
           "battle is over); return -2 and change nothing when it is illegal (step() says why).")
        .def("aec_events", [](const PyBattle& p, nb::handle log) {
            if (!PyList_CheckExact(log.ptr())) bad("Battle.aec_events: log must be a list");
            const auto have = static_cast<std::size_t>(PyList_GET_SIZE(log.ptr()));
            if (have > p.battle->events().size()) {
                bad("Battle.aec_events: log holds " + std::to_string(have) + " events, more than "
                    "the battle's " + std::to_string(p.battle->events().size()));
            }
            append_events(p, have, log);
        }, "log"_a.none(),
           "Append to `log` (a list holding the log's first len(log) events) the events recorded "
           "since, as the Python engine's dicts.");
}

}  // namespace traveller::binding
