// Scripted policies inside the compiled core: random, passive, rush, marksman, leader,
// tactician and cover.
//
// Each makes, in the same state, the same choice as its Python version (traveller_env/policy.py
// RandomPolicy and PassivePolicy; traveller_agents/rush.py RushPolicy, marksman.py
// MarksmanPolicy, leader.py LeaderPolicy, tactician.py TacticianPolicy and cover.py CoverPolicy
// with their default parameters, on traveller_agents/tactics.py ScriptedPolicy):
// tests/core/test_core_policies.py plays battles on the Python engine and checks every decision of a
// policy seat against the core's. The arithmetic is the Python toolkit's, operation for operation
// (attack_outcome's sums in the same order, aim_plan's tolerances, the tie-breaks of min/sort by
// path cost, distance and combatant id, the tactician's plan search in the same child order with
// the same 1e-9 tolerance), on the core's own rule functions (attack_dms, in_attack_reach,
// reaction_dm, Grid::walk, ...). The sources mirror the Python file by file: src/policies/<npc>.cpp
// for traveller_agents/<npc>.py (rush, marksman, cover, leader, tactician), common.cpp for
// traveller_agents/context.py, paths.py and tactics.py, scripted.cpp for the dispatcher (CorePolicy, the policy names).
//
//   random     legal[rng.below(len(legal))] from the policy's PCG32 (Pcg32::boundedrand).
//   passive    the first legal of end_turn, haste:no, react:none (else the first legal action).
//   rush       draw/reload; close in on the nearest enemy (by path around walls) unless close
//              enough; attack the most valuable target; parry melee; never hastens.
//   marksman   aim while aiming pays (aim_plan), fire, back away from close enemies, dodge or
//              parry when it pays (best_reaction).
//   leader     marksman plus a Leadership check when it pays; bonuses to the allies whose attack
//              gains most, penalties on the worst threats (LeaderPolicy.free_action).
//   tactician  scores every plan for the rest of its turn (moves, stances, draw/reload, aims,
//              attack or Leadership) by expected damage dealt and taken and plays the best one;
//              the plan is kept for the rest of the turn unless the battle changes under it
//              (TacticianPolicy._signature); hastens when overtaking an enemy pays; free actions
//              as leader.
//   cover      marksman's shooting from cover: moves to the nearest square (by path, within
//              15 m) next to low cover that covers it from every ranged enemy that sees it (else
//              the least exposed), crouches there (prone on a map without cover), then aims or
//              fires as marksman; dodges only after its own turn and when the hit chance drops
//              by at least 0.08 and it pays (CoverPolicy.react).
// rush, marksman and cover take the free leadership actions ScriptedPolicy.free_action takes; all
// fall back to end_turn, react:none, haste:no, else a random legal action from the policy's
// PCG32.
//
// A CorePolicy is small (its kind, its generator and, for tactician, the plan of the turn in
// progress) and copyable; the Python policies keep no other state between decisions, so neither
// does it. What is per scenario (path-cost fields around walls per goal square, the exact attack
// outcomes, the squares next to low cover) is cached per thread, shared by every policy on that
// thread, keyed by the battle's Grid, and so are the tactician's per-decision tables; act()
// allocates nothing once those caches are warm.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "battle.hpp"
#include "rng.hpp"

namespace traveller {

// The scripted kinds (the first kNumPolicyKinds, each with a Python twin), then `search`: the
// look-ahead NPC of src/policies/search.cpp, which has no Python twin and takes parameters in
// its name (search-64, search-64-model=marksman; see SearchParams).
enum class PolicyKind : std::uint8_t {
    random, passive, rush, marksman, leader, tactician, cover, search
};
inline constexpr int kNumPolicyKinds = 7;  // the scripted kinds (search is not among them)
inline const char* const kPolicyKindNames[kNumPolicyKinds] = {
    "random", "passive", "rush", "marksman", "leader", "tactician", "cover"};
// For error messages: the names that run in the core.
inline constexpr const char* kCorePolicyNames =
    "random, passive, rush, marksman, leader, tactician, cover";

// TacticianPolicy._plan: the rest of the plan being played this turn (catalogue indices, -1 for a
// label the catalogue lacks) and the signature of the battle it was made in (round, seat, and
// per other combatant its square, stance, out, down, aim and END/STR/DEX).
struct TacticianPlan {
    static constexpr int kMax = 8;  // a plan holds at most 3 actions and end_turn
    bool active = false;            // _plan is not None
    int n = 0;                      // actions left
    int actions[kMax] = {};
    std::vector<std::int32_t> signature;
};

// The kind of the in-core policy called `name`; false (and *out untouched) for any other name.
bool core_policy_kind(const std::string& name, PolicyKind* out);

// The look-ahead search NPC's parameters (src/policies/search.cpp; docs/search.md), read from
// its name: "search", then "-<budget>" and/or "-<key>=<value>" parts, e.g. "search-64" or
// "search-16-model=marksman-horizon=3".
struct SearchParams {
    std::string name;                            // the name it was read from
    int budget = 16;                             // simulations per candidate action
    PolicyKind base = PolicyKind::tactician;     // the default choice, kept without evidence
    PolicyKind model = PolicyKind::tactician;    // plays every seat in the simulations
    int horizon = 2;                             // rounds simulated past the decision's (0: to the end)
    double z = 2.0;                              // switch past z standard errors of the paired mean
    double ms = 0.0;                             // a time cap per decision (0: none; not reproducible)
    // Whose first actions are candidates too (by default marksman, cover, rush, leader).
    std::vector<PolicyKind> pool;
};
// The names of SearchParams' keys, for error messages.
inline constexpr const char* kSearchKeys = "budget, base, model, horizon, z, ms, pool";

// An in-core policy by name: a scripted kind (its index) or a search configuration (an id >=
// kNumPolicyKinds; configurations are kept for the life of the process, one per distinct name).
// false, with a one-line reason naming the parameter in *error, for a name that is neither.
bool core_policy_id(const std::string& name, int* out, std::string* error);
// The configuration of a search id (core_policy_id's), or nullptr for a scripted kind.
const SearchParams* search_params(int id);

class CorePolicy {
public:
    // Seeded with 0 until reset(seed) (the binding seeds from OS entropy when asked for none).
    explicit CorePolicy(PolicyKind k) noexcept;
    // The policy of a core_policy_id id (a scripted kind or a search configuration).
    static CorePolicy from_id(int id);

    PolicyKind kind() const noexcept { return kind_; }
    const char* name() const noexcept {
        return search_ != nullptr ? search_->name.c_str() : kPolicyKindNames[static_cast<int>(kind_)];
    }

    // As the Python policy's reset(seed): its generator becomes Pcg32(seed); any plan is
    // forgotten.
    void reset(std::uint64_t seed) noexcept;
    // As the Python policy's reset(None): the generator keeps its stream; any plan is forgotten.
    void forget() noexcept;

    // The action (an index into b's catalogue) for `seat`, which must be b.decider(), given
    // mask = b.legal_mask(); -1 only if the mask allows nothing (never for the decider).
    int act(const Battle& b, int seat, const std::uint8_t* mask);

    const rng::Pcg32& generator() const noexcept { return rng_; }
    // The tactician's plan of the turn in progress (inactive for the other kinds).
    const TacticianPlan& plan() const noexcept { return plan_; }
    // Put a saved state back (VecBattles::restore): the generator and the plan, as
    // generator() and plan() read them.
    void set_state(const rng::Pcg32& generator, TacticianPlan plan) {
        rng_ = generator;
        plan_ = std::move(plan);
    }

    // Bytes this policy holds, its stored plan's state signature included.
    std::size_t memory_bytes() const noexcept {
        return sizeof(*this) + plan_.signature.capacity() * sizeof(std::int32_t);
    }

private:
    // The scripted decision of kind k (every kind but search), on this policy's generator and
    // plan.
    int act_as(PolicyKind k, const Battle& b, int seat, const std::uint8_t* mask);
    // The search NPC's decision (search.cpp): the base's choice unless the simulations show a
    // candidate better by the margin.
    int search_act(const Battle& b, int seat, const std::uint8_t* mask);

    PolicyKind kind_;
    rng::Pcg32 rng_;
    TacticianPlan plan_;  // tactician's, or a search's base's when that is tactician
    const SearchParams* search_ = nullptr;  // kept for the process's life (core_policy_id)
};

}  // namespace traveller
