"""Policies by name: ``make_policy("rush", seed=0)``, ``parse_policy_list("rush,marksman")``.

One registry serves every command: ``traveller_env.policy``. It knows the built-in ``random`` and
``passive``, names added with ``register_policy``, the scripted NPCs of ``traveller_agents``
(declared as entry points of the group ``traveller_tactics.policies``; ``POLICIES`` in
``traveller_agents.scripted`` is the same table, by class), any installed package's entry points,
and user code named as ``module:Class`` or ``path/to/file.py[:Class]``. This module adds the
policies stored in files, which need the scenario they will play: a name ending in ``.zip`` is a
trained ``MaskablePPO`` checkpoint (``traveller_agents.trained.load_policy``), one ending in ``.pt``
a checkpoint of ``traveller train ppo`` (``traveller_agents.ppo_policy``), one ending in ``.onnx`` a
policy exported by ``traveller export`` (``traveller_agents.onnx_policy``: onnxruntime, no torch),
and a folder holding an RLlib checkpoint a module trained by ``traveller train rllib``
(``traveller_agents.rllib_policy.load_rllib_policy``). ``traveller_env.policy.resolve_policy`` finds
them through this module's ``load_trained`` (entry-point group
``traveller_tactics.policy_loaders``).

Imports run one way: ``registry`` -> ``trained`` -> ``scripted``.
"""

from __future__ import annotations

from typing import Any

from traveller_agents.trained import load_policy
from traveller_env import policy as registry
from traveller_env.policy import Policy

__all__ = ["is_known", "is_trained", "load_trained", "make_policy", "parse_policy_list"]

_FILES = ", a path to a MaskablePPO .zip, a train ppo .pt, an exported .onnx or an RLlib "\
         "checkpoint folder"


def make_policy(name: str, seed: int | None = None, scenario: Any = None,
                **params: Any) -> Policy:
    """A new policy by registry name or user spec (``params`` go to its constructor), or a
    trained one from a ``.zip``, ``.pt`` or ``.onnx`` path or an RLlib checkpoint folder
    (``scenario`` required: the checkpoint is checked against it)."""
    if is_trained(name):
        if scenario is None:
            raise ValueError(f"{name}: a trained policy needs the scenario it will play")
        return load_policy(name, scenario, seed=seed, **params)
    if not is_known(name):
        raise registry.unknown_policy_error(name, _FILES)
    return registry.make_policy(name, seed=seed, **params)


def load_trained(name: str, scenario: Any, seed: int | None = None,
                 **params: Any) -> Policy | None:
    """The loader ``traveller_env.policy.resolve_policy`` finds through the entry-point group
    ``traveller_tactics.policy_loaders``: a trained checkpoint, or ``None`` for other names."""
    if not is_trained(name):
        return None
    if scenario is None:
        raise ValueError(f"{name}: a trained policy needs the scenario it will play")
    return load_policy(name, scenario, seed=seed, **params)


def is_trained(name: str) -> bool:
    """Whether ``name`` names a trained policy: a ``.zip`` path (MaskablePPO), a ``.pt`` path
    (``traveller train ppo``, ``traveller_agents.ppo_policy``), an ``.onnx`` path (exported,
    ``traveller_agents.onnx_policy``) or an RLlib checkpoint folder
    (``traveller_agents.rllib_policy.is_rllib_checkpoint``)."""
    from traveller_agents.onnx_policy import is_onnx_file
    from traveller_agents.rllib_policy import is_rllib_checkpoint

    return name.endswith((".zip", ".pt")) or is_onnx_file(name) or is_rllib_checkpoint(name)


def is_known(name: str) -> bool:
    """Whether the registry knows ``name`` without loading a file: a registered or installed
    name, a search NPC's name (``search-64``; its parameters checked now), or user code
    (``module:Class``, ``file.py[:Class]``; imported now to check it: ``ValueError``/
    ``ImportError`` say what is wrong with it)."""
    if name in registry.policy_names():
        return True
    if registry.is_search_name(name):
        registry.make_policy(name)  # checks its parameters (ValueError naming the one at fault)
        return True
    if registry.is_user_spec(name):
        registry.user_policy_factory(name)
        return True
    return False


def parse_policy_list(text: str) -> list[str]:
    """Split ``"rush,marksman"`` into names, checking each (``ValueError`` on an unknown
    name or a duplicate)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("no policy given")
    for n in names:
        if not is_trained(n) and not is_known(n):
            raise registry.unknown_policy_error(n, _FILES)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"policy listed twice: {', '.join(dupes)}")
    return names
