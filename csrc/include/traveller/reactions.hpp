// Dynamic Initiative (R3.4-R3.7): traveller_env/rules/reactions.py.
#pragma once

#include "combatant.hpp"

namespace traveller {

inline constexpr int kHasteInitiative = 2;
inline constexpr int kReactionInitiativeCost = 2;

enum Reaction : int { kReactNone = 0, kReactDodge = 1, kReactParry = 2 };

inline bool melee_weapon_ready(const Combatant& c) noexcept {
    return c.weapon.melee && (c.drawn || !c.weapon.needs_draw);
}

// R3.6: parry answers melee only, with a drawn melee weapon or unarmed with none drawn.
inline bool can_parry(const Combatant& reactor, bool melee_attack) noexcept {
    if (!melee_attack) return false;
    return melee_weapon_ready(reactor) || !reactor.drawn;
}

// The level of the parry's Melee skill (kNoSkill: none).
inline int parry_level(const Combatant& reactor) noexcept {
    return melee_weapon_ready(reactor) ? reactor.skills.weapon : reactor.skills.unarmed;
}

// R3.6: dodge -max(1, Athletics (dexterity)), parry -max(1, the parry skill), none 0.
inline int reaction_dm(const Combatant& reactor, int reaction) noexcept {
    int level = 0;
    if (reaction == kReactDodge) {
        level = reactor.skills.dodge;
    } else if (reaction == kReactParry) {
        level = parry_level(reactor);
    } else {
        return 0;
    }
    if (level == kNoSkill) level = 0;  // Python: `skill_level(...) or 0`
    return -(level > 1 ? level : 1);
}

// R3.7: Initiative lost to recoil.
constexpr int recoil_cost(int str_requirement, int attacker_str) noexcept {
    if (str_requirement <= 0) return 0;
    const int d = characteristic_dm(str_requirement) - characteristic_dm(attacker_str);
    return d > 0 ? d : 0;
}

}  // namespace traveller
