// The rules switches a scenario may set: traveller_env/rules/options.py.
#pragma once

namespace traveller {

struct RulesOptions {
    bool hastening = true;
    bool reactions = true;
    double comms_range_m = 30.0;
    int max_rounds = 20;
};

}  // namespace traveller
