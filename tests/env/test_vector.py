"""The batched API (``traveller_env.vector``) against the AEC env, step by step.

``AECVector`` below plays the vector's contract (automatic reset, battle seeds, opponents,
dead steps, rewards per seat per step) with one ``raw_env`` per row, through the public
PettingZoo API only; the tests require the vector to give the same observations, masks,
rewards, end flags and seats at every step, byte for byte.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fighter, scenario

from traveller_agents.scripted import POLICIES
from traveller_env import policy as policy_module
from traveller_env import raw_env, vector
from traveller_env.policy import make_policy, policy_action, policy_names, register_policy
from traveller_env.rules.rng import battle_seed, derive_seed
from traveller_env.scenario import load_scenario


@pytest.fixture(autouse=True)
def scripted_policies(monkeypatch):
    """The scripted NPCs by name. Installed, the package declares them as entry points; a
    venv whose metadata predates that declaration has none, so register them here (on a
    copy of the registry, restored afterwards). ``test_policy_registry.py`` tests the
    entry-point path itself."""
    monkeypatch.setattr(policy_module, "_REGISTERED", dict(policy_module._REGISTERED))
    known = set(policy_names())
    for name, cls in POLICIES.items():
        if name not in known:
            register_policy(name, cls)


@pytest.fixture(autouse=True, params=["python", "core"])
def backend(request, monkeypatch):
    """Every test runs on both backends: ``vector.make`` without ``backend=`` uses this one.
    The core backend's tests need the compiled core (``make build``)."""
    name = request.param
    if name == "core" and vector.BACKENDS["core"] != "available":
        pytest.skip("the compiled core is not built here (make build)")
    make = vector.make

    def make_on_backend(*args, **kwargs):
        kwargs.setdefault("backend", name)
        return make(*args, **kwargs)

    monkeypatch.setattr(vector, "make", make_on_backend)
    return name


def python_only(backend: str, why: str) -> None:
    if backend != "python":
        pytest.skip(why)


# ============================================================================ the reference
class AECVector:
    """The vector's contract played with one ``raw_env`` per row (public AEC API only)."""

    def __init__(self, sc, num_envs: int, seed: int, opponents: dict[str, str] | None = None,
                 **options) -> None:
        self.envs = [raw_env(sc, **options) for _ in range(num_envs)]
        e = self.envs[0]
        self.agents = list(e.possible_agents)
        sides = [s.name for s in e.scenario.sides]
        self.seat_policy: dict[str, str] = {}
        for a in self.agents:
            side = sides[e.side_of(a)]
            name = (opponents or {}).get(a, (opponents or {}).get(side))
            if name is not None:
                self.seat_policy[a] = name
        self.policies = [{a: make_policy(n) for a, n in self.seat_policy.items()}
                         for _ in self.envs]
        self.seed = seed
        self.episode = [0] * num_envs
        self.acc = [dict.fromkeys(self.agents, 0.0) for _ in self.envs]
        self.skipped = 0

    def _sum_rewards(self, r: int) -> None:
        for a, x in self.envs[r].rewards.items():
            self.acc[r][a] += x

    def _advance(self, r: int) -> bool:
        """Play opponents and dead steps; True when a learner decides, False at the end."""
        e = self.envs[r]
        while e.agents:
            sel = e.agent_selection
            if e.terminations[sel] or e.truncations[sel]:
                e.step(None)
            elif sel in self.seat_policy:
                e.step(policy_action(self.policies[r][sel], e, sel))
            else:
                return True
            self._sum_rewards(r)
        return False

    def _begin(self, r: int) -> None:
        while True:
            seed = battle_seed(self.seed, r, self.episode[r])
            self.episode[r] += 1
            self.envs[r].reset(seed=seed)
            for a, p in self.policies[r].items():
                p.reset(derive_seed(seed, 1 + self.agents.index(a)))
            self.acc[r] = dict.fromkeys(self.agents, 0.0)
            if self._advance(r):
                return
            self.skipped += 1

    def _decision(self, r: int) -> tuple[np.ndarray, np.ndarray, int, int, int]:
        e = self.envs[r]
        sel = e.agent_selection
        o = e.observe(sel)
        return (o["observation"], o["action_mask"].astype(bool), self.agents.index(sel),
                self.episode[r] - 1, e.battle_seed)

    def reset(self):
        for r in range(len(self.envs)):
            self._begin(r)
        return [self._decision(r) for r in range(len(self.envs))]

    def step(self, actions):
        out = []
        for r, a in enumerate(actions):
            e = self.envs[r]
            e.step(int(a))
            self._sum_rewards(r)
            alive = self._advance(r)
            rewards = np.array([self.acc[r][a] for a in self.agents], dtype=np.float32)
            term = trunc = False
            winner = -1
            if alive:
                self.acc[r] = dict.fromkeys(self.agents, 0.0)
            else:
                b = e.battle
                term, trunc = not b.truncated, b.truncated
                if b.winner is not None:
                    winner = b.side_names.index(b.winner)
                self._begin(r)
            out.append((rewards, term, trunc, winner, *self._decision(r)))
        return out


def assert_same_decisions(obs, mask, info, ref) -> None:
    for r, (o, m, agent, episode, seed) in enumerate(ref):
        assert info["agent"][r] == agent, f"row {r}: seat"
        assert info["episode"][r] == episode, f"row {r}: episode"
        assert int(info["battle_seed"][r]) == seed, f"row {r}: battle seed"
        assert obs[r].tobytes() == o.tobytes(), f"row {r}: observation"
        assert np.array_equal(mask[r], m), f"row {r}: mask"


def run_against_reference(sc, steps: int, num_envs: int = 4, seed: int = 7, opponents=None,
                          **options) -> dict:
    """Step the vector and the reference with the same random legal actions; compare every
    output at every step. Returns counts for the callers' own checks."""
    v = vector.make(sc, num_envs=num_envs, seed=seed, opponents=opponents, **options)
    ref = AECVector(sc, num_envs, seed, opponents, **options)
    obs, mask, info = v.reset()
    assert_same_decisions(obs, mask, info, ref.reset())
    rng = np.random.default_rng(seed)
    ends = nonzero = 0
    seats = set()
    for _ in range(steps):
        actions = vector.random_legal_actions(mask, rng)
        obs, mask, rewards, term, trunc, info = v.step(actions)
        expected = ref.step(actions)
        for r, (rew, t, tr, winner, *_) in enumerate(expected):
            assert rewards[r].tobytes() == rew.tobytes(), f"row {r}: rewards {rewards[r]} {rew}"
            assert (term[r], trunc[r], info["winner"][r]) == (t, tr, winner), f"row {r}"
        assert_same_decisions(obs, mask, info, [x[4:] for x in expected])
        ends += int(term.sum() + trunc.sum())
        nonzero += int((rewards != 0).any(axis=1).sum())
        seats.update(info["agent"].tolist())
    assert v.battles_skipped == ref.skipped
    return {"ends": ends, "rewarded_rows": nonzero, "seats": seats, "vector": v}


# ============================================================================ shapes and dtypes
def test_shapes_dtypes_and_metadata():
    v = vector.make("squad", num_envs=3, seed=0)
    e = raw_env("squad")
    assert v.action_labels == e.action_labels
    assert v.observation_labels == e.observation_labels
    assert v.possible_agents == e.possible_agents
    assert (v.num_envs, v.num_agents) == (3, len(e.possible_agents))
    assert (v.n_actions, v.obs_dim) == (len(e.action_labels), len(e.observation_labels))
    assert v.learners == v.possible_agents and v.opponents == {}
    obs, mask, info = v.reset()
    assert obs.shape == (3, v.obs_dim) and obs.dtype == np.float32
    assert mask.shape == (3, v.n_actions) and mask.dtype == bool
    assert info["agent"].dtype == np.int64 and info["agent"].shape == (3,)
    assert info["battle_seed"].dtype == np.uint64 and info["winner"].dtype == np.int8
    out = v.step(vector.random_legal_actions(mask, np.random.default_rng(0)))
    obs2, mask2, rewards, term, trunc, info2 = out
    assert rewards.shape == (3, v.num_agents) and rewards.dtype == np.float32
    assert term.shape == trunc.shape == (3,) and term.dtype == trunc.dtype == bool
    # The same buffers every call (documented).
    assert obs2 is obs and mask2 is mask and info2 is info
    assert mask.any(axis=1).all()


# ============================================================================ against the AEC env
@pytest.mark.parametrize(("sc", "opponents", "options", "min_ends"), [
    ("duel", None, {}, 1),
    ("squad", None, {}, 0),  # random squad battles outlast 250 steps
    ("squad", None, {"max_rounds": 4}, 1),
    ("ambush", None, {"max_rounds": 6}, 1),
    ("duel", {"red": "random"}, {}, 1),
    ("squad", {"red": "rush"}, {}, 1),
    ("squad", {"blue": "marksman", "blue_0": "passive"}, {"max_rounds": 5}, 1),
    ("ambush", {"raiders": "marksman"}, {}, 1),
    ("ambush", {"guards": "rush"}, {}, 1),
])
def test_same_as_the_aec_env_at_every_step(sc, opponents, options, min_ends):
    seen = run_against_reference(sc, steps=250, opponents=opponents, **options)
    assert seen["ends"] >= min_ends  # automatic resets were exercised


def test_every_reward_term_matches_the_aec_env():
    """Damage dealt / taken, per-round, win/loss/draw, per seat (not shared) and shared, with
    short battles so that truncations (draws) occur."""
    for shared in (False, True):
        sc = load_scenario("squad").model_dump()
        sc["rewards"] = {"win": 2.0, "loss": -1.5, "draw": -0.25, "damage_dealt": 0.1,
                         "damage_taken": -0.07, "per_round": -0.01, "shared": shared}
        seen = run_against_reference(sc, steps=150, max_rounds=3,
                                     opponents={"red_1": "rush"})
        assert seen["ends"] >= 2
        assert seen["rewarded_rows"] >= 10


def test_penalize_mode_matches_the_aec_env():
    """With ``illegal_action: penalize`` illegal actions are forfeited with -1, as in the AEC
    env, instead of raising."""
    sc, n = "duel", 3
    v = vector.make(sc, num_envs=n, seed=3, illegal_action="penalize")
    ref = AECVector(sc, n, 3, illegal_action="penalize")
    obs, mask, info = v.reset()
    assert_same_decisions(obs, mask, info, ref.reset())
    rng = np.random.default_rng(0)
    penalties = 0
    for step in range(60):
        actions = vector.random_legal_actions(mask, rng)
        if step % 3 == 0:  # row 1 plays an illegal action
            actions[1] = int(np.flatnonzero(~mask[1])[0])
        obs, mask, rewards, term, trunc, info = v.step(actions)
        expected = ref.step(actions)
        for r, (rew, t, tr, _w, *_) in enumerate(expected):
            assert rewards[r].tobytes() == rew.tobytes()
            assert (term[r], trunc[r]) == (t, tr)
        assert_same_decisions(obs, mask, info, [x[4:] for x in expected])
        penalties += int((rewards[1] <= -1).any())
    assert penalties >= 5


def test_relative_actions_match_the_aec_env():
    sc = "squad"
    v = vector.make(sc, num_envs=3, seed=5, relative_actions=True)
    plain = vector.make(sc, num_envs=3, seed=5)
    rel = raw_env(sc).relative_actions
    assert v.action_labels == rel.labels and v.n_actions == rel.n
    obs, mask, info = v.reset()
    pobs, pmask, pinfo = plain.reset()
    rng = np.random.default_rng(1)
    for _ in range(120):
        assert np.array_equal(obs, pobs) and np.array_equal(info["agent"], pinfo["agent"])
        for r in range(3):
            agent = v.possible_agents[info["agent"][r]]
            assert np.array_equal(mask[r], rel.mask(agent, pmask[r].astype(np.int8)) == 1)
        actions = vector.random_legal_actions(mask, rng)
        absolute = [rel.to_absolute(v.possible_agents[info["agent"][r]], int(a))
                    for r, a in enumerate(actions)]
        obs, mask, rewards, term, _trunc, info = v.step(actions)
        pobs, pmask, prewards, pterm, _ptrunc, pinfo = plain.step(np.array(absolute))
        assert np.array_equal(rewards, prewards) and np.array_equal(term, pterm)


def test_rewards_over_an_episode_equal_the_aec_returns():
    """Each completed battle, replayed in a fresh ``raw_env`` with the same seed and actions
    through PettingZoo's standard loop (``agent_iter`` / ``last``), gives each agent the
    return the vector's rewards add up to for that battle."""
    sc = load_scenario("squad").model_dump()
    sc["rewards"] = {"damage_dealt": 0.1, "damage_taken": -0.05, "per_round": -0.02}
    sc["max_rounds"] = 5
    n = 3
    v = vector.make(sc, num_envs=n, seed=11)
    _, mask, info = v.reset()
    rng = np.random.default_rng(2)
    played = [[] for _ in range(n)]
    totals = np.zeros((n, v.num_agents))
    seeds = [int(s) for s in info["battle_seed"]]
    checked = 0
    for _ in range(400):
        actions = vector.random_legal_actions(mask, rng)
        for r in range(n):
            played[r].append(int(actions[r]))
        _obs, mask, rewards, term, trunc, info = v.step(actions)
        totals += rewards
        for r in np.flatnonzero(term | trunc):
            e = raw_env(sc)
            e.reset(seed=seeds[r])
            returns = dict.fromkeys(e.possible_agents, 0.0)
            moves = iter(played[r])
            for agent in e.agent_iter():
                _, reward, done, cut, _ = e.last()
                returns[agent] += reward
                e.step(None if done or cut else next(moves))
            assert next(moves, None) is None
            np.testing.assert_allclose(totals[r], [returns[a] for a in e.possible_agents],
                                       rtol=1e-5, atol=1e-5)
            assert any(returns.values())
            checked += 1
            played[r], totals[r], seeds[r] = [], 0.0, int(info["battle_seed"][r])
    assert checked >= 3


# ============================================================================ reset and seeds
def _trace(v, steps: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    obs, mask, info = v.reset()
    chunks = [obs.tobytes(), mask.tobytes(), *(x.tobytes() for x in info.values())]
    for _ in range(steps):
        out = v.step(vector.random_legal_actions(mask, rng))
        obs, mask = out[0], out[1]
        chunks += [x.tobytes() for x in out[:5]] + [x.tobytes() for x in out[5].values()]
    return b"".join(chunks)


def test_same_seed_same_actions_byte_identical():
    a = _trace(vector.make("squad", num_envs=4, seed=123), 200)
    b = _trace(vector.make("squad", num_envs=4, seed=123), 200)
    c = _trace(vector.make("squad", num_envs=4, seed=124), 200)
    assert a == b
    assert a != c


def test_rows_get_different_battles_and_do_not_depend_on_num_envs():
    v = vector.make("squad", num_envs=6, seed=9)
    obs, mask, info = v.reset()
    seeds = info["battle_seed"].tolist()
    assert seeds == [battle_seed(9, r, 0) for r in range(6)]
    assert len({o.tobytes() for o in obs}) > 1  # different Initiative, different first seats
    small = vector.make("squad", num_envs=2, seed=9)
    sobs, _smask, _sinfo = small.reset()
    assert obs[:2].tobytes() == sobs.tobytes()
    # Battle seeds of the next battles follow the episode counter.
    v2 = vector.make("duel", num_envs=2, seed=9)
    obs, mask, info = v2.reset()
    rng = np.random.default_rng(0)
    while True:
        obs, mask, _, term, trunc, info = v2.step(vector.random_legal_actions(mask, rng))
        if (term | trunc).any():
            r = int(np.flatnonzero(term | trunc)[0])
            assert info["episode"][r] == 1
            assert int(info["battle_seed"][r]) == battle_seed(9, r, 1)
            break


def test_reset_continues_and_reset_with_seed_restarts():
    v = vector.make("duel", num_envs=2, seed=4)
    _, _, info = v.reset()
    assert info["episode"].tolist() == [0, 0]
    _, _, info = v.reset()
    assert info["episode"].tolist() == [1, 1]
    first = v.reset(seed=4)[0].copy()
    assert v.info["episode"].tolist() == [0, 0]
    assert first.tobytes() == vector.make("duel", num_envs=2, seed=4).reset()[0].tobytes()


def test_step_before_reset():
    v = vector.make("duel", num_envs=2, seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        v.step(np.zeros(2, dtype=np.int64))


# ============================================================================ opponents
def test_opponents_for_a_side_leave_only_learner_seats_deciding():
    seen = run_against_reference("squad", steps=100, opponents={"red": "random"})
    v = seen["vector"]
    assert v.learners == ["blue_0", "blue_1", "blue_2", "blue_3"]
    assert set(v.opponents) == {"red_0", "red_1", "red_2", "red_3"}
    assert {v.possible_agents[s] for s in seen["seats"]} <= set(v.learners)


def test_agent_id_overrides_its_side():
    v = vector.make("squad", num_envs=1, opponents={"red": "rush", "red_2": "passive"})
    assert v.opponents == {"red_0": "rush", "red_1": "rush", "red_2": "passive",
                           "red_3": "rush"}


def test_opponent_errors():
    with pytest.raises(ValueError, match=r"unknown policy 'nobody'; known: .*passive.*random"):
        vector.make("duel", opponents={"red": "nobody"})
    with pytest.raises(ValueError, match=r"'green' is neither a side \(blue, red\) nor an agent"):
        vector.make("duel", opponents={"green": "rush"})
    with pytest.raises(ValueError, match="no learner would ever decide"):
        vector.make("duel", opponents={"red": "rush", "blue": "random"})
    with pytest.raises(TypeError, match="policy name must be a string"):
        vector.make("duel", opponents={"red": 3})


def test_a_battle_without_learner_decisions_is_skipped():
    """Red shoots first and one hit takes blue out: many battles end before blue decides."""
    blue = fighter((2, 5), chars={"STR": 1, "DEX": 1, "END": 1})
    red = fighter((4, 5), chars={"DEX": 15})
    sc = scenario([blue], [red], max_rounds=5)
    seen = run_against_reference(sc, steps=20, num_envs=2, opponents={"red": "marksman"})
    assert seen["vector"].battles_skipped >= 1, seen["vector"].battles_skipped


def test_an_opponent_policy_that_breaks_the_rules_is_named(backend):
    python_only(backend, "a policy registered in Python runs only on the Python backend")
    class Cheat:
        name = "cheat"
        needs_observation = False

        def __init__(self, seed=None):
            pass

        def reset(self, seed=None):
            pass

        def act(self, observation, action_mask, agent, env):
            return int(np.flatnonzero(action_mask == 0)[0])

    register_policy("cheat", Cheat)
    v = vector.make("duel", num_envs=2, seed=0, opponents={"red": "cheat"})
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"row \d: opponent policy 'cheat' playing red_0 chose "
                                         r"action \d+, which is illegal: "):
        _, mask, _ = v.reset()
        for _ in range(50):
            _obs, mask, *_ = v.step(vector.random_legal_actions(mask, rng))
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        v.step(np.zeros(2, dtype=np.int64))


# ============================================================================ bad actions
def test_an_illegal_action_names_row_seat_label_reason_and_changes_nothing():
    v = vector.make("squad", num_envs=4, seed=2)
    twin = vector.make("squad", num_envs=4, seed=2)
    obs, mask, info = v.reset()
    twin.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        actions = vector.random_legal_actions(mask, rng)
        obs, mask, *_ = v.step(actions)
        twin.step(actions)
    actions = vector.random_legal_actions(mask, rng)
    bad = actions.copy()
    bad[2] = v.action_labels.index("end_turn") if not mask[2][v.action_labels.index(
        "end_turn")] else int(np.flatnonzero(~mask[2])[0])
    seat = v.possible_agents[info["agent"][2]]
    label = v.action_labels[bad[2]]
    before = obs.copy(), mask.copy()
    with pytest.raises(ValueError) as err:
        v.step(bad)
    text = str(err.value)
    assert text.startswith(f"row 2: illegal action {label!r} (index {bad[2]}) for seat {seat}: ")
    assert "nothing was applied" in text
    assert len(text.split(": ", 2)[2]) > len("nothing was applied in any row") + 5  # a reason
    assert np.array_equal(obs, before[0]) and np.array_equal(mask, before[1])
    # Nothing changed: the same steps go on exactly as in a vector that never saw it.
    assert _continue(v, actions) == _continue(twin, actions)


def _continue(v, first) -> bytes:
    rng = np.random.default_rng(5)
    out = v.step(first)
    chunks = [x.tobytes() for x in out[:5]]
    for _ in range(30):
        out = v.step(vector.random_legal_actions(out[1], rng))
        chunks += [x.tobytes() for x in out[:5]]
    return b"".join(chunks)


def test_an_illegal_relative_action_names_both_labels_or_the_empty_slot():
    v = vector.make("duel", num_envs=1, seed=0, relative_actions=True)
    _obs, mask, info = v.reset()
    i = int(np.flatnonzero(~mask[0])[0])
    with pytest.raises(ValueError, match=rf"row 0: illegal action '{v.action_labels[i]}'"):
        v.step(np.array([i]))
    # Two blue, one red: blue's enemy1 and red's ally0 are empty slots.
    sc = scenario([fighter((2, 5)), fighter((2, 7))], [fighter((12, 5))])
    v = vector.make(sc, num_envs=1, seed=0, relative_actions=True)
    _, _, info = v.reset()
    seat = v.possible_agents[info["agent"][0]]
    empty = v.action_labels.index("attack:enemy1" if seat.startswith("blue") else "attack:ally0")
    with pytest.raises(ValueError, match=rf"row 0: illegal action '{v.action_labels[empty]}' "
                                         rf"\(index {empty}\) for seat {seat}: it names an "
                                         "empty slot"):
        v.step(np.array([empty]))


@pytest.mark.parametrize("bad", [
    np.zeros(3, dtype=np.float32),
    np.zeros(3, dtype=bool),
    np.zeros(4, dtype=np.int64),
    np.zeros((3, 1), dtype=np.int64),
    np.array([0, -1, 0]),
    np.array([0, 0, 10_000]),
    [0.5, 0, 0],
    "end_turn",
])
def test_malformed_actions_name_the_expected_shape_and_range(bad):
    v = vector.make("duel", num_envs=3, seed=0)
    v.reset()
    with pytest.raises(ValueError, match=rf"expected an integer array of shape \(3,\) with "
                                         rf"values in \[0, {v.n_actions}\)"):
        v.step(bad)


def test_lists_of_ints_are_accepted():
    """A list of ints steps the battles exactly as the same actions in an array do."""
    v, twin = vector.make("duel", num_envs=2, seed=0), vector.make("duel", num_envs=2, seed=0)
    _obs, mask, _info = v.reset()
    twin.reset()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(300):
        actions = vector.random_legal_actions(mask, rng)
        got = v.step(actions.tolist())
        want = twin.step(actions)
        for a, b in zip(got[:5], want[:5], strict=True):
            np.testing.assert_array_equal(a, b)
        mask, ended = got[1], ended + int(got[3].sum())
    assert ended > 0  # the actions took effect: battles were played to their end


# ============================================================================ make() arguments
def test_an_unknown_backend_is_refused_naming_the_backends():
    with pytest.raises(ValueError, match=r"backend must be one of 'python', 'core', got 'gpu'"):
        vector.make("duel", backend="gpu")


def test_a_policy_that_cannot_run_in_the_core_is_refused_naming_those_that_can(backend):
    if backend == "python":
        vector.make("duel", opponents={"red": "always_lead"})  # any policy runs in Python
        return
    with pytest.raises(ValueError, match=r"opponents: 'always_lead' \(playing red_0\) does not "
                                         r"run inside the compiled core; the policies that "
                                         r"do: random, passive, rush, marksman, leader, "
                                         r"tactician, cover and the search NPC \(search-<budget>"):
        vector.make("duel", opponents={"red": "always_lead"})


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"num_envs": 0}, ValueError, "num_envs must be an int >= 1"),
    ({"num_envs": True}, ValueError, "num_envs must be an int >= 1"),
    ({"num_envs": 2.0}, ValueError, "num_envs must be an int >= 1"),
    ({"seed": -1}, ValueError, r"seed must be an int in \[0, 2\*\*64 - 1\]"),
    ({"seed": 1.5}, TypeError, r"seed must be an int"),
    ({"check_invariants": True}, ValueError, "check_invariants is an option of the AEC env"),
    ({"no_such_option": 1}, ValueError, "no_such_option"),
    ({"relative_actions": 1}, TypeError, "relative_actions must be True or False"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        vector.make("duel", **kwargs)


def test_random_legal_actions_is_uniform_over_the_legal_ones():
    mask = np.zeros((2, 6), dtype=bool)
    mask[0, [1, 4]] = True
    mask[1, [0, 2, 5]] = True
    rng = np.random.default_rng(0)
    draws = np.array([vector.random_legal_actions(mask, rng) for _ in range(3000)])
    assert set(draws[:, 0]) == {1, 4} and set(draws[:, 1]) == {0, 2, 5}
    assert abs((draws[:, 0] == 1).mean() - 0.5) < 0.05
    assert all(abs((draws[:, 1] == k).mean() - 1 / 3) < 0.05 for k in (0, 2, 5))
    with pytest.raises(ValueError, match="row 1 of the mask allows no action"):
        vector.random_legal_actions(np.array([[True], [False]]), rng)
