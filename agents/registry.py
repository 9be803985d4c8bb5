"""Policies by name: ``make_policy("rush", seed=0)``, ``parse_policy_list("rush,marksman")``.

``POLICIES`` maps each scripted behaviour's name to its class (the table lives in
``agents.scripted``); a name ending in ``.zip`` is a trained ``MaskablePPO`` checkpoint
(``agents.trained.load_policy``), one ending in ``.pt`` a checkpoint of
``experiments/train_ppo.py`` (``agents.ppo_policy``), one ending in ``.onnx`` a policy
exported by ``traveller export`` (``agents.onnx_policy``: onnxruntime, no torch), and a folder
holding an RLlib checkpoint is a module trained by ``experiments/train_rllib.py``
(``agents.rllib_policy.load_rllib_policy``); all need the scenario they will play. To add a
policy, write a class implementing the ``Policy`` protocol (usually a
``common.ScriptedPolicy`` subclass) and add it to ``POLICIES`` in ``agents/scripted.py``.

Imports run one way: ``registry`` -> ``trained`` -> ``scripted``.
"""

from __future__ import annotations

from typing import Any

from .base import Policy
from .scripted import POLICIES, make_scripted
from .trained import load_policy

__all__ = ["POLICIES", "is_trained", "load_trained", "make_policy", "parse_policy_list"]


def make_policy(name: str, seed: int | None = None, scenario: Any = None,
                **params: Any) -> Policy:
    """A new policy by registry name (``params`` go to its constructor), or a trained one
    from a ``.zip``, ``.pt`` or ``.onnx`` path or an RLlib checkpoint folder (``scenario``
    required: the checkpoint is checked against it)."""
    if is_trained(name):
        if scenario is None:
            raise ValueError(f"{name}: a trained policy needs the scenario it will play")
        return load_policy(name, scenario, seed=seed, **params)
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}, a path to "
                         "a MaskablePPO .zip, a train_ppo .pt, an exported .onnx or an RLlib "
                         "checkpoint folder")
    return make_scripted(name, seed=seed, **params)


def load_trained(name: str, scenario: Any, seed: int | None = None) -> Policy | None:
    """The loader ``traveller_env.policy.resolve_policy`` finds through the entry-point group
    ``traveller_tactics.policy_loaders``: a trained checkpoint, or ``None`` for other names."""
    if not is_trained(name):
        return None
    if scenario is None:
        raise ValueError(f"{name}: a trained policy needs the scenario it will play")
    return load_policy(name, scenario, seed=seed)


def is_trained(name: str) -> bool:
    """Whether ``name`` names a trained policy: a ``.zip`` path (MaskablePPO), a ``.pt`` path
    (``experiments/train_ppo.py``, ``agents.ppo_policy``), an ``.onnx`` path (exported,
    ``agents.onnx_policy``) or an RLlib checkpoint folder
    (``agents.rllib_policy.is_rllib_checkpoint``)."""
    from .onnx_policy import is_onnx_file
    from .rllib_policy import is_rllib_checkpoint

    return name.endswith((".zip", ".pt")) or is_onnx_file(name) or is_rllib_checkpoint(name)


def parse_policy_list(text: str) -> list[str]:
    """Split ``"rush,marksman"`` into names, checking each (``ValueError`` on an unknown
    name or a duplicate)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("no policy given")
    for n in names:
        if not is_trained(n) and n not in POLICIES:
            raise ValueError(f"unknown policy {n!r}; known: {', '.join(POLICIES)}, a path to "
                             "a MaskablePPO .zip, a train_ppo .pt, an exported .onnx or an "
                             "RLlib checkpoint folder")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"policy listed twice: {', '.join(dupes)}")
    return names
