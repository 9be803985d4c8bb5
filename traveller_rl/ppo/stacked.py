"""The frozen pool's actors in one forward pass: ``StackedActors``.

A ``train_ppo --pool`` run plays each pool battle's opponent seats with one of up to
``--pool-size`` frozen copies of the learner. Run one by one, each copy's forward pass costs a
fixed overhead whatever its few rows, and with 30 copies in play that overhead was the largest
share of a pool run's inference. The copies of one run share their structure, so their weights
stack: ``torch.func.stack_module_state`` gives every parameter a leading member axis and
``torch.func.vmap`` runs all the members at once on a padded ``[members, rows, obs]`` batch
(each member sees only its own rows; padding rows are computed and dropped).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["StackedActors"]


class StackedActors:
    """The actors ``members`` (modules of one structure, in eval mode) run as one.

    ``logits(obs, member)`` returns what ``members[member[i]](obs[i:i+1])`` would, for every
    row ``i`` at once (to float rounding: the batched matrix products add in another order).
    Slot attention has no batching rule in torch, so an actor with ``--attention`` blocks runs
    them member by member inside the same call.
    """

    def __init__(self, members: Sequence[nn.Module]) -> None:
        if not members:
            raise ValueError("StackedActors needs at least one member")
        self.n = len(members)
        self.params, self.buffers = torch.func.stack_module_state(list(members))
        base = copy.deepcopy(members[0]).to("meta")

        def one(params: dict, buffers: dict, obs: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(base, (params, buffers), (obs,))

        self._run = torch.func.vmap(one)

    def logits(self, obs: torch.Tensor, member: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, n_actions]`` for observations ``[B, obs_dim]``, row ``i`` through
        member ``member[i]`` (int64 ``[B]``, each in ``[0, n)``)."""
        if obs.shape[0] != member.shape[0]:
            raise ValueError(f"StackedActors: {obs.shape[0]} observations for "
                             f"{member.shape[0]} member indices")
        if obs.shape[0] == 0:
            return torch.empty(0, 0, dtype=obs.dtype)
        if int(member.min()) < 0 or int(member.max()) >= self.n:
            raise ValueError(f"StackedActors: member indices must lie in [0, {self.n})")
        counts = torch.bincount(member, minlength=self.n)
        order = torch.argsort(member, stable=True)
        sorted_member = member[order]
        # each row's place among its member's rows
        place = torch.arange(len(member)) - (torch.cumsum(counts, 0) - counts)[sorted_member]
        padded = obs.new_zeros(self.n, int(counts.max()), obs.shape[1])
        padded[sorted_member, place] = obs[order]
        with warnings.catch_warnings():
            # slot attention (--attention) has no vmap rule: torch loops over the members
            # itself (still correct) and says so once per call
            warnings.filterwarnings("ignore", message="There is a performance drop")
            out = self._run(self.params, self.buffers, padded)[sorted_member, place]
        logits = torch.empty_like(out)
        logits[order] = out
        return logits
