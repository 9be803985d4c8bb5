"""The core's look-ahead search NPC (``search-...``; csrc/src/policies/search.cpp): no peeking
at the real battle's dice, determinism (seeds, vector threads), its names and parameters, and
every way of playing it (``_core.Policy``, ``make_policy``, the vector's in-core opponents)."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_env import core

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())

SCENARIO = "gen:squad@10000"  # a test seed of the held-out distribution
TINY = "search-2-horizon=1"   # cheap enough for tests


def _core():
    from traveller_env.core import require

    return require()


def _battle(seed: int = 10000):
    from traveller_env.core.engine import CoreBattle
    from traveller_env.scenario import load_scenario

    return CoreBattle(load_scenario(SCENARIO), seed=seed, record_events=False)


def _advance(battle, steps: int) -> None:
    """Play ``steps`` decisions with in-core tacticians (seeded 0)."""
    core = _core()
    pols = [core.Policy("tactician", 0) for _ in battle.ids]
    for _ in range(steps):
        seat = battle.handle.decider
        battle.step(pols[seat].act(battle.handle, seat))


def _decisions(name: str, seed: int, dice: int) -> list[int]:
    """The search's choices at the first 40 decision points of side blue, the battle played
    by tacticians (its dice seeded ``dice``), the search asked at each blue decision without
    its choice being played."""
    core = _core()
    battle = _battle(dice)
    search = core.Policy(name, seed)
    pols = [core.Policy("tactician", 0) for _ in battle.ids]
    out = []
    while not battle.done and len(out) < 40:
        seat = battle.handle.decider
        if battle.ids[seat].startswith("blue"):
            out.append(search.act(battle.handle, seat))
        battle.step(pols[seat].act(battle.handle, seat))
    return out


def test_no_peeking_at_the_real_dice():
    """Two battles identical up to the decision but with different future dice get the same
    decision: the search draws its dice from its own generator."""
    core = _core()
    a = _battle()
    _advance(a, 12)
    b = _battle()
    b.restore(a.snapshot())
    b_twin = b.simulate(987654321)  # the same state, other future dice
    assert a.handle.dice_state() != b_twin.handle.dice_state()
    seat = a.handle.decider
    picks = set()
    for battle in (a, b_twin):
        picks.add(core.Policy("search-4", 5).act(battle.handle, seat))
    assert len(picks) == 1
    # and the real battle's dice are untouched by the search
    before = a.handle.dice_state()
    core.Policy("search-4", 5).act(a.handle, seat)
    assert a.handle.dice_state() == before


def test_same_seed_same_decisions_other_seed_may_differ():
    """The same seed gives the same decisions."""
    first = _decisions(TINY, 3, 10000)
    assert first == _decisions(TINY, 3, 10000)
    assert len(first) == 40


def test_tiny_budget_plays_only_legal_actions():
    """A one-simulation search plays whole battles with legal actions only (play_policies
    refuses an illegal one)."""
    core = _core()
    battle = _battle(10001)
    sides = [cid.split("_")[0] for cid in battle.ids]
    pols = [core.Policy("search-1-horizon=1" if s == "blue" else "marksman", k)
            for k, s in enumerate(sides)]
    decisions, _ = core.play_policies(battle.handle, pols)
    assert battle.done and sum(decisions) > 0


@pytest.mark.parametrize(("name", "words"), [
    ("search-0", ["budget", "'0'"]),
    ("search-4-depth=2", ["unknown parameter 'depth'", "budget, base, model"]),
    ("search-4-model=wizard", ["model", "'wizard'"]),
    ("search-4-z=-1", ["z"]),
    ("search-4-budget=8", ["budget is given twice"]),
    ("search-4-pool=rush+foo", ["pool", "'foo'"]),
])
def test_bad_parameters_name_the_parameter(name, words):
    """A bad name is refused by the core with the parameter named, from every entry point."""
    from traveller_agents.registry import parse_policy_list
    from traveller_env import vector
    from traveller_env.policy import make_policy

    for make in (lambda: _core().Policy(name, 0), lambda: make_policy(name),
                 lambda: parse_policy_list(f"tactician,{name}"),
                 lambda: vector.make("duel", num_envs=1, opponents={"red": name})):
        with pytest.raises(ValueError) as err:
            make()
        assert all(w in str(err.value) for w in words), str(err.value)


def test_the_core_checks_opponent_names_at_its_boundary():
    """VecBattles itself refuses a bad search name (not only the Python front)."""
    from traveller_env.core.engine import flatten_scenario
    from traveller_env.scenario import load_scenario

    rewards = (1.0, -1.0, 0.0, 0.0, 0.0, 0.0, True)
    with pytest.raises(ValueError, match="horizon"):
        _core().VecBattles.create(rewards=rewards, opponents=[None, "search-2-horizon=x"],
                                  num_envs=1, move_view=False, aim_view=False,
                                  attack_view=False, layout=None,
                                  **flatten_scenario(load_scenario("duel")))


def _vector_run(threads: int) -> list[np.ndarray]:
    from traveller_env import vector

    v = vector.make("squad", num_envs=4, opponents={"red": TINY}, threads=threads)
    obs, mask, _ = v.reset(seed=7)
    rng = np.random.default_rng(0)
    seen = [obs.copy()]
    for _ in range(12):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)
        obs, mask, rewards, _, _, _ = v.step(actions)
        seen += [obs.copy(), rewards.copy()]
    return seen


def test_vector_opponent_steps_and_threads_agree():
    """The search plays as an in-core opponent of the vector; 1 and 2 threads agree."""
    one, two = _vector_run(1), _vector_run(2)
    assert len(one) == 25
    for x, y in zip(one, two, strict=True):
        np.testing.assert_array_equal(x, y)


def test_make_policy_plays_it_on_both_engines():
    """``make_policy("search-...")`` plays on the Python engine (restored into the core) and
    on the core env alike: the same choice in the same state."""
    from traveller_env.env import raw_env
    from traveller_env.policy import make_policy

    picks = []
    for backend in ("python", "core"):
        env = raw_env("duel", backend=backend)
        env.reset(seed=3)
        agent = env.agent_selection
        policy = make_policy(TINY, seed=11)
        assert policy.name == TINY
        mask = env.action_mask(agent)
        a = policy.act(None, mask, agent, env)
        assert mask[a]
        picks.append(a)
    assert picks[0] == picks[1]


def test_strength_experiment_smoke(tmp_path):
    """experiments/search_strength.py plays, writes and resumes."""
    import json

    from experiments.search_strength import main

    out = tmp_path / "s.json"
    assert main(["--policies", TINY, "--battles", "2", "--out", str(out)]) == 0
    assert main(["--policies", TINY, "--battles", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    summary = data["policies"][TINY]["summary"]
    assert summary["battles"] == 3 and [g["index"] for g in data["policies"][TINY]["games"]] == [
        0, 1, 2]
    assert 0.0 <= summary["ci95"][0] <= summary["win_rate"] <= summary["ci95"][1] <= 1.0
