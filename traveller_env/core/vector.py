"""The compiled core behind ``traveller_env.vector`` (``backend="core"``): ``CoreBackend``.

``VectorEnv`` checks the arguments, owns the buffers and checks each action's range and
legality; this backend hands the scenario's flat data (``engine.flatten_scenario``), the
scenario's rewards, the in-core opponents and the template env's ``layout`` to
``_core.VecBattles``, attaches the buffers once, and calls ``reset``/``step``, which write into
them with the GIL released. Over a scenario set (``traveller_env.scenario_set``) it hands every
scenario's flat data and rewards, each one's slot-relative action table and seat-to-column map
and the set's layout to ``VecBattles.create_set``. The core mirrors ``vector_python.PythonBackend``
step for step (tests/core/test_core_vector.py plays both and requires identical outputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..policy import is_search_name
from . import require
from .engine import check_kinds, core_layout, flatten_scenario

__all__ = ["CORE_POLICIES", "CoreBackend"]

#: The opponent policies that run inside the core (``_core.Policy``; each makes its Python
#: version's choices, tests/core/test_core_policies.py).
CORE_POLICIES = ("random", "passive", "rush", "marksman", "leader", "tactician", "cover")


class CoreBackend:
    """``VectorBackend`` on the compiled core (see the module docstring)."""

    name = "core"
    #: With ``relative_table``, the core writes ``out.relative_mask`` itself (in the rows'
    #: threads).
    publishes_relative = False

    def __init__(self, template: Any, num_envs: int, policy_names: list[str | None],
                 out: Any, threads: int = 1, relative_table: np.ndarray | None = None,
                 scenario_set: Any = None) -> None:
        """``template``: the vector's AEC env (its scenario, views and ``layout``);
        ``policy_names``: the in-core opponent of each seat (a set: of each layout column), or
        ``None`` for a learner; ``scenario_set``: a ``scenario_set.ScenarioSet`` (then
        ``template`` is its first scenario's env and ``relative_table`` must be ``None``)."""
        check_kinds()
        seats = (template.possible_agents if scenario_set is None else scenario_set.agents)
        for agent, name in zip(seats, policy_names, strict=True):
            if name is not None and name not in CORE_POLICIES and not is_search_name(name):
                raise ValueError(
                    f"opponents: {name!r} (playing {agent}) does not run inside the compiled "
                    f"core; the policies that do: {', '.join(CORE_POLICIES)} and the search "
                    "NPC (search-<budget>...). Use "
                    "backend='python' to play other policies as opponents")
        views = {"move_view": template.move_view, "aim_view": template.aim_view,
                 "attack_view": template.attack_view}
        if scenario_set is None:
            self._vec = require().VecBattles.create(
                rewards=_rewards(template.scenario), opponents=list(policy_names),
                num_envs=num_envs, layout=core_layout(template.layout), **views,
                **flatten_scenario(template.scenario))
        else:
            if relative_table is not None:
                raise ValueError("CoreBackend: a scenario set's mask is relative already; "
                                 "relative_table must be None")
            envs = scenario_set.envs
            self._vec = require().VecBattles.create_set(
                scenarios=[flatten_scenario(e.scenario) for e in envs],
                rewards=[_rewards(e.scenario) for e in envs],
                tables=[np.ascontiguousarray(t, dtype=np.int64) for t in scenario_set.tables],
                columns=[[int(c) for c in cols] for cols in scenario_set.columns],
                opponents=list(policy_names), num_envs=num_envs,
                layout=core_layout(scenario_set.layout), **views)
        self.threads = threads
        self._vec.attach(out.obs, out.mask.view(np.uint8), out.rewards, out.terminated,
                         out.truncated, out.agent, out.episode, out.battle_seed, out.winner)
        if relative_table is not None and out.relative_mask is not None:
            self._vec.set_relative(np.ascontiguousarray(relative_table, dtype=np.int64),
                                   out.relative_mask.view(np.uint8))
            self.publishes_relative = True

    @property
    def num_scenarios(self) -> int:
        """The scenarios the rows play (1, or the set's size)."""
        return self._vec.num_scenarios

    def scenario_of(self, row: int) -> int:
        """The scenario (an index into the set; 0 for one scenario) of ``row``'s battle."""
        return self._vec.scenario(row)

    @property
    def battles_skipped(self) -> int:
        """Battles that ended before any learner seat decided."""
        return self._vec.battles_skipped

    def why_illegal(self, row: int, action: int) -> str | None:
        """The engine's reason why ``action`` (absolute; a set's relative) is illegal in
        ``row``, or ``None`` (also for a set's action the row's scenario lacks)."""
        return self._vec.why_illegal(row, action)

    def snapshot(self) -> dict[str, Any]:
        """The rows' state (``VectorEnv.snapshot``): the core's bytes (``VecBattles.snapshot``:
        each row's scenario, battle snapshot, counters, pending rewards, reward ledger and
        in-core opponents' generators and plans), over one scenario or a set."""
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


def _rewards(scenario: Any) -> tuple[float, float, float, float, float, float, bool]:
    """A scenario's ``rewards`` as ``VecBattles`` takes them."""
    r = scenario.rewards
    return (float(r.win), float(r.loss), float(r.draw), float(r.damage_dealt),
            float(r.damage_taken), float(r.per_round), bool(r.shared))
