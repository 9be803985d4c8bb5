// The observation's Python binding: _core.Battle.observe / .state / .slot, the
// observation_size / state_size properties and bench_observe, added to the _core.Battle class
// that battle_binding.cpp defines (bind_observation runs after bind_battle).
//
// The vectors are written into caller-owned float32 buffers, checked at the boundary (dtype,
// shape, C-contiguity, writability: checks.hpp checked_buffer); the seat is checked too. Nothing
// is allocated per call.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "checks.hpp"
#include "py_battle.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace traveller::binding {

namespace {

int checked_seat(const PyBattle& p, nb::handle seat_obj) {
    return static_cast<int>(to_count(seat_obj, "seat", p.battle->num_combatants() - 1));
}

void observe(const PyBattle& p, nb::handle seat_obj, nb::handle out_obj) {
    const int seat = checked_seat(p, seat_obj);
    const Observer& ob = *p.observer;
    const HotBuffer<float> out(out_obj, "Battle.observe", "out", ob.size(), "D");
    ob.observe(*p.battle, seat, out.data());
}

// observe and the AEC env's mask in one call (traveller_env/core/aec.py's hot path): seat's
// observation into obs; into mask (int8[num_actions]) the legal mask when `live` (the env's
// selected agent) and seat decides now, else zeros. Both buffers are checked before either is
// written.
void aec_observe(const PyBattle& p, nb::handle seat_obj, bool live, nb::handle obs_obj,
                 nb::handle mask_obj) {
    const int seat = checked_seat(p, seat_obj);
    const Observer& ob = *p.observer;
    const Battle& b = *p.battle;
    const HotBuffer<float> obs(obs_obj, "Battle.aec_observe", "obs", ob.size(), "D");
    const HotBuffer<std::int8_t> mask(mask_obj, "Battle.aec_observe", "mask", b.num_actions(), "A");
    ob.observe(b, seat, obs.data());
    auto* m = reinterpret_cast<std::uint8_t*>(mask.data());
    if (live && b.decider() == seat) {
        b.legal_mask(m);
    } else {
        std::memset(m, 0, static_cast<std::size_t>(b.num_actions()));
    }
}

void state(const PyBattle& p, nb::handle out_obj) {
    const Observer& ob = *p.observer;
    const Buffer<float> out = checked_buffer<float>(out_obj, "Battle.state", "out",
                                                    Shape{{ob.state_size()}, {"S"}}, true);
    ob.state(*p.battle, out.data);
}

int slot(const PyBattle& p, nb::handle seat_obj, nb::handle k_obj) {
    const int seat = checked_seat(p, seat_obj);
    const int k = static_cast<int>(to_count(k_obj, "k", p.observer->num_slots() - 1));
    return p.observer->slot(seat, k);
}

// n calls of observe(seat) into one scratch buffer, timed inside C++ (no Python per call):
// the elapsed seconds. For experiments/bench_core.py, not a contract.
double bench_observe(const PyBattle& p, nb::handle seat_obj, nb::handle n_obj) {
    const int seat = checked_seat(p, seat_obj);
    const std::int64_t n = to_count(n_obj, "n", std::int64_t{1} << 32);
    const Observer& ob = *p.observer;
    std::vector<float> buf(static_cast<std::size_t>(ob.size()));
    volatile float sink = 0.0f;  // keeps the calls from being optimised away
    double seconds = 0.0;
    {
        nb::gil_scoped_release unlocked;
        const auto t0 = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < n; ++i) {
            ob.observe(*p.battle, seat, buf.data());
            sink = sink + buf[static_cast<std::size_t>(i % ob.size())];
        }
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return seconds;
}

template <typename F, typename... Extra>
void add_method(nb::handle cls, const char* name, F&& f, const Extra&... extra) {
    nb::setattr(cls, name,
                nb::cpp_function(std::forward<F>(f), nb::scope(cls), nb::name(name),
                                 nb::is_method(), extra...));
}

template <typename F>
void add_property(nb::handle cls, const char* name, F&& f, const char* doc) {
    nb::object getter = nb::cpp_function(std::forward<F>(f), nb::is_method());
    nb::object property = nb::borrow(reinterpret_cast<PyObject*>(&PyProperty_Type));
    nb::setattr(cls, name, property(getter, nb::none(), nb::none(), doc));
}

}  // namespace

void bind_observation(nb::module_& m) {
    nb::handle cls = m.attr("Battle");
    add_property(cls, "observation_size", [](const PyBattle& p) { return p.observer->size(); },
                 "Entries of one observation vector (len(ObservationBuilder.labels)).");
    add_property(cls, "state_size", [](const PyBattle& p) { return p.observer->state_size(); },
                 "Entries of the global state (ObservationBuilder.state_size).");
    add_property(cls, "num_slots", [](const PyBattle& p) { return p.observer->num_slots(); },
                 "Slots per observation: (largest side - 1) allies, then largest side enemies.");
    add_method(cls, "observe", &observe, "seat"_a.none(), "out"_a.none(),
               "Write seat's observation vector into out (float32[observation_size]), as "
               "ObservationBuilder.observe does.");
    add_method(cls, "aec_observe", &aec_observe, "seat"_a.none(), "live"_a, "obs"_a.none(),
               "mask"_a.none(),
               "observe(seat, obs), plus into mask (int8[num_actions]) the legal mask when live "
               "and seat decides now, else zeros (the AEC env's observe).");
    add_method(cls, "state", &state, "out"_a.none(),
               "Write the global state into out (float32[state_size]), as "
               "ObservationBuilder.state does.");
    add_method(cls, "slot", &slot, "seat"_a.none(), "k"_a.none(),
               "The combatant index in slot k of seat's observation, -1 for an empty slot.");
    add_method(cls, "bench_observe", &bench_observe, "seat"_a.none(), "n"_a.none(),
               "Seconds taken by n calls of observe(seat) inside C++ (benchmarks only).");
}

}  // namespace traveller::binding
