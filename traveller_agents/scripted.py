"""The scripted policies by name: ``POLICIES`` and ``make_scripted("rush", seed=0)``.

This table is shared by ``traveller_agents.registry`` (which adds trained ``.zip`` checkpoints on
top) and ``traveller_agents.trained`` (whose assisted models and self-play pools name a scripted
policy), so that neither of those two imports the other. To add a policy, write a class implementing
the ``Policy`` protocol (usually a ``tactics.ScriptedPolicy`` subclass) and add it to ``POLICIES``.
"""

from __future__ import annotations

from typing import Any

from traveller_agents.aiming import OptimalAimPolicy
from traveller_agents.cover import CoverPolicy
from traveller_agents.leader import AlwaysLeadPolicy, LeaderPolicy, NeverLeadPolicy
from traveller_agents.marksman import MarksmanPolicy
from traveller_agents.rush import RushPolicy
from traveller_agents.tactician import TacticianPolicy
from traveller_env.policy import PassivePolicy, Policy, RandomPolicy

__all__ = ["POLICIES", "make_scripted"]

#: Each scripted behaviour's registry name and its class (constructed with ``seed=``).
POLICIES: dict[str, type] = {
    "random": RandomPolicy,
    "rush": RushPolicy,
    "marksman": MarksmanPolicy,
    "cover": CoverPolicy,
    "leader": LeaderPolicy,
    "tactician": TacticianPolicy,
    "passive": PassivePolicy,
    "always_lead": AlwaysLeadPolicy,
    "never_lead": NeverLeadPolicy,
    "optimal_aim": OptimalAimPolicy,
}


def make_scripted(name: str, seed: int | None = None, **params: Any) -> Policy:
    """A new scripted policy by name (``params`` go to its constructor); ``ValueError`` on a
    name that is not in ``POLICIES``."""
    cls = POLICIES.get(name)
    if cls is None:
        raise ValueError(f"unknown scripted policy {name!r}; known: {', '.join(POLICIES)}")
    return cls(seed=seed, **params)
