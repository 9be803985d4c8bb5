"""A learned policy against an in-core opponent on many scenarios, both sides, fast.

``traveller benchmark`` plays every battle through the AEC env, with scripted opponents in
Python: the reference, and slow for ``tactician`` (about half a second a battle). This plays
the same kind of battle through ``traveller_env.vector`` instead: the opponent runs inside the
compiled core and the learned policy chooses greedily (its most probable legal action, as
``traveller benchmark`` plays it) for every row at once, so a thousand battles take a minute.

**Battles.** Scenario ``k`` of the list is played twice, the policy on side 0 then on side 1,
in a one-row vector seeded ``derive_seed(seed, 2 * k + side)``: the battle seed each record
keeps replays the battle in ``raw_env(scenario).reset(seed=...)``. A policy trained on a fixed
layout (``traveller_env.layout``) plays every scenario that fits it through the layout; other
policies play the scenarios whose observation and action sizes are their own. A scenario a
policy cannot play is recorded as ``not_playable`` with the reason, never as a loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.layout import Layout, LayoutError, resolve_layout

__all__ = ["Learned", "load_learned", "play_scenarios", "summarise"]


@dataclass
class Learned:
    """A learned policy as a batched greedy chooser over slot-relative actions."""

    name: str
    obs_dim: int
    action_labels: list[str]
    layout: Layout | None
    views: dict[str, bool] = field(default_factory=dict)
    _choose: Any = None

    def choose(self, obs: np.ndarray, mask: np.ndarray, side: str) -> np.ndarray:
        """Greedy actions ``[B]`` for observations ``[B, obs_dim]`` and bool masks."""
        return self._choose(obs, mask, side)


def load_learned(path: str | Path, name: str | None = None) -> Learned:
    """A ``traveller train ppo`` checkpoint (``.pt``) or an exported policy (``.onnx``)."""
    from traveller_agents.views import VIEWS, views_of

    path = Path(path)
    if path.suffix == ".onnx":
        import onnxruntime as ort

        from traveller_agents.onnx_policy import ACTION_MASK, OBSERVATION, read_metadata

        meta = read_metadata(path)
        if meta["action_targets"] != "relative":
            raise ValueError(f"{path}: plays absolute actions; only slot-relative policies "
                             "play through the vector")
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

        def choose_onnx(obs: np.ndarray, mask: np.ndarray, side: str) -> np.ndarray:
            _, action = session.run(None, {OBSERVATION: obs.astype(np.float32),
                                           ACTION_MASK: mask.astype(np.float32)})
            return np.asarray(action, dtype=np.int64).reshape(-1)

        layout = resolve_layout(meta["layout"]) if meta.get("layout") else None
        return Learned(name or path.stem, int(meta["obs_dim"]), list(meta["action_labels"]),
                       layout, {v: bool(meta.get(v, False)) for v in VIEWS}, choose_onnx)
    import torch

    from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
    from traveller_agents.nets import actor_logits, masked_logits

    data = read_checkpoint(path)
    net = network_from_checkpoint(data)

    def choose_torch(obs: np.ndarray, mask: np.ndarray, side: str) -> np.ndarray:
        with torch.no_grad():
            logits = actor_logits(net, torch.from_numpy(obs), side)
            return masked_logits(logits, torch.from_numpy(mask)).argmax(dim=1).numpy()

    layout = resolve_layout(dict(data["layout"])) if data.get("layout") else None
    return Learned(name or path.stem, int(data["obs_dim"]), list(data["action_labels"]),
                   layout, views_of(data), choose_torch)


def play_scenarios(learned: Learned, scenarios: Sequence[str], opponent: str = "tactician",
                   seed: int = 0, backend: str = "core") -> list[dict[str, Any]]:
    """Two battles per scenario (the policy on each side) against the in-core ``opponent``;
    one record per battle (see the module docstring)."""
    from traveller_env import vector
    from traveller_env.rules.rng import derive_seed
    from traveller_env.scenario import load_scenario

    records: list[dict[str, Any]] = []
    for k, scenario in enumerate(scenarios):
        sides = [s.name for s in load_scenario(scenario).sides]
        for side in (0, 1):
            base = {"scenario": scenario, "side": sides[side], "opponent": opponent}
            try:
                venv = vector.make(scenario, num_envs=1, seed=derive_seed(seed, 2 * k + side),
                                   backend=backend, opponents={sides[1 - side]: opponent},
                                   relative_actions=True, layout=learned.layout,
                                   **learned.views)
            except LayoutError as exc:
                records.append({**base, "result": "not_playable", "reason": str(exc)})
                continue
            if venv.obs_dim != learned.obs_dim or venv.action_labels != learned.action_labels:
                records.append({**base, "result": "not_playable", "reason": (
                    f"observation size {venv.obs_dim} and {venv.n_actions} actions; the policy "
                    f"takes {learned.obs_dim} and {len(learned.action_labels)}")})
                continue
            records.append({**base, **_one_battle(learned, venv, side)})
    return records


def _one_battle(learned: Learned, venv: Any, side: int) -> dict[str, Any]:
    obs, mask, info = venv.reset()
    battle_seed = int(info["battle_seed"][0])
    name = venv.sides[side]
    while True:
        action = learned.choose(obs, mask, name)
        obs, mask, _, term, trunc, info = venv.step(action)
        if term[0] or trunc[0]:
            winner = int(info["winner"][0])
            result = "draw" if winner < 0 else "win" if winner == side else "loss"
            return {"battle_seed": battle_seed, "result": result}


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Wins, draws, losses, the win rate and its Wilson 95% interval over the played battles
    (``not_playable`` ones counted apart); per side too."""
    from traveller_rl.evaluation import wilson_interval

    def cell(rows: list[dict]) -> dict[str, Any]:
        played = [r for r in rows if r["result"] in ("win", "draw", "loss")]
        w = sum(r["result"] == "win" for r in played)
        d = sum(r["result"] == "draw" for r in played)
        n = len(played)
        lo, hi = wilson_interval(w, n) if n else (0.0, 1.0)
        return {"battles": n, "wins": w, "draws": d, "losses": n - w - d,
                "win_rate": w / n if n else None, "win_ci95": [lo, hi],
                "not_playable": len(rows) - n}

    out = cell(records)
    out["by_side"] = {s: cell([r for r in records if r["side"] == s])
                      for s in dict.fromkeys(r["side"] for r in records)}
    return out
