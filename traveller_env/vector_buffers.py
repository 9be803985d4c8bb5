"""The arrays a batched vector's backend writes: ``VectorBuffers``, allocated once by
``vector.VectorEnv`` and filled in place by its backends (``vector_python.PythonBackend``,
``core.vector.CoreBackend``) on every ``reset`` and ``step``.

A module of its own, not ``vector``'s: the backends name this type in their signatures, and
``vector`` imports the backends, so the type lives below both (``vector`` -> ``vector_python``
-> ``vector_buffers``, one way).
"""

from __future__ import annotations

import numpy as np

__all__ = ["VectorBuffers"]


class VectorBuffers:
    """The arrays a backend writes (allocated once by ``VectorEnv``)."""

    def __init__(self, n: int, obs_dim: int, n_actions: int, num_agents: int) -> None:
        self.obs = np.zeros((n, obs_dim), dtype=np.float32)
        self.mask = np.zeros((n, n_actions), dtype=np.int8)  # private: legality is read here
        self.rewards = np.zeros((n, num_agents), dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)
        self.agent = np.zeros(n, dtype=np.int64)
        self.episode = np.zeros(n, dtype=np.int64)
        self.battle_seed = np.zeros(n, dtype=np.uint64)
        self.winner = np.full(n, -1, dtype=np.int8)
        #: ``relative_actions`` only, on a backend that publishes it (``publishes_relative``):
        #: the deciding seat's mask over the relative actions, int8 ``[n, n_relative]``.
        self.relative_mask: np.ndarray | None = None
