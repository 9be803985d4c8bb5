// Private to the in-core scripted policies (csrc/src/policies/): what each NPC file offers the
// others and the dispatcher (scripted.cpp). One section per file, mirroring the Python each one
// follows in traveller_agents/; everything else in those files is file-local.
#pragma once

#include <vector>

#include "policies/common.hpp"
#include "traveller/policies.hpp"

namespace traveller::npc {

// ---------------------------------------------------------------------------- rush.cpp
// RushPolicy.turn: draw/reload, close in on the nearest enemy unless close enough, attack.
Prefs rush_turn(const Ctx& ctx);

// ---------------------------------------------------------------------------- marksman.cpp
inline constexpr int kMaxAim = 6;  // MarksmanPolicy.max_aim

// MarksmanPolicy.best_target's choice (e < 0: no target).
struct Target {
    int e = -1;
    int base = 0;  // attack_dm with aim 0
    int held = 0;  // the aim held on it
};

// MarksmanPolicy.best_target: the enemy with the best achievable rate of value per Minor.
Target marksman_best_target(const Ctx& ctx);
// MarksmanPolicy.shoot_or_advance: aim or fire (then end the turn); with no shot anywhere, move
// toward the nearest enemy.
Prefs marksman_shoot_or_advance(const Ctx& ctx);
// MarksmanPolicy.turn: back away from close enemies, else shoot or advance.
Prefs marksman_turn(const Ctx& ctx);

// ---------------------------------------------------------------------------- cover.cpp
// CoverPolicy.react: dodge or parry only after its own turn, when it lowers the hit chance enough.
int cover_react(const Ctx& ctx);
// CoverPolicy.turn: move to cover, get down, then shoot as marksman.
Prefs cover_turn(const Ctx& ctx);

// ---------------------------------------------------------------------------- leader.cpp
// LeaderPolicy.receivers: allies that could take a bonus now, into out.
void leader_receivers(const Ctx& ctx, std::vector<int>& out);
// LeaderPolicy.leadership_value: (chance of a positive Effect, expected value of the check).
void leader_leadership_value(const Ctx& ctx, double& p_pos, double& value);
// LeaderPolicy.free_action: bonuses to the allies whose attack gains most; penalties on the worst
// threats; -1 for none.
int leader_free_action(const Ctx& ctx);
// LeaderPolicy.turn: lead when it pays, else fight like a marksman.
Prefs leader_turn(const Ctx& ctx);

// ---------------------------------------------------------------------------- tactician.cpp
// TacticianPolicy.haste: haste when overtaking an enemy is worth the DM -1.
int tactician_haste(const Ctx& ctx);
// TacticianPolicy.turn: the next action of the turn's plan, searching a new plan when the battle
// has changed under it (plan: the policy's TacticianPlan, updated).
Prefs tactician_turn(const Ctx& ctx, TacticianPlan& plan);

}  // namespace traveller::npc
