"""The policy interface (defined in ``traveller_env.policy``, re-exported here for agents)."""

from traveller_env.policy import (
    PassivePolicy,
    Policy,
    RandomPolicy,
    legal_indices,
    policy_action,
)

__all__ = ["PassivePolicy", "Policy", "RandomPolicy", "legal_indices", "policy_action"]
