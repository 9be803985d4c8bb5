"""BenchMARL 1.5.1 on TorchRL 0.14: the three names TorchRL changed under it.

BenchMARL 1.5.1 declares ``torchrl~=0.10`` (so pip installs it beside TorchRL 0.14.1, the
``torchrl`` extra) but was written against TorchRL 0.10; BenchMARL 1.5.2 pins
``torchrl<0.12``, which the ``torchrl`` extra excludes. Three things break on 0.14:

* ``benchmarl.experiment`` imports ``torchrl.collectors.SyncDataCollector``, which TorchRL
  renamed ``Collector`` (same arguments);
* MAPPO and IPPO build ``ClipPPOLoss(entropy_coef=..., critic_coef=...)``; TorchRL 0.11
  renamed both keywords ``entropy_coeff``/``critic_coeff`` and raises ``TypeError`` on the old
  ones.

``apply()`` adds the old collector name as an alias and gives BenchMARL's MAPPO and IPPO
modules a ``ClipPPOLoss`` that takes the old keywords; it changes nothing where the old names
still work, and is idempotent. Call it before importing ``benchmarl``
(``traveller_env.integrations.benchmarl_task`` does). Other BenchMARL algorithms are not patched (nor
tried).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import torchrl.collectors
from torchrl.objectives import ClipPPOLoss

__all__ = ["ClipPPOLossOldKeywords", "apply"]

#: BenchMARL's modules that build ``ClipPPOLoss`` with the old keywords.
PPO_MODULES = ("benchmarl.algorithms.mappo", "benchmarl.algorithms.ippo")


class ClipPPOLossOldKeywords(ClipPPOLoss):
    """TorchRL's ``ClipPPOLoss`` that also takes ``entropy_coef`` and ``critic_coef``."""

    def __init__(self, *args: Any, entropy_coef: float | None = None,
                 critic_coef: float | None = None, **kwargs: Any) -> None:
        if entropy_coef is not None:
            kwargs.setdefault("entropy_coeff", entropy_coef)
        if critic_coef is not None:
            kwargs.setdefault("critic_coeff", critic_coef)
        super().__init__(*args, **kwargs)


def _ppo_loss_lacks_old_keywords() -> bool:
    keywords = inspect.signature(ClipPPOLoss.__init__).parameters
    return "entropy_coef" not in keywords and "entropy_coeff" in keywords


def apply() -> None:
    """Make BenchMARL 1.5.1 importable and its MAPPO/IPPO constructible on this TorchRL."""
    if not hasattr(torchrl.collectors, "SyncDataCollector"):
        torchrl.collectors.SyncDataCollector = torchrl.collectors.Collector  # type: ignore[attr-defined]
    if _ppo_loss_lacks_old_keywords():
        for name in PPO_MODULES:
            module = importlib.import_module(name)
            if getattr(module, "ClipPPOLoss", None) is ClipPPOLoss:
                module.ClipPPOLoss = ClipPPOLossOldKeywords  # type: ignore[attr-defined]
