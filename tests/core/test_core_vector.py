"""The batched core (``vector.make(..., backend="core")``, ``_core.VecBattles``) against the
Python backend directly: the same seed and actions give byte-identical outputs at every step,
with one thread or several; and the binding's own checks. (``tests/env/test_vector.py`` runs its
whole contract suite on both backends against the AEC env.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import fighter, scenario

from traveller_env import vector
from traveller_env.core import available
from traveller_env.scenario import load_scenario

pytestmark = pytest.mark.skipif(not available(), reason="the compiled core is not built here")


def lockstep(sc, steps: int, num_envs: int = 8, seed: int = 11,
             threads: int | tuple[int, ...] = 1, opponents=None,
             relative_actions: bool | None = None, illegal_rate: float = 0.0, **options) -> int:
    """Step the Python backend and the core (one vector per thread count in ``threads``) with
    the same random actions; every output equal at every step. Returns the battles ended."""
    kw = {"num_envs": num_envs, "seed": seed, "opponents": opponents,
          "relative_actions": relative_actions, **options}
    py = vector.make(sc, backend="python", **kw)
    cores = [vector.make(sc, backend="core", threads=k, **kw)
             for k in ((threads,) if isinstance(threads, int) else threads)]
    a, bs = py.reset(), [core.reset() for core in cores]
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):
        for b in bs:
            for x, y in zip(a, b, strict=True):
                if isinstance(x, dict):
                    for k in x:
                        assert np.array_equal(x[k], y[k]), (t, k)
                else:
                    assert x.tobytes() == y.tobytes(), t
        actions = vector.random_legal_actions(a[1], rng)
        if illegal_rate:
            for r in np.flatnonzero(rng.random(num_envs) < illegal_rate):
                illegal = np.flatnonzero(~a[1][r])
                if len(illegal):
                    actions[r] = illegal[0]
        a, bs = py.step(actions), [core.step(actions) for core in cores]
        ends += int(a[3].sum() + a[4].sum())
    assert all(py.battles_skipped == core.battles_skipped for core in cores)
    return ends


@pytest.mark.parametrize("threads", [1, 3])
def test_the_backends_play_the_same_battles(threads):
    assert lockstep("duel", 200, threads=threads) >= 1
    lockstep("squad", 150, threads=threads, relative_actions=True)
    lockstep("squad", 150, threads=threads, relative_actions=True, move_view=True)
    lockstep("squad", 100, threads=threads, relative_actions=True, aim_view=True)
    lockstep("squad", 60, threads=threads, relative_actions=True, move_view=True,
             attack_view=True)


def test_a_fixed_scenario_on_a_layout_agrees():
    """``layout="6v6"`` on one scenario: the layout's observation (padded slots, positions over
    its map size, its squares per direction), with the absolute or relative mask."""
    lockstep("squad", 120, threads=2, layout="6v6", move_view=True, attack_view=True,
             opponents={"red": "tactician"})
    lockstep("ambush", 80, layout="6v6", relative_actions=True, aim_view=True)


#: Scenario sets: a distribution's seed range, and a list of built-in and generated ones (2 to
#: 6 a side: every layout column in play).
SETS = [("gen:skirmish", (0, 50)),
        (["squad", "melee", "leadership_l0", "gen:squad@3", "range_short"], None)]


@pytest.mark.parametrize(("source", "seeds"), SETS)
@pytest.mark.parametrize("opponents", [None, {"red": "tactician"}])
def test_the_backends_play_the_same_scenario_set(source, seeds, opponents):
    """Over a scenario set (the battle seed picks each battle's scenario; seats are the
    layout's columns; the mask and actions the layout's slot-relative ones): obs, mask,
    rewards by column, ends, deciding column, episode, battle seed and winner agree, on one
    thread and two (``max_rounds=3``: short battles, so that rows move from scenario to
    scenario; the Python tactician's planning is slow, so half the steps with it)."""
    ends = lockstep(source, 150 if opponents else 300, num_envs=16, threads=(1, 2),
                    opponents=opponents, layout="6v6", seeds=seeds, max_rounds=3)
    assert ends >= 16


def test_a_scenario_set_with_views_and_reward_terms_agrees():
    """Views on, every reward term and penalized forfeits (relative actions never legal in a
    row's scenario among them)."""
    sets = []
    for name in ("gen:skirmish@4", "gen:skirmish@9", "squad"):
        sc = load_scenario(name).model_dump()
        sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": -0.25, "damage_dealt": 0.1,
                         "damage_taken": -0.07, "per_round": -0.01, "shared": name != "squad"}
        sc["options"] = {**sc.get("options", {}), "illegal_action": "penalize"}
        sets.append(sc)
    assert lockstep(sets, 150, num_envs=6, threads=2, layout="6v6", illegal_rate=0.1,
                    move_view=True, aim_view=True, attack_view=True, max_rounds=4) >= 2


def test_the_core_set_checks_what_python_passes():
    """``VecBattles.create_set`` checks the layout, the tables, the columns and the opponents
    at the boundary, naming the argument; its snapshot restores."""
    from traveller_env.core import require
    from traveller_env.core.engine import core_layout, flatten_scenario
    from traveller_env.layout import LAYOUTS

    v = vector.make(["squad", "melee"], num_envs=2, backend="core", layout="6v6")
    sset = v.scenario_set
    lay = core_layout(LAYOUTS["6v6"])
    args = {"scenarios": [flatten_scenario(e.scenario) for e in sset.envs],
            "rewards": [(1.0, -1.0, 0.0, 0.0, 0.0, 0.0, True)] * 2,
            "tables": [np.ascontiguousarray(t) for t in sset.tables],
            "columns": [list(c) for c in sset.columns], "opponents": [None] * 12,
            "num_envs": 2, "layout": lay}
    create = require().VecBattles.create_set
    assert create(**args).num_actions == len(sset.action_labels)
    with pytest.raises(ValueError, match="create_set: a scenario set needs a layout"):
        create(**{**args, "layout": None})
    with pytest.raises(ValueError, match=r"columns\[1\]\[2\] must be 6 \(side \* side_limit"):
        create(**{**args, "columns": [args["columns"][0], [0, 1, 7, 8]]})
    bad_table = args["tables"][1].copy()
    bad_table[0, 0] = 10_000
    with pytest.raises(ValueError, match=r"tables\[1\] values must lie in \[0, \d+\]"):
        create(**{**args, "tables": [args["tables"][0], bad_table]})
    with pytest.raises(ValueError, match=r"opponents must hold one entry per layout column "
                                         r"\(2 \* side_limit = 12\), got 8"):
        create(**{**args, "opponents": [None] * 8})
    with pytest.raises(ValueError, match="opponents cover every column"):
        create(**{**args, "opponents": ["rush"] * 12})
    with pytest.raises(ValueError, match=r"scenarios\[0\]: the scenario does not fit the "
                                         r"layout: side 0 has 4 combatants; the layout's limit "
                                         r"is 2"):
        create(**{**args, "layout": (1, 6, 40, 4), "opponents": [None] * 4,
                  **{k: args[k][:1] for k in ("scenarios", "rewards", "tables", "columns")}})
    with pytest.raises(ValueError, match=r"scenarios\[1\]: missing the key 'grid'"):
        create(**{**args, "scenarios": [args["scenarios"][0], {}]})
    v.reset()
    rows = v._backend._vec.snapshot()  # over a set too (tests/env/test_set_snapshot.py)
    v._backend._vec.restore(rows)
    assert v._backend._vec.snapshot() == rows


def test_in_core_tactician_and_leader_opponents_agree():
    """The planner (and the leader) as opponents: the python backend plays the Python
    ``TacticianPolicy``/``LeaderPolicy`` in each row, the core its own; every output agrees."""
    assert lockstep("squad", 120, opponents={"red": "tactician"}) >= 1
    lockstep("squad_commander", 80, num_envs=4, opponents={"blue": "tactician", "red_0": "leader"},
             relative_actions=True)
    lockstep("ambush", 60, num_envs=4, threads=2, opponents={"guards": "tactician"})


def test_in_core_cover_opponents_agree():
    """``cover`` as an opponent (a training pool's scripted rows): the python backend plays the
    Python ``CoverPolicy`` in each row, the core its own; every output agrees."""
    assert lockstep("squad", 150, opponents={"red": "cover"}, relative_actions=True,
                    move_view=True, attack_view=True) >= 1
    lockstep("squad", 100, num_envs=4, threads=2, opponents={"blue": "cover"})


def test_every_reward_term_and_penalties_agree():
    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": -0.25, "damage_dealt": 0.1,
                     "damage_taken": -0.07, "per_round": -0.01, "shared": False}
    sc["options"] = {**sc.get("options", {}), "illegal_action": "penalize"}
    assert lockstep(sc, 150, max_rounds=3, illegal_rate=0.1, threads=2) >= 2


def test_an_illegal_action_is_refused_at_the_binding_too():
    """The front end checks legality first; the binding checks again (never trusting Python)
    and names the row, the label and the reason."""
    v = vector.make("duel", num_envs=2, seed=0, backend="core")
    _, mask, _ = v.reset()
    bad = np.array([np.flatnonzero(mask[0])[0], np.flatnonzero(~mask[1])[0]], dtype=np.int64)
    vec = v._backend._vec
    with pytest.raises(ValueError, match=r"VecBattles.step: row 1: illegal action '.+' \(index "
                                         r"\d+\) for seat (blue|red)_0: .+; nothing was applied"):
        vec.step(bad, None, 1)
    with pytest.raises(ValueError, match=r"actions must be a C-contiguous int64 array of shape "
                                         r"\(2,\)"):
        vec.step(np.zeros(3, dtype=np.int64), None, 1)
    with pytest.raises(ValueError, match=r"row 0: action index 99 is out of range"):
        vec.step(np.array([99, bad[0]], dtype=np.int64), None, 1)


def test_buffers_are_checked_when_attached():
    v = vector.make("duel", num_envs=2, seed=0, backend="core")
    b = v._buf
    vec = v._backend._vec
    with pytest.raises(ValueError, match=r"VecBattles.attach: obs must be a C-contiguous "
                                         r"float32 array of shape \(2, \d+\)"):
        vec.attach(np.zeros((2, 3), np.float32), b.mask.view(np.uint8), b.rewards, b.terminated,
                   b.truncated, b.agent, b.episode, b.battle_seed, b.winner)
    with pytest.raises(ValueError, match="rewards must be a C-contiguous float32 array"):
        vec.attach(b.obs, b.mask.view(np.uint8), b.rewards.astype(np.float64), b.terminated,
                   b.truncated, b.agent, b.episode, b.battle_seed, b.winner)


def test_threads_is_checked():
    with pytest.raises(ValueError, match=r"threads must be an int in \[1, 256\], got 0"):
        vector.make("duel", backend="core", threads=0)
    with pytest.raises(ValueError, match="only backend='core' steps rows in several threads"):
        vector.make("duel", backend="python", threads=2)


def test_a_tiny_map_and_one_on_one_melee_agree():
    sc = scenario([fighter((0, 0), weapon="blade", skills={"melee.blade": 1})],
                  [fighter((1, 1), weapon="blade", skills={"melee.blade": 0})], width=3,
                  height=3, hastening=True, reactions=True)
    lockstep(sc, 120, num_envs=5)


STATUS = Path("/proc/self/status")


def _resident_mb() -> float:
    return int(STATUS.read_text().split("VmRSS:")[1].split()[0]) / 1024


@pytest.mark.skipif(not STATUS.exists(), reason="resident memory is read from Linux's /proc")
def test_a_set_vector_does_not_make_its_maps_tables_resident():
    """Each map's line-of-sight and cover tables are mapped zero pages that fill as battles
    ask: a core vector over 200 distinct maps adds a few MB, where tables written at build
    time added about 0.4 MB a map (80 MB here)."""
    kw = dict(num_envs=4, seed=0, layout="6v6", seeds=(0, 199), relative_actions=True)
    vector.make("gen:squad", backend="python", **kw)  # the set's Python side, built once
    before = _resident_mb()
    venv = vector.make("gen:squad", backend="core", **kw)
    grown = _resident_mb() - before
    assert grown < 40, f"the core vector over 200 maps made {grown:.0f} MB resident"
    venv.reset()
