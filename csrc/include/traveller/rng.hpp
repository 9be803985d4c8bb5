// The battle dice generator, shared with the Python engine (traveller_env/rules/rng.py).
//
// Both languages implement exactly the same integer arithmetic on unsigned 64-bit words, and
// tests/data/rng_vectors.json pins their outputs; tests/core/test_core_rng.py checks both against it.
//
//   mix64(z)            the SplitMix64 finaliser (Steele, Lea & Flood 2014; Stafford's mix 13),
//                       a bijection of the 64-bit words.
//   Pcg32               PCG-XSH-RR 64/32 (O'Neill 2014, pcg32_random_r of pcg-c-basic): 64-bit
//                       LCG state, an odd increment choosing the stream, 32-bit outputs.
//   Pcg32::from_seed    a seed s in [0, 2**64) seeds a SplitMix64 whose first two outputs are
//                       pcg32_srandom_r's (initstate, initseq): nearby seeds get unrelated states
//                       on different streams.
//   Pcg32::d6           pcg32_boundedrand_r(6) + 1: draws below (2**32 - 6) % 6 = 4 are rejected
//                       and drawn again, the rest taken modulo 6, so every face has probability
//                       exactly 1/6.
//   Pcg32::boundedrand  pcg32_boundedrand_r(n): a uniform value in [0, n), n >= 1; draws below
//                       (2**32 - n) % n are rejected and drawn again, the rest taken modulo n
//                       (Python: Pcg32.below). The random policy draws from it.
//   derive_seed(s, i)   the seed of sub-stream i of seed s: sm1(sm1(s) ^ i) with
//                       sm1(x) = mix64(x + GOLDEN), injective in i for a fixed s.
//   battle_seed(s,r,e)  the seed of the e-th battle (0, 1, ... as it auto-resets) of row r of a
//                       vector of battles seeded with s: derive_seed(derive_seed(s, r), e).
//
// Everything is constexpr-friendly, allocation-free and header-only.
#pragma once

#include <cstdint>

namespace traveller::rng {

inline constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
inline constexpr std::uint64_t kPcgMult = 6364136223846793005ULL;
// pcg32_boundedrand_r's threshold for bound 6: (2**32 - 6) % 6.
inline constexpr std::uint32_t kD6Threshold = static_cast<std::uint32_t>(-6u) % 6u;

constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The first output of a SplitMix64 generator whose state is x.
constexpr std::uint64_t splitmix_first(std::uint64_t x) noexcept { return mix64(x + kGolden); }

constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t index) noexcept {
    return splitmix_first(splitmix_first(seed) ^ index);
}

constexpr std::uint64_t battle_seed(std::uint64_t vector_seed, std::uint64_t row,
                                    std::uint64_t episode) noexcept {
    return derive_seed(derive_seed(vector_seed, row), episode);
}

struct Pcg32 {
    std::uint64_t state = 0;
    std::uint64_t inc = 1;  // always odd

    // pcg32_srandom_r(initstate, initseq).
    static constexpr Pcg32 from_init(std::uint64_t initstate, std::uint64_t initseq) noexcept {
        Pcg32 g;
        g.state = 0;
        g.inc = (initseq << 1) | 1u;
        g.next_u32();
        g.state += initstate;
        g.next_u32();
        return g;
    }

    static constexpr Pcg32 from_seed(std::uint64_t seed) noexcept {
        const std::uint64_t initstate = splitmix_first(seed);
        const std::uint64_t initseq = splitmix_first(seed + kGolden);  // SplitMix64's 2nd output
        return from_init(initstate, initseq);
    }

    constexpr std::uint32_t next_u32() noexcept {
        const std::uint64_t old = state;
        state = old * kPcgMult + inc;
        const auto xorshifted = static_cast<std::uint32_t>(((old >> 18) ^ old) >> 27);
        const auto rot = static_cast<std::uint32_t>(old >> 59);
        return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
    }

    // pcg32_boundedrand_r(bound): uniform in [0, bound); bound must be >= 1.
    constexpr std::uint32_t boundedrand(std::uint32_t bound) noexcept {
        const std::uint32_t threshold = (0u - bound) % bound;
        for (;;) {
            const std::uint32_t r = next_u32();
            if (r >= threshold) return r % bound;
        }
    }

    // One six-sided die, 1..6.
    constexpr int d6() noexcept {
        for (;;) {
            const std::uint32_t r = next_u32();
            if (r >= kD6Threshold) return static_cast<int>(r % 6u) + 1;
        }
    }

    friend constexpr bool operator==(const Pcg32& a, const Pcg32& b) noexcept {
        return a.state == b.state && a.inc == b.inc;
    }
};

static_assert(kD6Threshold == 4u, "(2**32 - 6) % 6 is 4");
static_assert(mix64(0) == 0, "the SplitMix64 finaliser fixes 0");

}  // namespace traveller::rng
