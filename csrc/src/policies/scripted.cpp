// The in-core policies' dispatcher: CorePolicy (include/traveller/policies.hpp) and the policy
// names (traveller_agents/scripted.py's POLICIES). RandomPolicy and PassivePolicy are
// traveller_env/policy.py's; every other kind decides as traveller_agents/tactics.py
// ScriptedPolicy.decide
// and .choose, calling its NPC's file (rush.cpp, marksman.cpp, leader.cpp, tactician.cpp,
// cover.cpp) through npcs.hpp.
#include <cstdint>
#include <string>

#include "policies/common.hpp"
#include "policies/npcs.hpp"
#include "traveller/policies.hpp"
#include "traveller/reactions.hpp"

namespace traveller {

bool core_policy_kind(const std::string& name, PolicyKind* out) {
    for (int i = 0; i < kNumPolicyKinds; ++i) {
        if (name == kPolicyKindNames[i]) {
            *out = static_cast<PolicyKind>(i);
            return true;
        }
    }
    return false;
}

namespace {

// The k-th legal action (k < number of legal actions).
int nth_legal(const std::uint8_t* mask, int n_actions, std::uint32_t k) {
    for (int i = 0; i < n_actions; ++i) {
        if (mask[i] && k-- == 0) return i;
    }
    return -1;
}

int count_legal(const std::uint8_t* mask, int n_actions) {
    int n = 0;
    for (int i = 0; i < n_actions; ++i) n += mask[i] != 0;
    return n;
}

}  // namespace

// ============================================================================ CorePolicy
CorePolicy::CorePolicy(PolicyKind k) noexcept : kind_(k), rng_(rng::Pcg32::from_seed(0)) {}

void CorePolicy::reset(std::uint64_t seed) noexcept {
    rng_ = rng::Pcg32::from_seed(seed);
    forget();
}

void CorePolicy::forget() noexcept {
    plan_.active = false;
    plan_.n = 0;
}

CorePolicy CorePolicy::from_id(int id) {
    const SearchParams* params = search_params(id);
    CorePolicy p(params != nullptr ? PolicyKind::search : static_cast<PolicyKind>(id));
    p.search_ = params;
    return p;
}

int CorePolicy::act(const Battle& b, int seat, const std::uint8_t* mask) {
    if (search_ != nullptr) return search_act(b, seat, mask);
    return act_as(kind_, b, seat, mask);
}

int CorePolicy::act_as(PolicyKind kind, const Battle& b, int seat, const std::uint8_t* mask) {
    const int n_actions = b.num_actions();
    const int n_legal = count_legal(mask, n_actions);
    if (n_legal == 0) return -1;
    if (kind == PolicyKind::random) {  // RandomPolicy.act
        return nth_legal(mask, n_actions, rng_.boundedrand(static_cast<std::uint32_t>(n_legal)));
    }
    npc::Ctx ctx(b, seat, mask, npc::workspace());
    const int end = ctx.index(Kind::end_turn);
    const int haste_no = ctx.index(Kind::haste, 1);
    const int react_none = ctx.index(Kind::react, kReactNone);
    if (kind == PolicyKind::passive) {  // PassivePolicy.act
        for (const int i : {end, haste_no, react_none}) {
            if (mask[i]) return i;
        }
        return nth_legal(mask, n_actions, 0);
    }
    // ScriptedPolicy.decide
    npc::Prefs prefs;
    const Phase phase = b.phase();
    const bool leads = kind == PolicyKind::leader || kind == PolicyKind::tactician;
    if (phase == Phase::haste) {
        // rush (haste=False), marksman, leader and cover never hasten
        prefs = {kind == PolicyKind::tactician ? npc::tactician_haste(ctx) : haste_no};
    } else if (phase == Phase::reaction) {
        if (kind == PolicyKind::rush) {
            const int parry = ctx.index(Kind::react, kReactParry);
            prefs = {ctx.legal(parry) ? parry : react_none};
        } else if (kind == PolicyKind::cover) {
            prefs = {npc::cover_react(ctx)};
        } else {  // tactician: best_reaction(ctx, reaction_cost, reaction_cost / 2) = defaults
            prefs = {npc::best_reaction(ctx)};
        }
    } else {
        const int free = leads ? npc::leader_free_action(ctx) : npc::free_action(ctx);
        if (free >= 0) {
            prefs = {free};
        } else if (!ctx.sig && ctx.minors <= 0) {  // R2.3: only free actions and end_turn
            prefs = {end};
        } else {
            switch (kind) {
                case PolicyKind::rush: prefs = npc::rush_turn(ctx); break;
                case PolicyKind::leader: prefs = npc::leader_turn(ctx); break;
                case PolicyKind::tactician: prefs = npc::tactician_turn(ctx, plan_); break;
                case PolicyKind::cover: prefs = npc::cover_turn(ctx); break;
                default: prefs = npc::marksman_turn(ctx); break;
            }
        }
    }
    // ScriptedPolicy.choose: the first legal preference, else a legal fallback.
    for (int k = 0; k < prefs.n; ++k) {
        if (ctx.legal(prefs.v[k])) return prefs.v[k];
    }
    for (const int i : {end, react_none, haste_no}) {
        if (mask[i]) return i;
    }
    return nth_legal(mask, n_actions, rng_.boundedrand(static_cast<std::uint32_t>(n_legal)));
}

}  // namespace traveller
