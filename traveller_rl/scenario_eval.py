"""Battles between a policy and an opponent on many scenarios, both sides, fast: the
evaluation path ``traveller benchmark`` (vector suites) and ``experiments.generalisation``
share.

Playing one battle at a time through the AEC env, with scripted opponents in Python, is the
reference, and slow for ``tactician`` (about half a second a battle). ``play_battles`` plays
through ``traveller_env.vector`` instead: an opponent that runs inside the compiled core plays
there, and a learned policy chooses greedily (its most probable legal action, as the AEC path
plays it) for up to ``LANES`` battles at once, each a one-row vector stepped in lock step; two
in-core policies play a battle wholly inside the core.

**Battles.** A ``BattleSpec`` names the scenario, the policy's side and the one-row vector's
seed; the record keeps the battle seed, which replays the battle in
``raw_env(scenario).reset(seed=...)``. ``play_scenarios`` plays scenario ``k`` of a list twice,
the policy on side 0 then on side 1, seeded ``derive_seed(seed, 2 * k + side)``. A policy
trained on a fixed layout (``traveller_env.layout``) plays every scenario that fits it through
the layout; other policies play the scenarios whose observation and action sizes are their own.
A scenario a policy cannot play is recorded as ``not_playable`` with the reason, never as a
loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.layout import Layout, LayoutError, resolve_layout

__all__ = ["LANES", "BattleSpec", "Learned", "Player", "load_learned", "play_battles",
           "play_scenarios", "player_name", "summarise"]


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
    """A ``traveller train ppo`` checkpoint (``.pt``), an exported policy (``.onnx``) or an
    RLlib checkpoint of ``traveller train rllib`` on the core (a folder)."""
    from traveller_agents.views import VIEWS, views_of

    path = Path(path)
    if path.is_dir():
        return _load_rllib(path, name)
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


def _load_rllib(path: Path, name: str | None) -> Learned:
    """An RLlib checkpoint whose ``traveller.json`` records its observation size and
    slot-relative action labels (written on the core); ``ValueError`` otherwise."""
    from traveller_agents.rllib_policy import (
        NO_VIEWS,
        checkpoint_layout,
        module_logits,
        read_rllib_module,
    )

    module, meta, folder, _ = read_rllib_module(path)
    if not meta.get("relative_actions", True) or "action_labels" not in meta:
        raise ValueError(f"{path}: an RLlib checkpoint that records no slot-relative action "
                         "labels (trained on --env aec, or before they were kept): it plays "
                         "one battle at a time")

    def choose_rllib(obs: np.ndarray, mask: np.ndarray, side: str) -> np.ndarray:
        return np.where(mask, module_logits(module, obs, mask), -np.inf).argmax(axis=1)

    default = path.parent.name if path.name == "checkpoint" else path.name
    return Learned(name or default, int(meta["obs_dim"]), list(meta["action_labels"]),
                   checkpoint_layout(folder, meta), dict(NO_VIEWS), choose_rllib)


#: A player of ``play_battles``: a learned policy, or the name of a policy that runs inside the
#: compiled core (``traveller_env.core.vector.CORE_POLICIES``).
Player = Learned | str

#: Battles played at once by ``play_battles`` (one-row vectors stepped in lock step, the
#: learned policy's decisions batched across them).
LANES = 256


@dataclass(frozen=True)
class BattleSpec:
    """One battle of ``play_battles``: ``scenario`` with the policy on side index ``side``, in
    a one-row vector seeded ``seed`` (its battle seed is ``rules.rng.battle_seed(seed, 0,
    0)``: ``raw_env(scenario).reset(seed=battle_seed)`` replays the battle)."""

    scenario: str
    side: int
    seed: int


def player_name(player: Player) -> str:
    """A player's name (a learned policy's, or the in-core policy's)."""
    return player if isinstance(player, str) else player.name


@lru_cache(maxsize=8192)
def _scenario(name: str) -> Any:
    """``load_scenario(name)``, kept: a generated scenario is drawn once per process."""
    from traveller_env.scenario import load_scenario

    return load_scenario(name)


def play_scenarios(learned: Learned, scenarios: Sequence[str], opponent: str = "tactician",
                   seed: int = 0, backend: str = "core") -> list[dict[str, Any]]:
    """Two battles per scenario (the policy on each side) against the in-core ``opponent``;
    one record per battle (see the module docstring)."""
    from traveller_env.rules.rng import derive_seed

    specs = [BattleSpec(sc, side, derive_seed(seed, 2 * k + side))
             for k, sc in enumerate(scenarios) for side in (0, 1)]
    return play_battles(learned, opponent, specs, backend=backend)


def play_battles(policy: Player, opponent: Player, specs: Sequence[BattleSpec],
                 backend: str = "core", lanes: int = LANES) -> list[dict[str, Any]]:
    """Every battle of ``specs`` between ``policy`` and ``opponent``; one record per battle, in
    order: ``scenario``, ``side`` (the policy's side name), ``opponent``, ``battle_seed``,
    ``result`` (``win``/``draw``/``loss`` for the policy, or ``not_playable`` with a
    ``reason``), ``winner`` (the winning side's index, -1 for a draw).

    Two in-core policies play each battle wholly inside the core (``_core.play_policies``,
    each seat's policy seeded ``derive_seed(battle_seed, 1 + seat)`` as the vector seeds its
    in-core opponents). Otherwise each battle is a one-row ``traveller_env.vector`` with the
    in-core player as its opponent; up to ``lanes`` battles run in lock step and each learned
    policy decides for all of them in one batch. Two learned policies must share an
    observation and action layout (one vector feeds both)."""
    if isinstance(policy, str) and isinstance(opponent, str):
        return [_core_battle(policy, opponent, spec) for spec in specs]
    out: list[dict[str, Any] | None] = [None] * len(specs)
    todo = iter(range(len(specs)))
    active: list[_Lane] = []
    while True:
        while len(active) < lanes:
            i = next(todo, None)
            if i is None:
                break
            lane = _open_lane(policy, opponent, specs[i], backend)
            if isinstance(lane, dict):
                out[i] = lane
            else:
                lane.index = i
                active.append(lane)
        if not active:
            break
        actions = np.empty(len(active), dtype=np.int64)
        groups: dict[tuple[int, str], list[int]] = {}
        for k, lane in enumerate(active):
            groups.setdefault(lane.decider(), []).append(k)
        for (who, side_name), rows in groups.items():
            player = (policy, opponent)[who]
            obs = np.stack([active[k].obs[0] for k in rows])
            mask = np.stack([active[k].mask[0] for k in rows])
            actions[rows] = player.choose(obs, mask, side_name)
        still = []
        for lane, action in zip(active, actions, strict=True):
            record = lane.step(int(action))
            if record is None:
                still.append(lane)
            else:
                out[lane.index] = record
        active = still
    return [r for r in out if r is not None]


class _Lane:
    """One battle in a one-row vector: who decides now, and its record once over."""

    def __init__(self, venv: Any, spec: BattleSpec, learner_of_side: dict[int, int],
                 base: dict[str, Any]) -> None:
        self.venv, self.spec, self.base = venv, spec, base
        self.learner_of_side = learner_of_side  # side index -> 0 (policy) or 1 (opponent)
        self.index = -1
        self.obs, self.mask, info = venv.reset()
        self.battle_seed = int(info["battle_seed"][0])
        self.agent = int(info["agent"][0])

    def decider(self) -> tuple[int, str]:
        """(0 for the policy or 1 for the opponent, the deciding seat's side name)."""
        side = int(self.venv.agent_sides[self.agent])
        return self.learner_of_side[side], self.venv.sides[side]

    def step(self, action: int) -> dict[str, Any] | None:
        """Play ``action``; the battle's record once it is over, else ``None``."""
        self.obs, self.mask, _, term, trunc, info = self.venv.step(
            np.array([action], dtype=np.int64))
        self.agent = int(info["agent"][0])
        if not (term[0] or trunc[0]):
            return None
        winner = int(info["winner"][0])
        result = "draw" if winner < 0 else "win" if winner == self.spec.side else "loss"
        return {**self.base, "battle_seed": self.battle_seed, "result": result,
                "winner": winner}


def _open_lane(policy: Player, opponent: Player, spec: BattleSpec,
               backend: str) -> _Lane | dict[str, Any]:
    """A battle's lane, or its ``not_playable`` record."""
    from traveller_env import vector

    scenario = _scenario(spec.scenario)
    sides = [s.name for s in scenario.sides]
    base = {"scenario": spec.scenario, "side": sides[spec.side],
            "opponent": player_name(opponent)}
    seats = {spec.side: policy, 1 - spec.side: opponent}
    learned = [p for p in seats.values() if not isinstance(p, str)]
    if len(learned) == 2 and (learned[0].layout != learned[1].layout
                              or learned[0].views != learned[1].views):
        return {**base, "result": "not_playable", "reason": (
            f"{learned[0].name} and {learned[1].name} read different observations (layouts "
            f"{_layout_name(learned[0])} and {_layout_name(learned[1])}): one vector cannot "
            "feed both")}
    opponents = {sides[s]: p for s, p in seats.items() if isinstance(p, str)}
    try:
        venv = vector.make(scenario, num_envs=1, seed=spec.seed, backend=backend,
                           opponents=opponents, relative_actions=True,
                           layout=learned[0].layout, **learned[0].views)
    except LayoutError as exc:
        return {**base, "result": "not_playable", "reason": str(exc)}
    for one in learned:
        if venv.obs_dim != one.obs_dim or venv.action_labels != one.action_labels:
            role = "policy" if one is policy else "opponent"
            return {**base, "result": "not_playable", "reason": (
                f"{one.name}: observation size {venv.obs_dim} and {venv.n_actions} actions; "
                f"the {role} takes {one.obs_dim} and {len(one.action_labels)}")}
    lane = _Lane(venv, spec, {s: 0 if p is policy else 1 for s, p in seats.items()}, base)
    if int(venv.info["episode"][0]) != 0 or venv.battles_skipped:
        return {**base, "result": "not_playable",
                "reason": "the battle ended before a learned policy decided"}
    return lane


def _layout_name(learned: Learned) -> str:
    return learned.layout.name if learned.layout is not None else "the scenario's own"


def _core_battle(policy: str, opponent: str, spec: BattleSpec) -> dict[str, Any]:
    """A battle of two in-core policies, played inside the core."""
    from traveller_env import core
    from traveller_env.core.engine import CoreBattle, flatten_scenario
    from traveller_env.rules.rng import battle_seed, derive_seed

    scenario = _scenario(spec.scenario)
    flat = flatten_scenario(scenario)
    seed = battle_seed(spec.seed, 0, 0)
    cb = CoreBattle(scenario, seed, record_events=False, flat=flat)
    names = [policy if int(s) == spec.side else opponent for s in flat["ints"][:, 0]]
    c = core.require()
    c.play_policies(cb.handle, [c.Policy(n, derive_seed(seed, 1 + i))
                                for i, n in enumerate(names)])
    w = cb.handle.winner
    result = "draw" if w < 0 else "win" if w == spec.side else "loss"
    return {"scenario": spec.scenario, "side": flat["side_names"][spec.side],
            "opponent": opponent, "battle_seed": seed, "result": result, "winner": int(w),
            "rounds": cb.round}


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
