"""The PPO update (CleanRL's): ``--epochs`` passes over the rollout's decisions in
``--minibatches`` shuffled minibatches, each a gradient step on the clipped surrogate, the
clipped value loss and the entropy bonus, with gradient-norm clipping. The update runs where
the network is (``--device``), on the rollout's tensors where they already are (a
``SeatRollout`` on that device: no copy; host arrays: one copy per update)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["DEVICES", "MAX_AUTO_UPDATE_THREADS", "UpdateSettings", "UpdateStats", "ppo_update",
           "resolve_device", "torch_threads", "update_threads"]

#: ``--device`` choices.
DEVICES = ("cpu", "cuda", "auto")


def resolve_device(name: str) -> torch.device:
    """``--device``: ``cpu``, ``cuda`` (``ValueError`` when torch sees no GPU) or ``auto``
    (cuda when torch sees a GPU, else cpu)."""
    if name not in DEVICES:
        raise ValueError(f"--device must be one of {', '.join(DEVICES)}, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no GPU here (torch.cuda.is_available() is "
                         "False); use --device cpu or auto")
    return torch.device(name)


#: ``--update-threads 0``: one torch thread per available core, at most this many.
MAX_AUTO_UPDATE_THREADS = 8


def update_threads(k: int) -> int:
    """``--update-threads``: torch's CPU threads during the update, or with 0 one per
    available core up to ``MAX_AUTO_UPDATE_THREADS`` (``ValueError`` naming the flag if
    negative or over 256)."""
    from traveller_rl.ppo.rows import thread_count

    return thread_count(k, "--update-threads", MAX_AUTO_UPDATE_THREADS)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's CPU threads set to ``n`` inside the block and restored after it. The trainer
    widens them for the update only: during the rollouts the battle threads have the cores,
    and idle torch workers spinning beside them would slow the battles down."""
    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != before:
            torch.set_num_threads(before)


@dataclass(frozen=True)
class UpdateSettings:
    """The update's hyperparameters (the trainer's flags of the same names)."""

    epochs: int = 4
    minibatches: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5

    @classmethod
    def of(cls, args: Any) -> UpdateSettings:
        """The settings of a trainer's ``Args``."""
        ppo = args.ppo
        return cls(ppo.n_epochs, ppo.minibatches, ppo.clip_coef, ppo.ent_coef, ppo.vf_coef,
                   ppo.max_grad_norm)


@dataclass(frozen=True)
class UpdateStats:
    """What an update logs: the batch size, the last minibatch's losses and approximate KL,
    and the mean share of clipped ratios over every minibatch."""

    batch: int
    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clipfrac: float


def ppo_update(net: Any, optimizer: torch.optim.Optimizer, rollout: Any, idx: Any, adv: Any,
               ret: Any, rng: np.random.Generator, settings: UpdateSettings,
               cluster: Any = None) -> UpdateStats:
    """Update ``net`` (an ``traveller_agents.ppo_policy.ActorCritic``) on the decisions ``idx`` of
    ``rollout`` (a ``SeatRollout``, or anything with its ``obs``, ``mask``, ``action``,
    ``logp`` and ``value``) with their advantages ``adv`` and returns ``ret`` (tensors, as
    ``SeatRollout.advantages`` gives them, or arrays); ``rng`` shuffles the minibatches. It
    runs on the device of ``net``'s parameters, reading tensors already there in place.

    With ``cluster`` (a joined ``traveller_rl.ppo.distributed.Cluster``) each gradient is
    averaged over the ranks before its step, and every rank takes as many steps per epoch as
    the rank with the most minibatches (one whose decisions are used up adds no gradient)."""
    device = next(net.parameters()).device

    def there(data: Any) -> torch.Tensor:
        return torch.as_tensor(data).to(device)

    idx = there(idx)
    b_obs, b_mask, b_act, b_logp, b_val = (
        there(getattr(rollout, name))[idx] for name in ("obs", "mask", "action", "logp", "value"))
    b_adv, b_ret = there(adv), there(ret)
    clip = settings.clip_coef
    batch = len(idx)
    mb_size = max(1, -(-batch // settings.minibatches))
    clipfracs, approx_kl = [], torch.zeros((), device=device)
    pg_loss = v_loss = entropy = torch.zeros((), device=device)
    steps = -(-batch // mb_size)  # minibatches per epoch
    if cluster is not None:
        steps = cluster.most(steps)
    for _ in range(settings.epochs):
        perm = torch.from_numpy(rng.permutation(batch)).to(device)
        for start in range(0, steps * mb_size, mb_size):
            mb = perm[start:start + mb_size]
            if not len(mb):  # another rank's minibatch: this rank adds no gradient to it
                _step_without_data(net, optimizer, settings.max_grad_norm, cluster)
                continue
            mb_obs = b_obs[mb]
            logits = net.logits(mb_obs, b_mask[mb])
            logp_all = torch.log_softmax(logits, -1)
            new_logp = logp_all.gather(1, b_act[mb][:, None]).squeeze(1)
            # softmax, not logp_all.exp(): exp() of the masked logits' huge negative
            # log-probabilities takes a slow path (10x here); softmax gives the same 0s.
            entropy = -(torch.softmax(logits, -1) * logp_all).sum(-1).mean()
            log_ratio = new_logp - b_logp[mb]
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()
                clipfracs.append(((ratio - 1).abs() > clip).float().mean())
            mb_adv = b_adv[mb]
            if len(mb) > 1:
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            pg_loss = torch.max(-mb_adv * ratio,
                                -mb_adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
            new_v = net.value(mb_obs)
            v_clipped = b_val[mb] + torch.clamp(new_v - b_val[mb], -clip, clip)
            v_loss = 0.5 * torch.max((new_v - b_ret[mb]) ** 2,
                                     (v_clipped - b_ret[mb]) ** 2).mean()
            loss = pg_loss - settings.ent_coef * entropy + settings.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            if cluster is not None:  # the ranks' mean gradient: every rank takes the same step
                cluster.average_grads(net)
            torch.nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            optimizer.step()
    # one read back for every minibatch's share (float64, as the mean of Python floats;
    # none for an empty batch: NaN, as before)
    shares = (torch.stack(clipfracs).cpu().numpy().astype(np.float64) if clipfracs
              else np.zeros(0))
    return UpdateStats(batch, pg_loss.item(), v_loss.item(), entropy.item(), approx_kl.item(),
                       float(shares.mean()))


def _step_without_data(net: Any, optimizer: torch.optim.Optimizer, max_grad_norm: float,
                       cluster: Any) -> None:
    """A rank's part in a step of the other ranks' minibatch when its own decisions are used
    up: no gradient of its own, the ranks' mean, clipped, then the step every rank takes."""
    optimizer.zero_grad()
    cluster.average_grads(net)
    torch.nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)
    optimizer.step()
