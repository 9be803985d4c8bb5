"""Trained policies: an RLlib checkpoint (``traveller train rllib``) as a ``Policy``.

Anywhere a policy name is accepted (``traveller_agents.registry.make_policy``, the tournament,
``traveller eval``), a directory that is an RLlib checkpoint loads as an NPC:

* an algorithm checkpoint (``<run>/checkpoint``, the folder holding ``rllib_checkpoint.json``):
  its trained module, read from the ``traveller.json`` the trainer writes beside it; when it
  trained several (``--policy-mapping per-side``), pass ``module=`` or name the module folder;
* a module folder (``<run>/checkpoint/learner_group/learner/rl_module/<module>``).

A checkpoint trained on a distribution (``gen:squad``, on the core) keeps the distribution's
fixed layout in its ``traveller.json`` and plays any scenario that fits it, reading the
layout's observation and actions from the env (as a ``.pt`` or ``.onnx`` policy does).

Needs the project's ``rllib`` extra (Ray RLlib and torch); loading does not start Ray.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.views import VIEWS, reads_layout
from traveller_env.env import ScenarioSource, TravellerEnv
from traveller_env.layout import Layout, LayoutError, read_layout
from traveller_env.policy import legal_indices

__all__ = ["META_FILE", "NO_VIEWS", "RLlibPolicy", "checkpoint_layout", "is_rllib_checkpoint",
           "load_rllib_policy", "module_logits", "read_rllib_module"]

META_FILE = "traveller.json"
#: An RLlib module reads the observation without the optional views.
NO_VIEWS = dict.fromkeys(VIEWS, False)
MODULES_DIR = Path("learner_group") / "learner" / "rl_module"
_ALGO_MARKER = "rllib_checkpoint.json"
_MODULE_MARKER = "module_state.pkl"


def _is_module_dir(p: Path) -> bool:
    """An RLModule's folder: ``.../rl_module/<module id>/module_state.pkl``."""
    return p.parent.name == "rl_module" and (p / _MODULE_MARKER).is_file()


def is_rllib_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is an RLlib algorithm checkpoint or RLModule folder."""
    p = Path(path)
    return p.is_dir() and ((p / _ALGO_MARKER).is_file() or _is_module_dir(p))


class RLlibPolicy:
    """An RLlib ``RLModule`` (``MaskedPPOTorchRLModule``) playing through the ``Policy``
    protocol.

    ``act`` feeds the agent's observation vector and action mask (slot-relative when the
    module was trained with relative actions) to the module's ``forward_inference``.
    Deterministic by default (the most probable legal action); with ``deterministic=False``
    it samples from the masked distribution with its own generator, seeded by ``reset``.
    Build one with ``load_rllib_policy``.
    """

    def __init__(self, module: Any, name: str, relative: bool, deterministic: bool = True,
                 seed: int | None = None, layout: Layout | None = None) -> None:
        self.module = module
        self.name = name
        self.relative = relative
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        #: The fixed layout it was trained on (a distribution's, ``traveller_env.layout``), or
        #: ``None``: then it reads the env's own observation and actions.
        self.layout = layout

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the sampling generator (``None`` keeps the current stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def probabilities(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The module's action probabilities for an observation and a mask in its own action
        space (0 outside the mask)."""
        mask = np.asarray(mask, dtype=np.float32)
        legal = mask > 0
        logits = module_logits(self.module, np.asarray(observation)[None], mask[None])[0]
        logits = np.where(legal, logits, -np.inf)
        probs = np.exp(logits - logits[legal].max())
        return probs / probs.sum()

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The module's action, restricted to the legal ones, as an environment index."""
        env = getattr(env, "unwrapped", env)
        mask = np.asarray(action_mask)
        rel = env.relative_actions
        if reads_layout(env, self.layout, NO_VIEWS):
            # trained on a layout: its vector and actions, whatever the env's own
            observation = env.layout_observation(agent, self.layout)
            rel = env.layout_actions(self.layout)
        if self.relative:
            mask = rel.mask(agent, mask)
        legal_indices(mask)  # ValueError if nothing is legal
        probs = self.probabilities(observation, mask)
        if self.deterministic:
            index = int(np.argmax(probs))
        else:
            index = int(self.rng.choice(len(probs), p=probs))
        return rel.to_absolute(agent, index) if self.relative else index


def module_logits(module: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The module's action logits ``[B, N]`` (float64, not masked) for observations ``[B, D]``
    and action masks ``[B, N]``, through ``forward_inference``."""
    import torch
    from ray.rllib.core.columns import Columns

    batch = {Columns.OBS: {
        "observations": torch.as_tensor(np.asarray(observations, np.float32)),
        "action_mask": torch.as_tensor(np.asarray(masks, np.float32))}}
    with torch.no_grad():
        logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    return logits.cpu().numpy().astype(np.float64)


def _read_meta(folder: Path) -> tuple[dict, Path | None]:
    """The trainer's ``traveller.json`` in ``folder`` or one of its four parents."""
    for p in [folder, *list(folder.parents)[:4]]:
        meta = p / META_FILE
        if meta.is_file():
            try:
                return json.loads(meta.read_text()), p
            except (OSError, ValueError) as exc:
                raise ValueError(f"{meta}: unreadable checkpoint metadata: {exc}") from None
    return {}, None


def _module_dir(path: Path, module: str | None, meta: dict) -> tuple[Path, str]:
    if _is_module_dir(path):
        if module is not None and module != path.name:
            raise ValueError(f"{path}: this is the folder of module {path.name!r}, not of "
                             f"{module!r}")
        return path, path.name
    modules_dir = path / MODULES_DIR
    found = sorted(p.name for p in modules_dir.iterdir()
                   if _is_module_dir(p)) if modules_dir.is_dir() else []
    if module is None:
        trained = meta.get("trained_modules") or found
        if len(trained) != 1:
            raise ValueError(f"{path}: the checkpoint holds modules {found}; say which one "
                             f"(module=..., or the folder {modules_dir}/<module>)")
        module = trained[0]
    if module not in found:
        raise ValueError(f"{path}: no module {module!r} in the checkpoint (modules: "
                         f"{', '.join(found) or 'none'})")
    return modules_dir / module, module


def load_rllib_policy(path: str | Path, scenario: ScenarioSource, module: str | None = None,
                      deterministic: bool = True, seed: int | None = None,
                      name: str | None = None) -> RLlibPolicy:
    """Load a module of an RLlib checkpoint (see the module docstring) for ``scenario``.

    Raises ``FileNotFoundError`` when ``path`` is not a checkpoint folder and ``ValueError``
    naming it when the module is ambiguous or missing, or when its spaces do not fit the
    scenario's (the observation vector's shape and ``Discrete(N)`` actions).
    """
    path = Path(path)
    rl_module, meta, folder, module_id = read_rllib_module(path, module)
    layout = checkpoint_layout(folder, meta)
    try:
        env = TravellerEnv(scenario, layout=layout)
    except LayoutError as exc:
        raise ValueError(f"{folder}: trained on a fixed layout; {exc}") from None
    label = env.scenario.name
    relative = bool(meta.get("relative_actions", True))
    want_n = env.relative_actions.n if relative else len(env.action_labels)
    got_act = rl_module.action_space
    space = getattr(rl_module, "observation_space", None)
    got_obs = getattr(space, "spaces", {}).get("observations")
    trained_on = f" (trained on {meta['scenario']!r})" if meta.get("scenario") else ""
    if getattr(got_act, "n", None) != want_n:
        kind = "slot-relative " if relative else ""
        raise ValueError(f"{folder}: action space {got_act}{trained_on} does not fit "
                         f"scenario {label!r}, which has Discrete({want_n}) {kind}actions")
    want_obs = env.observation_space(env.possible_agents[0])["observation"].shape
    if got_obs is None or got_obs.shape != want_obs:
        raise ValueError(f"{folder}: observation space {space}{trained_on} does not fit "
                         f"scenario {label!r}, whose observation vectors have shape {want_obs}")
    default_name = path.parent.name if path.name == "checkpoint" else path.name
    if (path / _ALGO_MARKER).is_file() and len(meta.get("trained_modules", [])) > 1:
        default_name += f":{module_id}"
    return RLlibPolicy(rl_module, name or default_name, relative,
                       deterministic=deterministic, seed=seed, layout=layout)


def read_rllib_module(path: str | Path, module: str | None = None
                      ) -> tuple[Any, dict, Path, str]:
    """A trained module of an RLlib checkpoint, in eval mode, with the trainer's metadata, its
    folder and its id (see ``load_rllib_policy`` for the errors); no scenario check."""
    path = Path(path)
    if not is_rllib_checkpoint(path):
        raise FileNotFoundError(f"{path}: not an RLlib checkpoint (a folder with "
                                f"{_ALGO_MARKER}, or a module folder rl_module/<module> with "
                                f"{_MODULE_MARKER})")
    meta, _ = _read_meta(path)
    folder, module_id = _module_dir(path, module, meta)
    from ray.rllib.core.rl_module.rl_module import RLModule

    try:  # absolute: Ray reads a relative path as a URI without a scheme and refuses it
        rl_module = RLModule.from_checkpoint(Path(folder).resolve())
    except Exception as exc:  # a corrupt or foreign checkpoint
        raise ValueError(f"{folder}: cannot be loaded as an RLlib module: {exc}") from exc
    from traveller_env.integrations.rllib.modules import ScriptedRLModule

    if isinstance(rl_module, ScriptedRLModule):
        raise ValueError(f"{folder}: module {module_id!r} stands for a scripted NPC seat "
                         "during training (ScriptedRLModule); it is not a trained policy")
    if hasattr(rl_module, "eval"):
        rl_module.eval()
    return rl_module, meta, folder, module_id


def checkpoint_layout(folder: Path, meta: dict) -> Layout | None:
    """The layout a checkpoint trained on (its ``traveller.json``'s ``layout``), or ``None``."""
    return read_layout(meta.get("layout"), f"{folder}: the layout of its {META_FILE}")
