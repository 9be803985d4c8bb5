// Scripted policies inside the compiled core: random, passive, rush and marksman.
//
// Each makes, in the same state, the same choice as its Python version (traveller_env/policy.py
// RandomPolicy and PassivePolicy; agents/rush.py RushPolicy and agents/marksman.py
// MarksmanPolicy with their default parameters, on agents/common.py ScriptedPolicy):
// tests/test_core_policies.py plays battles on the Python engine and checks every decision of a
// policy seat against the core's. The arithmetic is the Python toolkit's, operation for
// operation (attack_outcome's sums in the same order, aim_plan's tolerances, the tie-breaks of
// min/sort by path cost, distance and combatant id), on the core's own rule functions
// (attack_dms, in_attack_reach, reaction_dm, Grid::walk, ...).
//
//   random    legal[rng.below(len(legal))] from the policy's PCG32 (Pcg32::boundedrand).
//   passive   the first legal of end_turn, haste:no, react:none (else the first legal action).
//   rush      draw/reload; close in on the nearest enemy (by path around walls) unless close
//             enough; attack the most valuable target; parry melee; never hastens.
//   marksman  aim while aiming pays (aim_plan), fire, back away from close enemies, dodge or
//             parry when it pays (best_reaction).
// rush and marksman take the free leadership actions ScriptedPolicy.free_action takes and fall
// back to end_turn, react:none, haste:no, else a random legal action from the policy's PCG32.
//
// A CorePolicy is small (its kind and its generator) and copyable; the Python policies keep no
// other state between decisions (no plan outlives a decision), so neither does it. What is per
// scenario (path-cost fields around walls per goal square, the exact attack outcomes) is cached
// per thread, shared by every policy on that thread, keyed by the battle's Grid; act() allocates
// nothing once those caches are warm.
#pragma once

#include <cstdint>
#include <string>

#include "battle.hpp"
#include "rng.hpp"

namespace traveller {

enum class PolicyKind : std::uint8_t { random, passive, rush, marksman };
inline constexpr int kNumPolicyKinds = 4;
inline const char* const kPolicyKindNames[kNumPolicyKinds] = {"random", "passive", "rush",
                                                              "marksman"};
// For error messages: the names that run in the core.
inline constexpr const char* kCorePolicyNames = "random, passive, rush, marksman";

// The kind of the in-core policy called `name`; false (and *out untouched) for any other name.
bool core_policy_kind(const std::string& name, PolicyKind* out);

class CorePolicy {
public:
    // Seeded with 0 until reset(seed) (the binding seeds from OS entropy when asked for none).
    explicit CorePolicy(PolicyKind k) noexcept;

    PolicyKind kind() const noexcept { return kind_; }
    const char* name() const noexcept { return kPolicyKindNames[static_cast<int>(kind_)]; }

    // As the Python policy's reset(seed): its generator becomes Pcg32(seed).
    void reset(std::uint64_t seed) noexcept;

    // The action (an index into b's catalogue) for `seat`, which must be b.decider(), given
    // mask = b.legal_mask(); -1 only if the mask allows nothing (never for the decider).
    int act(const Battle& b, int seat, const std::uint8_t* mask);

    const rng::Pcg32& generator() const noexcept { return rng_; }

private:
    PolicyKind kind_;
    rng::Pcg32 rng_;
};

}  // namespace traveller
