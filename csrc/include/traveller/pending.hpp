// The attack waiting for its target's reaction (R3.6): traveller_env/rules/pending.py.
#pragma once

#include "checks.hpp"

namespace traveller {

struct PendingAttack {
    bool active = false;  // Python's None: no attack pending
    int attacker = -1;
    int target = -1;
    bool melee = false;
    Dms dms;
    double range_m = 0.0;
};

}  // namespace traveller
