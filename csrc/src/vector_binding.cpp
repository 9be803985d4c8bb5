// The batched stepper's Python binding: _core.VecBattles (traveller_env/vector.py's core
// backend). The scenario's flat data is checked by parse_battle, the buffers once when they
// are attached (dtype, shape, C order, writable), the actions at every step (range; legality
// against the mask this stepper published). step releases the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "battle_spec.hpp"
#include "checks.hpp"
#include "traveller/vector.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace traveller::binding {

namespace {

[[noreturn]] void bad(const std::string& msg) { throw nb::value_error(msg.c_str()); }

struct PyVec {
    std::unique_ptr<VecBattles> vec;
    std::vector<std::string> ids;
    bool attached = false;
    Buffer<float> obs, rewards;
    Buffer<std::uint8_t> mask;
    Buffer<bool> terminated, truncated;
    Buffer<std::int64_t> agent, episode;
    Buffer<std::uint64_t> battle_seed;
    Buffer<std::int8_t> winner;
    Buffer<std::uint8_t> relative_mask;
    VecOut out;

    void require_attached(const char* fn) const {
        if (!attached) bad(std::string("VecBattles.") + fn + ": call attach(...) first");
    }
};

const char* const kCorePolicies = kCorePolicyNames;
// The most scenarios one set may hold (scenario_set.MAX_SET_SIZE).
constexpr std::size_t kMaxSetSize = 100000;

// The in-core policy kind of each entry (-1: a learner), checked: every name runs inside the
// core, and at least one entry is a learner. `what` names the entries ("combatant", "column").
std::vector<int> policy_kinds(const std::vector<std::optional<std::string>>& opponents,
                              const char* what) {
    std::vector<int> kinds;
    bool learner = false;
    for (std::size_t i = 0; i < opponents.size(); ++i) {
        if (!opponents[i]) {
            kinds.push_back(-1);
            learner = true;
            continue;
        }
        int id = -1;
        std::string error;
        if (!core_policy_id(*opponents[i], &id, &error)) {
            if (!error.empty()) bad("VecBattles: opponents[" + std::to_string(i) + "]: " + error);
            bad("VecBattles: opponents[" + std::to_string(i) + "] = '" + *opponents[i] +
                "' does not run inside the core; the policies that do: " + kCorePolicies +
                ", and search[-<budget>][-<key>=<value>...]");
        }
        kinds.push_back(id);
    }
    if (!learner) {
        bad(std::string("VecBattles: opponents cover every ") + what +
            "; leave at least one learner seat");
    }
    return kinds;
}

RewardSpec reward_spec(const std::tuple<double, double, double, double, double, double, bool>& t) {
    RewardSpec rw;
    std::tie(rw.win, rw.loss, rw.draw, rw.damage_dealt, rw.damage_taken, rw.per_round, rw.shared) = t;
    return rw;
}

PyVec* make_vec(std::shared_ptr<Grid> grid, nb::handle ints, nb::handle floats,
                std::vector<std::string> ids, std::vector<std::string> weapons,
                std::vector<std::string> damage_dice, std::vector<std::string> sides,
                bool hastening, bool reactions, double comms_range_m, nb::handle max_rounds,
                std::tuple<double, double, double, double, double, double, bool> rewards,
                std::vector<std::optional<std::string>> opponents, nb::handle num_envs,
                bool move_view, bool aim_view, bool attack_view, nb::handle layout_obj) {
    const auto n = to_count(num_envs, "num_envs", 1 << 24);
    if (n < 1) bad("VecBattles: num_envs must be an int >= 1, got 0");
    const std::optional<ObsLayout> layout = parse_layout(layout_obj, "VecBattles.create");
    std::vector<std::string> kept_ids = ids;
    BattleSpec spec = parse_battle(std::move(grid), ints, floats, std::move(ids), std::move(weapons),
                                   std::move(damage_dice), std::move(sides), hastening, reactions,
                                   comms_range_m, max_rounds);
    if (opponents.size() != spec.combatants.size()) {
        bad("VecBattles: opponents must hold one entry per combatant (" +
            std::to_string(spec.combatants.size()) + "), got " + std::to_string(opponents.size()));
    }
    std::vector<int> kinds = policy_kinds(opponents, "seat");
    auto p = std::make_unique<PyVec>();
    p->ids = std::move(kept_ids);
    try {
        p->vec = std::make_unique<VecBattles>(spec.grid, std::move(spec.combatants),
                                              std::move(spec.names), spec.options,
                                              reward_spec(rewards), std::move(kinds),
                                              static_cast<int>(n), move_view, aim_view,
                                              attack_view, layout);
    } catch (const std::invalid_argument& e) {
        bad(std::string("VecBattles.create: ") + e.what());
    }
    return p.release();
}

// ------------------------------------------------------------------------ a scenario set
// The keys of engine.flatten_scenario's dict, in Battle.create's order.
const char* const kFlatKeys[] = {"grid", "ints", "floats", "ids", "weapons", "damage_dice",
                                 "side_names", "hastening", "reactions", "comms_range_m",
                                 "max_rounds"};

// scenarios[k], a dict of engine.flatten_scenario, checked as Battle.create checks its
// arguments (errors prefixed with where).
BattleSpec parse_flat(nb::handle obj, const std::string& where) {
    if (!PyDict_Check(obj.ptr())) bad(where + " must be a dict (engine.flatten_scenario)");
    nb::dict d = nb::borrow<nb::dict>(obj);
    for (const char* key : kFlatKeys) {
        if (!d.contains(key)) bad(where + ": missing the key '" + key + "'");
    }
    if (d.size() != std::size(kFlatKeys)) {
        bad(where + ": unknown keys; expected exactly engine.flatten_scenario's");
    }
    auto strings = [&](const char* key) {
        std::vector<std::string> out;
        if (!nb::try_cast(d[key], out)) bad(where + "." + key + " must be a list of str");
        return out;
    };
    auto flag = [&](const char* key) {
        nb::handle v = d[key];
        if (!PyBool_Check(v.ptr())) bad(where + "." + key + " must be a bool");
        return v.ptr() == Py_True;
    };
    std::shared_ptr<Grid> grid;
    if (!nb::try_cast(d["grid"], grid) || !grid) bad(where + ".grid must be a _core.Grid");
    nb::handle range = d["comms_range_m"];
    if (!PyFloat_Check(range.ptr())) bad(where + ".comms_range_m must be a float");
    try {
        return parse_battle(std::move(grid), d["ints"], d["floats"], strings("ids"),
                            strings("weapons"), strings("damage_dice"), strings("side_names"),
                            flag("hastening"), flag("reactions"), PyFloat_AsDouble(range.ptr()),
                            d["max_rounds"]);
    } catch (const nb::builtin_exception& e) {
        throw nb::builtin_exception(e.type(), (where + ": " + e.what()).c_str());
    }
}

PyVec* make_set(nb::handle scenarios_obj, nb::handle rewards_obj, nb::handle tables_obj,
                nb::handle columns_obj, std::vector<std::optional<std::string>> opponents,
                nb::handle num_envs, nb::handle layout_obj, bool move_view, bool aim_view,
                bool attack_view) {
    const char* fn = "VecBattles.create_set";
    const auto n = to_count(num_envs, "num_envs", 1 << 24);
    if (n < 1) bad("VecBattles: num_envs must be an int >= 1, got 0");
    if (layout_obj.is_none()) bad(std::string(fn) + ": a scenario set needs a layout");
    const ObsLayout layout = *parse_layout(layout_obj, fn);
    auto list = [fn](nb::handle obj, const char* name) {
        if (!PyList_Check(obj.ptr())) bad(std::string(fn) + ": " + name + " must be a list");
        return nb::borrow<nb::list>(obj);
    };
    const nb::list scenarios = list(scenarios_obj, "scenarios");
    const nb::list rewards = list(rewards_obj, "rewards");
    const nb::list tables = list(tables_obj, "tables");
    const nb::list columns = list(columns_obj, "columns");
    const std::size_t count = scenarios.size();
    if (count < 1 || count > kMaxSetSize) {
        bad(std::string(fn) + ": scenarios must hold between 1 and " + std::to_string(kMaxSetSize) +
            " scenarios, got " + std::to_string(count));
    }
    if (rewards.size() != count || tables.size() != count || columns.size() != count) {
        bad(std::string(fn) + ": rewards, tables and columns must each hold one entry per "
            "scenario (" + std::to_string(count) + ")");
    }
    const int limit = layout.side_limit();
    if (opponents.size() != static_cast<std::size_t>(2 * limit)) {
        bad(std::string(fn) + ": opponents must hold one entry per layout column (2 * side_limit "
            "= " + std::to_string(2 * limit) + "), got " + std::to_string(opponents.size()));
    }
    std::vector<int> kinds = policy_kinds(opponents, "column");
    std::vector<VecScenario> set(count);
    std::int64_t n_relative = -1;
    for (std::size_t k = 0; k < count; ++k) {
        const std::string at = "[" + std::to_string(k) + "]";
        BattleSpec spec = parse_flat(scenarios[k], std::string(fn) + ": scenarios" + at);
        VecScenario& sc = set[k];
        const auto seats = static_cast<std::int64_t>(spec.combatants.size());
        std::tuple<double, double, double, double, double, double, bool> rw;
        if (!nb::try_cast(rewards[k], rw)) {
            bad(std::string(fn) + ": rewards" + at + " must be a tuple (win, loss, draw, "
                "damage_dealt, damage_taken, per_round, shared)");
        }
        sc.rewards = reward_spec(rw);
        // columns: side * side_limit + the seat's rank within its side (the layout's columns)
        if (!nb::try_cast(columns[k], sc.columns) || sc.columns.size() != spec.combatants.size()) {
            bad(std::string(fn) + ": columns" + at + " must be a list of one int per combatant (" +
                std::to_string(seats) + ")");
        }
        int rank[2] = {0, 0};
        for (const Combatant& c : spec.combatants) ++rank[c.side];
        const bool fits = rank[0] <= limit && rank[1] <= limit;  // else the observer names it
        rank[0] = rank[1] = 0;
        for (std::size_t i = 0; fits && i < spec.combatants.size(); ++i) {
            const int side = spec.combatants[i].side;
            const int want = side * limit + rank[side]++;
            if (sc.columns[i] != want) {
                bad(std::string(fn) + ": columns" + at + "[" + std::to_string(i) + "] must be " +
                    std::to_string(want) + " (side * side_limit + rank within the side), got " +
                    std::to_string(sc.columns[i]));
            }
        }
        const std::string tname = "tables" + at;
        const Buffer<std::int64_t> table = checked_buffer<std::int64_t>(
            tables[k], fn, tname.c_str(), Shape{{seats, n_relative}, {"S", "R"}}, false);
        if (n_relative < 0) {
            n_relative = table.shape.size() == 2 ? table.shape[1] : 0;
            if (n_relative < 1) bad(std::string(fn) + ": tables must have at least one column");
        }
        sc.relative.assign(table.data, table.data + table.size());  // values: the stepper checks
        sc.grid = spec.grid;
        sc.initial = std::move(spec.combatants);
        sc.names = std::move(spec.names);
        sc.options = spec.options;
    }
    auto p = std::make_unique<PyVec>();
    for (int side = 0; side < 2; ++side) {
        for (int k = 0; k < limit; ++k) {
            p->ids.push_back(set[0].names.sides[side] + "_" + std::to_string(k));
        }
    }
    try {
        p->vec = std::make_unique<VecBattles>(std::move(set), layout, static_cast<int>(n_relative),
                                              std::move(kinds), static_cast<int>(n), move_view,
                                              aim_view, attack_view);
    } catch (const std::invalid_argument& e) {
        bad(std::string(fn) + ": " + e.what());
    }
    return p.release();
}

void attach(PyVec& p, nb::handle obs, nb::handle mask, nb::handle rewards, nb::handle terminated,
            nb::handle truncated, nb::handle agent, nb::handle episode, nb::handle battle_seed,
            nb::handle winner) {
    const VecBattles& v = *p.vec;
    const std::int64_t n = v.num_envs();
    const char* fn = "VecBattles.attach";
    p.obs = checked_buffer<float>(obs, fn, "obs", Shape{{n, v.obs_dim()}, {"N", "obs_dim"}}, true);
    p.mask = checked_buffer<std::uint8_t>(mask, fn, "mask", Shape{{n, v.num_actions()}, {"N", "A"}}, true);
    p.rewards = checked_buffer<float>(rewards, fn, "rewards", Shape{{n, v.num_agents()}, {"N", "S"}}, true);
    p.terminated = checked_buffer<bool>(terminated, fn, "terminated", Shape{{n}, {"N"}}, true);
    p.truncated = checked_buffer<bool>(truncated, fn, "truncated", Shape{{n}, {"N"}}, true);
    p.agent = checked_buffer<std::int64_t>(agent, fn, "agent", Shape{{n}, {"N"}}, true);
    p.episode = checked_buffer<std::int64_t>(episode, fn, "episode", Shape{{n}, {"N"}}, true);
    p.battle_seed = checked_buffer<std::uint64_t>(battle_seed, fn, "battle_seed", Shape{{n}, {"N"}}, true);
    p.winner = checked_buffer<std::int8_t>(winner, fn, "winner", Shape{{n}, {"N"}}, true);
    p.out = VecOut{p.obs.data, p.mask.data, p.rewards.data, p.terminated.data, p.truncated.data,
                   p.agent.data, p.episode.data, p.battle_seed.data, p.winner.data,
                   p.relative_mask.data};
    p.attached = true;
}

void set_relative(PyVec& p, nb::handle table_obj, nb::handle relative_mask) {
    p.require_attached("set_relative");
    VecBattles& v = *p.vec;
    const char* fn = "VecBattles.set_relative";
    if (v.set_mode()) {
        bad(std::string(fn) + ": a vector over a scenario set writes the relative mask into mask "
            "already");
    }
    const Buffer<std::int64_t> table = checked_buffer<std::int64_t>(
        table_obj, fn, "table", Shape{{v.num_agents(), -1}, {"S", "R"}}, false);
    const std::int64_t k = table.shape.size() == 2 ? table.shape[1] : 0;
    if (k < 1) bad(std::string(fn) + ": table must have at least one column");
    std::vector<std::int64_t> values(table.data, table.data + table.size());
    for (std::int64_t x : values) {
        if (x < 0 || x > v.num_actions()) {
            bad(std::string(fn) + ": table values must lie in [0, " +
                std::to_string(v.num_actions()) + "] (" + std::to_string(v.num_actions()) +
                ": an empty slot), got " + std::to_string(x));
        }
    }
    p.relative_mask = checked_buffer<std::uint8_t>(relative_mask, fn, "relative_mask",
                                                   Shape{{v.num_envs(), k}, {"N", "R"}}, true);
    v.set_relative(std::move(values), static_cast<int>(k));
    p.out.relative_mask = p.relative_mask.data;
}

[[noreturn]] void stuck_error(const PyVec& p, int row) {
    throw std::runtime_error(
        "row " + std::to_string(row) + ": " + std::to_string(VecBattles::kMaxSkipped + 1) +
        " battles in a row ended before any learner seat decided, or an in-core opponent chose "
        "an illegal action (a core bug: please report it); the battles are in an unknown state: "
        "call reset(). Seats: " + std::to_string(p.ids.size()));
}

}  // namespace

void bind_vector(nb::module_& m) {
    nb::class_<PyVec>(m, "VecBattles", "N battles of one scenario, or of a scenario set, stepped per call (traveller_env.vector, backend='core').")
        .def_static("create", &make_vec, "grid"_a, "ints"_a.none(), "floats"_a.none(), "ids"_a,
                    "weapons"_a, "damage_dice"_a, "side_names"_a, "hastening"_a, "reactions"_a,
                    "comms_range_m"_a, "max_rounds"_a.none(), "rewards"_a, "opponents"_a,
                    "num_envs"_a.none(), "move_view"_a = false, "aim_view"_a = false,
                    "attack_view"_a = false, "layout"_a.none() = nb::none(),
                    nb::rv_policy::take_ownership,
                    "N battles of one scenario (its flat data: engine.flatten_scenario); "
                    "opponents: one policy name or None (a learner) per combatant; layout: None "
                    "or (allies, enemies, map_size, max_move_squares).")
        .def_static("create_set", &make_set, "scenarios"_a.none(), "rewards"_a.none(),
                    "tables"_a.none(), "columns"_a.none(), "opponents"_a, "num_envs"_a.none(),
                    "layout"_a.none(), "move_view"_a = false, "aim_view"_a = false,
                    "attack_view"_a = false, nb::rv_policy::take_ownership,
                    "N battles over a scenario set (traveller_env.scenario_set): scenarios, a "
                    "list of engine.flatten_scenario dicts; rewards, one (win, loss, draw, "
                    "damage_dealt, damage_taken, per_round, shared) per scenario; tables, one "
                    "int64[seats, R] per scenario (relative action -> absolute index, the "
                    "scenario's num_actions for none); columns, each seat's layout column; "
                    "opponents, one policy name or None per layout column; layout as for "
                    "create (required). The mask and actions are the R relative ones.")
        .def_prop_ro("num_envs", [](const PyVec& p) { return p.vec->num_envs(); })
        .def_prop_ro("num_actions", [](const PyVec& p) { return p.vec->num_actions(); },
                     "The mask's width and the actions' range (a set: the relative actions).")
        .def_prop_ro("num_agents", [](const PyVec& p) { return p.vec->num_agents(); },
                     "The reward columns (a set: the layout's 2 * side_limit).")
        .def_prop_ro("num_scenarios", [](const PyVec& p) { return p.vec->num_scenarios(); })
        .def("scenario", [](const PyVec& p, nb::handle row) {
            return p.vec->scenario(static_cast<int>(to_count(row, "row", p.vec->num_envs() - 1)));
        }, "row"_a.none(), "The scenario (an index into the set) of row's battle.")
        .def_prop_ro("obs_dim", [](const PyVec& p) { return p.vec->obs_dim(); })
        .def_prop_ro("battles_skipped", [](const PyVec& p) { return p.vec->battles_skipped(); })
        .def_prop_ro("memory_bytes", [](const PyVec& p) { return p.vec->memory_bytes(); },
                     "Bytes the rows hold (battles, bookkeeping, policies); buffers and map excluded.")
        .def("attach", &attach, "obs"_a.none(), "mask"_a.none(), "rewards"_a.none(),
             "terminated"_a.none(), "truncated"_a.none(), "agent"_a.none(), "episode"_a.none(),
             "battle_seed"_a.none(), "winner"_a.none(),
             "The buffers reset/step write (kept alive by this object).")
        .def("set_relative", &set_relative, "table"_a.none(), "relative_mask"_a.none(),
             "Also publish each row's mask over slot-relative actions into relative_mask "
             "(uint8[N, R]); table[seat, j]: relative action j's absolute index (A: empty slot).")
        .def("reset", [](PyVec& p, nb::handle seed, bool restart) {
            p.require_attached("reset");
            const std::uint64_t s = to_u64(seed, "seed");
            int stuck = -1;
            bool ok;
            {
                nb::gil_scoped_release unlocked;
                ok = p.vec->reset(s, restart, p.out, &stuck);
            }
            if (!ok) stuck_error(p, stuck);
        }, "seed"_a.none(), "restart"_a)
        .def("step", [](PyVec& p, nb::handle actions_obj, nb::handle forfeits_obj, nb::handle threads_obj) {
            p.require_attached("step");
            const VecBattles& v = *p.vec;
            const Buffer<std::int64_t> actions = checked_buffer<std::int64_t>(
                actions_obj, "VecBattles.step", "actions", Shape{{v.num_envs()}, {"N"}}, false);
            const auto threads = static_cast<int>(to_count(threads_obj, "threads", 1024));
            std::vector<std::uint8_t> forfeit;
            std::vector<std::string> labels, reasons;
            if (!forfeits_obj.is_none()) {
                nb::dict f = nb::cast<nb::dict>(forfeits_obj);
                if (f.size()) {
                    forfeit.assign(static_cast<std::size_t>(v.num_envs()), 0);
                    labels.resize(forfeit.size());
                    reasons.resize(forfeit.size());
                    for (auto [k, val] : f) {
                        const auto r = static_cast<std::size_t>(to_count(k, "forfeits row", v.num_envs() - 1));
                        auto lr = nb::cast<std::tuple<std::string, std::string>>(val);
                        forfeit[r] = 1;
                        labels[r] = std::get<0>(lr);
                        reasons[r] = std::get<1>(lr);
                    }
                }
            }
            StepRefusal refusal;
            int stuck = -1;
            {
                nb::gil_scoped_release unlocked;
                refusal = p.vec->step(actions.data, forfeit.empty() ? nullptr : forfeit.data(),
                                      &labels, &reasons, p.out, threads < 1 ? 1 : threads, &stuck);
            }
            if (refusal.opponent) stuck_error(p, stuck);
            if (refusal.row >= 0) {
                const Battle& b = v.battle(refusal.row);
                const int seat = b.decider();
                std::string what = "index " + std::to_string(refusal.action);
                if (refusal.action >= 0 && refusal.action < v.num_actions()) {
                    const int absolute = v.absolute_action(refusal.row, refusal.action);
                    std::string why = "an action this battle's scenario lacks (or an empty slot)";
                    if (absolute >= 0) {
                        what = "'" + b.label(absolute) + "' (" + what + ")";
                        why = b.why_illegal(absolute);
                    }
                    bad("VecBattles.step: row " + std::to_string(refusal.row) + ": illegal action " +
                        what + " for seat " + b.names().ids[static_cast<std::size_t>(seat)] + ": " +
                        (why.empty() ? "not in the published mask" : why) +
                        "; nothing was applied in any row");
                }
                bad("VecBattles.step: row " + std::to_string(refusal.row) + ": action " + what +
                    " is out of range; expected values in [0, " + std::to_string(v.num_actions()) +
                    "); nothing was applied in any row");
            }
        }, "actions"_a.none(), "forfeits"_a.none() = nb::none(), "threads"_a.none() = 1,
           "Apply one action per row (int64[N]: absolute, or a set's relative ones); forfeits: "
           "{row: (label, reason)}.")
        .def("snapshot", [](const PyVec& p) {
            const std::string data = p.vec->snapshot();
            return nb::bytes(data.data(), data.size());
        }, "The rows' complete state as bytes (VecBattles::snapshot, format TVRS version 2; "
           "buffers excluded), over one scenario or a set.")
        .def("restore", [](PyVec& p, nb::bytes data) {
            try {
                p.vec->restore(std::string(data.c_str(), data.size()));
            } catch (const std::invalid_argument& exc) {
                bad(exc.what());
            }
        }, "data"_a, "Put snapshot()'s bytes back (version 2, or version 1 over one scenario; "
           "ValueError naming the fault; nothing changes then).")
        .def("why_illegal", [](const PyVec& p, nb::handle row, nb::handle action) -> nb::object {
            const auto r = static_cast<int>(to_count(row, "row", p.vec->num_envs() - 1));
            const auto a = static_cast<int>(to_count(action, "action", p.vec->num_actions() - 1));
            const int absolute = p.vec->absolute_action(r, a);
            if (absolute < 0) return nb::none();  // a set's action the scenario lacks
            const std::string why = p.vec->battle(r).why_illegal(absolute);
            if (why.empty()) return nb::none();
            return nb::str(why.c_str());
        }, "row"_a.none(), "action"_a.none(),
           "Why row's action (as step takes it) is illegal now, or None (None too for a set's "
           "action that the row's scenario lacks).");
}

}  // namespace traveller::binding
