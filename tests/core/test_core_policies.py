"""The in-core policies make the same choices as their Python versions (recorded decisions).

Battles are played on the Python engine (``Dice(seed, generator="pcg")``) with the Python
policies (``random``, ``passive``, ``rush``, ``marksman``, ``leader``, ``tactician``,
``cover``) on some
seats and random legal actions on the others, and a ``CoreBattle`` with the same seed is driven
in lock step with the same actions. At every decision of a policy seat the in-core policy of
that seat (``_core.Policy``, reset with the same seed as the Python one and asked at every
decision of its seat, in the same order) must return the same action index; at the end both
policies' generators must be in the same state (``random`` draws, and the scripted fallbacks,
consumed the same stream). The tactician keeps a plan for the rest of its turn: the core's must
be kept and dropped at the same decisions, which the test follows too (``PLAN_REUSED``: turn
decisions played from a kept plan). A mismatch fails printing the scenario, seed, step, seat and
both labels.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from fuzz_scenarios import valid_scenarios
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traveller_env import core
from traveller_env.encoding import ActionCatalogue
from traveller_env.rules.dice import Dice
from traveller_env.rules.rng import derive_seed
from traveller_env.scenario import build_battle, load_scenario
from traveller_env.view import BattleView

pytestmark = pytest.mark.skipif(not core.available(), reason=core.status())

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Decisions compared, per policy name, by the lock-step battles (the coverage test empties
#: these counters and fills them with its own battles before it reads them).
COMPARED: Counter = Counter()
#: Label kinds each policy chose (e.g. ``("marksman", "aim")``; haste and reactions also by
#: label, e.g. ``("tactician", "haste:yes")``), to show the tests reach them.
CHOSEN: Counter = Counter()
#: Tactician turn decisions played from the plan kept from an earlier decision (no new search).
PLAN_REUSED: Counter = Counter()


class _Env:
    """What the Python policies read of an environment: the view, the labels, the index."""

    def __init__(self, battle: Any, labels: list[str]) -> None:
        self.view = BattleView(battle)
        self.action_labels = labels
        self._index = {label: i for i, label in enumerate(labels)}

    def action_index(self, label: str) -> int:
        return self._index[label]


def _python_policy(name: str, seed: int) -> Any:
    """The Python policy (imported directly: the sanitizer's venv has no training extras)."""
    from traveller_agents.cover import CoverPolicy
    from traveller_agents.leader import LeaderPolicy
    from traveller_agents.marksman import MarksmanPolicy
    from traveller_agents.rush import RushPolicy
    from traveller_agents.tactician import TacticianPolicy
    from traveller_env.policy import PassivePolicy, RandomPolicy

    class CountingTactician(TacticianPolicy):
        """The tactician, counting the turn decisions it plays from a kept plan."""

        def turn(self, ctx: Any) -> Any:
            kept = self._plan
            if kept is not None and kept[1] and kept[0] == self._signature(ctx) \
                    and ctx.legal(kept[1][0]):
                PLAN_REUSED["tactician"] += 1
            return super().turn(ctx)

    classes = {"random": RandomPolicy, "passive": PassivePolicy, "rush": RushPolicy,
               "marksman": MarksmanPolicy, "leader": LeaderPolicy,
               "tactician": CountingTactician, "cover": CoverPolicy}
    return classes[name](seed=seed)


def lockstep(scenario: Any, seed: int, policies: dict[int, str], name: str = "",
             explore: float = 0.0, forget: float = 0.0) -> int:
    """Play one battle; ``policies`` maps a side (0, 1) to a policy name (absent: random legal
    actions from a NumPy generator). With ``explore`` > 0 a policy seat's choice is compared
    and then, with that probability, replaced by a random legal action (from the test's own
    generator), to reach states the policy would not steer into (a scripted leader's bonus to
    hand out, a prone marksman...). With ``forget`` > 0 both policies of a seat are
    ``reset(None)`` before a decision with that probability (the tactician drops its plan, the
    generators keep their streams). Returns the number of policy decisions compared."""
    from traveller_env.core.engine import CoreBattle

    c = core.require()
    sc = load_scenario(scenario)
    py = build_battle(sc, dice=Dice(seed, generator="pcg"))
    cb = CoreBattle(sc, seed)
    cat = ActionCatalogue(py)
    assert cat.labels == cb.labels
    env = _Env(py, cat.labels)
    ids = cb.ids
    side_of = [py.by_id[a].side for a in ids]
    pols: dict[int, tuple[Any, Any, str]] = {}
    for seat in range(len(ids)):
        pname = policies.get(side_of[seat])
        if pname is not None:
            pseed = derive_seed(seed, 1 + seat)  # as traveller_env.vector seeds its seats
            pols[seat] = (_python_policy(pname, pseed), c.Policy(pname, pseed), pname)
    rng = np.random.default_rng(seed)
    compared = step = 0
    where = name or getattr(sc, "name", "scenario")
    while not py.done:
        assert not cb.done
        agent = py.current_agent
        seat = ids.index(agent)
        assert cb.current_agent == agent and cb.phase == py.phase
        mask = cat.mask(py)
        assert np.array_equal(mask, cb.mask()), f"{where} seed {seed} step {step}: masks differ"
        if seat in pols:
            py_pol, core_pol, pname = pols[seat]
            if forget and rng.random() < forget:
                py_pol.reset(None)
                core_pol.reset(None)
            want = int(py_pol.act(None, mask, agent, env))
            got = core_pol.act(cb.handle, seat)
            if want != got:
                pytest.fail(f"{where} seed {seed} step {step} seat {seat} ({agent}, {pname}, "
                            f"phase {py.phase}, round {py.round}): python "
                            f"{cat.labels[want]!r}, core {cat.labels[got]!r}")
            COMPARED[pname] += 1
            kind = cat.labels[want].split(":")[0]
            CHOSEN[pname, kind] += 1
            if kind in ("haste", "react"):
                CHOSEN[pname, cat.labels[want]] += 1
            compared += 1
            action = want
            if explore and rng.random() < explore:
                action = int(rng.choice(np.flatnonzero(mask)))
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
        py.apply(cat.actions[action])
        cb.step(action)
        step += 1
    assert cb.done and cb.winner == py.winner
    for seat, (py_pol, core_pol, pname) in pols.items():
        if hasattr(py_pol, "rng"):
            assert core_pol.getstate() == py_pol.rng.getstate(), \
                f"{where} seed {seed} seat {seat} ({pname}): the generators drifted apart"
    return compared


PAIRS = [("rush", "marksman"), ("marksman", "rush"), ("random", "rush"),
         ("passive", "marksman"), ("marksman", "random"), ("rush", "rush"),
         ("marksman", "marksman"), ("rush", None), ("marksman", None), ("random", "passive")]
#: Pairings with the planner (and the leader whose free actions and Leadership scoring it uses).
TACTICIAN_PAIRS = [("tactician", "marksman"), ("rush", "tactician"), ("leader", "tactician"),
                   ("tactician", "tactician"), ("tactician", None), ("marksman", "leader"),
                   ("tactician", "random")]

#: Pairings with ``cover`` (its cover-site search, exposure and dodge rule).
COVER_PAIRS = [("cover", "marksman"), ("rush", "cover"), ("cover", "tactician"),
               ("cover", "cover"), ("cover", None), ("random", "cover")]

BUILTIN = ["duel", "squad", "ambush", "melee", "range_short", "range_long", "squad_commander"]


def _policies(pair: tuple[str, str | None]) -> dict[int, str]:
    return {0: pair[0], 1: pair[1]} if pair[1] else {0: pair[0]}


@pytest.mark.parametrize("scenario", BUILTIN)
@pytest.mark.parametrize("pair", PAIRS[:4], ids=lambda p: f"{p[0]}-{p[1]}")
def test_builtin_scenarios_same_choices(scenario, pair):
    for seed in (1, 2):
        lockstep(scenario, seed, _policies(pair))


@pytest.mark.parametrize("scenario", [*BUILTIN, "squad_commander0", "range_medium",
                                      "range_extreme"])
@pytest.mark.parametrize("pair", TACTICIAN_PAIRS[:3], ids=lambda p: f"{p[0]}-{p[1]}")
def test_builtin_scenarios_tactician_same_choices(scenario, pair):
    for seed in (1, 2, 3, 4):
        lockstep(scenario, seed, _policies(pair))


@pytest.mark.parametrize("scenario", ["squad", "squad_commander0", "ambush", "duel",
                                      "range_medium", "range_extreme"])
@pytest.mark.parametrize("pair", PAIRS[4:] + TACTICIAN_PAIRS[3:], ids=lambda p: f"{p[0]}-{p[1]}")
def test_more_pairings_same_choices(scenario, pair):
    lockstep(scenario, 3, _policies(pair))


@settings(FUZZ, max_examples=220)
@given(sc=valid_scenarios(max_side=4, max_map=16), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(PAIRS + COVER_PAIRS))
def test_fuzzed_scenarios_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}")


@settings(FUZZ, max_examples=60)
@given(sc=valid_scenarios(max_side=3, max_map=8, max_char=6), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(PAIRS))
def test_crowded_fuzzed_scenarios_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}")


@settings(FUZZ, max_examples=100)
@given(sc=valid_scenarios(max_side=4, max_map=16), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(TACTICIAN_PAIRS))
def test_fuzzed_scenarios_tactician_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}")


@settings(FUZZ, max_examples=50)
@given(sc=valid_scenarios(max_side=3, max_map=8, max_char=6), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(TACTICIAN_PAIRS))
def test_crowded_fuzzed_scenarios_tactician_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}")


@pytest.mark.parametrize("scenario", [*BUILTIN, "range_medium", "range_extreme"])
@pytest.mark.parametrize("pair", COVER_PAIRS[:3], ids=lambda p: f"{p[0]}-{p[1]}")
def test_builtin_scenarios_cover_same_choices(scenario, pair):
    for seed in (1, 2):
        lockstep(scenario, seed, _policies(pair))


@pytest.mark.parametrize("scenario", ["squad", "squad_commander", "ambush", "duel"])
@pytest.mark.parametrize("pair", COVER_PAIRS[3:], ids=lambda p: f"{p[0]}-{p[1]}")
def test_more_cover_pairings_same_choices(scenario, pair):
    for seed in (3, 4):
        lockstep(scenario, seed, _policies(pair), explore=0.2 if pair[1] == "cover" else 0.0)


@pytest.mark.parametrize("scenario", ["squad_commander", "squad", "ambush", "melee", "duel"])
@pytest.mark.parametrize("pair", [("rush", "marksman"), ("marksman", "rush"),
                                  ("tactician", "leader"), ("leader", "tactician")],
                         ids=lambda p: f"{p[0]}-{p[1]}")
def test_perturbed_battles_same_choices(scenario, pair):
    for seed in (5, 6, 7):
        lockstep(scenario, seed, _policies(pair), explore=0.3)


@pytest.mark.parametrize("scenario", ["squad", "squad_commander", "ambush"])
def test_a_reset_without_seed_forgets_the_plan_on_both(scenario):
    for seed in (8, 9):
        lockstep(scenario, seed, {0: "tactician", 1: "tactician"}, forget=0.3)


@settings(FUZZ, max_examples=140)
@given(sc=valid_scenarios(max_side=4, max_map=12), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(PAIRS[:2] + PAIRS[5:9] + COVER_PAIRS))
def test_perturbed_fuzzed_scenarios_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}", explore=0.3)


@settings(FUZZ, max_examples=60)
@given(sc=valid_scenarios(max_side=4, max_map=12), seed=st.integers(0, 2**64 - 1),
       pair=st.sampled_from(TACTICIAN_PAIRS))
def test_perturbed_fuzzed_scenarios_tactician_same_choices(sc, seed, pair):
    lockstep(sc, seed, _policies(pair), name=f"fuzzed {sc}", explore=0.3)


#: The battles the coverage test plays itself (scenario, pair, seed, explore): chosen so that
#: together they reach every policy's whole repertoire in a few seconds (the last one: a
#: leadership check taken by exploration hands rush and marksman bonuses to direct).
COVERAGE_BATTLES = [
    ("ambush", ("cover", "cover"), 5, 0.0),
    ("ambush", ("leader", "tactician"), 5, 0.0),
    ("ambush", ("marksman", "leader"), 5, 0.0),
    ("ambush", ("marksman", "leader"), 5, 0.3),
    ("ambush", ("marksman", "rush"), 6, 0.0),
    ("ambush", ("marksman", "rush"), 6, 0.3),
    ("ambush", ("random", "passive"), 5, 0.0),
    ("ambush", ("random", "passive"), 5, 0.3),
    ("ambush", ("random", "passive"), 6, 0.0),
    ("ambush", ("rush", "marksman"), 6, 0.3),
    ("ambush", ("tactician", "leader"), 5, 0.0),
    ("duel", ("cover", "cover"), 5, 0.3),
    ("duel", ("cover", "cover"), 6, 0.0),
    ("duel", ("cover", "cover"), 6, 0.3),
    ("duel", ("cover", "tactician"), 5, 0.0),
    ("duel", ("leader", "tactician"), 6, 0.0),
    ("duel", ("leader", "tactician"), 6, 0.3),
    ("duel", ("marksman", "leader"), 6, 0.0),
    ("duel", ("random", "passive"), 5, 0.0),
    ("duel", ("random", "passive"), 6, 0.0),
    ("duel", ("rush", "marksman"), 5, 0.0),
    ("duel", ("rush", "marksman"), 5, 0.3),
    ("duel", ("tactician", "leader"), 6, 0.0),
    ("duel", ("tactician", "marksman"), 5, 0.3),
    ("melee", ("cover", "cover"), 5, 0.3),
    ("melee", ("leader", "tactician"), 6, 0.0),
    ("melee", ("marksman", "leader"), 5, 0.0),
    ("melee", ("marksman", "leader"), 5, 0.3),
    ("melee", ("marksman", "rush"), 5, 0.3),
    ("melee", ("marksman", "rush"), 6, 0.0),
    ("melee", ("random", "passive"), 6, 0.3),
    ("melee", ("rush", "cover"), 5, 0.3),
    ("melee", ("rush", "cover"), 6, 0.0),
    ("melee", ("rush", "cover"), 6, 0.3),
    ("melee", ("rush", "marksman"), 5, 0.0),
    ("melee", ("rush", "marksman"), 5, 0.3),
    ("melee", ("rush", "marksman"), 6, 0.0),
    ("melee", ("rush", "marksman"), 6, 0.3),
    ("melee", ("tactician", "leader"), 6, 0.0),
    ("melee", ("tactician", "marksman"), 6, 0.0),
    ("squad_commander", ("marksman", "leader"), 6, 0.0),
    ("squad_commander", ("tactician", "leader"), 5, 0.3),
    ("leadership_l3", ("marksman", "rush"), 2, 0.3),
]


def test_the_recorded_decisions_cover_every_policy_and_kind():
    """The lock-step comparison reaches every policy and every kind of its repertoire: the
    battles of ``COVERAGE_BATTLES`` (played here, whatever else ran before; the counters are
    emptied first) compare many decisions of every policy, and the scripted ones choose every
    kind of their repertoire."""
    for counter in (COMPARED, CHOSEN, PLAN_REUSED):
        counter.clear()
    for scenario, pair, seed, explore in COVERAGE_BATTLES:
        lockstep(scenario, seed, _policies(pair), explore=explore)
    for name in ("random", "passive", "rush", "marksman", "leader", "tactician", "cover"):
        assert COMPARED[name] >= 500, COMPARED
    for kind in ("move", "attack", "end_turn", "haste", "react", "draw", "reload", "hamper"):
        assert CHOSEN["rush", kind] > 0, (kind, CHOSEN)
    for kind in ("move", "attack", "aim", "end_turn", "haste", "react", "draw", "reload"):
        assert CHOSEN["marksman", kind] > 0, (kind, CHOSEN)
    assert CHOSEN["rush", "direct"] + CHOSEN["marksman", "direct"] > 0, CHOSEN
    assert CHOSEN["rush", "hamper"] + CHOSEN["marksman", "hamper"] > 0, CHOSEN
    for kind in ("move", "stance", "aim", "attack", "leadership", "draw", "reload", "end_turn",
                 "haste:yes", "haste:no", "react:none", "react:dodge", "react:parry", "direct",
                 "hamper"):
        assert CHOSEN["tactician", kind] > 0, (kind, CHOSEN)
    for kind in ("move", "aim", "attack", "leadership", "direct", "hamper", "react:dodge"):
        assert CHOSEN["leader", kind] > 0, (kind, CHOSEN)
    for kind in ("move", "stance", "aim", "attack", "end_turn", "draw", "reload", "react:none",
                 "react:dodge"):
        assert CHOSEN["cover", kind] > 0, (kind, CHOSEN)
    assert PLAN_REUSED["tactician"] >= 100, PLAN_REUSED
    print(f"\nrecorded decisions compared: {dict(COMPARED)}; tactician turn decisions from a "
          f"kept plan: {PLAN_REUSED['tactician']}; kinds chosen: {dict(CHOSEN)}")


# ---------------------------------------------------------------------------- the boundary
def _battle(name: str = "duel", seed: int = 1) -> Any:
    from traveller_env.core.engine import CoreBattle

    return CoreBattle(name, seed)


def test_unknown_names_are_refused_naming_the_core_policies():
    c = core.require()
    for bad in ("always_lead", "Rush", "", "tactician ", "cover2"):
        with pytest.raises(ValueError, match=r"runs in the core: random, passive, rush, "
                                             r"marksman, leader, tactician, cover$"):
            c.Policy(bad)
    with pytest.raises(TypeError, match="name must be a string"):
        c.Policy(3)
    from traveller_env.core.vector import CORE_POLICIES

    assert c.CORE_POLICIES == CORE_POLICIES
    assert all(c.Policy(name, 0).name == name for name in CORE_POLICIES)


def test_seats_are_checked():
    c = core.require()
    cb = _battle()
    p = c.Policy("rush", 0)
    n = len(cb.ids)
    for bad in (-1, n, 10**30):
        with pytest.raises(ValueError, match=rf"seat must be an int in \[0, {n - 1}\]"):
            p.act(cb.handle, bad)
    with pytest.raises(TypeError, match="seat must be an int"):
        p.act(cb.handle, 1.0)
    decider = cb.ids.index(cb.current_agent)
    other = (decider + 1) % n
    with pytest.raises(ValueError, match=rf"seat {other} \({cb.ids[other]}\) does not decide now"):
        p.act(cb.handle, other)
    with pytest.raises(TypeError):
        p.act(object(), decider)


def test_a_finished_battle_is_refused():
    c = core.require()
    cb = _battle("range_short", 0)
    p = c.Policy("marksman", 0)
    while not cb.done:
        cb.step(p.act(cb.handle, cb.ids.index(cb.current_agent)))
    with pytest.raises(ValueError, match="the battle is over"):
        p.act(cb.handle, 0)


def test_seeds_are_checked_and_reset_none_keeps_the_stream():
    c = core.require()
    for bad, error in ((-1, ValueError), (2**64, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match=r"seed must be an int in \[0, 2\*\*64 - 1\]"):
            c.Policy("random", bad)
        with pytest.raises(error, match=r"seed must be an int in \[0, 2\*\*64 - 1\]"):
            c.Policy("random", 0).reset(bad)
    p = c.Policy("random", 5)
    state = p.getstate()
    p.reset(None)
    assert p.getstate() == state
    p.reset(6)
    assert p.getstate() == c.Pcg32(6).getstate()
    assert c.Policy("random").name == "random"  # seeded from OS entropy


def test_random_draws_the_python_random_policys_stream():
    from traveller_env.policy import RandomPolicy

    c = core.require()
    cb = _battle("squad", 4)
    py, cp = RandomPolicy(11), c.Policy("random", 11)
    for _ in range(300):
        if cb.done:
            break
        seat = cb.ids.index(cb.current_agent)
        want = py.act(None, cb.mask(), cb.current_agent, None)
        assert cp.act(cb.handle, seat) == want
        cb.step(want)
    assert cp.getstate() == py.rng.getstate()
