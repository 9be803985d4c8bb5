"""The AEC env and the SB3 bridge on the compiled core (``backend="core"``) against the Python
engine: the same seed and actions give the same observations, masks, rewards, dones, infos
(event log included), ``state()`` and ``view`` at every step (R1-R8 through both engines)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import fighter, scenario
from hypothesis import HealthCheck, given, settings
from pettingzoo.test import api_test

import traveller_env
from traveller_env.core import available
from traveller_env.rules.dice import ScriptedDice

pytestmark = pytest.mark.skipif(not available(), reason="the compiled core is not built here")


def lockstep(sc, seed: int, *, illegal_rate: float = 0.0, steps: int = 100_000,
             policies=None, **options) -> int:
    """Play ``sc`` on both backends with the same actions; compare everything at each step.
    Returns the number of steps."""
    py = traveller_env.raw_env(sc, backend="python", **options)
    core = traveller_env.raw_env(sc, backend="core", **options)
    py.reset(seed=seed)
    core.reset(seed=seed)
    rng = np.random.default_rng(seed)
    n = 0
    while py.agents and n < steps:
        agent = py.agent_selection
        assert core.agent_selection == agent, n
        assert core.agents == py.agents, n
        obs_p, ret_p, term_p, trunc_p, info_p = py.last()
        obs_c, ret_c, term_c, trunc_c, info_c = core.last()
        assert obs_c["observation"].tobytes() == obs_p["observation"].tobytes(), (n, agent)
        assert np.array_equal(obs_c["action_mask"], obs_p["action_mask"]), (n, agent)
        assert (ret_c, term_c, trunc_c) == (ret_p, term_p, trunc_p), (n, agent)
        assert json.dumps(info_c) == json.dumps(info_p), (n, agent)
        assert info_c == info_p and core.infos == py.infos, (n, agent)
        assert core.rewards == py.rewards and core.terminations == py.terminations, n
        assert core.state().tobytes() == py.state().tobytes(), n
        if options.get("layout") is not None:  # the layout's relative actions, from both masks
            rel_p, rel_c = py.relative_actions, core.relative_actions
            assert rel_c.labels == rel_p.labels
            assert np.array_equal(rel_c.mask(agent, obs_c["action_mask"]),
                                  rel_p.mask(agent, obs_p["action_mask"])), (n, agent)
        if term_p or trunc_p:
            action = None
        elif policies is not None:
            # Twin policies (same seeds), one per backend: each sees its own env's view.
            side = py.side_of(agent)
            action = policies[0][side].act(obs_p["observation"], obs_p["action_mask"], agent, py)
            again = policies[1][side].act(obs_c["observation"], obs_c["action_mask"], agent,
                                          core)
            assert again == action, (n, agent)  # the core's view is the same battle
        elif rng.random() < illegal_rate:
            action = int(rng.choice(np.flatnonzero(obs_p["action_mask"] == 0)))
        else:
            action = int(rng.choice(np.flatnonzero(obs_p["action_mask"])))
        py.step(action)
        core.step(action)
        n += 1
    assert json.dumps(core.battle.events) == json.dumps(py.battle.events)
    return n


def test_the_move_view_is_the_same_on_the_core_aec_env():
    assert lockstep("squad", 5, move_view=True) > 50
    env = traveller_env.raw_env("squad", backend="core")
    env.reset(seed=2)
    twin = traveller_env.raw_env("squad", backend="python", move_view=True)
    twin.reset(seed=2)
    agent = env.agent_selection  # the move view alone, asked of an env without it
    assert env.move_view_vector(agent).tobytes() == twin.observe(agent)["observation"][
        -len(env.move_view_vector(agent)):].tobytes()


@pytest.mark.parametrize(("view", "seed"), [("aim_view", 6), ("attack_view", 7)])
def test_the_aim_and_attack_views_are_the_same_on_the_core_aec_env(view, seed):
    assert lockstep("squad", seed, move_view=True, aim_view=True,
                    attack_view=view == "attack_view") > 50
    env = traveller_env.raw_env("squad", backend="core")
    env.reset(seed=2)
    twin = traveller_env.raw_env("squad", backend="python", **{view: True})
    twin.reset(seed=2)
    for agent in env.possible_agents:  # the view alone, asked of an env without it
        alone = getattr(env, f"{view}_vector")(agent)
        assert alone.tobytes() == twin.observe(agent)["observation"][-len(alone):].tobytes()


#: Scenarios within the "6v6" layout: built-in and generated (3-6 a side, maps 10-30 squares).
LAYOUT_SCENARIOS = ("squad", "ambush", "melee", "gen:skirmish@3", "gen:skirmish@11",
                    "gen:squad@2", "gen:ambush@5")


@pytest.mark.parametrize("name", LAYOUT_SCENARIOS)
@pytest.mark.parametrize("views", [False, True])
def test_a_fixed_layout_gives_the_same_aec_steps(name, views):
    """``layout="6v6"``: the core's observer pads the slots and the state, scales positions by
    the layout's map size and describes the layout's squares per direction, entry for entry as
    ``ObservationBuilder(layout=)``; the relative masks over the layout's labels agree."""
    from traveller_env.layout import LAYOUTS

    n = lockstep(name, seed=sum(map(ord, name)) % 97, layout="6v6", steps=150,
                 move_view=views, aim_view=views, attack_view=views)
    assert n > 10
    env = traveller_env.raw_env(name, backend="core", layout="6v6", move_view=views)
    env.reset(seed=1)
    assert len(env.relative_actions.labels) == len(LAYOUTS["6v6"].action_labels())


def test_a_scenario_outside_the_layout_is_refused_by_the_core_too():
    """Python callers check with ``Layout.check``; the core checks again at its boundary and
    names the limit (a malformed layout too)."""
    from traveller_env.core.engine import CoreBattle, flatten_scenario
    from traveller_env.layout import Layout

    flat = flatten_scenario("duel")
    battle = traveller_env.core.require().Battle
    with pytest.raises(ValueError, match=r"Battle.create: the scenario does not fit the "
                                         r"layout: its map is 240x5 squares; the layout's limit "
                                         r"is 32x32 \(map_size\)"):
        battle.create(seed=0, record_events=False, layout=(5, 6, 32, 4), **flat)
    with pytest.raises(ValueError, match=r"side 1 has 4 combatants; the layout's limit is 2 a "
                                         r"side \(1 ally and 6 enemy slots\); a combatant "
                                         r"moves 4 squares; the layout's limit is 3"):
        CoreBattle("squad", 0, layout=Layout("tiny", allies=1, enemies=6, map_size=32,
                                             max_move_squares=3))
    with pytest.raises(ValueError, match=r"Battle.create: layout: enemies must be an int in "
                                         r"\[1, 64\], got 0"):
        battle.create(seed=0, record_events=False, layout=(5, 0, 32, 4), **flat)
    with pytest.raises(ValueError, match=r"Battle.create: layout must be None or a tuple "
                                         r"\(allies, enemies, map_size, max_move_squares\)"):
        battle.create(seed=0, record_events=False, layout=[5, 6, 32, 4], **flat)
    with pytest.raises(TypeError, match=r"Battle.create: layout.map_size must be an int"):
        battle.create(seed=0, record_events=False, layout=(5, 6, 32.0, 4), **flat)


@pytest.mark.parametrize("name", traveller_env.builtin_scenarios())
def test_every_builtin_scenario_gives_the_same_aec_steps(name):
    assert lockstep(name, seed=3) > 10


def test_penalize_mode_and_damage_rewards_agree():
    from traveller_env.scenario import load_scenario

    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": 0.25, "damage_dealt": 0.1,
                     "damage_taken": -0.05, "per_round": -0.01, "shared": False}
    sc["options"] = {**sc.get("options", {}), "illegal_action": "penalize"}
    assert lockstep(sc, seed=5, illegal_rate=0.1) > 10


def test_scripted_npcs_see_the_same_battle_through_the_view():
    from traveller_env.policy import make_policy

    twins = [[make_policy("tactician", seed=1), make_policy("marksman", seed=2)]
             for _ in range(2)]
    assert lockstep("squad", seed=4, policies=twins, steps=400) > 10


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=__import__("hypothesis").strategies.integers(0, 2**32))
def test_fuzzed_small_battles_agree(seed):
    rng = np.random.default_rng(seed)
    blue = [fighter((int(rng.integers(0, 5)), 2 * i)) for i in range(int(rng.integers(1, 3)))]
    red = [fighter((int(rng.integers(12, 18)), 2 * i), weapon="blade" if i else "autorifle",
                   skills={"melee.blade": 1, "gun_combat.slug": 0})
           for i in range(int(rng.integers(1, 3)))]
    sc = scenario(blue, red, hastening=bool(seed % 2), reactions=bool(seed % 3))
    lockstep(sc, seed=seed, illegal_rate=0.0, check_invariants=True)


def test_the_pettingzoo_api_test_passes_on_the_core():
    api_test(traveller_env.env("duel", backend="core"), num_cycles=200)


def test_check_invariants_cross_checks_the_engines():
    e = traveller_env.raw_env("squad", backend="core", check_invariants=True)
    e.reset(seed=1)
    for _ in range(60):
        if not e.agents:
            break
        obs, *_ = e.last()
        e.step(int(np.flatnonzero(obs["action_mask"])[0]) if not e.terminations[
            e.agent_selection] else None)


def test_bad_backend_and_scripted_dice_are_refused_clearly():
    with pytest.raises(ValueError, match=r"backend must be one of 'python', 'core', got 'gpu'"):
        traveller_env.raw_env("duel", backend="gpu")
    e = traveller_env.raw_env("duel", backend="core")
    with pytest.raises(ValueError, match=r"scripted dice are not supported on backend='core'"):
        e.reset(options={"dice": ScriptedDice([[1, 1]])})


def test_the_sb3_bridge_on_the_core_matches_the_python_engine():
    from traveller_env.integrations.sb3 import TravellerSB3Env

    envs = [TravellerSB3Env("squad", learner="blue", backend=b) for b in ("python", "core")]
    outs = [e.reset(seed=9) for e in envs]
    rng = np.random.default_rng(9)
    episodes = 0
    for _ in range(600):
        o0, o1 = outs[0][0], outs[1][0]
        assert o0.tobytes() == o1.tobytes()
        mask = envs[0].action_masks()
        assert np.array_equal(mask, envs[1].action_masks())
        a = int(rng.choice(np.flatnonzero(mask)))
        r = [e.step(a) for e in envs]
        assert r[0][1:4] == r[1][1:4]
        outs = [(x[0], x[4]) for x in r]
        if r[0][2] or r[0][3]:
            episodes += 1
            outs = [e.reset(seed=9 + episodes) for e in envs]
    assert episodes >= 1


def test_observations_are_new_arrays_that_later_steps_leave_alone():
    """The core env's ``observe``/``last`` hand out fresh arrays (as the Python engine's): one
    kept by the caller is never rewritten by a later call."""
    e = traveller_env.env("squad", backend="core")
    e.reset(seed=2)
    rng = np.random.default_rng(2)
    kept = []
    while e.agents and len(kept) < 150:
        obs, _, term, trunc, info = e.last()
        again = e.observe(e.agent_selection)
        assert again["observation"] is not obs["observation"]
        assert again["action_mask"] is not obs["action_mask"]
        assert not np.shares_memory(again["observation"], obs["observation"])
        assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
        kept.append((obs, {k: v.copy() for k, v in obs.items()}, json.dumps(info)))
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    for obs, copy, _ in kept:
        assert all(np.array_equal(obs[k], copy[k]) for k in copy)


def test_actions_off_the_fast_path_give_the_python_engines_answers():
    """NumPy integers, illegal actions (raise mode), out-of-range and wrong-type actions take
    ``TravellerEnv.step``'s checks on the core too: the same errors, then the same battle."""
    envs = [traveller_env.raw_env("duel", backend=b) for b in ("python", "core")]
    for e in envs:
        e.reset(seed=11)
    rng = np.random.default_rng(11)
    for n in range(120):
        if not envs[0].agents:
            break
        obs = [e.last()[0] for e in envs]
        if envs[0].terminations[envs[0].agent_selection]:
            for e in envs:
                e.step(None)
            continue
        illegal = np.flatnonzero(obs[0]["action_mask"] == 0)
        for bad in (int(illegal[0]), -1, 10**6, 1.5, True):
            errors = []
            for e in envs:
                with pytest.raises(ValueError) as err:
                    e.step(bad)
                errors.append(str(err.value))
            assert errors[0] == errors[1], (n, bad)
        action = np.int64(rng.choice(np.flatnonzero(obs[0]["action_mask"]))) if n % 2 else \
            int(rng.choice(np.flatnonzero(obs[0]["action_mask"])))
        for e in envs:
            e.step(action)
        assert envs[1].infos == envs[0].infos and envs[1].rewards == envs[0].rewards, n
    assert json.dumps(envs[1].battle.events) == json.dumps(envs[0].battle.events)


def test_the_aec_binding_checks_what_python_passes():
    """``Battle.aec_step``/``aec_observe``/``aec_events`` (the core env's hot path) trust
    nothing: seats, actions and buffers are checked; a refused call changes nothing."""
    e = traveller_env.raw_env("duel", backend="core")
    e.reset(seed=3)
    pb = e.battle._b
    n_act, dim = pb.num_actions, pb.observation_size
    obs = np.full(dim, 7.0, dtype=np.float32)
    mask = np.full(n_act, 7, dtype=np.int8)
    for bad in (np.zeros(dim, np.float64), np.zeros(dim + 1, np.float32),
                np.zeros(2 * dim, np.float32)[::2], [0.0] * dim, None):
        with pytest.raises(ValueError, match=rf"Battle\.aec_observe: obs must be a C-contiguous "
                                             rf"float32 array of shape \({dim},\)"):
            pb.aec_observe(0, True, bad, mask)
    frozen = np.zeros(n_act, np.int8)
    frozen.flags.writeable = False
    for bad in (np.zeros(n_act, np.uint8), np.zeros(n_act - 1, np.int8), frozen):
        with pytest.raises(ValueError, match=rf"Battle\.aec_observe: mask must be a C-contiguous "
                                             rf"int8 array of shape \({n_act},\)"):
            pb.aec_observe(0, True, obs, bad)
    with pytest.raises(ValueError, match=r"seat must be an int in \[0, 1\]"):
        pb.aec_observe(2, True, obs, mask)
    assert (obs == 7.0).all() and (mask == 7).all()  # refused calls wrote nothing
    seat = e.possible_agents.index(e.agent_selection)
    pb.aec_observe(seat, True, obs, mask)
    assert np.array_equal(obs, e.observation_vector(e.agent_selection))
    assert np.array_equal(mask, e.action_mask())
    pb.aec_observe(1 - seat, True, obs, mask)  # not the decider: an all-zero mask
    assert not mask.any()
    events = list(e.battle.events)
    with pytest.raises(ValueError, match="action must be an int in"):
        pb.aec_step(n_act)
    illegal = int(np.flatnonzero(e.action_mask() == 0)[0])
    assert pb.aec_step(illegal) == -2 and pb.num_events == len(events)
    with pytest.raises(ValueError, match="log must be a list"):
        pb.aec_events(tuple(events))
    with pytest.raises(ValueError, match="more than the battle's"):
        pb.aec_events([*events, {}])
    legal = int(np.flatnonzero(e.action_mask())[0])
    assert pb.aec_step(legal) in (-1, 0, 1)
    pb.aec_events(events)
    assert events == pb.events(0)


def engines_in_lockstep(sc, seed: int, *, illegal_rate: float = 0.0) -> int:
    """The env's two engine adapters (``PythonEngine``, ``CoreEngine``) from the same seed,
    given the same actions: the same next decider, counters, events, observations, masks and
    state after every action, the same refusals (and forfeits), and the same rewards scored
    from each one's counters (``rewards.RewardLedger``). Returns the number of actions."""
    from traveller_env.core.aec_engine import CoreEngineFactory
    from traveller_env.encoding import ActionCatalogue
    from traveller_env.env import PythonEngineFactory
    from traveller_env.observations import ObservationBuilder
    from traveller_env.rewards import RewardScorer
    from traveller_env.rules.battle import IllegalActionError
    from traveller_env.scenario import build_battle, load_scenario

    sc = load_scenario(sc)
    template = build_battle(sc, seed=0)
    catalogue = ActionCatalogue(template)
    ids = [c.id for c in template.combatants]
    engines = [PythonEngineFactory(sc, catalogue, ObservationBuilder(template), ids)(seed, None),
               CoreEngineFactory(sc, catalogue, ObservationBuilder(template))(seed, None)]
    scorer = RewardScorer(sc.rewards, [c.side for c in template.combatants])
    ledgers = [scorer.ledger(e.counters) for e in engines]

    def snapshot(e) -> tuple:
        c = e.counters
        seen = [(o["observation"].tobytes(), o["action_mask"].tobytes())
                for o in (e.observe(i, True) for i in range(len(ids)))]
        return (c.round, c.phase, c.done, c.truncated, c.dropouts, c.decider,
                c.winner if c.done else None, [c.out(i) for i in range(len(ids))],
                [list(x) for x in c.summary()[:2]], c.summary()[2], len(e.events), seen,
                e.state().tobytes())

    rng = np.random.default_rng(seed)
    n = 0
    while not engines[0].counters.done:
        assert snapshot(engines[1]) == snapshot(engines[0]), n
        decider = engines[0].counters.decider
        mask = engines[0].mask(decider, True)
        assert np.array_equal(engines[1].mask(decider, True), mask), n
        assert not engines[0].mask(decider, False).any()
        assert not engines[1].mask(decider, False).any()
        first = len(engines[0].events)
        penalized = -1
        if rng.random() < illegal_rate:
            action = int(rng.choice(np.flatnonzero(mask == 0)))
            reasons = []
            for e in engines:
                with pytest.raises(IllegalActionError) as refused:
                    e.take(action)
                reasons.append((refused.value.label, refused.value.reason))
            assert reasons[0] == reasons[1] and len(engines[0].events) == first, n
            nexts = [e.forfeit(*reasons[0]) for e in engines]
            penalized = decider
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
            nexts = [e.take(action) for e in engines]
        assert nexts[0] == nexts[1] == engines[0].counters.decider, n
        assert json.dumps(engines[1].events[first:]) == json.dumps(engines[0].events[first:]), n
        scored = [ledger.score(e.counters, penalized) for ledger, e in zip(ledgers, engines,
                                                                           strict=True)]
        assert scored[0] == scored[1], n
        n += 1
    assert snapshot(engines[1]) == snapshot(engines[0])
    assert engines[1].python.events == engines[0].events  # the core's Python twin agrees
    return n


@pytest.mark.parametrize("name", traveller_env.builtin_scenarios())
def test_the_engine_adapters_agree_on_every_builtin_scenario(name):
    assert engines_in_lockstep(name, seed=7) > 10


def test_the_engine_adapters_agree_on_refusals_forfeits_and_every_reward_term():
    from traveller_env.scenario import load_scenario

    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": 0.25, "damage_dealt": 0.1,
                     "damage_taken": -0.05, "per_round": -0.01, "shared": True}
    assert engines_in_lockstep(sc, seed=8, illegal_rate=0.1) > 10


def test_the_env_and_the_cores_adapter_import_one_way():
    """``traveller_env.env`` imports the core's adapter (``core.aec_engine``, for a core env);
    no module of ``traveller_env.core`` imports the env."""
    import ast
    from pathlib import Path

    root = Path(traveller_env.__file__).parent.parent

    def imported(path: Path) -> set[str]:
        """The absolute names ``path`` imports (``from m import n``: ``m`` and ``m.n``)."""
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[:-1]  # (an __init__.py's package is its folder too)
        names = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names |= {module} | {f"{module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        return names

    graph = {".".join(p.relative_to(root).with_suffix("").parts): imported(p)
             for p in (root / "traveller_env").rglob("*.py")}
    assert "traveller_env.core.aec_engine" in graph["traveller_env.env"]
    for module, names in graph.items():
        if module.startswith("traveller_env.core."):
            assert "traveller_env.env" not in names, module
