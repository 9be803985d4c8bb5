"""The checkpoint format of ``traveller train ppo``: writing a network to bytes
(``checkpoint_bytes``, ``ensemble_bytes``, ``by_side_bytes``) and reading a ``.pt`` file back
(``read_checkpoint``, ``network_from_checkpoint``, ``arch_of`` and its kin).

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
  ``env.move_view_vector(agent)`` or ``env.aim_view_vector(agent)`` (``traveller_agents.views``).
* ``arch``: ``"entity"`` for a ``traveller_agents.entity_net.EntityActor`` actor, with
  ``embed`` (its token width) and ``observation_labels`` (which columns form each token);
  absent for the tanh-MLP actor (``"mlp"``). An entity checkpoint may add ``critic_arch``:
  ``"entity"`` (its critic an ``EntityCritic``; absent: the MLP critic) and ``attention`` (how many
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
  fitted to by behaviour cloning (``traveller train clone``); absent for policies
  that imitate nothing. ``train_ppo --init`` and ``widen_checkpoint`` carry it forward.

Nothing in it depends on the wall clock or the run folder, so the same seed on one thread
gives the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

from traveller_agents.nets import ARCHS, CRITICS, ActorCritic, EnsembleNet, SideNet
from traveller_agents.views import views_of

__all__ = ["CHECKPOINT_ARCHS", "FORMAT", "FORMAT_VERSION", "arch_of", "attention_of",
           "by_side_bytes", "checkpoint_bytes", "critic_of", "ensemble_bytes", "imitation_of",
           "is_ppo_checkpoint", "network_from_checkpoint", "read_checkpoint"]

FORMAT = "traveller-ppo"
FORMAT_VERSION = 1
#: What a checkpoint's ``arch`` may say: a trained architecture, ``"ensemble"`` (several
#: checkpoints pooled by ``ensemble_bytes``) or ``"by_side"`` (one checkpoint per side,
#: ``by_side_bytes``): those two are played and evaluated, never trained further.
CHECKPOINT_ARCHS = (*ARCHS, "ensemble", "by_side")


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
        if data.get("layout") != first.get("layout"):
            named = [("layout " + str(d["layout"].get("name", "?")) if d.get("layout")
                      else "no layout") for d in (data, first)]
            raise ValueError(f"{src}: trained on {named[0]}, {first_src} on {named[1]}; "
                             f"{whose} must read the same observation")
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
        **({"layout": first["layout"]} if first.get("layout") is not None else {}),
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
        **({"layout": first["layout"]} if first.get("layout") is not None else {}),
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
