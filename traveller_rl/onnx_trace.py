"""ONNX graphs of actors that are not a plain chain of layers, traced by torch.

``traveller_rl.onnx_export`` writes an MLP actor's graph by hand. An entity actor
(``traveller_agents.entity_net.EntityActor``, with or without slot attention) or an ensemble of
checkpoints (``traveller_agents.nets.EnsembleNet``: the mean of its members' logits) is traced
instead, with torch's TorchScript-based exporter (``torch.onnx.export(..., dynamo=False)``; the
dynamo exporter needs onnxscript). What is traced is ``MaskedActor``: the actor's logits, masked and
reduced to the argmax as the hand-written graph does, so the file has the same inputs, outputs and
dtypes (``traveller_agents.onnx_policy``) and the loader reads both alike. The batch axis is
dynamic; the same weights give the same bytes. A by-side checkpoint is not traceable as one graph
(the network a row plays depends on the seat's side, which the observation does not say).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.onnx_policy import (
    ACTION,
    ACTION_MASK,
    MASKED_LOGIT,
    MASKED_LOGITS,
    OBSERVATION,
)

__all__ = ["TRACED_ARCHS", "TRACED_OPSET", "TracedActor", "traced_actor", "traced_onnx_bytes"]

#: The ONNX operator set of traced graphs (``LayerNorm`` of slot attention needs 17;
#: onnxruntime 1.14 and later run it).
TRACED_OPSET = 17
#: The checkpoint architectures (``traveller_agents.checkpoint.arch_of``) exported by tracing.
TRACED_ARCHS = ("entity", "ensemble")


@dataclass
class TracedActor:
    """A checkpoint's actor to trace: the module (``[B, obs_dim]`` -> logits
    ``[B, n_actions]``, in eval mode), its sizes, the observation labels its tokens are read
    by (empty for an MLP ensemble) and the metadata entries that describe its architecture."""

    module: Any  # torch.nn.Module
    obs_dim: int
    n_actions: int
    hidden: list[int]
    arch: str
    observation_labels: list[str] = field(default_factory=list)
    shape: dict[str, str] = field(default_factory=dict)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """The raw logits (float64) of a batch ``[B, obs_dim]`` by the PyTorch module."""
        import torch

        with torch.no_grad():
            out = self.module(torch.as_tensor(np.asarray(observations, dtype=np.float32)))
        return out.numpy().astype(np.float64)


def traced_actor(path: Path, data: dict) -> TracedActor:
    """The actor of checkpoint dict ``data`` (read from ``path``) to trace. ``ValueError``
    naming the file for an architecture outside ``TRACED_ARCHS``."""
    import json

    from traveller_agents.checkpoint import arch_of, attention_of, network_from_checkpoint

    arch = arch_of(data)
    if arch not in TRACED_ARCHS:
        raise ValueError(f"{path}: its actor is the {arch!r} architecture (one network per "
                         "side, chosen by the seat's side, which the observation does not "
                         "say); the export supports MLP, entity and ensemble actors: export "
                         "each side's checkpoint instead")
    net = network_from_checkpoint(data)
    shape: dict[str, str] = {"arch": arch}
    if arch == "entity":
        shape.update(embed=str(int(data.get("embed", 64))), attention=str(attention_of(data)))
    else:
        shape["members"] = json.dumps([str(m.get("arch", "mlp")) for m in data["members"]],
                                      separators=(",", ":"))
    return TracedActor(net.actor, int(data["obs_dim"]), len(data["action_labels"]),
                       [int(h) for h in data["hidden"]], arch,
                       [str(s) for s in data.get("observation_labels") or []], shape)


def _masked_actor(actor: Any) -> Any:
    """``actor`` wrapped as the graph's function: (observation, action_mask) ->
    (masked_logits, action)."""
    import torch
    from torch import nn

    class MaskedActor(nn.Module):
        """Logits of the actor, illegal actions (mask 0) at ``MASKED_LOGIT``, and the argmax
        (the first on a tie, as ONNX ``ArgMax``)."""

        def __init__(self) -> None:
            super().__init__()
            self.actor = actor

        def forward(self, obs: torch.Tensor, mask: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.actor(obs)
            masked = torch.where(mask != 0, logits, torch.full_like(logits, MASKED_LOGIT))
            return masked, torch.argmax(masked, dim=1)

    return MaskedActor().eval()


def traced_onnx_bytes(traced: TracedActor, metadata: dict[str, str]) -> bytes:
    """The ONNX model of ``traced`` (inputs, outputs: ``traveller_agents.onnx_policy``) with
    ``metadata`` as its ``metadata_props``, serialized."""
    import onnx
    import torch
    from onnx import helper

    example = (torch.zeros(2, traced.obs_dim), torch.ones(2, traced.n_actions))
    batch = {0: "batch"}
    buf = io.BytesIO()
    # nn.MultiheadAttention's fast path (taken in eval mode without gradients) is one fused
    # operator that ONNX lacks: trace the plain path, which gives the same logits
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # the TorchScript exporter's deprecation notice, and the tracer's notes on shape
            # checks inside nn.MultiheadAttention (sizes, the same for every batch)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.onnx.export(_masked_actor(traced.module), example, buf, dynamo=False,
                              opset_version=TRACED_OPSET, do_constant_folding=True,
                              input_names=[OBSERVATION, ACTION_MASK],
                              output_names=[MASKED_LOGITS, ACTION],
                              dynamic_axes={OBSERVATION: batch, ACTION_MASK: batch,
                                            MASKED_LOGITS: batch, ACTION: batch})
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    model = onnx.load_from_string(buf.getvalue())
    model.graph.name = "traveller_policy"
    model.graph.doc_string = ("A Traveller Tactics policy: masked logits and the argmax action "
                              f"({traced.arch} actor, traced).")
    model.producer_name = "traveller export"
    helper.set_model_props(model, metadata)
    onnx.checker.check_model(model)
    return model.SerializeToString()
