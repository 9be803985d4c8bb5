// traveller_env._core: the compiled battle core's Python binding (nanobind).
//
// Today it holds the shared dice generator (include/traveller/rng.hpp) and shows the pattern the
// batched battle calls will use: checked caller-owned NumPy buffers, filled with the GIL
// released and nothing allocated per call.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#if TRAVELLER_CORE_SANITIZED
#include <sanitizer/lsan_interface.h>
#endif

#include "checks.hpp"
#include "source_digest.h"  // generated: TRAVELLER_CORE_SOURCE_DIGEST
#include "traveller/rng.hpp"

namespace nb = nanobind;

namespace traveller::binding {
void bind_battle(nb::module_& m);
void bind_vector(nb::module_& m);
void bind_observation(nb::module_& m);
void bind_policies(nb::module_& m);
}
using namespace nb::literals;
using traveller::binding::Buffer;
using traveller::binding::checked_buffer;
using traveller::binding::Shape;
using traveller::binding::to_count;
using traveller::binding::to_u64;
using traveller::rng::Pcg32;

namespace {

// Largest number of dice one rng_rolls call may ask for (a test helper, not a batch call).
constexpr std::int64_t kMaxRolls = 1 << 24;

Pcg32 pcg_from_state(nb::handle state, nb::handle inc) {
    Pcg32 g;
    g.state = to_u64(state, "state");
    g.inc = to_u64(inc, "inc");
    if ((g.inc & 1u) == 0) {
        throw nb::value_error(("inc must be odd (PCG32 increments are odd), got " +
                               std::to_string(g.inc))
                                  .c_str());
    }
    return g;
}

// A bound for Pcg32.below: an int in [1, 2**32 - 1] (the message of rng.Pcg32.below).
std::uint32_t to_bound(nb::handle value) {
    const std::string allowed = "n must be an int in [1, 2**32 - 1], got ";
    if (PyBool_Check(value.ptr())) {
        throw nb::type_error((allowed + traveller::binding::py_type_name(value) + " " +
                              traveller::binding::py_repr(value))
                                 .c_str());
    }
    PyObject* index = PyNumber_Index(value.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        throw nb::type_error((allowed + traveller::binding::py_type_name(value) + " " +
                              traveller::binding::py_repr(value))
                                 .c_str());
    }
    nb::object as_int = nb::steal(index);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        overflow = 1;
    }
    if (overflow != 0 || v < 1 || v > 0xffffffffLL) {
        throw nb::value_error((allowed + traveller::binding::py_repr(as_int)).c_str());
    }
    return static_cast<std::uint32_t>(v);
}

nb::dict build_info() {
    nb::dict info;
    info["source_digest"] = TRAVELLER_CORE_SOURCE_DIGEST;
    info["build_type"] = TRAVELLER_CORE_BUILD_TYPE;
    info["cxx_flags"] = TRAVELLER_CORE_CXX_FLAGS;
    info["sanitizers"] = TRAVELLER_CORE_SANITIZERS;
    info["compiler"] = __VERSION__;
    info["cplusplus"] = static_cast<long>(__cplusplus);
#ifdef NDEBUG
    info["assertions"] = false;
#else
    info["assertions"] = true;
#endif
    return info;
}

// rng_fill(seeds: uint64[N], out: int8[N, K]): row i of out gets the first K d6 rolls of the
// generator seeded with seeds[i].
void rng_fill(nb::handle seeds_obj, nb::handle out_obj) {
    const Buffer<std::uint64_t> seeds =
        checked_buffer<std::uint64_t>(seeds_obj, "rng_fill", "seeds", Shape{{-1}, {"N"}}, false);
    const std::int64_t n = seeds.shape[0];
    const Buffer<std::int8_t> out = checked_buffer<std::int8_t>(
        out_obj, "rng_fill", "out", Shape{{n, -1}, {"N", "K"}}, true);
    const std::int64_t k = out.shape[1];
    {
        nb::gil_scoped_release unlocked;
        for (std::int64_t i = 0; i < n; ++i) {
            Pcg32 g = Pcg32::from_seed(seeds.data[i]);
            std::int8_t* row = out.data + i * k;
            for (std::int64_t j = 0; j < k; ++j) row[j] = static_cast<std::int8_t>(g.d6());
        }
    }
}

// battle_seeds(vector_seed, episodes: uint64[N], out: uint64[N]): out[r] is the seed of battle
// episodes[r] of row r (battle_seed(vector_seed, r, episodes[r])).
void battle_seeds(nb::handle vector_seed_obj, nb::handle episodes_obj, nb::handle out_obj) {
    const std::uint64_t vector_seed = to_u64(vector_seed_obj, "vector_seed");
    const Buffer<std::uint64_t> episodes = checked_buffer<std::uint64_t>(
        episodes_obj, "battle_seeds", "episodes", Shape{{-1}, {"N"}}, false);
    const std::int64_t n = episodes.shape[0];
    const Buffer<std::uint64_t> out = checked_buffer<std::uint64_t>(
        out_obj, "battle_seeds", "out", Shape{{n}, {"N"}}, true);
    {
        nb::gil_scoped_release unlocked;
        for (std::int64_t r = 0; r < n; ++r) {
            out.data[r] = traveller::rng::battle_seed(vector_seed, static_cast<std::uint64_t>(r),
                                                      episodes.data[r]);
        }
    }
}

}  // namespace

NB_MODULE(_core, m) {
    m.doc() = "The compiled battle core of Traveller Tactics (C++17, sources in csrc/).";
    m.attr("SOURCE_DIGEST") = TRAVELLER_CORE_SOURCE_DIGEST;

    traveller::binding::bind_battle(m);
    traveller::binding::bind_observation(m);  // adds to _core.Battle
    traveller::binding::bind_vector(m);
    traveller::binding::bind_policies(m);

    m.def("build_info", &build_info,
          "How this core was built: source digest, build type, flags, sanitizers, compiler.");
#if TRAVELLER_CORE_SANITIZED
    m.def(
        "lsan_leak_check", [] { return __lsan_do_recoverable_leak_check() != 0; },
        "Run LeakSanitizer now (sanitized builds only): True if it reported leaks.");
#endif

    m.def(
        "mix64", [](nb::handle x) { return traveller::rng::mix64(to_u64(x, "x")); }, "x"_a.none(),
        "The SplitMix64 finaliser of a 64-bit word.");
    m.def(
        "derive_seed",
        [](nb::handle seed, nb::handle index) {
            const std::uint64_t s = to_u64(seed, "seed");  // checked in order, as in Python
            const std::uint64_t i = to_u64(index, "index");
            return traveller::rng::derive_seed(s, i);
        },
        "seed"_a.none(), "index"_a.none(), "The seed of sub-stream `index` of `seed`.");
    m.def(
        "battle_seed",
        [](nb::handle vector_seed, nb::handle row, nb::handle episode) {
            const std::uint64_t s = to_u64(vector_seed, "vector_seed");
            const std::uint64_t r = to_u64(row, "row");
            const std::uint64_t e = to_u64(episode, "episode");
            return traveller::rng::battle_seed(s, r, e);
        },
        "vector_seed"_a.none(), "row"_a.none(), "episode"_a.none(),
        "The seed of battle `episode` (0, 1, ...) of row `row` of a vector seeded `vector_seed`.");
    m.def(
        "rng_rolls",
        [](nb::handle seed, nb::handle n) {
            Pcg32 g = Pcg32::from_seed(to_u64(seed, "seed"));
            const std::int64_t count = to_count(n, "n", kMaxRolls);
            std::vector<int> rolls(static_cast<std::size_t>(count));
            for (auto& r : rolls) r = g.d6();
            return rolls;
        },
        "seed"_a.none(), "n"_a.none(), "The first `n` d6 rolls of the generator seeded with `seed` (for tests).");
    m.def("rng_fill", &rng_fill, "seeds"_a.none(), "out"_a.none(),
          "Fill out[i, :] (int8[N, K], C-contiguous, writable) with the first K d6 rolls of the "
          "generator seeded with seeds[i] (uint64[N]). Allocates nothing; releases the GIL.");
    m.def("battle_seeds", &battle_seeds, "vector_seed"_a.none(), "episodes"_a.none(), "out"_a.none(),
          "out[r] = battle_seed(vector_seed, r, episodes[r]) for uint64[N] episodes and out.");

    nb::class_<Pcg32>(m, "Pcg32", "The shared dice generator (PCG-XSH-RR 64/32).")
        .def(
            "__init__",
            [](Pcg32* self, nb::handle seed) { new (self) Pcg32(Pcg32::from_seed(to_u64(seed, "seed"))); },
            "seed"_a.none(), "The generator for `seed` (an int in [0, 2**64 - 1]).")
        .def_static(
            "from_init",
            [](nb::handle initstate, nb::handle initseq) {
                const std::uint64_t s = to_u64(initstate, "initstate");
                const std::uint64_t q = to_u64(initseq, "initseq");
                return Pcg32::from_init(s, q);
            },
            "initstate"_a.none(), "initseq"_a.none(),
            "The generator of pcg-c-basic's pcg32_srandom_r(initstate, initseq) (no SplitMix64).")
        .def_static(
            "from_state", [](nb::handle state, nb::handle inc) { return pcg_from_state(state, inc); },
            "state"_a.none(), "inc"_a.none(), "The generator with this exact (state, odd inc).")
        .def("getstate", [](const Pcg32& g) { return std::make_tuple(g.state, g.inc); },
             "The (state, inc) pair; from_state(*getstate()) continues identically.")
        .def(
            "setstate",
            [](Pcg32& g, std::tuple<nb::object, nb::object> st) {
                g = pcg_from_state(std::get<0>(st), std::get<1>(st));
            },
            "state"_a, "Restore a (state, inc) pair from getstate().")
        .def("clone", [](const Pcg32& g) { return g; }, "An independent copy.")
        .def("next_u32", &Pcg32::next_u32, "The next 32-bit output.")
        .def("d6", &Pcg32::d6, "One six-sided die, 1..6.")
        .def(
            "below", [](Pcg32& g, nb::handle n) { return g.boundedrand(to_bound(n)); }, "n"_a.none(),
            "A uniform int in [0, n) (pcg32_boundedrand_r), n in [1, 2**32 - 1].")
        .def(
            "roll_d6",
            [](Pcg32& g, nb::handle n) {
                const std::int64_t count = to_count(n, "n", kMaxRolls);
                std::vector<int> rolls(static_cast<std::size_t>(count));
                for (auto& r : rolls) r = g.d6();
                return rolls;
            },
            "n"_a.none(), "`n` six-sided dice.")
        .def("__eq__", [](const Pcg32& a, const Pcg32& b) { return a == b; }, nb::is_operator())
        .def("__repr__", [](const Pcg32& g) {
            return "Pcg32.from_state(" + std::to_string(g.state) + ", " + std::to_string(g.inc) + ")";
        });
}
