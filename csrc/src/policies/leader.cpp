// The in-core leader NPC: traveller_agents/leader.py LeaderPolicy with its default parameters, function
// for function; it fights as marksman (marksman.cpp) when it does not lead. tactician.cpp scores
// Leadership with its receivers and leadership_value (npcs.hpp).
#include <algorithm>
#include <vector>

#include "policies/common.hpp"
#include "policies/npcs.hpp"
#include "traveller/attack.hpp"
#include "traveller/checks.hpp"
#include "traveller/leadership.hpp"

namespace traveller::npc {

namespace {

// LeaderPolicy's defaults (min_success, value_ratio; keep_away_m and kill_weight as marksman).
constexpr double kLeaderMinSuccess = 0.5, kLeaderValueRatio = 1.0;

// The lists of one leadership_value, kept per thread (as common.hpp's Workspace) so that a
// decision allocates nothing once they have grown.
struct LeaderScratch {
    std::vector<double> gains, losses;  // sorted in descending order
    std::vector<int> receivers;
};

LeaderScratch& leader_scratch() {
    thread_local LeaderScratch scratch;
    return scratch;
}

// LeaderPolicy.leadership_dm: DM of its Leadership check now (R4.2) + the held bonus/penalty.
int leader_leadership_dm(const Ctx& ctx) {
    Dms held;
    held_dms(ctx.m, held);
    return leadership_dms(ctx.m).total() + held.total();
}

// LeaderPolicy.penalty_cost: what DM -1 would take from member's best attack now.
double leader_penalty_cost(const Ctx& ctx, int member) {
    double best = 0.0;
    for (int e : ctx.enemies()) {
        const int dm = attack_dm_now(ctx, member, e, -1, false);
        if (dm == kNoShot) continue;
        const double loss = (attack_value(ctx, member, e, dm, kKillWeight) -
                             attack_value(ctx, member, e, dm - 1, kKillWeight));
        best = std::max(best, loss);
    }
    return best;
}

// sum(values[:k]) (values sorted in descending order, as sorted(..., reverse=True)).
double sum_first(const std::vector<double>& values, int k) {
    double total = 0.0;
    for (int i = 0; i < k && i < static_cast<int>(values.size()); ++i) {
        total += values[static_cast<std::size_t>(i)];
    }
    return total;
}

// LeaderPolicy.own_shot_value: its best attack this turn (one more aim if it can still aim).
double leader_own_shot_value(const Ctx& ctx) {
    const Target best = marksman_best_target(ctx);
    if (best.e < 0) return 0.0;
    const int aim = std::min(kMaxAim, best.held + (ctx.m.minors == 0 ? 1 : 0));
    return attack_value(ctx, ctx.me, best.e, best.base + aim, kKillWeight);
}

// LeaderPolicy.should_lead: criteria (a)-(c) of its docstring.
bool leader_should_lead(const Ctx& ctx) {
    if (!ctx.sig || !ctx.legal(ctx.index(Kind::leadership))) return false;
    std::vector<int>& receivers = leader_scratch().receivers;
    leader_receivers(ctx, receivers);
    if (receivers.empty()) return false;
    double p_pos, value;
    leader_leadership_value(ctx, p_pos, value);
    return p_pos >= kLeaderMinSuccess && value > 0 &&
           value >= kLeaderValueRatio * leader_own_shot_value(ctx);
}

}  // namespace

// LeaderPolicy.receivers: allies that could take a bonus now (in comms range or both with radios,
// R7.2, and not already holding one, R7.3), into out.
void leader_receivers(const Ctx& ctx, std::vector<int>& out) {
    out.clear();
    for (int a : ctx.allies()) {
        const Combatant& al = ctx.c(a);
        if (al.bonus) continue;
        if (can_communicate(ctx.m, al, ctx.b.options().comms_range_m)) out.push_back(a);
    }
}

// LeaderPolicy.leadership_value: (chance of a positive Effect, expected value of the check).
//     for effect, p in effect_distribution(self.leadership_dm(ctx)).items():
//         if effect > 0: p_pos += p; value += p * sum(gains[:effect])
//         elif effect < 0: value -= p * sum(losses[:-effect])
void leader_leadership_value(const Ctx& ctx, double& p_pos, double& value) {
    LeaderScratch& scratch = leader_scratch();
    std::vector<double>& gains = scratch.gains;
    std::vector<double>& losses = scratch.losses;
    leader_receivers(ctx, scratch.receivers);
    gains.clear();
    for (int a : scratch.receivers) gains.push_back(bonus_value(ctx, a));
    std::sort(gains.begin(), gains.end(), [](double x, double y) { return x > y; });
    losses.clear();
    losses.push_back(leader_penalty_cost(ctx, ctx.me));
    for (int a : ctx.allies()) losses.push_back(leader_penalty_cost(ctx, a));
    std::sort(losses.begin(), losses.end(), [](double x, double y) { return x > y; });
    p_pos = value = 0.0;
    const int dm = leader_leadership_dm(ctx);
    for (int s = 2; s <= 12; ++s) {  // effect_distribution(dm), in 2D order
        const int effect = s + dm - kTargetNumber;
        const double p = p2d6(s);
        if (effect > 0) {
            p_pos += p;
            value += p * sum_first(gains, effect);
        } else if (effect < 0) {
            value -= p * sum_first(losses, -effect);
        }
    }
}

// LeaderPolicy.free_action: bonuses to the allies whose attack gains most; penalties on the worst
// threats (sorted by (-threat, id)); -1 for none.
int leader_free_action(const Ctx& ctx) {
    int bonuses = 0, penalties = 0;
    if (!ctx.b.pools().empty()) ctx.b.pools().held(ctx.me, ctx.m.side, bonuses, penalties);
    if (bonuses) {
        int best = -1, best_a = -1;
        double best_v = 0.0;
        for (int a : ctx.allies()) {  // sorted(((bonus_value, id), ...), reverse=True)[0]
            const int index = ctx.index(Kind::direct, a);
            if (!ctx.legal(index)) continue;
            const double v = bonus_value(ctx, a);
            if (best < 0 || v > best_v || (v == best_v && ctx.id_less(best_a, a))) {
                best = index;
                best_a = a;
                best_v = v;
            }
        }
        if (best >= 0) return best;
    }
    if (penalties) {
        int best = -1, best_e = -1;
        double best_t = 0.0;
        for (int e : ctx.enemies()) {  // the first legal in order of (-threat, id)
            const int index = ctx.index(Kind::hamper, e);
            if (!ctx.legal(index)) continue;
            const double t = threat(ctx, e);
            if (best < 0 || -t < -best_t || (-t == -best_t && ctx.id_less(e, best_e))) {
                best = index;
                best_e = e;
                best_t = t;
            }
        }
        if (best >= 0) return best;
    }
    return -1;
}

// LeaderPolicy.turn: lead when it pays, else fight like a marksman.
Prefs leader_turn(const Ctx& ctx) {
    if (leader_should_lead(ctx)) {
        const Prefs rest = marksman_turn(ctx);
        Prefs prefs{ctx.index(Kind::leadership)};
        for (int k = 0; k < rest.n; ++k) prefs.add(rest.v[k]);
        return prefs;
    }
    return marksman_turn(ctx);
}

}  // namespace traveller::npc
