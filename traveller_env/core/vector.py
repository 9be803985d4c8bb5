"""The compiled core behind ``traveller_env.vector`` (``backend="core"``): ``CoreBackend``.

``VectorEnv`` checks the arguments, owns the buffers and checks each action's range and
legality; this backend hands the scenario's flat data (``engine.flatten_scenario``), the
scenario's rewards and the in-core opponents to ``_core.VecBattles``, attaches the buffers once,
and calls ``reset``/``step``, which write into them with the GIL released. The core mirrors
``vector._PythonBackend`` step for step (tests/test_core_vector.py plays both and requires
identical outputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import require
from .engine import check_kinds, flatten_scenario

__all__ = ["CORE_POLICIES", "CoreBackend"]

#: The opponent policies that run inside the core (``_core.Policy``; each makes its Python
#: version's choices, tests/test_core_policies.py).
CORE_POLICIES = ("random", "passive", "rush", "marksman", "leader", "tactician", "cover")


class CoreBackend:
    """``VectorBackend`` on the compiled core (see the module docstring)."""

    name = "core"
    #: With ``relative_table``, the core writes ``out.relative_mask`` itself (in the rows'
    #: threads).
    publishes_relative = False

    def __init__(self, template: Any, num_envs: int, policy_names: list[str | None],
                 out: Any, threads: int = 1, relative_table: np.ndarray | None = None) -> None:
        check_kinds()
        for agent, name in zip(template.possible_agents, policy_names, strict=True):
            if name is not None and name not in CORE_POLICIES:
                raise ValueError(
                    f"opponents: {name!r} (playing {agent}) does not run inside the compiled "
                    f"core; the policies that do: {', '.join(CORE_POLICIES)}. Use "
                    "backend='python' to play other policies as opponents")
        sc = template.scenario
        r = sc.rewards
        flat = flatten_scenario(sc)
        self._vec = require().VecBattles.create(
            rewards=(float(r.win), float(r.loss), float(r.draw), float(r.damage_dealt),
                     float(r.damage_taken), float(r.per_round), bool(r.shared)),
            opponents=list(policy_names), num_envs=num_envs, move_view=template.move_view,
            aim_view=template.aim_view, attack_view=template.attack_view, **flat)
        self.threads = threads
        self._vec.attach(out.obs, out.mask.view(np.uint8), out.rewards, out.terminated,
                         out.truncated, out.agent, out.episode, out.battle_seed, out.winner)
        if relative_table is not None and out.relative_mask is not None:
            self._vec.set_relative(np.ascontiguousarray(relative_table, dtype=np.int64),
                                   out.relative_mask.view(np.uint8))
            self.publishes_relative = True

    @property
    def battles_skipped(self) -> int:
        """Battles that ended before any learner seat decided."""
        return self._vec.battles_skipped

    def why_illegal(self, row: int, action: int) -> str | None:
        """The engine's reason why absolute ``action`` is illegal in ``row`` (or ``None``)."""
        return self._vec.why_illegal(row, action)

    def snapshot(self) -> dict[str, Any]:
        """The rows' state (``VectorEnv.snapshot``): the core's bytes (``VecBattles.snapshot``:
        each row's battle snapshot, counters, pending rewards, reward ledger and in-core
        opponents' generators and plans)."""
        return {"core_rows": self._vec.snapshot()}

    def restore(self, state: dict[str, Any]) -> None:
        """Put ``snapshot()``'s state back (``ValueError`` naming the fault; nothing changes
        then)."""
        if "core_rows" not in state:
            raise ValueError("vector snapshot: not a core backend's rows")
        self._vec.restore(state["core_rows"])

    def reset(self, seed: int, restart: bool, out: Any) -> None:
        """Start every row's next battle (see ``VectorBackend.reset``)."""
        self._vec.reset(seed, restart)

    def step(self, actions: Any, forfeits: Mapping[int, tuple[str, str]], out: Any) -> None:
        """Apply each row's action (see ``VectorBackend.step``)."""
        if not isinstance(actions, np.ndarray) or actions.dtype != np.int64:
            actions = np.asarray(actions, dtype=np.int64)
        self._vec.step(actions, dict(forfeits) if forfeits else None, self.threads)
