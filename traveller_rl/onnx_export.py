"""``traveller export``: a trained policy's actor as an ONNX file
(``traveller_agents.onnx_policy``).

Two sources:

* a ``.pt`` checkpoint of ``traveller train ppo`` (``traveller_agents.ppo_policy``): read with
  ``torch.load(weights_only=True)``; slot-relative actions; an MLP actor (hidden layers each
  followed by tanh, then a linear head), an entity actor (``--arch entity``, with or without
  slot attention) or an ensemble of checkpoints;
* a sb3-contrib ``MaskablePPO`` ``.zip`` saved with ``MlpPolicy`` (``traveller train aiming``,
  ``train_leadership.py``): read *without unpickling anything*: its ``policy.pth`` with
  ``weights_only=True`` and its settings from the JSON ``data`` entry, plus the
  ``<model>.meta.json`` beside it (``action_targets``, ``assist``/``focus``, scenario, and the
  ``layout`` of a model trained on a distribution), as
  ``traveller_agents.trained.load_policy`` reads it. A policy whose settings are pickled (a custom
  activation or features extractor) or whose weights are not an ``MlpPolicy``'s is refused
  with the reason.

An MLP's graph is written directly with ``onnx.helper`` (opset 13: ``Gemm``, ``Tanh``,
``Cast``, ``Where``, ``ArgMax``), not traced by ``torch.onnx.export``: the network is known
layer by layer, the bytes are the same for the same weights, and neither torch's deprecated
TorchScript exporter nor its dynamo exporter (which needs onnxscript) is involved. An entity
actor or an ensemble is traced by the TorchScript exporter instead (``traveller_rl.onnx_trace``,
opset 17), with the same inputs, outputs and metadata (plus ``arch`` and its shape); a
by-side checkpoint is refused. Inputs, outputs and metadata are documented in
``traveller_agents.onnx_policy``. A checkpoint trained on a fixed layout
(``traveller_env.layout``, its ``layout`` key) keeps it in the file's metadata: the export
checks it against a scenario that fits the layout (the recorded one; a distribution's first
training draw, ``gen:squad@0``), and the loader plays it in any scenario that fits. Needs
``onnx`` (the ``onnx`` extra) and, to read the source, torch; when onnxruntime is installed the
written graph is checked against a NumPy forward pass of the same weights.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.onnx_policy import (
    ACTION,
    ACTION_MASK,
    DELEGATE,
    FORMAT,
    FORMAT_VERSION,
    MASKED_LOGIT,
    MASKED_LOGITS,
    OBSERVATION,
)
from traveller_env.env import ScenarioSource, TravellerEnv
from traveller_env.layout import Layout, LayoutError, read_layout, resolve_layout
from traveller_env.scenario_set import is_set_source, set_sources
from traveller_rl.onnx_trace import TracedActor, traced_actor, traced_onnx_bytes

__all__ = ["OPSET", "ExportedNetwork", "export_mlp", "export_onnx", "onnx_bytes",
           "read_maskable_ppo", "read_ppo_checkpoint", "write_onnx"]

#: The ONNX operator set the graph uses (onnxruntime 1.7 and later run it).
OPSET = 13
_IR_VERSION = 7  # the IR version of opset 13, so that older runtimes read the file
#: ``policy_kwargs`` of an ``MlpPolicy`` that leave its actor a tanh MLP over the raw vector.
_PLAIN_KWARGS = {"net_arch", "ortho_init", "share_features_extractor", "normalize_images"}


@dataclass
class ExportedNetwork:
    """An actor as exported: ``layers`` ``(weight [out, in], bias [out])`` (tanh after every
    layer but the last), its action labels and where they point, and the metadata to record.
    An actor that is not such a chain (entity, ensemble) is ``traced`` instead (its
    ``layers`` empty)."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    action_labels: list[str]
    action_targets: str  # "relative" | "absolute"
    scenario: str
    source_format: str
    focus: list[str] = field(default_factory=list)
    assist: str = ""
    training: dict[str, Any] = field(default_factory=dict)
    move_view: bool = False  # trained on observations with the move view
    aim_view: bool = False  # ... and with the aim view (after the move view)
    attack_view: bool = False  # ... and with the attack view (after the aim view)
    #: The fixed layout it was trained on (``traveller_env.layout.Layout.to_dict``), or ``None``.
    layout: dict[str, Any] | None = None
    #: The actor to trace (``traveller_rl.onnx_trace``) when it is not an MLP, else ``None``.
    traced: TracedActor | None = None

    @property
    def obs_dim(self) -> int:
        """Input width of the first layer."""
        if self.traced is not None:
            return self.traced.obs_dim
        return int(self.layers[0][0].shape[1])

    @property
    def n_actions(self) -> int:
        """Output width of the last layer."""
        if self.traced is not None:
            return self.traced.n_actions
        return int(self.layers[-1][0].shape[0])

    @property
    def hidden(self) -> list[int]:
        """The hidden layer sizes (an entity actor's trunk; none for an ensemble)."""
        if self.traced is not None:
            return list(self.traced.hidden)
        return [int(w.shape[0]) for w, _ in self.layers[:-1]]

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """The raw logits (float64) of a batch ``[B, obs_dim]``: a NumPy forward pass of the
        layers, or the traced actor's PyTorch one."""
        if self.traced is not None:
            return self.traced.logits(observations)
        x = np.asarray(observations, dtype=np.float64)
        for i, (w, b) in enumerate(self.layers):
            x = x @ w.T.astype(np.float64) + b
            if i < len(self.layers) - 1:
                x = np.tanh(x)
        return x


def _layout_dict(layout: Layout | None) -> dict | None:
    """What ``ExportedNetwork.layout`` keeps of a layout."""
    return None if layout is None else layout.to_dict()


def _check_chain(path: Path, layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """``ValueError`` unless each layer's input width is the previous one's output width."""
    for i, (w, b) in enumerate(layers):
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ValueError(f"{path}: layer {i} has weight {w.shape} and bias {b.shape}; "
                             "expected a Linear layer's [out, in] and [out]")
        if i and w.shape[1] != layers[i - 1][0].shape[0]:
            raise ValueError(f"{path}: layer {i} takes {w.shape[1]} inputs but layer {i - 1} "
                             f"gives {layers[i - 1][0].shape[0]}")


def read_ppo_checkpoint(path: str | Path) -> ExportedNetwork:
    """The actor of a ``train_ppo`` checkpoint (``traveller_agents.checkpoint``'s format): its
    layers for an MLP, the module to trace for an entity actor or an ensemble."""
    from traveller_agents.checkpoint import arch_of, read_checkpoint

    path = Path(path)
    data = read_checkpoint(path)
    if data.get("activation", "tanh") != "tanh":
        raise ValueError(f"{path}: activation {data['activation']!r}; the export supports "
                         "tanh networks only")
    traced = None
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    if arch_of(data) != "mlp":
        traced = traced_actor(path, data)
    else:
        actor = data["actor"]
        keys = sorted({k.rsplit(".", 1)[0] for k in actor}, key=int)
        layers = [(actor[f"{k}.weight"].numpy().astype(np.float32),
                   actor[f"{k}.bias"].numpy().astype(np.float32)) for k in keys]
        _check_chain(path, layers)
    training = {k: data[k] for k in ("decisions", "update", "seed") if k in data}
    layout = read_layout(data.get("layout"), f"{path}: its layout")
    return ExportedNetwork(layers, list(data["action_labels"]), "relative",
                           str(data.get("scenario", "")), "traveller-ppo", training=training,
                           move_view=bool(data.get("move_view", False)),
                           aim_view=bool(data.get("aim_view", False)),
                           attack_view=bool(data.get("attack_view", False)),
                           layout=_layout_dict(layout), traced=traced)


def _zip_entry(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        return archive.read(name)
    except KeyError:
        raise ValueError(f"{path}: no {name!r} entry; not a stable-baselines3 checkpoint") from None


def read_maskable_ppo(path: str | Path) -> ExportedNetwork:
    """The actor of a ``MaskablePPO`` ``MlpPolicy`` ``.zip``, read without unpickling (see the
    module docstring); the labels are filled in by ``export_onnx`` from the scenario."""
    import torch

    from traveller_agents.trained import read_meta

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such trained-policy file")
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(_zip_entry(path, archive, "data"))
            weights = _zip_entry(path, archive, "policy.pth")
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot be read as a MaskablePPO checkpoint (an empty, "
                         f"truncated or corrupt file, or not an SB3 .zip): {exc}") from exc
    policy_class = str(data.get("policy_class", {}).get("__init__", ""))
    if "MaskableActorCriticPolicy." not in policy_class:
        raise ValueError(f"{path}: policy class {policy_class or 'unknown'}; the export "
                         "supports MaskablePPO's MlpPolicy (MaskableActorCriticPolicy) only")
    kwargs = data.get("policy_kwargs", {})
    extra = sorted(set(kwargs) - _PLAIN_KWARGS) if isinstance(kwargs, dict) else [str(kwargs)]
    if extra:
        raise ValueError(f"{path}: policy_kwargs has {', '.join(extra)} (pickled settings such "
                         "as a custom activation_fn or features extractor); the export supports "
                         "MlpPolicy with the default tanh activation, set by "
                         f"{', '.join(sorted(_PLAIN_KWARGS))} only")
    try:
        state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path}: its policy.pth cannot be read as plain weights: {exc}") from exc
    prefix = "mlp_extractor.policy_net."
    hidden = sorted({k[len(prefix):].rsplit(".", 1)[0] for k in state if k.startswith(prefix)},
                    key=int)
    known = {f"{prefix}{k}.{p}" for k in hidden for p in ("weight", "bias")}
    known |= {"action_net.weight", "action_net.bias"}
    other = sorted(k for k in state if k not in known and not k.startswith(
        ("mlp_extractor.value_net.", "value_net.")))
    if other or "action_net.weight" not in state:
        raise ValueError(f"{path}: weights {', '.join(other) or '(no action_net)'} are not "
                         "those of an MlpPolicy; the export supports MaskablePPO's MlpPolicy "
                         "only")
    names = [f"{prefix}{k}" for k in hidden] + ["action_net"]
    layers = [(state[f"{n}.weight"].numpy().astype(np.float32),
               state[f"{n}.bias"].numpy().astype(np.float32)) for n in names]
    _check_chain(path, layers)
    meta = read_meta(path)
    assisted = bool(meta.get("focus"))
    # trained on a distribution's fixed layout
    layout = read_layout(meta.get("layout"), f"{path}: the layout of its .meta.json")
    return ExportedNetwork(
        layers, [], "relative" if meta.get("action_targets") == "relative" else "absolute",
        str(meta.get("scenario", "")), "maskable-ppo",
        focus=list(meta.get("focus") or []), assist=str(meta.get("assist", "")) if assisted else "",
        training={"num_timesteps": int(data.get("num_timesteps", 0))}, layout=_layout_dict(layout))


def onnx_bytes(net: ExportedNetwork, metadata: dict[str, str]) -> bytes:
    """The ONNX model of ``net`` (inputs, outputs: ``traveller_agents.onnx_policy``) with
    ``metadata`` as its ``metadata_props``, serialized (traced for an entity actor or an
    ensemble: ``traveller_rl.onnx_trace``)."""
    if net.traced is not None:
        return traced_onnx_bytes(net.traced, metadata)
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    batch = "batch"
    inits, nodes = [], []
    x = OBSERVATION
    for i, (w, b) in enumerate(net.layers):
        inits += [numpy_helper.from_array(np.ascontiguousarray(w, np.float32), f"W{i}"),
                  numpy_helper.from_array(np.ascontiguousarray(b, np.float32), f"b{i}")]
        last = i == len(net.layers) - 1
        out = "logits" if last else f"linear{i}"
        nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"b{i}"], [out], name=f"gemm{i}",
                                      transB=1))
        if not last:
            nodes.append(helper.make_node("Tanh", [out], [f"hidden{i}"], name=f"tanh{i}"))
            out = f"hidden{i}"
        x = out
    inits.append(numpy_helper.from_array(np.array(MASKED_LOGIT, np.float32), "masked_logit"))
    nodes += [
        helper.make_node("Cast", [ACTION_MASK], ["legal"], name="legal", to=TensorProto.BOOL),
        helper.make_node("Where", ["legal", "logits", "masked_logit"], [MASKED_LOGITS],
                         name="mask"),
        helper.make_node("ArgMax", [MASKED_LOGITS], [ACTION], name="argmax", axis=1,
                         keepdims=0, select_last_index=0),
    ]
    graph = helper.make_graph(
        nodes, "traveller_policy",
        [helper.make_tensor_value_info(OBSERVATION, TensorProto.FLOAT, [batch, net.obs_dim]),
         helper.make_tensor_value_info(ACTION_MASK, TensorProto.FLOAT, [batch, net.n_actions])],
        [helper.make_tensor_value_info(MASKED_LOGITS, TensorProto.FLOAT,
                                       [batch, net.n_actions]),
         helper.make_tensor_value_info(ACTION, TensorProto.INT64, [batch])],
        initializer=inits,
        doc_string="A Traveller Tactics policy: masked logits and the argmax action.")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="traveller export")
    model.ir_version = _IR_VERSION
    helper.set_model_props(model, metadata)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _verify(out: Path, net: ExportedNetwork, data: bytes, samples: int = 64) -> None:
    """Run the written graph with onnxruntime (when installed) on random observations and
    masks; ``RuntimeError`` if its actions or logits differ from the NumPy forward pass."""
    try:
        import onnxruntime as ort
    except ImportError:
        return
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (samples, net.obs_dim)).astype(np.float32)
    mask = (rng.random((samples, net.n_actions)) < 0.5).astype(np.float32)
    mask[:, 0] = 1.0
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    logits, action = session.run(None, {OBSERVATION: obs, ACTION_MASK: mask})
    want = np.where(mask != 0, net.logits(obs), MASKED_LOGIT)
    close = np.allclose(logits, want, rtol=1e-4, atol=1e-4)
    chosen = want[np.arange(samples), action]
    if not close or not np.allclose(chosen, want.max(axis=1), rtol=1e-5, atol=1e-5):
        raise RuntimeError(f"{out}: the exported graph does not reproduce the network "
                           "(a bug in the export: please report it)")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def export_onnx(policy: str | Path, out: str | Path,
                scenario: ScenarioSource | None = None) -> dict[str, str]:
    """Export ``policy`` (a ``train_ppo`` ``.pt`` or a ``MaskablePPO`` ``.zip``) to the ONNX
    file ``out``; return the metadata written.

    ``scenario`` (name, path or dict) defaults to the one the checkpoint records (the first
    of a model trained on several, ``"squad_commander,squad"``; for a distribution such as
    ``gen:squad``, its first training draw); the policy is checked against it as its loader
    would (``ValueError`` naming the mismatch), and its observation and action labels are
    recorded. A checkpoint trained on a fixed layout records it (metadata ``layout``) and is
    checked against the scenario laid out by it (``ValueError`` naming the limit a scenario
    beyond it breaks).
    """
    policy, out = Path(policy), Path(out)
    if policy.suffix == ".pt":
        net = read_ppo_checkpoint(policy)
    elif policy.suffix == ".zip":
        net = read_maskable_ppo(policy)
    else:
        raise ValueError(f"{policy}: cannot export this file: expected a train_ppo .pt "
                         "checkpoint or a MaskablePPO .zip")
    return write_onnx(net, out, scenario, policy)


def export_mlp(layers: list[tuple[np.ndarray, np.ndarray]], out: str | Path,
               scenario: ScenarioSource, source_format: str, absolute_for: str = "",
               training: dict[str, Any] | None = None) -> dict[str, str]:
    """Write another library's actor as a policy file: a tanh MLP given by its ``layers``
    (``(weight [out, in], bias [out])``, tanh after every layer but the last) whose outputs are
    ``scenario``'s slot-relative actions, or with ``absolute_for=AGENT`` the absolute actions of
    the seat it learned as (``blue_0``: reordered here as that seat's relative actions, so the
    file plays either side). A Q-network's values serve as logits: the file plays their argmax.
    ``source_format`` names where it came from (``"benchmarl-mappo"``); returns the metadata
    written. ``ValueError`` when the sizes do not fit ``scenario``."""
    out = Path(out)
    layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
    _check_chain(out, layers)
    if absolute_for:
        env = TravellerEnv(scenario)
        w, b = layers[-1]
        if absolute_for not in env.possible_agents or w.shape[0] != len(env.action_labels):
            raise ValueError(f"{out}: {w.shape[0]} outputs for agent {absolute_for!r}; the "
                             f"agents of {scenario!r} ({', '.join(env.possible_agents)}) have "
                             f"{len(env.action_labels)} absolute actions")
        rel = env.relative_actions
        layers[-1] = (rel.rows(absolute_for, w), rel.rows(absolute_for, b))
    net = ExportedNetwork(layers, [], "relative", str(scenario), source_format,
                          training=training or {})
    return write_onnx(net, out, scenario, Path(source_format))


def write_onnx(net: ExportedNetwork, out: Path, scenario: ScenarioSource | None,
               policy: Path) -> dict[str, str]:
    """Check ``net`` against ``scenario`` (default its own) and write its ONNX file ``out``
    (``export_onnx``; ``policy`` names the source in messages and metadata)."""
    # a model trained on several scenarios records them comma-separated: the first one
    source = scenario if scenario is not None else net.scenario.split(",")[0].strip()
    if not source:
        raise ValueError(f"{policy}: the checkpoint records no scenario (no .meta.json beside "
                         "it?): pass the scenario it plays (--scenario)")
    layout = None if net.layout is None else resolve_layout(net.layout)
    if layout is not None and is_set_source(source):
        source = set_sources(source, None)[0]  # a distribution: its first training draw
    try:
        env = TravellerEnv(source, move_view=net.move_view, aim_view=net.aim_view,
                           attack_view=net.attack_view,
                           **({} if layout is None else {"layout": layout}))
    except LayoutError as exc:
        raise ValueError(f"{policy}: trained on a fixed layout; {exc}") from None
    except (ValueError, FileNotFoundError) as exc:
        raise ValueError(f"{policy}: scenario {source!r} cannot be loaded ({exc}); pass the "
                         "scenario it plays (--scenario)") from exc
    name = env.scenario.name
    kind = "slot-relative" if net.action_targets == "relative" else "absolute"
    labels = list(env.relative_actions.labels if net.action_targets == "relative"
                  else env.action_labels)
    if net.focus:
        labels.append(DELEGATE)
    if net.source_format == "traveller-ppo" and net.action_labels != labels:
        raise ValueError(f"{policy}: its {len(net.action_labels)} slot-relative actions do "
                         f"not fit scenario {name!r}, which has {len(labels)}")
    net.action_labels = labels
    if net.n_actions != len(labels):
        raise ValueError(f"{policy}: its {net.n_actions} actions do not fit scenario "
                         f"{name!r}, which has {len(labels)} {kind} actions")
    if net.obs_dim != len(env.observation_labels):
        raise ValueError(f"{policy}: observation size {net.obs_dim} does not fit scenario "
                         f"{name!r}, whose observation vectors have "
                         f"{len(env.observation_labels)} entries")
    tokens = [] if net.traced is None else net.traced.observation_labels
    if tokens and tokens != list(env.observation_labels):
        i = next((i for i, (a, b) in enumerate(zip(tokens, env.observation_labels,
                                                   strict=False)) if a != b), 0)
        raise ValueError(f"{policy}: its observation labels differ from scenario {name!r}'s at "
                         f"entry {i} ({tokens[i]!r} vs {env.observation_labels[i]!r}); its "
                         f"{net.traced.arch} actor reads its tokens by them")
    metadata = {
        "format": FORMAT, "format_version": str(FORMAT_VERSION), "scenario": name,
        "obs_dim": str(net.obs_dim), "n_actions": str(net.n_actions),
        "action_labels": _json(labels), "action_targets": net.action_targets,
        "observation_labels": _json(list(env.observation_labels)),
        "focus": _json(net.focus), "assist": net.assist,
        "masked_logit": repr(MASKED_LOGIT), "source_format": net.source_format,
        "source": policy.name, "hidden": _json(net.hidden),
        "activation": "tanh", "training": _json(net.training),
        "move_view": _json(net.move_view),
        **({"aim_view": _json(True)} if net.aim_view else {}),  # absent: false
        **({"attack_view": _json(True)} if net.attack_view else {}),
        **({"layout": _json(net.layout)} if net.layout is not None else {}),  # absent: none
        **({} if net.traced is None else net.traced.shape)}  # absent: an MLP
    data = onnx_bytes(net, metadata)
    _verify(out, net, data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return metadata
