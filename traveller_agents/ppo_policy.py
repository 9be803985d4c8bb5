"""Trained policies: a checkpoint of ``traveller train ppo`` (a ``.pt`` file) as a ``Policy``.

``load_ppo_policy`` reads a checkpoint and ``PPOPolicy`` plays it as an NPC anywhere a policy
name is accepted (``traveller_agents.registry.make_policy``, the tournament's ``--policies``,
``traveller eval``, ``traveller_env.policy.resolve_policy``) without importing the trainer.

The networks live in ``traveller_agents.nets`` and the checkpoint format (described there) in
``traveller_agents.checkpoint``; this module re-exports their public names, so the many modules that
import them from here keep working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from traveller_agents.checkpoint import (
    arch_of,
    network_from_checkpoint,
    read_checkpoint,
)
from traveller_agents.nets import (
    SideNet,
    actor_logits,
)
from traveller_agents.views import complete_observation, reads_layout, view_sizes, views_of
from traveller_env.env import ScenarioSource, TravellerEnv
from traveller_env.layout import Layout, LayoutError, read_layout
from traveller_env.policy import legal_indices

__all__ = ["PPOPolicy", "load_ppo_policy"]


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
                 obs_dim: int | None = None, layout: Layout | None = None) -> None:
        self.layers = layers
        # a torch actor (the entity architecture) instead of the NumPy layers
        self.network = network
        self.obs_dim = int(obs_dim) if obs_dim is not None else int(layers[0][0].shape[1])
        self.move_view_size = int(move_view_size)  # > 0: it reads the move view
        self.views = {"move_view": self.move_view_size > 0, "aim_view": bool(aim_view),
                      "attack_view": bool(attack_view)}
        self.action_labels = list(action_labels)
        #: The fixed layout it was trained on (``traveller_env.layout``), or ``None``: then it
        #: plays only scenarios with its training scenario's own vector sizes.
        self.layout = layout
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
        if reads_layout(env, self.layout, self.views):
            # Trained on a layout: its vector and actions, whatever the env's own.
            observation = env.layout_observation(agent, self.layout, **self.views)
            rel = env.layout_actions(self.layout)
        else:
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
    layout = read_layout(data.get("layout"), f"{path}: its layout")
    try:
        env = TravellerEnv(scenario, layout=layout, **views)
    except LayoutError as exc:
        raise ValueError(f"{path}: trained on a fixed layout; {exc}") from None
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
                     aim_view=views["aim_view"], attack_view=views["attack_view"],
                     layout=layout)
