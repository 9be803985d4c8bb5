// STUB (lead's local build only; replaced by the npc branch).
#pragma once
#include <cstdint>
#include <string>
#include "battle.hpp"
namespace traveller {
enum class PolicyKind : std::uint8_t { random, passive, rush, marksman };
class CorePolicy {
public:
    explicit CorePolicy(PolicyKind k) : k_(k) {}
    void reset(std::uint64_t) {}
    int act(const Battle& b, int, const std::uint8_t* mask) {
        for (int i = 0; i < b.num_actions(); ++i) if (mask[i]) return i;
        return 0;
    }
private:
    PolicyKind k_;
};
}
namespace traveller {
inline bool core_policy_kind(const std::string& name, PolicyKind* out) {
    static const char* const names[] = {"random", "passive", "rush", "marksman"};
    for (int i = 0; i < 4; ++i) if (name == names[i]) { *out = static_cast<PolicyKind>(i); return true; }
    return false;
}
}
