// One combatant's state (traveller_env/rules/combatant.py), flat: its equipment's numbers and
// the skill levels the rules ask about are resolved once, from the scenario, on the Python side.
#pragma once

#include "checks.hpp"

namespace traveller {

struct Weapon {
    bool melee = true;          // range_m is None in Python
    double range_m = 0.0;
    int magazine = 0;
    int spare_magazines = 0;
    int str_requirement = 0;
    int draw_actions = 1;
    int reload_actions = 1;
    int damage_count = 1;       // DiceExpr.count
    int damage_modifier = 0;    // DiceExpr.modifier
    bool needs_draw = true;     // skill != melee.unarmed
};

// Skill levels (kNoSkill: none) for every check the rules make.
struct SkillLevels {
    int weapon = kNoSkill;      // the weapon's skill (attack, parry with it)
    int unarmed = kNoSkill;     // melee.unarmed (unarmed parry)
    int dodge = kNoSkill;       // athletics.dexterity
    int leadership = kNoSkill;  // leadership
    int tactics = kNoSkill;     // tactics.military (R3.3), meaningful when has_tactics
    bool has_tactics = false;   // holds tactics.military or the base tactics
};

enum ReadyKind : int { kReadyNone = 0, kReadyDraw = 1, kReadyReload = 2 };

struct Combatant {
    // ---- fixed for the battle
    int side = 0;
    int order = 0;
    Weapon weapon;
    SkillLevels skills;
    int protection = 0;
    double movement_m = 6.0;
    bool radio = false;
    bool prepared = false;
    // ---- state
    int chars[kNumChars] = {};
    int x = 0, y = 0;
    int stance = 0;
    bool drawn = false;
    int ammo = 0;
    int spares = 0;
    int initiative = 0;
    int init_mod_now = 0;
    int init_mod_next = 0;
    bool hasty = false;
    bool turn_begun = false;
    int minors = 0;
    bool significant = false;
    int aim_target = -1;
    int aim_dm = 0;
    int ready_kind = kReadyNone;
    int ready_count = 0;
    bool bonus = false;
    bool penalty = false;
    bool down = false;
    bool dead = false;
    bool out = false;

    int current_initiative() const noexcept { return initiative + init_mod_now; }
    int dm(int characteristic) const noexcept { return characteristic_dm(chars[characteristic]); }
    bool weapon_ready() const noexcept { return drawn || !weapon.needs_draw; }
};

}  // namespace traveller
