"""Trained policies: a sb3-contrib ``MaskablePPO`` checkpoint as a ``Policy`` (``load_policy``
also dispatches ``.pt`` checkpoints of ``traveller train ppo`` to ``traveller_agents.ppo_policy``,
``.onnx`` exports to ``traveller_agents.onnx_policy`` and RLlib folders to
``traveller_agents.rllib_policy``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.scripted import make_scripted
from traveller_env.env import ScenarioSource, TravellerEnv

__all__ = ["AssistedPolicy", "TrainedPolicy", "load_policy", "read_meta"]


class TrainedPolicy:
    """A ``MaskablePPO`` model playing through the ``Policy`` protocol.

    ``act`` feeds the agent's observation vector and action mask to the model. Deterministic
    by default (the most probable legal action); with ``deterministic=False`` it samples from
    the masked action distribution with the policy's own generator (seeded by ``reset``), so
    runs stay reproducible. Build one with ``load_policy``.
    """

    def __init__(self, model: Any, name: str, deterministic: bool = True,
                 seed: int | None = None, relative: bool = False) -> None:
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.relative = relative  # the model names targets by slot (encoding.RelativeActions)

    def model_mask(self, action_mask: np.ndarray, agent: str, env: Any) -> np.ndarray:
        """The environment's (absolute) mask in the model's action space."""
        mask = np.asarray(action_mask).astype(bool)
        if self.relative:
            return getattr(env, "unwrapped", env).relative_actions.mask(agent, mask)
        return mask

    def to_env_action(self, index: int, agent: str, env: Any) -> int:
        """The environment's action index for the model's action ``index``."""
        if self.relative:
            return getattr(env, "unwrapped", env).relative_actions.to_absolute(agent, index)
        return index

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the sampling generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The model's action for this observation, restricted to the legal ones. A mask or
        an observation whose shape does not fit the model raises ``ValueError``."""
        mask = self.model_mask(action_mask, agent, env)
        return self.to_env_action(self.choose(observation, mask), agent, env)

    def choose(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The model's action index for an observation and a mask in its own action space."""
        mask = np.asarray(mask).astype(bool)
        self._check_shapes(observation, mask)
        if self.deterministic:
            action, _ = self.model.predict(observation, action_masks=mask, deterministic=True)
            action = int(np.asarray(action).reshape(-1)[0])
            if mask[action]:
                return action
        probs = self.probabilities(observation, mask)
        if self.deterministic:
            return int(np.argmax(probs))
        return int(self.rng.choice(len(probs), p=probs))

    def _check_shapes(self, observation: np.ndarray, mask: np.ndarray) -> None:
        n = self.model.action_space.n
        if mask.shape != (n,):
            raise ValueError(f"{self.name}: action mask of shape {mask.shape}, but the model "
                             f"takes Discrete({n}) actions: a mask of {n} entries")
        want = self.model.observation_space.shape
        if np.shape(observation) != want:
            raise ValueError(f"{self.name}: observation of shape {np.shape(observation)}, but "
                             f"the model expects {want}")

    def probabilities(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's masked action probabilities (they sum to 1 over the legal actions)."""
        import torch

        mask = np.asarray(mask).astype(bool)
        self._check_shapes(observation, mask)

        policy = self.model.policy
        obs, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            dist = policy.get_distribution(obs, action_masks=mask[None, :])
            probs = dist.distribution.probs.cpu().numpy()[0].astype(np.float64)
        probs = np.where(mask, probs, 0.0)
        total = probs.sum()
        if total <= 0:
            return mask / mask.sum()
        return probs / total


class AssistedPolicy:
    """A model trained through the SB3 bridge with ``assist``/``focus``: it decides only the
    action kinds in ``focus`` (or hands the decision over with its extra "delegate" action,
    index N); every other decision is made by the ``assist`` policy."""

    def __init__(self, trained: TrainedPolicy, assist: Any, focus: tuple[str, ...]) -> None:
        self.trained, self.assist, self.focus = trained, assist, tuple(focus)
        self.name = trained.name
        self._focus_masks: dict[int, np.ndarray] = {}

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the model's sampler and the assistant."""
        self.trained.reset(seed)
        self.assist.reset(None if seed is None else seed + 1)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The model's focus decision, or the assistant's action."""
        env = getattr(env, "unwrapped", env)
        labels = env.relative_actions.labels if self.trained.relative else env.action_labels
        focus_mask = self._focus_masks.get(id(env))
        if focus_mask is None:
            focus_mask = np.array([lbl.split(":")[0] in self.focus for lbl in labels])
            self._focus_masks[id(env)] = focus_mask
        mine = self.trained.model_mask(action_mask, agent, env) & focus_mask
        if mine.any():
            action = self.trained.choose(observation, np.append(mine, True))
            if action < len(mine):
                return self.trained.to_env_action(action, agent, env)
        return int(self.assist.act(observation, action_mask, agent, env))


def read_meta(path: str | Path) -> dict:
    """The ``<model>.meta.json`` written beside a model by the training scripts ({} if none)."""
    import json

    meta = Path(path).with_suffix(".meta.json")
    if not meta.is_file():
        return {}
    try:
        return json.loads(meta.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{meta}: unreadable model metadata: {exc}") from None


def load_policy(path: str | Path, scenario: ScenarioSource, deterministic: bool = True,
                seed: int | None = None, name: str | None = None,
                assist: Any = None) -> TrainedPolicy | AssistedPolicy:
    """Load a ``MaskablePPO`` ``.zip`` for ``scenario`` (built-in name, path or dict); a
    folder is read as an RLlib checkpoint (``traveller_agents.rllib_policy.load_rllib_policy``), a
    ``.pt`` file as a ``train_ppo`` checkpoint (``traveller_agents.ppo_policy.load_ppo_policy``), an
    ``.onnx`` file as an exported policy (``traveller_agents.onnx_policy.load_onnx_policy``).

    The model's ``.meta.json`` (written by the training scripts) tells whether it names targets
    by slot (``action_targets: relative``), which the policy then translates for the seat it
    plays. A model trained with the bridge's ``assist``/``focus`` (one extra action) comes back
    as an ``AssistedPolicy``: its assistant is ``assist`` or, by default, the scripted policy named
    in the model's ``.meta.json``. Raises ``FileNotFoundError`` when the file is missing and
    ``ValueError`` naming the file and the mismatch when the model's action or observation
    space does not fit the scenario's (``Discrete(N)`` actions, ``Box((D,))`` observations).
    """
    path = Path(path)
    if path.suffix.lower() == ".onnx":  # an exported policy (onnx_policy; no torch)
        from traveller_agents.onnx_policy import load_onnx_policy

        return load_onnx_policy(path, scenario, deterministic=deterministic, seed=seed,
                                name=name, assist=assist)
    if path.suffix == ".pt":  # a checkpoint of traveller train ppo (traveller_agents.ppo_policy)
        from traveller_agents.ppo_policy import load_ppo_policy

        if assist is not None:
            raise ValueError(f"{path}: a train_ppo checkpoint decides every action itself; "
                             "assist= applies only to MaskablePPO models trained with focus")
        return load_ppo_policy(path, scenario, deterministic=deterministic, seed=seed,
                               name=name)
    if path.is_dir():  # an RLlib checkpoint folder (traveller_agents.rllib_policy)
        from traveller_agents.rllib_policy import load_rllib_policy

        return load_rllib_policy(path, scenario, deterministic=deterministic, seed=seed,
                                 name=name)
    from sb3_contrib import MaskablePPO

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such trained-policy file")
    env = TravellerEnv(scenario)
    agent = env.possible_agents[0]
    want_act = env.action_space(agent)
    want_obs = env.observation_space(agent)["observation"]
    try:
        model = MaskablePPO.load(str(path), device="cpu")
    except Exception as exc:  # a zip that is not a MaskablePPO checkpoint
        raise ValueError(f"{path}: cannot be loaded as a MaskablePPO model (an empty, truncated "
                         f"or corrupt file, or not an SB3 checkpoint): {exc}") from exc
    label = env.scenario.name
    got_act = model.action_space
    meta = read_meta(path)
    relative = meta.get("action_targets") == "relative"
    want_n = env.relative_actions.n if relative else want_act.n
    assisted = bool(meta.get("focus")) and getattr(got_act, "n", None) == want_n + 1
    if getattr(got_act, "n", None) != want_n and not assisted:
        trained_on = f" (trained on {meta['scenario']!r})" if meta.get("scenario") else ""
        kind = "slot-relative " if relative else ""
        raise ValueError(f"{path}: action space {got_act}{trained_on} does not fit scenario "
                         f"{label!r}, which has Discrete({want_n}) {kind}actions")
    got_obs = model.observation_space
    if getattr(got_obs, "shape", None) != want_obs.shape:
        raise ValueError(f"{path}: observation space {got_obs} does not fit scenario "
                         f"{label!r}, whose observation vectors have shape {want_obs.shape}")
    policy = TrainedPolicy(model, name or path.stem, deterministic=deterministic, seed=seed,
                           relative=relative)
    if not assisted:
        return policy
    if assist is None:
        assist = make_scripted(meta["assist"], seed=seed)
    return AssistedPolicy(policy, assist, tuple(meta["focus"]))
