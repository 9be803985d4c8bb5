"""Exported policies: an ONNX file written by ``traveller export`` as a ``Policy``.

``OnnxPolicy`` plays a policy with onnxruntime and NumPy only: nothing on its path imports torch, so
a game (or a tournament) can run an exported NPC without PyTorch installed. Anywhere a policy name
is accepted (``traveller_agents.registry.make_policy``, the tournament's ``--policies``, ``traveller
eval``), a path ending in ``.onnx`` loads as one.

The file format (written by ``traveller_rl.onnx_export``):

* inputs ``observation`` (float32 ``[batch, obs_dim]``, the observation vector of
  ``TravellerEnv.observe``) and ``action_mask`` (float32 ``[batch, n_actions]``; any non-zero
  entry is a legal action), in the policy's own action space (slot-relative or absolute,
  metadata ``action_targets``; with metadata ``move_view`` ``true``, the observation
  includes the move view, ``TravellerEnv(move_view=True)``: a game computes it as
  ``traveller_env.observations.move_view`` does, and in a ``TravellerEnv`` without it
  ``act`` asks ``env.move_view_vector``; metadata ``aim_view`` likewise for the aim view,
  after the move view: ``ObservationBuilder.aim_view_entries``, ``env.aim_view_vector``);
* outputs ``masked_logits`` (float32 ``[batch, n_actions]``, illegal actions at ``-1e9``) and
  ``action`` (int64 ``[batch]``: the argmax, the deterministic choice; the first on a tie);
* metadata (``metadata_props``, all strings): ``format`` (``"traveller-onnx-policy"``),
  ``format_version`` (``"1"``), ``scenario``, ``obs_dim``, ``n_actions``, ``action_labels``
  and ``observation_labels`` (JSON lists), ``action_targets`` (``"relative"`` or
  ``"absolute"``), ``focus`` (JSON list of action kinds) and ``assist`` (a scripted policy's
  name) for a model trained with the SB3 bridge's ``assist``/``focus`` (its last action,
  ``delegate``, hands the decision to ``assist``), and where it came from (``source_format``,
  ``source``, ``hidden``, ``activation``, ``training``); ``layout`` (a JSON object,
  ``traveller_env.layout.Layout.to_dict``) for a policy trained on a fixed layout: its
  observation and actions are the layout's, and it plays any scenario that fits the layout
  (``act`` asks the env for them: ``env.layout_observation``, ``env.layout_actions``); a
  scenario beyond the layout's limits is refused naming the limit.

An ONNX file is data (a graph of standard operators and its weights): loading one runs no code
of its author's, unlike a pickled ``.zip``. A file that is not ONNX, or whose inputs, outputs
or metadata do not fit the scenario, is refused when the policy is built, before any battle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.views import (
    VIEWS,
    complete_observation,
    reads_layout,
    view_sizes,
    views_of,
)
from traveller_env.env import ScenarioSource, TravellerEnv
from traveller_env.layout import Layout, LayoutError, read_layout, resolve_layout
from traveller_env.policy import legal_indices

__all__ = ["ACTION", "ACTION_MASK", "FORMAT", "FORMAT_VERSION", "MASKED_LOGIT",
           "MASKED_LOGITS", "OBSERVATION", "OnnxPolicy", "is_onnx_file", "load_onnx_policy",
           "read_metadata"]

FORMAT = "traveller-onnx-policy"
FORMAT_VERSION = 1
#: Input and output names of the graph.
OBSERVATION, ACTION_MASK = "observation", "action_mask"
MASKED_LOGITS, ACTION = "masked_logits", "action"
#: The logit the graph gives illegal actions (as ``traveller_agents.nets.MASKED_LOGIT``).
MASKED_LOGIT = -1e9
#: The label of the extra action of an ``assist``/``focus`` model (``TravellerSB3Env``).
DELEGATE = "delegate"
_REQUIRED = ("format_version", "scenario", "obs_dim", "n_actions", "action_labels",
             "action_targets")


def is_onnx_file(name: str | Path) -> bool:
    """Whether ``name`` names an exported policy (a path ending in ``.onnx``)."""
    return str(name).lower().endswith(".onnx")


def _session(path: Path, threads: int) -> Any:
    """An onnxruntime session of the file at ``path`` on ``threads`` CPU threads."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ImportError(f"{path}: playing an ONNX policy needs onnxruntime: install the "
                          "project's onnx extra (pip install -e '.[onnx]')") from exc
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such ONNX policy file")
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: a bad file raises, it is not logged
    try:
        return ort.InferenceSession(path.read_bytes(), options,
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ValueError(f"{path}: cannot be read as an ONNX model (an empty, truncated or "
                         f"corrupt file, or not ONNX at all): {exc}") from exc


def read_metadata(path: str | Path, session: Any = None) -> dict[str, Any]:
    """The metadata of an exported policy, decoded (``obs_dim``/``n_actions``/
    ``format_version`` as ints, the JSON entries as lists). ``ValueError`` naming the file
    and the key when the file is not a ``traveller export`` file or an entry is malformed."""
    path = Path(path)
    if session is None:
        session = _session(path, 1)
    raw = dict(session.get_modelmeta().custom_metadata_map)
    if raw.get("format") != FORMAT:
        raise ValueError(f"{path}: not a policy exported by `traveller export` (its metadata "
                         f"has format={raw.get('format')!r}, expected {FORMAT!r})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ValueError(f"{path}: its metadata lacks {', '.join(missing)}")
    meta: dict[str, Any] = dict(raw)
    for key in ("format_version", "obs_dim", "n_actions"):
        try:
            meta[key] = int(raw[key])
        except ValueError:
            raise ValueError(f"{path}: metadata {key}={raw[key]!r} is not an integer") from None
    if meta["format_version"] != FORMAT_VERSION:
        raise ValueError(f"{path}: ONNX policy format version {meta['format_version']}; this "
                         f"code reads version {FORMAT_VERSION}")
    for key in ("action_labels", "observation_labels", "focus", "hidden", "training",
                "move_view", "aim_view", "attack_view", "layout"):
        if key not in raw:
            continue
        try:
            meta[key] = json.loads(raw[key])
        except ValueError:
            raise ValueError(f"{path}: metadata {key} is not valid JSON") from None
    labels = meta["action_labels"]
    if not isinstance(labels, list) or len(labels) != meta["n_actions"]:
        raise ValueError(f"{path}: metadata action_labels must list n_actions="
                         f"{meta['n_actions']} labels")
    if meta["action_targets"] not in ("relative", "absolute"):
        raise ValueError(f"{path}: metadata action_targets={meta['action_targets']!r}; "
                         "allowed: relative, absolute")
    for view in VIEWS:
        meta.setdefault(view, False)
        if not isinstance(meta[view], bool):
            raise ValueError(f"{path}: metadata {view}={raw[view]!r}; allowed: true, false")
    meta.setdefault("layout", None)
    layout = read_layout(meta["layout"], f"{path}: metadata layout")
    if layout is not None and meta["action_targets"] != "relative":
        raise ValueError(f"{path}: metadata layout needs action_targets='relative' (a "
                         f"layout's actions are slot-relative), got "
                         f"{meta['action_targets']!r}")
    meta.setdefault("focus", [])
    meta.setdefault("assist", "")
    if meta["focus"] and (not meta["assist"] or labels[-1] != DELEGATE):
        raise ValueError(f"{path}: metadata focus={meta['focus']} needs an assist policy and "
                         f"a last action {DELEGATE!r}")
    return meta


def _shape(arg: Any) -> str:
    """An onnxruntime input/output as ``name type [d0, d1]``."""
    dims = ", ".join(str(d) if d is not None else "?" for d in arg.shape)
    return f"{arg.name} {arg.type} [{dims}]"


def _check_graph(path: Path, session: Any, obs_dim: int, n_actions: int) -> None:
    """``ValueError`` naming expected and found inputs/outputs unless the graph takes
    ``observation [batch, obs_dim]`` and ``action_mask [batch, n_actions]`` (float32) and
    gives ``masked_logits [batch, n_actions]`` and ``action [batch]``."""
    want_in = {OBSERVATION: ("tensor(float)", obs_dim), ACTION_MASK: ("tensor(float)", n_actions)}
    want_out = {MASKED_LOGITS: ("tensor(float)", n_actions), ACTION: ("tensor(int64)", None)}
    expected = (f"inputs {OBSERVATION} float32 [batch, {obs_dim}] and {ACTION_MASK} float32 "
                f"[batch, {n_actions}], outputs {MASKED_LOGITS} float32 [batch, {n_actions}] "
                f"and {ACTION} int64 [batch]")
    for kind, want, args in (("input", want_in, session.get_inputs()),
                             ("output", want_out, session.get_outputs())):
        got = {a.name: a for a in args}
        found = "; ".join(_shape(a) for a in args) or "none"
        for name, (dtype, width) in want.items():
            arg = got.get(name)
            ok = (arg is not None and arg.type == dtype
                  and len(arg.shape) == (1 if width is None else 2)
                  and (width is None or arg.shape[1] == width))
            if not ok:
                raise ValueError(f"{path}: {kind} {name!r} missing or of the wrong type or "
                                 f"shape; expected {expected}; found {kind}s {found}")


class OnnxPolicy:
    """An exported policy playing through the ``Policy`` protocol with onnxruntime.

    Built from the file and the scenario it will play: the file's metadata and graph are
    checked against the scenario (observation size and labels, action labels) at once, and a
    ``ValueError`` names the file, the expected and the found shapes. ``act`` translates the
    seat's mask to the policy's action space (slot-relative policies), runs the graph on one
    observation and translates the action back. Deterministic by default (the graph's argmax);
    with ``deterministic=False`` it samples the masked softmax with its own generator, seeded
    by ``reset``. A model trained with ``assist``/``focus`` decides only its focus actions and
    hands the others (or any it delegates) to the scripted ``assist`` policy named in the file
    (or the ``assist`` given). ``threads``: onnxruntime's intra-op threads (1 suits an NPC).
    A policy trained on a fixed layout (``layout``) plays any scenario that fits it, reading
    the layout's observation and actions from the env whatever the env's own.
    """

    needs_observation = True

    def __init__(self, path: str | Path, scenario: ScenarioSource, deterministic: bool = True,
                 seed: int | None = None, name: str | None = None, threads: int = 1,
                 assist: Any = None) -> None:
        self.path = Path(path)
        self.name = name or self.path.stem
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.session = _session(self.path, threads)
        self.metadata = meta = read_metadata(self.path, self.session)
        self.obs_dim, self.n_actions = meta["obs_dim"], meta["n_actions"]
        self.action_labels: list[str] = list(meta["action_labels"])
        self.relative = meta["action_targets"] == "relative"
        self.focus: tuple[str, ...] = tuple(meta["focus"])
        self.move_view: bool = meta["move_view"]
        self.aim_view: bool = meta["aim_view"]
        self.attack_view: bool = meta["attack_view"]
        self.views = views_of(meta)  # what complete_observation rebuilds in other envs
        #: The fixed layout it was trained on (``traveller_env.layout``), or ``None``: then it
        #: plays only scenarios with its export scenario's own vector sizes.
        self.layout: Layout | None = resolve_layout(meta["layout"])
        self.move_view_size = 0  # entries the env's observation may lack (set by the check)
        _check_graph(self.path, self.session, self.obs_dim, self.n_actions)
        self._check_scenario(scenario)
        self.assist = None
        if self.focus:
            if assist is None:
                from traveller_agents.scripted import make_scripted

                assist = make_scripted(meta["assist"], seed=seed)
            self.assist = assist
        self._focus_masks: dict[int, np.ndarray] = {}

    def _check_scenario(self, scenario: ScenarioSource) -> None:
        """``ValueError`` unless the file's observation and actions are the scenario's."""
        views = {"move_view": self.move_view, "aim_view": self.aim_view,
                 "attack_view": self.attack_view}
        if self.layout is not None:
            try:
                env = TravellerEnv(scenario, layout=self.layout, **views)
            except LayoutError as exc:
                raise ValueError(f"{self.path}: trained on a fixed layout; {exc}") from None
        else:
            env = TravellerEnv(scenario, **views)
        label = env.scenario.name
        meta = self.metadata
        self.move_view_size = view_sizes(env.observation_labels)["move_view"]
        kind = "slot-relative" if self.relative else "absolute"
        want_labels = list(env.relative_actions.labels if self.relative else env.action_labels)
        if self.focus:
            want_labels.append(DELEGATE)
        want_obs = len(env.observation_labels)
        exported = f" (exported for scenario {meta['scenario']!r})"
        if self.obs_dim != want_obs or self.action_labels != want_labels:
            differ = ""
            if self.obs_dim == want_obs and len(self.action_labels) == len(want_labels):
                i = next(i for i, (a, b) in enumerate(zip(self.action_labels, want_labels,
                                                          strict=True)) if a != b)
                differ = f"; action {i} is {self.action_labels[i]!r}, not {want_labels[i]!r}"
            raise ValueError(
                f"{self.path}: takes observation [batch, {self.obs_dim}] and action_mask "
                f"[batch, {self.n_actions}]{exported}, but scenario {label!r} has observation "
                f"[batch, {want_obs}] and action_mask [batch, {len(want_labels)}] ({kind} "
                f"actions{differ})")
        got_obs = meta.get("observation_labels")
        if got_obs is not None and list(got_obs) != list(env.observation_labels):
            i = next((i for i, (a, b) in enumerate(zip(got_obs, env.observation_labels,
                                                       strict=False)) if a != b),
                     min(len(got_obs), want_obs))
            raise ValueError(
                f"{self.path}: its observation layout{exported} differs from scenario "
                f"{label!r}'s at entry {i} ({got_obs[i] if i < len(got_obs) else None!r} vs "
                f"{env.observation_labels[i]!r}): exported by another version of the "
                "observation encoding?")

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the sampling generator (``None`` keeps the current stream) and the
        assistant's."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        if self.assist is not None:
            self.assist.reset(None if seed is None else seed + 1)

    def run(self, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The graph on a batch: ``(masked_logits [B, n_actions], action [B])`` for
        observations ``[B, obs_dim]`` and masks ``[B, n_actions]`` in the policy's action
        space."""
        obs = np.asarray(observations, dtype=np.float32)
        mask = np.asarray(masks, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim or mask.shape != (len(obs),
                                                                             self.n_actions):
            raise ValueError(f"{self.name}: a batch of observations {obs.shape} and masks "
                             f"{mask.shape}; the policy takes [B, {self.obs_dim}] and "
                             f"[B, {self.n_actions}]")
        logits, action = self.session.run(None, {OBSERVATION: obs, ACTION_MASK: mask})
        return logits, action

    def choose(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The policy's action index for one observation and a mask in its own action
        space."""
        mask = np.asarray(mask)
        if mask.shape != (self.n_actions,):
            raise ValueError(f"{self.name}: action mask of shape {mask.shape}, but the policy "
                             f"has {self.n_actions} actions")
        if np.shape(observation) != (self.obs_dim,):
            raise ValueError(f"{self.name}: observation of shape {np.shape(observation)}, but "
                             f"the policy expects ({self.obs_dim},)")
        if not mask.any():
            legal_indices(mask)  # the ValueError of every policy for an empty mask
        obs = np.asarray(observation, dtype=np.float32).reshape(1, self.obs_dim)
        feed = mask.astype(np.float32).reshape(1, self.n_actions)
        if self.deterministic:
            (action,) = self.session.run([ACTION], {OBSERVATION: obs, ACTION_MASK: feed})
            chosen = int(action[0])
            if not (0 <= chosen < self.n_actions and feed[0, chosen]):
                raise ValueError(f"{self.path}: the graph chose action {chosen}, which the "
                                 "mask does not allow (a graph that ignores its mask?)")
            return chosen
        (logits,) = self.session.run([MASKED_LOGITS], {OBSERVATION: obs, ACTION_MASK: feed})
        z = logits[0].astype(np.float64)
        legal = feed[0] != 0
        p = np.where(legal, np.exp(z - z[legal].max()), 0.0)
        return int(self.rng.choice(self.n_actions, p=p / p.sum()))

    def _relative_actions(self, env: Any) -> Any:
        """The slot-relative translation of ``env`` for this policy: the layout's when it
        reads one (``env.layout_actions``), else ``env.relative_actions``."""
        env = getattr(env, "unwrapped", env)
        if reads_layout(env, self.layout, self.views):
            return env.layout_actions(self.layout)
        rel = getattr(env, "relative_actions", None)
        if rel is None:
            raise ValueError(f"{self.name}: the environment {type(env).__name__} has no "
                             "relative_actions translation; play this policy in a TravellerEnv")
        return rel

    def model_mask(self, action_mask: np.ndarray, agent: str, env: Any) -> np.ndarray:
        """The environment's (absolute) mask in the policy's action space (without the
        delegate action)."""
        if not self.relative:
            return np.asarray(action_mask)
        return self._relative_actions(env).mask(agent, np.asarray(action_mask))

    def to_env_action(self, index: int, agent: str, env: Any) -> int:
        """The environment's action index for the policy's action ``index``."""
        if self.relative:
            return self._relative_actions(env).to_absolute(agent, index)
        return int(index)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The policy's action for ``agent`` as an index of the environment's (absolute)
        actions."""
        env = getattr(env, "unwrapped", env)
        if reads_layout(env, self.layout, self.views):
            # Trained on a layout: its vector (and actions), whatever the env's own.
            observation = env.layout_observation(agent, self.layout, **self.views)
        else:
            # Exported with a view the env lacks (or without one it has): the vector it knows.
            observation = complete_observation(observation, env, agent, self.views)
        mask = self.model_mask(action_mask, agent, env)
        if not self.focus:
            return self.to_env_action(self.choose(observation, mask), agent, env)
        # an assist/focus model (traveller_agents.trained.AssistedPolicy): its focus actions, or
        # delegate
        focus_mask = self._focus_masks.get(id(env))
        if focus_mask is None:
            labels = (self._relative_actions(env).labels if self.relative
                      else env.action_labels)
            focus_mask = np.array([lbl.split(":")[0] in self.focus for lbl in labels])
            self._focus_masks[id(env)] = focus_mask
        mine = mask.astype(bool) & focus_mask
        if mine.any():
            action = self.choose(observation, np.append(mine, True))
            if action < len(mine):
                return self.to_env_action(action, agent, env)
        return int(self.assist.act(observation, action_mask, agent, env))


def load_onnx_policy(path: str | Path, scenario: ScenarioSource, deterministic: bool = True,
                     seed: int | None = None, name: str | None = None,
                     assist: Any = None) -> OnnxPolicy:
    """An ``OnnxPolicy`` of the file at ``path`` for ``scenario`` (built-in name, path or
    dict). ``FileNotFoundError`` when it is missing; ``ValueError`` naming the file when it is
    not an exported policy or does not fit the scenario."""
    return OnnxPolicy(path, scenario, deterministic=deterministic, seed=seed, name=name,
                      assist=assist)
