"""BenchMARL 1.5.1 on TorchRL 0.14: the names and the check TorchRL changed under it.

BenchMARL 1.5.1 declares ``torchrl~=0.10`` (so pip installs it beside TorchRL 0.14.1, the
``torchrl`` extra) but was written against TorchRL 0.10; BenchMARL 1.5.2 pins
``torchrl<0.12``, which the ``torchrl`` extra excludes. Four things break on 0.14:

* ``benchmarl.experiment`` imports ``torchrl.collectors.SyncDataCollector``, which TorchRL
  renamed ``Collector`` (same arguments);
* MAPPO and IPPO build ``ClipPPOLoss(entropy_coef=..., critic_coef=...)``; TorchRL 0.11
  renamed both keywords ``entropy_coeff``/``critic_coeff`` and raises ``TypeError`` on the old
  ones;
* IQL, QMIX and VDN build ``QValueModule(spec=action_spec[group, "action"])``: the group's
  action spec, whose shape ``(n_agents,)`` already holds the agent dimension. TorchRL 0.11 added
  a check of the chosen action's shape against the spec (``strict_shape``, on by default) that
  puts the spec's shape after the batch's, which holds the agent dimension too, so it expects
  ``[batch, n_agents, n_agents]`` and raises ``Action shape torch.Size([B, 1]) does not match
  expected shape torch.Size([B, 1, 1])`` on every task, whatever its env. TorchRL 0.10 had no
  check; the actions (``[batch, n_agents]``, one index per agent) are right.

``apply()`` adds the old collector name as an alias, gives BenchMARL's MAPPO and IPPO
modules a ``ClipPPOLoss`` that takes the old keywords and its IQL, QMIX and VDN modules a
``QValueModule`` without the shape check (``strict_shape=False``, TorchRL 0.10's behaviour);
it changes nothing where the old names still work, and is idempotent. It must run before
``benchmarl`` is first imported (BenchMARL's package imports its experiment module, which
imports the old collector name): ``traveller_env.integrations.benchmarl_task`` applies it when
imported, so import that module first. The other algorithms (MASAC, ISAC, ...) need nothing.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import torchrl.collectors
from torchrl.modules import QValueModule
from torchrl.objectives import ClipPPOLoss

__all__ = ["ClipPPOLossOldKeywords", "QValueModuleUnchecked", "apply"]

#: BenchMARL's modules that build ``ClipPPOLoss`` with the old keywords.
PPO_MODULES = ("benchmarl.algorithms.mappo", "benchmarl.algorithms.ippo")
#: BenchMARL's modules that build ``QValueModule`` over a group's action spec.
VALUE_MODULES = ("benchmarl.algorithms.iql", "benchmarl.algorithms.qmix",
                 "benchmarl.algorithms.vdn")


class ClipPPOLossOldKeywords(ClipPPOLoss):
    """TorchRL's ``ClipPPOLoss`` that also takes ``entropy_coef`` and ``critic_coef``."""

    def __init__(self, *args: Any, entropy_coef: float | None = None,
                 critic_coef: float | None = None, **kwargs: Any) -> None:
        if entropy_coef is not None:
            kwargs.setdefault("entropy_coeff", entropy_coef)
        if critic_coef is not None:
            kwargs.setdefault("critic_coeff", critic_coef)
        super().__init__(*args, **kwargs)


class QValueModuleUnchecked(QValueModule):
    """TorchRL's ``QValueModule`` without the action-shape check unless asked for
    (``strict_shape=False`` by default: TorchRL 0.10's behaviour, see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("strict_shape", False)
        super().__init__(*args, **kwargs)


def _ppo_loss_lacks_old_keywords() -> bool:
    keywords = inspect.signature(ClipPPOLoss.__init__).parameters
    return "entropy_coef" not in keywords and "entropy_coeff" in keywords


def apply() -> None:
    """Make BenchMARL 1.5.1 importable, its MAPPO/IPPO constructible and its IQL, QMIX and
    VDN runnable on this TorchRL."""
    if not hasattr(torchrl.collectors, "SyncDataCollector"):
        torchrl.collectors.SyncDataCollector = torchrl.collectors.Collector  # type: ignore[attr-defined]
    if _ppo_loss_lacks_old_keywords():
        for name in PPO_MODULES:
            module = importlib.import_module(name)
            if getattr(module, "ClipPPOLoss", None) is ClipPPOLoss:
                module.ClipPPOLoss = ClipPPOLossOldKeywords  # type: ignore[attr-defined]
    if "strict_shape" in inspect.signature(QValueModule.__init__).parameters:
        for name in VALUE_MODULES:
            module = importlib.import_module(name)
            if getattr(module, "QValueModule", None) is QValueModule:
                module.QValueModule = QValueModuleUnchecked  # type: ignore[attr-defined]
