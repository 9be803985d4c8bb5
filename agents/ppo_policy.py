"""Trained policies: a checkpoint of ``experiments/train_ppo.py`` (a ``.pt`` file) as a ``Policy``.

The network (``ActorCritic``) and the checkpoint format live here, so that a checkpoint plays as
an NPC anywhere a policy name is accepted (``agents.registry.make_policy``, the tournament's
``--policies``, ``traveller eval``, ``traveller_env.policy.resolve_policy``) without importing
the trainer; ``experiments/train_ppo.py`` builds, trains and saves the same class.

A checkpoint is one ``torch.save`` file (loaded back with ``weights_only=True``: plain data and
tensors, no pickled code) holding a dict:

* ``format``: ``"traveller-ppo"``, ``format_version``: 1;
* ``scenario`` (the name it was trained on), ``obs_dim``, ``action_labels`` (the slot-relative
  labels, ``TravellerEnv.relative_actions.labels``: one policy plays any seat), ``hidden``
  (layer sizes), ``activation`` (``"tanh"``);
* ``actor`` and ``critic``: the two networks' ``state_dict``s;
* ``decisions``, ``update``, ``seed``: how far training had got;
* ``move_view``: ``True`` when it was trained on observations with the move view
  (``TravellerEnv(move_view=True)``; absent otherwise), and ``aim_view`` likewise for the aim
  view. Such a policy plays in any env: where the env's observation lacks a view, it asks
  ``env.move_view_vector(agent)`` or ``env.aim_view_vector(agent)`` (``agents.views``).
* ``arch``: ``"entity"`` for an ``agents.entity_net.EntityActor`` actor, with ``embed`` (its
  token width) and ``observation_labels`` (which columns form each token); absent for the
  tanh-MLP actor (``"mlp"``). An entity checkpoint may add ``critic_arch``: ``"entity"``
  (its critic an ``EntityCritic``; absent: the MLP critic) and ``attention`` (how many
  ``SlotAttention`` blocks the entity actor has; absent: none). ``"ensemble"`` for several
  checkpoints played as one (``ensemble_bytes``; ``EnsembleNet``): ``members`` lists each
  member's architecture and provenance, ``actor``/``critic`` hold every member's weights
  (``members.K.*``) and ``hidden`` is empty and ``decisions`` is the members' sum. An
  ensemble plays and evaluates like any checkpoint (a ``--pool-opponents`` member too); it is
  not trained. ``"by_side"`` for one checkpoint per side of the battle played as one policy
  (``by_side_bytes``; ``SideNet``): ``sides`` maps each side's name to its member's record
  (architecture, shape, provenance, an ensemble's ``members``), ``actor``/``critic`` hold
  each side's weights under its name (``nets.<side>.*``), ``hidden`` is empty and
  ``decisions`` is the members' sum. Each seat plays its own side's network (two populations
  of an asymmetric map, each trained for one side). It plays and evaluates like any
  checkpoint; it is not trained.
* ``imitation``: the scripted policy it (or the checkpoint it was trained on from) was first
  fitted to by behaviour cloning (``experiments/clone_scripted.py``); absent for policies
  that imitate nothing. ``train_ppo --init`` and ``widen_checkpoint`` carry it forward.

Nothing in it depends on the wall clock or the run folder, so the same seed on one thread
gives the same bytes.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from traveller_env.env import ScenarioSource, TravellerEnv

from .base import legal_indices
from .entity_net import EntityActor, EntityCritic, linear_head, tanh_mlp
from .views import complete_observation, view_sizes, views_of

__all__ = ["ARCHS", "CHECKPOINT_ARCHS", "CRITICS", "FORMAT", "FORMAT_VERSION", "ActorCritic",
           "EnsembleNet", "PPOPolicy", "SideNet", "actor_logits", "arch_of", "attention_of",
           "by_side_bytes", "checkpoint_bytes", "critic_of", "ensemble_bytes", "imitation_of",
           "is_ppo_checkpoint", "load_ppo_policy", "masked_logits", "network_from_checkpoint",
           "read_checkpoint"]

FORMAT = "traveller-ppo"
FORMAT_VERSION = 1
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
#: (``agents.entity_net.EntityActor``: shared encoders per slot and per square, pointer heads).
ARCHS = ("mlp", "entity")
#: What ``ActorCritic(critic=...)`` accepts: the tanh MLP, or ``EntityCritic`` (entity actors).
CRITICS = ("mlp", "entity")
#: What a checkpoint's ``arch`` may say: a trained architecture, ``"ensemble"`` (several
#: checkpoints pooled by ``ensemble_bytes``) or ``"by_side"`` (one checkpoint per side,
#: ``by_side_bytes``): those two are played and evaluated, never trained further.
CHECKPOINT_ARCHS = (*ARCHS, "ensemble", "by_side")


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

    def twin(self) -> ActorCritic:
        """A new network of the same shape and architecture, holding a copy of these weights."""
        return copy.deepcopy(self)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """``V(obs)``: float ``[B]``."""
        return self.critic(obs).squeeze(-1)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked action logits ``[B, n_actions]`` (illegal actions at ``MASKED_LOGIT``)."""
        return masked_logits(self.actor(obs), mask)


def checkpoint_bytes(net: ActorCritic | EnsembleNet, scenario: str, action_labels: list[str],
                     **extra: Any) -> bytes:
    """The checkpoint of ``net`` (an ``ActorCritic`` or an ``EnsembleNet``) as bytes (the module
    docstring's format); ``extra``: ``decisions``, ``update``, ``seed``... (plain data only)."""
    import torch

    payload = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "scenario": scenario,
        "obs_dim": int(net.obs_dim), "action_labels": list(action_labels),
        "hidden": [int(h) for h in net.hidden], "activation": "tanh",
        **({"arch": net.arch} if net.arch != "mlp" else {}),
        **({"embed": int(net.embed)} if net.arch == "entity" else {}),
        # absent for the defaults, so older checkpoints read the same
        **({"critic_arch": net.critic_arch} if getattr(net, "critic_arch", "mlp") != "mlp"
           else {}),
        **({"attention": int(net.attention)} if getattr(net, "attention", 0) else {}),
        # which columns form each token (entity); an ensemble keeps its members' if they have any
        **({"observation_labels": list(net.observation_labels)}
           if net.arch != "mlp" and net.observation_labels else {}),
        "actor": {k: v.detach().clone().contiguous() for k, v in net.actor.state_dict().items()},
        "critic": {k: v.detach().clone().contiguous()
                   for k, v in net.critic.state_dict().items()},
        **extra}
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def is_ppo_checkpoint(name: str | Path) -> bool:
    """Whether ``name`` names a ``train_ppo`` checkpoint (a path ending in ``.pt``)."""
    return str(name).endswith(".pt")


def read_checkpoint(path: str | Path) -> dict:
    """The checkpoint's dict. ``FileNotFoundError`` when missing; ``ValueError`` naming the file
    when it is not a ``train_ppo`` checkpoint (corrupt, truncated, another format)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such trained-policy file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated zip, pickle of code, not a torch file at all
        raise ValueError(f"{path}: cannot be read as a train_ppo checkpoint (an empty, "
                         f"truncated or corrupt file, or not a torch.save file): {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a train_ppo checkpoint (no format={FORMAT!r} entry)")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format version {data.get('format_version')!r}; "
                         f"this code reads version {FORMAT_VERSION}")
    missing = [k for k in ("obs_dim", "action_labels", "hidden", "actor", "critic")
               if k not in data]
    if missing:
        raise ValueError(f"{path}: checkpoint lacks {', '.join(missing)}")
    return data


def imitation_of(data: dict) -> dict[str, str]:
    """``{"imitation": teacher}`` when the checkpoint dict ``data`` descends from a
    behaviour-cloning start, else ``{}``: ready to pass on to a checkpoint, a manifest or a
    result file that should say so."""
    teacher = data.get("imitation")
    return {"imitation": str(teacher)} if teacher else {}


def _architecture(data: dict, key: str, known: tuple[str, ...], what: str) -> str:
    """``data[key]`` (``"mlp"`` when absent), refused unless one of ``known``."""
    value = data.get(key, "mlp")
    if value not in known:
        raise ValueError(f"checkpoint {what} architecture {value!r}; this code knows "
                         f"{', '.join(known)}")
    return value


def arch_of(data: dict) -> str:
    """The actor architecture of a checkpoint dict (``"mlp"`` when it does not say)."""
    return _architecture(data, "arch", CHECKPOINT_ARCHS, "actor")


def critic_of(data: dict) -> str:
    """The critic architecture of a checkpoint dict (or an ensemble member's entry):
    ``"mlp"`` when it does not say."""
    return _architecture(data, "critic_arch", CRITICS, "critic")


def attention_of(data: dict) -> int:
    """How many slot-attention blocks a checkpoint's entity networks have (0 when it does not
    say)."""
    n = data.get("attention", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"checkpoint attention {n!r}: a count of blocks (an int >= 0)")
    return n


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


#: The checkpoint architectures made of other checkpoints (never nested), as errors name them.
_COMPOSITES = {"ensemble": "an ensemble", "by_side": "a by-side checkpoint"}

#: What an ensemble keeps of each member checkpoint, besides its weights.
_MEMBER_KEYS = ("arch", "hidden", "embed", "critic_arch", "attention", "scenario", "update",
                "decisions", "seed", "imitation")


def _check_same_observation(members: list[dict], sources: list[str], whose: str) -> None:
    """``ValueError`` naming the file when a checkpoint dict of ``members`` differs from the
    first in observation size, action labels, views or observation labels: ``whose`` (e.g.
    "an ensemble's members") must read the same observation and choose among the same
    actions."""
    first, first_src = members[0], sources[0]
    for data, src in zip(members, sources, strict=True):
        for what, mine, theirs in (
                ("observation size", data["obs_dim"], first["obs_dim"]),
                ("number of actions", len(data["action_labels"]), len(first["action_labels"])),
                ("action labels", list(data["action_labels"]), list(first["action_labels"])),
                ("views", views_of(data), views_of(first))):
            if mine != theirs:
                shown = "" if what == "action labels" else f" ({mine} against {theirs})"
                raise ValueError(f"{src}: its {what} differ from {first_src}'s{shown}; "
                                 f"{whose} must read the same observation and choose among "
                                 "the same actions")
        labels, first_labels = data.get("observation_labels"), first.get("observation_labels")
        if labels and first_labels and list(labels) != list(first_labels):
            raise ValueError(f"{src}: its observation labels differ from {first_src}'s; "
                             f"{whose} must read the same observation")


def ensemble_bytes(members: list[dict], sources: list[str]) -> bytes:
    """One checkpoint (bytes) that plays the checkpoint dicts ``members`` (read from the paths
    ``sources``) as an ``EnsembleNet``.

    ``ValueError`` naming the file when there are fewer than two, when one is an ensemble
    itself, or when one differs from the first in observation size, action labels, views
    or observation labels (they must read the same observation the same way)."""
    if len(members) != len(sources):
        raise ValueError("ensemble_bytes: one source path per member checkpoint")
    if len(members) < 2:
        raise ValueError(f"an ensemble needs at least 2 checkpoints, got {len(members)}")
    for data, src in zip(members, sources, strict=True):
        if arch_of(data) in _COMPOSITES:
            raise ValueError(f"{src}: {_COMPOSITES[arch_of(data)]} already; list its members "
                             "instead")
    _check_same_observation(members, [str(s) for s in sources], "an ensemble's members")
    first = members[0]
    ensemble = EnsembleNet([network_from_checkpoint(d) for d in members])
    specs = [{"source": str(src), **{k: d[k] for k in _MEMBER_KEYS if d.get(k) is not None},
              "arch": arch_of(d)} for d, src in zip(members, sources, strict=True)]
    teachers = sorted({str(d["imitation"]) for d in members if d.get("imitation")})
    scenario = ",".join(dict.fromkeys(str(d.get("scenario")) for d in members))
    return checkpoint_bytes(
        ensemble, scenario, list(first["action_labels"]), members=specs,
        **{v: True for v, on in views_of(first).items() if on},
        # an imitation start anywhere in it stays on record
        **({"imitation": ",".join(teachers)} if teachers else {}),
        decisions=sum(int(d.get("decisions") or 0) for d in members))


def by_side_bytes(members: dict[str, dict], sources: dict[str, str]) -> bytes:
    """One checkpoint (bytes) that plays each side's checkpoint dict of ``members`` (side name
    -> dict, read from ``sources[side]``) for that side's seats, as a ``SideNet``.

    ``ValueError`` naming the side or file when fewer than two sides are given, when a
    source is missing, when a member is itself a by-side checkpoint, or when one differs
    from the first in observation size, action labels, views or observation labels. A member
    may be an ensemble."""
    if set(members) != set(sources):
        raise ValueError("by_side_bytes: one source path per side's checkpoint")
    if len(members) < 2:
        raise ValueError(f"a by-side checkpoint needs a checkpoint for at least 2 sides, got "
                         f"{len(members)}")
    for side, data in members.items():
        if not side or not str(side).isidentifier():
            raise ValueError(f"side {side!r}: a side's name (a scenario's sides[].name, e.g. "
                             "blue)")
        if arch_of(data) == "by_side":
            raise ValueError(f"{sources[side]}: a by-side checkpoint already; give each side "
                             "one checkpoint")
    sides = list(members)
    _check_same_observation([members[s] for s in sides], [str(sources[s]) for s in sides],
                            "a by-side checkpoint's members")
    net = SideNet({side: network_from_checkpoint(members[side]) for side in sides})
    specs = {side: {"source": str(sources[side]),
                    **{k: d[k] for k in (*_MEMBER_KEYS, "members") if d.get(k) is not None},
                    "arch": arch_of(d)} for side, d in members.items()}
    teachers = sorted({t for d in members.values() for t in str(d.get("imitation") or
                                                                  "").split(",") if t})
    first = members[sides[0]]
    scenario = ",".join(dict.fromkeys(str(d.get("scenario")) for d in members.values()))
    return checkpoint_bytes(
        net, scenario, list(first["action_labels"]), sides=specs,
        **{v: True for v, on in views_of(first).items() if on},
        **({"imitation": ",".join(teachers)} if teachers else {}),
        decisions=sum(int(d.get("decisions") or 0) for d in members.values()))


def _shaped_network(data: dict, shape: dict) -> ActorCritic:
    """An ``ActorCritic`` (untrained) for checkpoint ``data``'s observation and actions, shaped
    as ``shape`` says (``hidden``, ``arch``, ``embed``, ``critic_arch``, ``attention``):
    ``data`` itself, or one of an ensemble's ``members``."""
    return ActorCritic(int(data["obs_dim"]), len(data["action_labels"]), list(shape["hidden"]),
                       arch=arch_of(shape), observation_labels=data.get("observation_labels"),
                       action_labels=list(data["action_labels"]),
                       embed=int(shape.get("embed", 64)), critic=critic_of(shape),
                       attention=attention_of(shape))


def network_from_checkpoint(data: dict) -> ActorCritic | EnsembleNet | SideNet:
    """The network a checkpoint dict holds (weights loaded, in eval mode): an ``ActorCritic``,
    an ``EnsembleNet`` for an ensemble checkpoint, a ``SideNet`` for a by-side one."""
    net: ActorCritic | EnsembleNet | SideNet
    if arch_of(data) == "by_side":
        specs = data.get("sides")
        if not isinstance(specs, dict) or len(specs) < 2:
            raise ValueError("a by-side checkpoint maps at least 2 sides to their networks")
        nets = {}
        for side, spec in specs.items():
            prefix = f"nets.{side}."
            member = {**spec, "obs_dim": data["obs_dim"], "action_labels": data["action_labels"],
                      "observation_labels": data.get("observation_labels"),
                      **{part: {k[len(prefix):]: v for k, v in data[part].items()
                                if k.startswith(prefix)} for part in ("actor", "critic")}}
            nets[str(side)] = network_from_checkpoint(member)
        net = SideNet(nets)
        net.eval()
        return net
    if arch_of(data) == "ensemble":
        specs = data.get("members")
        if not isinstance(specs, list) or len(specs) < 2:
            raise ValueError("an ensemble checkpoint lists at least 2 members")
        net = EnsembleNet([_shaped_network(data, spec) for spec in specs])
    else:
        net = _shaped_network(data, data)
    net.actor.load_state_dict(data["actor"])
    net.critic.load_state_dict(data["critic"])
    net.eval()
    return net


class PPOPolicy:
    """A ``train_ppo`` actor playing through the ``Policy`` protocol.

    ``act`` translates the seat's absolute mask to the slot-relative one
    (``env.relative_actions``), runs the actor (an MLP as a NumPy forward pass, no torch call
    per decision; an entity actor or an ensemble as its torch module, ``network``; a
    ``SideNet`` as the network of the seat's side) and returns the absolute index.
    Deterministic by default (the most probable legal action); with ``deterministic=False``
    it samples the masked distribution with its own generator, seeded by ``reset``.
    Build one with ``load_ppo_policy``.
    """

    needs_observation = True

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], action_labels: list[str],
                 name: str, deterministic: bool = True, seed: int | None = None,
                 move_view_size: int = 0, aim_view: bool = False,
                 attack_view: bool = False, network: nn.Module | None = None,
                 obs_dim: int | None = None) -> None:
        self.layers = layers
        # a torch actor (the entity architecture) instead of the NumPy layers
        self.network = network
        self.obs_dim = int(obs_dim) if obs_dim is not None else int(layers[0][0].shape[1])
        self.move_view_size = int(move_view_size)  # > 0: it reads the move view
        self.views = {"move_view": self.move_view_size > 0, "aim_view": bool(aim_view),
                      "attack_view": bool(attack_view)}
        self.action_labels = list(action_labels)
        self.name = name
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the sampling generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def logits(self, observation: np.ndarray, side: str | None = None) -> np.ndarray:
        """The actor's raw logits for one observation (float64 ``[n_actions]``); ``side``: the
        seat's side, which a by-side checkpoint needs (``ValueError`` without it)."""
        if self.network is not None:
            # One observation gains nothing from torch's intra-op threads, and they wait for
            # each other when other processes hold the cores (6x slower per call, measured):
            # one thread for the call, the caller's setting restored after.
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                with torch.no_grad():
                    x = torch.as_tensor(np.asarray(observation, dtype=np.float32)).unsqueeze(0)
                    if isinstance(self.network, SideNet):
                        z = actor_logits(self.network, x, side)
                    else:
                        z = self.network(x)
                    return z[0].numpy().astype(np.float64)
            finally:
                torch.set_num_threads(threads)
        x = np.asarray(observation, dtype=np.float64)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            x = w @ x + b
            if i < last:
                x = np.tanh(x)
        return x

    def probabilities(self, observation: np.ndarray, mask: np.ndarray,
                      side: str | None = None) -> np.ndarray:
        """The masked action probabilities over the policy's (relative) actions (``side``: as
        for ``logits``)."""
        legal = np.asarray(mask).astype(bool)
        legal_indices(legal)  # ValueError if nothing is legal
        z = np.where(legal, self.logits(observation, side), -np.inf)
        p = np.exp(z - z[legal].max())
        return p / p.sum()

    def choose(self, observation: np.ndarray, mask: np.ndarray, side: str | None = None) -> int:
        """The policy's (relative) action index for an observation and a relative mask
        (``side``: the seat's side, as for ``logits``)."""
        mask = np.asarray(mask).astype(bool)
        if mask.shape != (len(self.action_labels),):
            raise ValueError(f"{self.name}: action mask of shape {mask.shape}, but the policy "
                             f"has {len(self.action_labels)} (slot-relative) actions")
        if self.deterministic:
            legal = legal_indices(mask)
            z = self.logits(observation, side)
            return int(legal[np.argmax(z[legal])])
        p = self.probabilities(observation, mask, side)
        return int(self.rng.choice(len(p), p=p))

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The policy's action for ``agent`` as an index of the environment's (absolute)
        actions."""
        env = getattr(env, "unwrapped", env)
        rel = getattr(env, "relative_actions", None)
        if rel is None:
            raise ValueError(f"{self.name}: the environment {type(env).__name__} has no "
                             "relative_actions translation; play this policy in a TravellerEnv")
        obs_dim = self.obs_dim
        # Trained with a view the env lacks (or without one it has): the vector it knows.
        observation = complete_observation(observation, env, agent, self.views)
        if np.shape(observation) != (obs_dim,):
            raise ValueError(f"{self.name}: observation of shape {np.shape(observation)}, but "
                             f"the policy expects ({obs_dim},)")
        side = None
        if isinstance(self.network, SideNet):
            side = env.scenario.sides[env.side_of(agent)].name
        index = self.choose(observation, rel.mask(agent, np.asarray(action_mask)), side)
        return rel.to_absolute(agent, index)


def load_ppo_policy(path: str | Path, scenario: ScenarioSource, deterministic: bool = True,
                    seed: int | None = None, name: str | None = None) -> PPOPolicy:
    """Load a ``train_ppo`` checkpoint for ``scenario`` (built-in name, path or dict).

    Raises ``FileNotFoundError`` when the file is missing and ``ValueError`` naming the file
    and the mismatch when it is not a checkpoint, or when its observation size or slot-relative
    action labels differ from the scenario's.
    """
    path = Path(path)
    data = read_checkpoint(path)
    views = views_of(data)
    env = TravellerEnv(scenario, **views)
    label = env.scenario.name
    trained_on = f" (trained on {data['scenario']!r})" if data.get("scenario") else ""
    want_labels = list(env.relative_actions.labels)
    if list(data["action_labels"]) != want_labels:
        raise ValueError(f"{path}: its {len(data['action_labels'])} slot-relative actions"
                         f"{trained_on} do not fit scenario {label!r}, which has "
                         f"{len(want_labels)} ({', '.join(want_labels[:4])}, ...)")
    want_obs = len(env.observation_labels)
    if int(data["obs_dim"]) != want_obs:
        raise ValueError(f"{path}: observation size {data['obs_dim']}{trained_on} does not fit "
                         f"scenario {label!r}, whose observation vectors have {want_obs} entries")
    common = {"deterministic": deterministic, "seed": seed}
    if arch_of(data) != "mlp":
        net = network_from_checkpoint(data)
        if isinstance(net, SideNet):
            scenario_sides = [side.name for side in env.scenario.sides]
            missing = [side for side in scenario_sides if side not in net.sides]
            if missing:
                raise ValueError(f"{path}: a by-side checkpoint for {', '.join(net.sides)}; "
                                 f"scenario {label!r} also has side {', '.join(missing)}")
        common.update(network=net if isinstance(net, SideNet) else net.actor,
                      obs_dim=net.obs_dim)
        layers = []
    else:
        actor = data["actor"]
        keys = sorted({k.rsplit(".", 1)[0] for k in actor}, key=lambda k: int(k))
        layers = [(actor[f"{k}.weight"].numpy().astype(np.float64),
                   actor[f"{k}.bias"].numpy().astype(np.float64)) for k in keys]
    return PPOPolicy(layers, data["action_labels"], name or path.stem, **common,
                     move_view_size=view_sizes(env.observation_labels)["move_view"],
                     aim_view=views["aim_view"], attack_view=views["attack_view"])
