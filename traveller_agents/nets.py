"""The networks of trained policies: ``ActorCritic`` (the separate actor and critic that
``traveller train ppo`` trains), ``EnsembleNet`` (several checkpoints played as one),
``SideNet`` (one network per side of the battle) and the masked logits they share.

The entity actor and critic come from ``traveller_agents.entity_net`` (imported here, never the
other way round); ``traveller_agents.checkpoint`` saves and reads these networks and
``traveller_agents.ppo_policy`` plays them as a ``Policy``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from traveller_agents.entity_net import EntityActor, EntityCritic, linear_head, tanh_mlp

__all__ = ["ARCHS", "CRITICS", "MASKED_LOGIT", "ActorCritic", "EnsembleNet", "SideNet",
           "actor_logits", "masked_logits"]

#: The logit given to illegal actions: finite (``0 * logit`` stays 0 in the entropy), and so low
#: that its probability is exactly 0 in float32.
MASKED_LOGIT = -1e9


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with every illegal action (``mask`` False) set to ``MASKED_LOGIT``."""
    return torch.where(mask, logits, torch.full_like(logits, MASKED_LOGIT))


def _mlp(sizes: list[int], out: int, out_std: float) -> nn.Sequential:
    """A tanh MLP with CleanRL's orthogonal initialisation (gain sqrt(2), ``out_std`` last)."""
    return nn.Sequential(*tanh_mlp(sizes), linear_head(sizes[-1], out, out_std))


#: Actor architectures: ``"mlp"`` (a tanh MLP over the flat vector) and ``"entity"``
#: (``traveller_agents.entity_net.EntityActor``: shared encoders per slot and per square, pointer
#: heads).
ARCHS = ("mlp", "entity")
#: What ``ActorCritic(critic=...)`` accepts: the tanh MLP, or ``EntityCritic`` (entity actors).
CRITICS = ("mlp", "entity")


class ActorCritic(nn.Module):
    """Separate actor and critic over one seat's observation (CleanRL's PPO): the actor gives one
    logit per slot-relative action, the critic (a tanh MLP) the seat's value.

    ``arch="mlp"``: the actor is a tanh MLP too. ``arch="entity"``: an ``EntityActor`` with
    token width ``embed`` and ``attention`` slot-attention blocks (the actor's only), which
    needs the
    ``observation_labels`` and ``action_labels`` to know which columns form each token and
    which output each action reads. ``critic="entity"`` (entity actors only) makes the critic
    an ``EntityCritic`` of the same shape instead of the MLP.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden: list[int], arch: str = "mlp",
                 observation_labels: list[str] | None = None,
                 action_labels: list[str] | None = None, embed: int = 64,
                 critic: str = "mlp", attention: int = 0) -> None:
        super().__init__()
        self.obs_dim, self.n_actions, self.hidden = int(obs_dim), int(n_actions), list(hidden)
        if arch not in ARCHS:
            raise ValueError(f"actor architecture must be one of {', '.join(ARCHS)}, got "
                             f"{arch!r}")
        if critic not in CRITICS:
            raise ValueError(f"critic architecture must be one of {', '.join(CRITICS)}, got "
                             f"{critic!r}")
        if arch != "entity" and (critic != "mlp" or attention):
            raise ValueError("an entity critic and slot attention need the entity actor "
                             "(arch='entity')")
        self.arch, self.embed = arch, int(embed)
        self.critic_arch, self.attention = critic, int(attention)
        self.observation_labels = list(observation_labels or [])
        if arch == "entity":
            if len(self.observation_labels) != self.obs_dim or action_labels is None \
                    or len(action_labels) != self.n_actions:
                raise ValueError("an entity actor needs the observation labels (one per "
                                 "observation entry) and the action labels (one per action)")
            self.actor = EntityActor(self.observation_labels, list(action_labels),
                                     self.hidden, self.embed, self.attention)
        else:
            self.actor = _mlp([self.obs_dim, *self.hidden], self.n_actions, 0.01)
        self.critic: nn.Module = (
            EntityCritic(self.observation_labels, list(action_labels or []), self.hidden,
                         self.embed)
            if critic == "entity" else _mlp([self.obs_dim, *self.hidden], 1, 1.0))
        # compiled views of actor and critic (a plain dict: not submodules, so the state dict
        # and the checkpoints stay those of the eager network)
        self._compiled: dict[str, nn.Module] | None = None

    def compile_modules(self) -> None:
        """From now on run the actor and the critic through ``torch.compile`` (the trainer's
        ``--compile``). The compiled modules share these weights; the state dict, ``twin``
        and checkpoints are unchanged (a twin runs eagerly until compiled itself)."""
        self._compiled = {"actor": torch.compile(self.actor), "critic": torch.compile(self.critic)}

    def twin(self) -> ActorCritic:
        """A new network of the same shape and architecture, holding a copy of these weights
        (eager: a compiled view would still read this network's weights)."""
        compiled, self._compiled = self._compiled, None
        try:
            return copy.deepcopy(self)
        finally:
            self._compiled = compiled

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """``V(obs)``: float ``[B]``."""
        critic = self._compiled["critic"] if self._compiled else self.critic
        return critic(obs).squeeze(-1)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked action logits ``[B, n_actions]`` (illegal actions at ``MASKED_LOGIT``)."""
        actor = self._compiled["actor"] if self._compiled else self.actor
        return masked_logits(actor(obs), mask)


class _MeanOf(nn.Module):
    """The mean of its members' outputs (the ensemble's actor, and its critic)."""

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.stack([m(obs) for m in self.members]).mean(dim=0)


class EnsembleNet(nn.Module):
    """Several ``ActorCritic`` networks of the same battles played as one policy.

    Its logits are the mean of the members' logits. Softmax of that mean is the normalised
    geometric mean of the members' policies (each member's log-normaliser is a constant per
    observation, so it drops out, masked or not): an action any member finds very unlikely
    stays unlikely, and greedy play takes the action with the highest mean log-probability.
    Its value is the mean of the members' values. It has the ``ActorCritic`` interface that
    playing and evaluation use (``actor``, ``critic``, ``value``, ``logits``, ``obs_dim``);
    training starts from one network, never from an ensemble.
    """

    arch = "ensemble"

    def __init__(self, members: list[ActorCritic]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 networks, got {len(members)}")
        self.obs_dim, self.n_actions = members[0].obs_dim, members[0].n_actions
        if any((m.obs_dim, m.n_actions) != (self.obs_dim, self.n_actions) for m in members):
            raise ValueError("ensemble members must share the observation size and actions")
        self.hidden: list[int] = []
        # the members' observation labels when any has them (an entity member needs them)
        self.observation_labels = next(
            (list(m.observation_labels) for m in members if m.observation_labels), [])
        self.actor = _MeanOf([m.actor for m in members])
        self.critic = _MeanOf([m.critic for m in members])

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """The members' mean ``V(obs)``: float ``[B]``."""
        return self.critic(obs).squeeze(-1)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked mean logits ``[B, n_actions]`` (illegal actions at ``MASKED_LOGIT``)."""
        return masked_logits(self.actor(obs), mask)


class _PerSide(nn.Module):
    """Each side's module by side name (a ``SideNet``'s actor, and its critic). It has no
    forward of its own: which network a row plays depends on the seat's side, which the
    observation does not say (``actor_logits`` asks for it)."""

    def __init__(self, nets: dict[str, nn.Module]) -> None:
        super().__init__()
        self.nets = nn.ModuleDict(nets)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        raise ValueError("a by-side checkpoint plays a different network for each side; ask "
                         "actor_logits(net, obs, sides) or SideNet.for_side(side)")


class SideNet(nn.Module):
    """One network per side of the battle, played as one policy: each seat plays its own
    side's network (``for_side``). The members were trained apart, each for its side (e.g.
    ``train_ppo --side-shares blue=1,red=0`` beside ``--side-shares blue=0,red=1``, each
    watching the other's pool): two populations of an asymmetric map.

    A member is an ``ActorCritic`` or an ``EnsembleNet``; every member reads the same
    observation and chooses among the same actions. ``actor``/``critic`` hold the members'
    modules by side (for the checkpoint's weights); there is no side-blind forward.
    """

    arch = "by_side"

    def __init__(self, members: dict[str, ActorCritic | EnsembleNet]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"a by-side checkpoint needs a network for at least 2 sides, got "
                             f"{len(members)}")
        nets = list(members.values())
        self.obs_dim, self.n_actions = nets[0].obs_dim, nets[0].n_actions
        if any((m.obs_dim, m.n_actions) != (self.obs_dim, self.n_actions) for m in nets):
            raise ValueError("a by-side checkpoint's networks must share the observation size "
                             "and actions")
        self.hidden: list[int] = []
        self.sides = list(members)
        self.observation_labels = next(
            (list(m.observation_labels) for m in nets if m.observation_labels), [])
        self.actor = _PerSide({side: m.actor for side, m in members.items()})
        self.critic = _PerSide({side: m.critic for side, m in members.items()})
        self._members = dict(members)  # plain dict: the modules are registered above

    def for_side(self, side: str) -> ActorCritic | EnsembleNet:
        """The network that plays side ``side`` (``ValueError`` naming the sides it has)."""
        if side not in self._members:
            raise ValueError(f"this by-side checkpoint has no network for side {side!r}; it "
                             f"has {', '.join(self.sides)}")
        return self._members[side]


def actor_logits(net: ActorCritic | EnsembleNet | SideNet, obs: torch.Tensor,
                 sides: str | Sequence[str] | np.ndarray | None = None) -> torch.Tensor:
    """The raw actor logits ``[B, n_actions]`` of ``net`` for ``obs``. A ``SideNet`` plays each
    row's side's network: ``sides`` is one side name for every row, or one per row
    (``ValueError`` when it is missing); other networks ignore it."""
    if not isinstance(net, SideNet):
        return net.actor(obs)
    if sides is None:
        raise ValueError("a by-side checkpoint needs the side of each row it plays")
    if isinstance(sides, str):
        return net.for_side(sides).actor(obs)
    sides = np.asarray(sides)
    if sides.shape != (obs.shape[0],):
        raise ValueError(f"actor_logits: {sides.shape[0] if sides.ndim else 0} sides for "
                         f"{obs.shape[0]} observations")
    out = torch.empty(obs.shape[0], net.n_actions, dtype=obs.dtype)
    for side in np.unique(sides):
        rows = torch.from_numpy(np.flatnonzero(sides == side))
        out[rows] = net.for_side(str(side)).actor(obs[rows])
    return out
