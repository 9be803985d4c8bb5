"""Self-play opponent pools: the bookkeeping ``OpponentPool`` and ``CheckpointPool``.

The members of a pool (past checkpoints of a learning policy, or other policies it trains
against), each with its kind and its record against the learner, and the ways a battle draws
its opponent from them. It holds names and numbers only (NumPy, no torch): what a member *is*
(a loaded network, an SB3 model) stays with the trainer that plays it, under the member's
index. Both self-play pools of the project draw through it: ``CheckpointPool``
(a folder of SB3 checkpoints, below) and the batched PPO trainer's frozen pool
(``traveller_rl.ppo.pool``).

Drawing takes the caller's seeded ``numpy.random.Generator``, so a run's stream of draws is
the caller's to share with its other uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from traveller_agents.scripted import make_scripted
from traveller_agents.trained import TrainedPolicy, load_policy
from traveller_env.env import ScenarioSource

__all__ = ["SAMPLING", "CheckpointPool", "Member", "OpponentPool"]

#: How a battle draws its opponent among candidate members: ``uniform`` (each alike) or
#: ``pfsp`` (prioritised fictitious self-play: weight ``(1 - p)^2``, ``p`` the learner's win
#: rate so far against that member, Laplace-smoothed: the members it beats least play most).
SAMPLING = ("uniform", "pfsp")


@dataclass
class Member:
    """One opponent of the pool: its name (a checkpoint's path), its kind (the pool's own
    grouping, e.g. ``"own"`` past copies, ``"external"``, ``"watched"``) and the learner's
    record against it in training."""

    name: str
    kind: str
    games: int = 0
    wins: int = 0


class OpponentPool:
    """The members of a self-play pool, their statistics, and how a battle draws one.

    ``size`` keeps only the latest ``size`` members of a kind drawable (``latest``; 0: all);
    ``sampling`` is one of ``SAMPLING``. Members are indexed in the order they were added.
    """

    def __init__(self, sampling: str = "uniform", size: int = 0) -> None:
        if sampling not in SAMPLING:
            raise ValueError(f"sampling must be one of {', '.join(SAMPLING)}, got {sampling!r}")
        if size < 0:
            raise ValueError(f"size must be at least 0 (0: all), got {size}")
        self.sampling = sampling
        self.size = size
        self.members: list[Member] = []
        self._by_name: dict[str, int] = {}
        self._by_kind: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self.members)

    def add(self, name: str, kind: str = "own") -> int:
        """Add a member; return its index."""
        index = len(self.members)
        self.members.append(Member(name, kind))
        self._by_name.setdefault(name, index)
        self._by_kind.setdefault(kind, []).append(index)
        return index

    def index(self, name: str) -> int | None:
        """The index of the first member called ``name`` (``None`` when there is none)."""
        return self._by_name.get(name)

    def of_kind(self, kind: str) -> list[int]:
        """The indices of the members of ``kind``, oldest first."""
        return list(self._by_kind.get(kind, ()))

    def latest(self, kind: str) -> list[int]:
        """The drawable members of ``kind``: its latest ``size`` (all when ``size`` is 0)."""
        idx = self.of_kind(kind)
        return idx[-self.size:] if self.size else idx

    def weights(self, candidates: np.ndarray) -> np.ndarray | None:
        """The drawing probabilities of ``candidates`` (member indices), or ``None`` for
        uniform sampling."""
        if self.sampling != "pfsp":
            return None
        games = np.array([m.games for m in self.members])[candidates]
        wins = np.array([m.wins for m in self.members])[candidates]
        weight = (1.0 - (wins + 1.0) / (games + 2.0)) ** 2
        return weight / weight.sum()

    def draw(self, rng: np.random.Generator, candidates: Sequence[int] | np.ndarray,
             size: int) -> np.ndarray:
        """``size`` member indices drawn among ``candidates`` by the pool's sampling, with
        ``rng`` (one call: ``integers`` for uniform, ``choice`` for PFSP)."""
        candidates = np.asarray(candidates)
        p = self.weights(candidates)
        if p is None:
            return candidates[rng.integers(len(candidates), size=size)]
        return rng.choice(candidates, size=size, p=p)

    def draw_one(self, rng: np.random.Generator,
                 candidates: Sequence[int] | np.ndarray) -> int:
        """One member index drawn among ``candidates`` (one scalar draw from ``rng``)."""
        candidates = np.asarray(candidates)
        p = self.weights(candidates)
        if p is None:
            return int(candidates[int(rng.integers(len(candidates)))])
        return int(rng.choice(candidates, p=p))

    def record(self, member: int, won: bool) -> None:
        """One training battle against ``member`` ended; ``won``: the learner won it."""
        self.members[member].games += 1
        self.members[member].wins += int(won)

    def state(self) -> dict[str, Any]:
        """The pool's bookkeeping as plain data (a resume checkpoint's): the settings and every
        member's name, kind and record, in order."""
        return {"sampling": self.sampling, "size": self.size,
                "members": [[m.name, m.kind, m.games, m.wins] for m in self.members]}

    def load_state(self, state: dict[str, Any]) -> None:
        """Put the pool back as ``state`` (from ``state()``) recorded it."""
        self.__init__(state["sampling"], int(state["size"]))
        for name, kind, games, wins in state["members"]:
            index = self.add(name, kind)
            self.members[index].games, self.members[index].wins = int(games), int(wins)

    def summary(self) -> dict[str, list]:
        """The members' names and records (``evaluation.json``'s ``pool``)."""
        return {"opponents": [m.name for m in self.members],
                "training_battles": [m.games for m in self.members],
                "learner_wins": [m.wins for m in self.members]}


class CheckpointPool:
    """Self-play opponents: a pool of past checkpoints of the learning policy.

    At each ``reset`` it picks one ``*.zip`` in ``folder`` uniformly (with its own seeded
    generator, through ``OpponentPool``, whose members are the checkpoints seen so
    far) and plays it, sampling from its action distribution; while the folder is still empty
    it plays the scripted ``fallback`` policy. Loaded checkpoints are cached.
    """

    name = "pool"

    def __init__(self, folder: str | Path, scenario: ScenarioSource,
                 fallback: str = "marksman", seed: int | None = None) -> None:
        self.folder = Path(folder)
        self.scenario = scenario
        self.fallback = make_scripted(fallback, seed=seed)
        self.rng = np.random.default_rng(seed)
        self.pool = OpponentPool("uniform")
        self._loaded: dict[Path, TrainedPolicy] = {}
        self.current: Any = self.fallback

    def _member(self, path: Path) -> int:
        """The pool's index of the checkpoint at ``path`` (added when first seen)."""
        index = self.pool.index(str(path))
        return self.pool.add(str(path), "checkpoint") if index is None else index

    def reset(self, seed: int | None = None) -> None:
        """Pick this battle's opponent among the checkpoints in the folder now."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        checkpoints = sorted(self.folder.glob("*.zip"))
        if not checkpoints:
            self.current = self.fallback
        else:
            chosen = self.pool.draw_one(self.rng, [self._member(p) for p in checkpoints])
            path = Path(self.pool.members[chosen].name)
            if path not in self._loaded:
                self._loaded[path] = load_policy(path, self.scenario, deterministic=False)
            self.current = self._loaded[path]
        self.current.reset(None if seed is None else seed + 1)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The current opponent's action."""
        return self.current.act(observation, action_mask, agent, env)
