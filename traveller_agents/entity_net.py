"""An entity actor: one shared encoder per kind of thing in the observation, and pointer heads.

The plain actor (``traveller_agents.ppo_policy``'s MLP) reads the observation as one flat vector, so
it learns "attack the exposed enemy" once per enemy slot and "move to the covered square" once per
move action. ``EntityActor`` reads the same flat vector through its labels
(``TravellerEnv.observation_labels``) as tokens:

* one token per slot (``ally0``... ``enemy3``): the slot's fields, its aim-view and attack-view
  entries when present, and a flag for enemy slots; every slot goes through the same encoder;
* one token per square a move can end on (and the seat's own square): its move-view and
  attack-view entries when present, and where it lies (dx, dy in moves of 4 squares, a flag for
  the seat's own square); every square goes through the same encoder;
* everything else (``self.*``) stays one vector.

A trunk MLP reads that vector and pooled tokens (mean over present allies and enemies, max over
present enemies, mean and max over squares) into ``h``. The logits of ``aim``, ``attack``,
``direct`` and ``hamper`` at a slot are dot products of a query from ``h`` (one per kind) with
the slot's token, plus a bias read from the token; those of ``move:DIR:N`` the same against the
square's token (half the slots' width); every other action gets a
linear head on ``h``. Which action reads which token comes from the action labels, so one
network plays any seat (the labels are slot-relative) and the same weights score every enemy.

With ``attention`` > 0, that many transformer blocks (``SlotAttention``) mix the slot tokens
with each other before pooling and the pointers read them.

``ActorCritic(arch="entity")`` keeps the MLP critic over the flat vector unless
``critic="entity"``: then ``EntityCritic`` reads the same tokens (its own weights) into a value.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from traveller_env.rules.grid import DIRECTIONS

__all__ = ["ATTENTION_HEADS", "POINTER_KINDS", "EntityActor", "EntityCritic", "EntityEncoder",
           "EntityLayout", "SlotAttention", "linear_head", "tanh_mlp", "token_layer"]

#: Actions aimed at a slot, scored against that slot's token (one output each per slot).
POINTER_KINDS = ("aim", "attack", "direct", "hamper")
_SLOT = re.compile(r"^((?:ally|enemy)\d+)\.")
_MOVE = re.compile(r"^move:([A-Z]+):(\d+)$")
#: Attention heads of a ``SlotAttention`` block (the token width must be a multiple).
ATTENTION_HEADS = 4
#: dx, dy of a square are given in units of this many squares (the longest move).
_SQUARE_SCALE = 4.0


@dataclass(frozen=True)
class EntityLayout:
    """Which observation columns make each token, and which output each action reads.

    Built from the observation and action labels alone; ``ValueError`` names what does not fit
    (a slot whose fields differ from another's, an action aimed at a slot the observation lacks).
    """

    global_cols: tuple[int, ...]
    slot_names: tuple[str, ...]
    slot_cols: tuple[tuple[int, ...], ...]
    slot_enemy: tuple[float, ...]
    square_names: tuple[str, ...]
    square_cols: tuple[tuple[int, ...], ...]
    square_geometry: tuple[tuple[float, float, float], ...]
    base_actions: tuple[int, ...]       # action indices scored by the linear head, in order
    action_source: tuple[int, ...]      # per action: its column in the concatenated outputs

    @classmethod
    def from_labels(cls, observation_labels: list[str],
                    action_labels: list[str]) -> EntityLayout:
        """The layout of an observation and a slot-relative action list."""
        obs = list(observation_labels)
        slots: list[str] = []
        for label in obs:
            m = _SLOT.match(label)
            if m and m.group(1) not in slots:
                slots.append(m.group(1))
        used: set[int] = set()

        def cols_of(prefixes: list[str]) -> tuple[int, ...]:
            found = tuple(i for i, lab in enumerate(obs)
                          if any(lab.startswith(p) for p in prefixes))
            used.update(found)
            return found

        slot_cols = tuple(cols_of([f"{s}.", f"aim.{s}.", f"attack.{s}."]) for s in slots)
        if len({len(c) for c in slot_cols}) > 1:
            raise ValueError("entity network: the observation's slots have different numbers "
                             f"of fields ({dict(zip(slots, map(len, slot_cols), strict=True))})")
        squares: list[str] = []
        geometry: list[tuple[float, float, float]] = []
        if any(lab.startswith("move.here.") for lab in obs):
            squares.append("here")
            geometry.append((0.0, 0.0, 1.0))
        for label in action_labels:
            m = _MOVE.match(label)
            if m:
                if m.group(1) not in DIRECTIONS:
                    raise ValueError(f"entity network: move action {label!r} has an unknown "
                                     f"direction (known: {', '.join(DIRECTIONS)})")
                dx, dy = DIRECTIONS[m.group(1)]
                n = int(m.group(2))
                squares.append(f"{m.group(1)}:{m.group(2)}")
                geometry.append((dx * n / _SQUARE_SCALE, dy * n / _SQUARE_SCALE, 0.0))
        square_cols = tuple(cols_of([f"move.{q}.", f"attack.{q}."]) for q in squares)
        if len({len(c) for c in square_cols}) > 1:
            raise ValueError("entity network: the move view's squares have different numbers "
                             "of fields")
        global_cols = tuple(i for i in range(len(obs)) if i not in used)

        base: list[int] = []
        kinds = {k: j for j, k in enumerate(POINTER_KINDS)}
        pointer: dict[int, int] = {}   # action -> index among slot outputs
        moves: dict[int, int] = {}     # action -> index among squares
        for a, label in enumerate(action_labels):
            kind, _, arg = label.partition(":")
            if kind in kinds and arg in slots:
                pointer[a] = slots.index(arg) * len(POINTER_KINDS) + kinds[kind]
            elif kind in kinds and _SLOT.match(arg + "."):
                raise ValueError(f"entity network: action {label!r} aims at slot {arg!r}, "
                                 "which the observation lacks")
            elif _MOVE.match(label):
                moves[a] = squares.index(label.partition(":")[2])
            else:
                base.append(a)
        n_slot_out = len(slots) * len(POINTER_KINDS)
        source = []
        for a in range(len(action_labels)):
            if a in pointer:
                source.append(len(base) + pointer[a])
            elif a in moves:
                source.append(len(base) + n_slot_out + moves[a])
            else:
                source.append(base.index(a))
        return cls(global_cols, tuple(slots), slot_cols,
                   tuple(float(s.startswith("enemy")) for s in slots), tuple(squares),
                   square_cols, tuple(geometry), tuple(base), tuple(source))


def tanh_mlp(sizes: list[int]) -> nn.Sequential:
    """Linear + tanh layers (orthogonal gain sqrt(2), as CleanRL initialises hidden layers)."""
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        lin = nn.Linear(a, b)
        nn.init.orthogonal_(lin.weight, np.sqrt(2))
        nn.init.constant_(lin.bias, 0.0)
        layers += [lin, nn.Tanh()]
    return nn.Sequential(*layers)


def linear_head(n_in: int, n_out: int, std: float = 0.01) -> nn.Linear:
    """A linear output layer, orthogonal with gain ``std`` (0.01: near-uniform logits)."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


def token_layer(layer: nn.Linear, x: torch.Tensor, fixed: torch.Tensor) -> torch.Tensor:
    """``tanh(layer(cat([x, fixed])))`` of tokens ``x`` ``[B, T, F]`` whose last input columns
    ``fixed`` ``[T, C]`` are the same in every row (a slot's enemy flag, a square's
    geometry), without building the concatenation: those columns fold into a bias per token."""
    f = x.shape[-1]
    bias = torch.addmm(layer.bias, fixed, layer.weight[:, f:].t())          # [T, E]
    return torch.tanh(torch.matmul(x, layer.weight[:, :f].t()) + bias)


class SlotAttention(nn.Module):
    """One post-norm transformer block over the slot tokens: each slot attends to every present
    slot (allies and enemies), then a position-wise MLP; both with residuals.

    It lets a slot's token carry what it is next to (the wounded enemy two allies already aim
    at, the ally in the line of fire) before pooling and the pointer heads read it."""

    def __init__(self, embed: int, heads: int = ATTENTION_HEADS) -> None:
        super().__init__()
        if embed % heads:
            raise ValueError(f"entity network: the token width (--embed) {embed} must be a "
                             f"multiple of the {heads} attention heads")
        self.attn = nn.MultiheadAttention(embed, heads, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(embed), nn.LayerNorm(embed)
        self.mlp = nn.Sequential(nn.Linear(embed, 2 * embed), nn.Tanh(),
                                 nn.Linear(2 * embed, embed))

    def forward(self, tokens: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """``tokens`` ``[B, S, E]``, ``present`` bool ``[B, S]`` -> ``[B, S, E]``."""
        # a row with no slot present (none happen in play) attends to all rather than to none
        ignore = ~present & present.any(1, keepdim=True)
        mixed, _ = self.attn(tokens, tokens, tokens, key_padding_mask=ignore,
                             need_weights=False)
        tokens = self.norm1(tokens + mixed)
        return self.norm2(tokens + self.mlp(tokens))


class EntityEncoder(nn.Module):
    """The token encoders, the optional slot attention and the trunk of the module docstring:
    flat observations in, ``(h, slot tokens, square tokens)`` out. ``EntityActor`` adds the
    pointer heads; ``EntityCritic`` a value head. (The attribute names are the checkpoint's
    ``state_dict`` keys: keep them.)"""

    def __init__(self, observation_labels: list[str], action_labels: list[str],
                 hidden: list[int], embed: int = 64, attention: int = 0) -> None:
        super().__init__()
        lay = EntityLayout.from_labels(observation_labels, action_labels)
        self.layout, self.embed, self.attention = lay, int(embed), int(attention)
        if not lay.slot_names:
            raise ValueError("entity network: the observation has no slots (ally0., enemy0.)")
        if self.attention < 0:
            raise ValueError(f"entity network: attention blocks must be >= 0, got {attention}")
        self.register_buffer("global_idx", torch.tensor(lay.global_cols, dtype=torch.long),
                             persistent=False)
        self.register_buffer("slot_idx", torch.tensor(lay.slot_cols, dtype=torch.long),
                             persistent=False)
        self.register_buffer("slot_enemy", torch.tensor(lay.slot_enemy).unsqueeze(-1),
                             persistent=False)
        self.register_buffer("is_enemy", torch.tensor(lay.slot_enemy) > 0, persistent=False)
        self.register_buffer("enemy_idx", torch.nonzero(self.is_enemy).reshape(-1),
                             persistent=False)
        first = [observation_labels[c] for c in lay.slot_cols[0]]
        if f"{lay.slot_names[0]}.present" not in first:
            raise ValueError("entity network: the slots lack the 'present' field")
        self.present_col = first.index(f"{lay.slot_names[0]}.present")
        n_sq = len(lay.square_names)
        sq_cols = lay.square_cols if n_sq else ()
        self.register_buffer("square_idx", torch.tensor(sq_cols, dtype=torch.long).reshape(
            n_sq, len(sq_cols[0]) if n_sq else 0), persistent=False)
        self.register_buffer("square_geo", torch.tensor(lay.square_geometry).reshape(n_sq, 3),
                             persistent=False)
        # the square tokens are a quarter of the slot tokens' width
        e = self.embed
        eq = self.square_embed = max(1, e // 4)
        self.slot_enc = tanh_mlp([len(lay.slot_cols[0]) + 1, e])
        if self.attention:
            self.slot_attn = nn.ModuleList(SlotAttention(e) for _ in range(self.attention))
        self.square_enc = tanh_mlp([self.square_idx.shape[1] + 3, eq]) if n_sq else None
        pooled = 3 * e + (2 * eq if n_sq else 0)
        self.trunk = tanh_mlp([len(lay.global_cols) + pooled, *hidden])

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``h`` ``[B, hidden[-1]]``, the slot tokens ``[B, S, E]`` and the square tokens
        ``[B, Q, E/4]`` (``None`` without the move view) of flat observations ``[B, obs_dim]``."""
        b = obs.shape[0]
        slots_x = obs.index_select(1, self.slot_idx.reshape(-1)).reshape(
            b, *self.slot_idx.shape)                                       # [B, S, F]
        present = slots_x[..., self.present_col] > 0.5                    # [B, S]
        slot_e = token_layer(self.slot_enc[0], slots_x, self.slot_enemy)  # [B, S, E]
        for block in (self.slot_attn if self.attention else ()):
            slot_e = block(slot_e, present)
        pieces = [obs.index_select(1, self.global_idx), *self._pool_slots(slot_e, present)]
        sq_e = None
        if self.square_enc is not None:
            sq_x = obs.index_select(1, self.square_idx.reshape(-1)).reshape(
                b, *self.square_idx.shape)                                 # [B, Q, F]
            sq_e = token_layer(self.square_enc[0], sq_x, self.square_geo)  # [B, Q, E/4]
            pieces += [sq_e.mean(1), sq_e.amax(1)]
        return self.trunk(torch.cat(pieces, -1)), slot_e, sq_e

    def _pool_slots(self, slot_e: torch.Tensor, present: torch.Tensor) -> list[torch.Tensor]:
        """The mean token of the present allies, that of the present enemies (each 0 where
        none) and the elementwise max over the present enemies (0 where none), each
        ``[B, E]``."""
        means = []
        for group in (~self.is_enemy, self.is_enemy):
            m = (present & group).unsqueeze(-1).to(slot_e.dtype)
            means.append((slot_e * m).sum(1) / m.sum(1).clamp(min=1.0))
        en_present = present.index_select(1, self.enemy_idx).unsqueeze(-1)   # [B, Se, 1]
        best = torch.where(en_present, slot_e.index_select(1, self.enemy_idx), -1.0).amax(1)
        if self.enemy_idx.numel() < self.is_enemy.numel():
            # the max reads every slot, the allies as -1 (attention's tokens may lie below)
            best = best.clamp(min=-1.0)
        return [*means, best * en_present.any(1).to(best.dtype)]


class EntityCritic(EntityEncoder):
    """A value network over the same tokens (its own weights): ``[B, obs_dim]`` -> ``[B, 1]``,
    the shape of the MLP critic's output."""

    def __init__(self, observation_labels: list[str], action_labels: list[str],
                 hidden: list[int], embed: int = 64, attention: int = 0) -> None:
        super().__init__(observation_labels, action_labels, hidden, embed, attention)
        self.value_head = linear_head(hidden[-1], 1, std=1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Values ``[B, 1]``."""
        return self.value_head(self.encode(obs)[0])


class EntityActor(EntityEncoder):
    """The actor of the module docstring: flat observations ``[B, obs_dim]`` in, one logit per
    slot-relative action out (``[B, n_actions]``, unmasked), like the MLP actor."""

    def __init__(self, observation_labels: list[str], action_labels: list[str],
                 hidden: list[int], embed: int = 64, attention: int = 0) -> None:
        super().__init__(observation_labels, action_labels, hidden, embed, attention)
        lay = self.layout
        self.register_buffer("source", torch.tensor(lay.action_source, dtype=torch.long),
                             persistent=False)
        e, eq = self.embed, self.square_embed
        h = hidden[-1]
        k = len(POINTER_KINDS)
        self.base_head = linear_head(h, len(lay.base_actions))
        # a slot's logit of kind k: query_k(h) . token + bias_k(token) (dot-product pointer)
        self.slot_query, self.slot_bias = linear_head(h, k * e), linear_head(e, k)
        if lay.square_names:
            self.square_query, self.square_bias = linear_head(h, eq), linear_head(eq, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, n_actions]`` for flat observations ``[B, obs_dim]``."""
        b = obs.shape[0]
        h, slot_e, sq_e = self.encode(obs)
        weight, bias = self._head_weights(sq_e is not None)
        out = nn.functional.linear(h, weight, bias)   # base logits, slot queries, square query
        n_base, n_query = len(self.layout.base_actions), len(POINTER_KINDS) * self.embed
        q = out[:, n_base:n_base + n_query].reshape(b, len(POINTER_KINDS), -1)   # [B, K, E]
        slot_logits = torch.matmul(slot_e, q.transpose(1, 2)) + self.slot_bias.bias
        outs = [out[:, :n_base], slot_logits.reshape(b, -1)]
        if sq_e is not None:
            sq_q = out[:, n_base + n_query:].unsqueeze(-1)                      # [B, E/4, 1]
            outs.append(torch.matmul(sq_e, sq_q).squeeze(-1) + self.square_bias.bias)
        return torch.cat(outs, -1).index_select(1, self.source)

    def _head_weights(self, squares: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """The heads that read ``h`` as one linear layer: the base head, the slot queries and
        the square query, stacked. A pointer's bias head folds into its query's bias:
        ``q . t + w . t + c == (q + w) . t + c``."""
        heads = [self.base_head, self.slot_query]
        biases = [self.base_head.bias,
                  self.slot_query.bias + self.slot_bias.weight.reshape(-1)]
        if squares:
            heads.append(self.square_query)
            biases.append(self.square_query.bias + self.square_bias.weight.reshape(-1))
        return torch.cat([m.weight for m in heads]), torch.cat(biases)
