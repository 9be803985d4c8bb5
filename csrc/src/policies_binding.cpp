// The in-core policies' Python binding: _core.Policy (include/traveller/policies.hpp).
//
// Policy(name, seed=None) for a name that runs in the core (random, passive, rush, marksman,
// leader, tactician, cover, and the look-ahead search[-...] of policies/search.cpp; anything
// else: ValueError naming those); reset(seed) as the Python policy's; act(battle, seat) the action index for the deciding seat of a _core.Battle (seat
// checked: out of range, or not the seat that decides now, is a ValueError). play_policies (for experiments/
// bench_core_policies.py) plays a battle to its end with one policy per seat, timing act alone.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "checks.hpp"
#include "py_battle.hpp"
#include "traveller/policies.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace traveller::binding {

namespace {

struct PyPolicy {
    CorePolicy policy;
    std::vector<std::uint8_t> mask;  // the battle's mask, reused from call to call
};

std::uint64_t entropy_seed() {
    std::random_device dev;
    return (static_cast<std::uint64_t>(dev()) << 32) ^ static_cast<std::uint64_t>(dev());
}

int id_of(nb::handle name) {
    if (!nb::isinstance<nb::str>(name)) {
        throw nb::type_error(("Policy: name must be a string, got " + py_type_name(name) + " " +
                              py_repr(name))
                                 .c_str());
    }
    int id = -1;
    std::string error;
    if (!core_policy_id(nb::cast<std::string>(name), &id, &error)) {
        if (!error.empty()) throw nb::value_error(("Policy: " + error).c_str());
        throw nb::value_error(("Policy: " + py_repr(name) +
                               " does not run in the core (the search NPC: search-<budget>...); "
                               "runs in the core: " + std::string(kCorePolicyNames))
                                  .c_str());
    }
    return id;
}

int checked_seat(const Battle& b, nb::handle seat_obj) {
    const int seat = static_cast<int>(to_count(seat_obj, "seat", b.num_combatants() - 1));
    if (b.done()) throw nb::value_error("Policy.act: the battle is over");
    if (seat != b.decider()) {
        const auto& ids = b.names().ids;
        throw nb::value_error(("Policy.act: seat " + std::to_string(seat) + " (" +
                               ids[static_cast<std::size_t>(seat)] + ") does not decide now; seat " +
                               std::to_string(b.decider()) + " (" +
                               ids[static_cast<std::size_t>(b.decider())] + ") does")
                                  .c_str());
    }
    return seat;
}

}  // namespace

void bind_policies(nb::module_& m) {
    nb::list names;
    for (const char* name : kPolicyKindNames) names.append(name);
    m.attr("CORE_POLICIES") = nb::tuple(names);

    nb::class_<PyPolicy>(m, "Policy",
                         "A scripted policy run inside the core (random, passive, rush, marksman, "
                         "leader, tactician, cover): the same choices as its Python version in the "
                         "same state.")
        .def(
            "__init__",
            [](PyPolicy* self, nb::handle name, nb::handle seed) {
                const int id = id_of(name);
                const std::uint64_t s = seed.is_none() ? entropy_seed() : to_u64(seed, "seed");
                new (self) PyPolicy{CorePolicy::from_id(id), {}};
                self->policy.reset(s);
            },
            "name"_a.none(), "seed"_a.none() = nb::none(),
            "The policy `name`, its generator seeded with `seed` (OS entropy when None).")
        .def_prop_ro("name", [](const PyPolicy& p) { return std::string(p.policy.name()); })
        .def(
            "reset",
            [](PyPolicy& p, nb::handle seed) {
                if (seed.is_none()) {
                    p.policy.forget();
                } else {
                    p.policy.reset(to_u64(seed, "seed"));
                }
            },
            "seed"_a.none() = nb::none(),
            "Re-seed the policy's generator (None keeps the current stream) and forget any plan "
            "(tactician), as the Python policy's reset(seed).")
        .def(
            "getstate",
            [](const PyPolicy& p) {
                return std::make_tuple(p.policy.generator().state, p.policy.generator().inc);
            },
            "The (state, inc) of the policy's PCG32 (the Python policy's rng.getstate()).")
        .def(
            "act",
            [](PyPolicy& p, const PyBattle& pb, nb::handle seat_obj) {
                const Battle& b = *pb.battle;
                const int seat = checked_seat(b, seat_obj);
                p.mask.resize(static_cast<std::size_t>(b.num_actions()));
                b.legal_mask(p.mask.data());
                const int a = p.policy.act(b, seat, p.mask.data());
                if (a < 0) throw nb::value_error("Policy.act: the action mask allows no action");
                return a;
            },
            "battle"_a, "seat"_a.none(),
            "The action index the policy plays for `seat`, the seat deciding now in `battle` (a "
            "_core.Battle).");

    m.def(
        "play_policies",
        [](PyBattle& pb, std::vector<PyPolicy*> policies) {
            Battle& b = *pb.battle;
            const auto n = static_cast<std::size_t>(b.num_combatants());
            if (policies.size() != n) {
                throw nb::value_error(("play_policies: one policy per seat (" + std::to_string(n) +
                                       "), got " + std::to_string(policies.size()))
                                          .c_str());
            }
            for (std::size_t i = 0; i < n; ++i) {
                if (policies[i] == nullptr) {
                    throw nb::value_error(("play_policies: policies[" + std::to_string(i) +
                                           "] is None")
                                              .c_str());
                }
            }
            std::vector<long long> decisions(n, 0);
            std::vector<double> seconds(n, 0.0);
            std::vector<std::uint8_t> mask(static_cast<std::size_t>(b.num_actions()));
            while (!b.done()) {
                const int seat = b.decider();
                const auto s = static_cast<std::size_t>(seat);
                b.legal_mask(mask.data());
                const auto t0 = std::chrono::steady_clock::now();
                const int a = policies[s]->policy.act(b, seat, mask.data());
                const auto t1 = std::chrono::steady_clock::now();
                seconds[s] += std::chrono::duration<double>(t1 - t0).count();
                decisions[s] += 1;
                if (a < 0 || !mask[static_cast<std::size_t>(a)]) {
                    throw nb::value_error(("play_policies: policy " +
                                           std::string(policies[s]->policy.name()) +
                                           " chose an illegal action " + std::to_string(a))
                                              .c_str());
                }
                b.apply(a);
            }
            return std::make_tuple(decisions, seconds);
        },
        "battle"_a, "policies"_a,
        "Play `battle` to its end, seat i choosing with policies[i]; returns (decisions per seat, "
        "seconds inside act per seat). For benchmarks.");
}

}  // namespace traveller::binding
