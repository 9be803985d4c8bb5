"""The look-ahead search NPC of the compiled core as a ``Policy``: ``SearchPolicy``.

``make_policy("search-64")`` (``traveller_env.policy``: names ``search``, ``search-<budget>``,
``search-<budget>-<key>=<value>...``) builds one. It decides inside the core
(``_core.Policy(name)``, csrc/src/policies/search.cpp, docs/search.md): on an env over the core
it searches the env's own ``_core.Battle``; on the Python engine it searches a core battle of the
same scenario restored from the Python battle's snapshot (both engines read and write the same
bytes). Either way the search copies the battle with fresh dice from its own generator, so the
real battle's future rolls never reach it. The vector plays it as an in-core opponent
(``vector.make(..., opponents={"red": "search-64"})``) in its own threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import require
from .engine import CoreBattle

__all__ = ["SearchPolicy"]


class SearchPolicy:
    """``search[-<budget>][-<key>=<value>...]``: the core's look-ahead NPC (module docstring).

    ``ValueError`` naming the parameter for a bad name (the core checks it).
    """

    needs_observation = False

    def __init__(self, name: str = "search", seed: int | None = None) -> None:
        self.name = name
        self._core = require().Policy(name, seed)
        self._mirrors: dict[int, tuple[Any, CoreBattle]] = {}  # id(scenario) -> (it, battle)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the search's own generator (``None`` keeps its stream)."""
        self._core.reset(seed)

    def _handle(self, env: Any) -> tuple[Any, list[str]]:
        """The ``_core.Battle`` in ``env``'s current state and its combatant ids."""
        core = getattr(env.battle, "core", None)
        if isinstance(core, CoreBattle):  # an env over the core: its own battle
            return core.handle, core.ids
        scenario = env.scenario
        kept = self._mirrors.get(id(scenario))
        if kept is None or kept[0] is not scenario:
            kept = (scenario, CoreBattle(scenario, seed=0, record_events=False))
            self._mirrors = {id(scenario): kept}
        mirror = kept[1]
        mirror.restore(env.battle.snapshot())
        return mirror.handle, mirror.ids

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The search's action for ``agent``, the seat deciding now in ``env``."""
        env = getattr(env, "unwrapped", env)
        handle, ids = self._handle(env)
        return int(self._core.act(handle, ids.index(agent)))
