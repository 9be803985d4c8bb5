"""The PettingZoo AEC environment (``traveller_env.env``): API conformance, determinism, the
action mask, turn order, illegal actions, rewards, episode end and observations.

Each test names the rules it checks (docs/rules.md). Rules tests drive the environment with exact
dice: ``reset(options={"dice": ScriptedDice([...])})``, one tuple per ``roll(n)`` call. Dice
order at creation: one 2D Initiative roll per combatant in scenario order (none for a prepared
combatant in an ambush), then one 2D Tactics check per side with a tactician; each check rolls
2D and a hit rolls its damage dice. Unless a test says otherwise hastening and reactions are off
(``conftest.scenario``), and every fighter has DEX 7 (DM 0), Gun Combat (slug) 1 and a drawn
autorifle, 15 m from its enemy (short range, DM +1): an attack is 2D + 2.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pettingzoo
import pytest
from conftest import fighter, scenario
from pettingzoo.test import api_test, seed_test

import traveller_env
from traveller_env import builtin_scenarios, env, raw_env
from traveller_env.policy import RandomPolicy
from traveller_env.rules.actions import MINOR_KINDS, SIGNIFICANT_KINDS
from traveller_env.rules.battle import IllegalActionError
from traveller_env.rules.dice import ScriptedDice

BUILTINS = builtin_scenarios()
MISS = (1, 1)  # an attack roll that misses with DM up to +5
SURE_HIT = (6, 6)
MAX_DAMAGE = (6, 6, 6)  # an autorifle's 3D
WEAK = {"STR": 1, "DEX": 1, "END": 1}  # any hit takes it out (R6.3)


# ---------------------------------------------------------------------------- helpers
def one_v_one(blue: dict | None = None, red: dict | None = None, **options) -> dict:
    return scenario([blue or fighter((2, 5))], [red or fighter((12, 5))], **options)


def make(sc, rolls=None, seed: int = 0, **options):
    """A raw environment reset with scripted dice (``rolls``) or a seed, on the Python engine
    (scripted dice are a Python-engine feature; the core rolls only the shared generator)."""
    options.setdefault("infos", "events")  # these tests read the events in infos
    e = raw_env(sc, backend="python", **options)
    e.reset(seed=seed, options=None if rolls is None else {"dice": ScriptedDice(rolls)})
    return e


def act(e, label: str) -> None:
    e.step(e.action_index(label))


def allowed(e) -> set[str]:
    """Labels the selected agent's mask allows."""
    mask = e.observe(e.agent_selection)["action_mask"]
    return {e.action_labels[i] for i in np.flatnonzero(mask)}


def kinds(e) -> set[str]:
    return {label.split(":")[0] for label in allowed(e)}


def events(e, kind: str) -> list[dict]:
    return [ev for ev in e.battle.events if ev["type"] == kind]


def fields(ev: dict, *keys: str) -> dict:
    """The named fields of an event (events may grow more fields over time)."""
    return {k: ev.get(k) for k in keys}


def turns(e) -> list[tuple[int, str]]:
    return [(ev["round"], ev["actor"]) for ev in events(e, "turn")]


def obs_field(e, agent: str, label: str) -> float:
    return float(e.observe(agent)["observation"][e.observation_labels.index(label)])


def play_random(e, policy_seed: int, steps: int, on_step=None) -> None:
    """Random legal actions (dead steps take ``None``); reset with fresh seeds when it ends."""
    policy = RandomPolicy(policy_seed)
    reset_seeds = itertools.count(policy_seed * 1000 + 1)
    for _ in range(steps):
        if not e.agents:
            e.reset(seed=next(reset_seeds))
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            e.step(None)
            continue
        obs = e.observe(agent)
        if on_step is not None:
            on_step(e, agent, obs)
        e.step(policy.act(obs["observation"], obs["action_mask"], agent, e))


# ---------------------------------------------------------------------------- API conformance
@pytest.mark.parametrize("name", BUILTINS)
def test_api_test_passes_on_every_builtin_scenario(name):
    """PettingZoo's api_test (R2.1 mask, R8.2 episode end) on each built-in scenario."""
    with warnings.catch_warnings():
        # The Dict observation space and dict observations are PettingZoo's masking convention.
        warnings.simplefilter("ignore", UserWarning)
        api_test(env(scenario=name), num_cycles=300)


@pytest.mark.parametrize("name", ["duel", "squad"])
def test_api_test_passes_in_penalize_mode(name):
    """api_test with illegal_action=penalize (R2.3 forfeit ends the turn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(env(scenario=name, illegal_action="penalize"), num_cycles=200)


@pytest.mark.parametrize("name", BUILTINS)
def test_pettingzoo_seed_test(name):
    """PettingZoo's seed_test: one seed, one trajectory (R1.1)."""
    seed_test(lambda: env(scenario=name), num_cycles=200)


def _trajectory(name: str, seed: int, policy_seed: int = 7, steps: int = 300) -> dict:
    e = raw_env(name)
    e.reset(seed=seed)
    policy = RandomPolicy(policy_seed)
    record: dict[str, list] = {"obs": [], "rewards": [], "terms": [], "truncs": [], "infos": [],
                               "selection": []}
    for _ in range(steps):
        if not e.agents:
            break
        agent = e.agent_selection
        obs, reward, term, trunc, info = e.last()
        record["obs"].append(obs["observation"].tolist() + obs["action_mask"].tolist())
        record["rewards"].append(reward)
        record["terms"].append(term)
        record["truncs"].append(trunc)
        record["infos"].append(json.dumps(info, sort_keys=True))
        record["selection"].append(agent)
        if term or trunc:
            e.step(None)
        else:
            e.step(policy.act(obs["observation"], obs["action_mask"], agent, e))
    record["events"] = json.dumps(e.battle.events)
    record["state"] = e.state().tolist()
    return record


@pytest.mark.parametrize("name", ["duel", "melee", "squad", "ambush"])
def test_paired_runs_same_seed_identical_different_seed_differ(name):
    """R1.1: two environments, same seed and same choices: identical observations, rewards,
    terminations, truncations, infos and event logs; another seed gives another battle."""
    a, b = _trajectory(name, seed=123), _trajectory(name, seed=123)
    assert a == b
    c = _trajectory(name, seed=124)
    assert c["events"] != a["events"]


def test_reset_without_seed_draws_a_fresh_battle_and_rejects_bad_seeds():
    """R1.1: ``reset()`` draws a fresh seed; a non-int seed is refused."""
    e = raw_env("duel")
    logs = set()
    for _ in range(4):
        e.reset()
        logs.add(json.dumps(events(e, "initiative")))
    assert len(logs) > 1
    with pytest.raises(TypeError, match="seed"):
        e.reset(seed="7")


def test_pettingzoo_make_and_metadata():
    """API (no rule): ``pettingzoo.make("aec", "traveller/combat-v0")`` builds the wrapped
    environment; metadata names it and says it is not parallelizable."""
    made = pettingzoo.make("aec", traveller_env.ENV_ID, scenario="duel")
    assert isinstance(made, pettingzoo.AECEnv)
    assert made.unwrapped.scenario.name == "duel"
    made.reset(seed=0)
    assert made.agent_selection in made.possible_agents
    meta = raw_env("duel").metadata
    assert meta["name"] == "traveller_combat_v0"
    assert meta["is_parallelizable"] is False
    assert made.metadata == meta


@pytest.mark.parametrize("name", BUILTINS)
def test_spaces_are_cached_and_shared(name):
    """API (no rule): every agent has the same Discrete(N) and Dict observation space, the
    same object on every call; unknown agents are refused."""
    e = raw_env(name)
    agents = e.possible_agents
    assert all(e.action_space(a) is e.action_space(agents[0]) for a in agents)
    assert all(e.observation_space(a) is e.observation_space(agents[0]) for a in agents)
    assert e.action_space(agents[0]) is e.action_space(agents[0])
    assert e.action_space(agents[0]).n == len(e.action_labels)
    n = e.action_space(agents[0]).n
    assert [e.action_index(label) for label in e.action_labels] == list(range(n))
    with pytest.raises(ValueError, match="unknown agent"):
        e.action_space("nobody_0")


# ---------------------------------------------------------------------------- mask invariant
MASK_STEPS = 650  # per scenario


@pytest.mark.parametrize("name", BUILTINS)
def test_mask_matches_engine_legality_over_random_play(name):
    """R2.1-R2.3, R3.5, R3.6: for the selected agent mask[i] == 1 exactly when applying action i
    to a clone of the battle succeeds; never an all-zero mask for a live selected agent; every
    other agent sees an all-zero mask; observations lie in the observation space."""
    e = raw_env(name)
    e.reset(seed=11)
    actions = e.catalogue.actions
    space = e.observation_space(e.possible_agents[0])
    checked = {"steps": 0}

    def check(env_, agent, obs):
        battle = env_.unwrapped.battle
        mask = obs["action_mask"]
        assert mask.any(), f"{agent} selected with an all-zero mask"
        assert space.contains(obs)
        probe = battle.clone()
        for i, action in enumerate(actions):
            try:
                probe.apply(action)
            except IllegalActionError:
                ok = 0  # apply refuses before mutating: the probe can be reused
            else:
                ok = 1
                probe = battle.clone()
            assert mask[i] == ok, (agent, action.label, battle.why_illegal(action))
        for other in env_.agents:
            if other != agent:
                other_obs = env_.observe(other)
                assert not other_obs["action_mask"].any()
                assert space.contains(other_obs)
        checked["steps"] += 1

    play_random(e, policy_seed=3, steps=MASK_STEPS, on_step=check)
    assert checked["steps"] > MASK_STEPS * 0.8


# ---------------------------------------------------------------------------- R2.1 / R2.3 budget
def _expected_kinds(minors: int, significant: bool) -> set[str]:
    """R2.1: what the mask must allow after ``minors`` Minor and ``significant`` actions."""
    out = {"end_turn"}
    if minors < (1 if significant else 3):
        out |= {"move", "stance", "aim"}  # draw/reload are illegal: drawn and loaded
    if not significant and minors <= 1:
        out |= {"attack", "leadership"}
    return out


MINOR_CHOICES = ("aim:red_0", "stance:crouch", "move:N:1")
BUDGET_SEQUENCES = [seq for k in (1, 2, 3, 4) for seq in itertools.product("MS", repeat=k)]


@pytest.mark.parametrize("seq", BUDGET_SEQUENCES, ids="".join)
def test_r2_1_budget_exhaustively_and_r2_3_turn_passes_when_spent(seq):
    """R2.1: after every sequence of Minor (M) / Significant (S) actions in one turn, the mask
    allows exactly the kinds the budget still permits (one Significant after at most one
    Minor; 1 Minor after a Significant, else 3). R2.3: the selection passes once it is spent."""
    e = make(one_v_one(), [(6, 6), (1, 1)] + [MISS] * 2)
    minors, significant = 0, False
    for step, kind in enumerate(seq):
        assert e.agent_selection == "blue_0"
        assert kinds(e) == _expected_kinds(minors, significant)
        sig_left, minors_left = e.battle.budget_left("blue_0")
        assert obs_field(e, "blue_0", "self.significant_available") == float(sig_left)
        assert obs_field(e, "blue_0", "self.minors_available") == pytest.approx(minors_left / 3)
        label = MINOR_CHOICES[step % 3] if kind == "M" else "attack:red_0"
        if label.split(":")[0] not in _expected_kinds(minors, significant):
            with pytest.raises(ValueError, match=r"R2\.1"):
                act(e, label)
            return  # the rest of the sequence is not a legal turn
        act(e, label)
        if kind == "M":
            minors += 1
        else:
            significant = True
        if _expected_kinds(minors, significant) == {"end_turn"}:
            # R2.3: budget spent -> the turn passes by itself to red.
            assert e.agent_selection == "red_0"
            ends = events(e, "end_turn")
            assert fields(ends[-1], "actor", "reason") == {"actor": "blue_0",
                                                           "reason": "budget spent"}
            assert kinds(e) == _expected_kinds(0, False)
            return
    assert e.agent_selection == "blue_0"  # budget not spent: the turn stays open
    act(e, "end_turn")
    assert e.agent_selection == "red_0"


def test_r2_1_action_kind_tables_match_the_mask_categories():
    """R2.1: the Minor / Significant split the budget test relies on (R4.1-R4.6 kinds)."""
    assert {"move", "stance", "aim", "draw", "reload"} == set(MINOR_KINDS)
    assert {"attack", "leadership"} == set(SIGNIFICANT_KINDS)


def _leader_scenario(leadership: int, intelligence: int) -> dict:
    leader = fighter((2, 5), skills={"gun_combat.slug": 1, "leadership": leadership},
                     chars={"INT": intelligence})
    return scenario([leader, fighter((2, 7))], [fighter((12, 5))])


@pytest.mark.parametrize("finish", ["direct:blue_1", "end_turn"])
def test_r2_3_leader_with_bonuses_keeps_the_turn_open(finish):
    """R2.3, R7.1, R7.5: a leader whose budget is spent but who still holds bonuses keeps the
    turn with only direct:* and end_turn legal; handing the last possible bonus (R7.3: the only
    ally now holds one) or ending the turn passes the selection."""
    # Initiative: blue_0 12, blue_1 4, red_0 3. Leadership: 12 + 2 + INT DM 1 = 15, Effect 7.
    e = make(_leader_scenario(2, 9), [(6, 6), (2, 2), (1, 2), (6, 6)])
    act(e, "leadership")
    assert events(e, "leadership")[-1]["bonuses"] == 7
    act(e, "aim:red_0")  # S + M: budget spent
    assert e.agent_selection == "blue_0"
    assert allowed(e) == {"direct:blue_1", "end_turn"}
    assert obs_field(e, "blue_0", "self.bonuses_to_hand") == pytest.approx(0.7)
    act(e, finish)
    assert e.agent_selection == "blue_1"
    assert e.battle.by_id["blue_1"].bonus is (finish != "end_turn")


def test_r2_3_opponent_with_penalties_to_impose_keeps_its_turn_open():
    """R2.3, R7.4, R7.5: after a failed leadership check the other side may impose penalties;
    its combatant keeps its spent turn open with only hamper:* and end_turn legal."""
    # Initiative: blue_0 12, red_0 4, blue_1 3. Leadership 2 + 0 + INT DM 0 = 2: Effect -6.
    e = make(_leader_scenario(0, 7), [(6, 6), (1, 2), (2, 2), (1, 1)])
    act(e, "leadership")
    assert events(e, "leadership")[-1]["penalties"] == 6
    act(e, "end_turn")
    assert e.agent_selection == "red_0"
    for label in ("stance:crouch", "stance:stand", "stance:prone"):
        act(e, label)
    assert e.agent_selection == "red_0"
    assert allowed(e) == {"hamper:blue_0", "hamper:blue_1", "end_turn"}
    act(e, "hamper:blue_0")
    act(e, "hamper:blue_1")  # R7.3: both now hold one; nobody left to hamper
    assert e.agent_selection == "blue_1"


# ---------------------------------------------------------------------------- turn order
def test_r2_2_initiative_ties_go_to_the_higher_dex():
    """R2.2: equal Initiative (9 each, DEX DM +1 each): the higher DEX value (red's 10)
    goes first although blue comes first in scenario order; R2.4: kept in round 2."""
    sc = one_v_one(fighter((2, 5), chars={"DEX": 9}), fighter((12, 5), chars={"DEX": 10}))
    e = make(sc, [(4, 4), (4, 4)])
    assert [ev["initiative"] for ev in events(e, "initiative")] == [9, 9]
    assert e.agent_selection == "red_0"
    assert not events(e, "simultaneous")
    act(e, "end_turn")
    assert e.agent_selection == "blue_0"
    act(e, "end_turn")
    assert e.agent_selection == "red_0"
    assert turns(e) == [(1, "red_0"), (1, "blue_0"), (2, "red_0")]


def test_r2_5_simultaneous_group_acts_in_scenario_order():
    """R2.2, R2.5: blue_1 and red_0 tie on Initiative and DEX: they act one after the other in
    scenario order (blue_1 then red_0), then the lower blue_0; the same every round (R2.4)."""
    sc = scenario([fighter((2, 5)), fighter((2, 7))], [fighter((12, 5))])
    e = make(sc, [(2, 3), (4, 5), (3, 6)])  # blue_0 5, blue_1 9, red_0 9
    order = []
    for _ in range(6):
        order.append(e.agent_selection)
        act(e, "end_turn")
    assert order == ["blue_1", "red_0", "blue_0"] * 2
    groups = [ev["group"] for ev in events(e, "simultaneous")]
    assert groups == [["blue_1", "red_0"]] * 3  # rounds 1, 2 and the start of 3


def test_r3_2_ambush_prepared_side_takes_12_without_rolling():
    """R3.2: only the unprepared roll; the prepared side takes 12 + DEX DM and starts drawn
    (R4.5)."""
    sc = one_v_one(fighter((2, 5), drawn=False), fighter((12, 5), drawn=False, chars={"DEX": 9}))
    sc["sides"][1]["prepared"] = True
    dice = ScriptedDice([(5, 6)])  # blue 11; red 12 + 1 = 13
    e = raw_env(sc, backend="python")
    e.reset(options={"dice": dice})
    assert dice.remaining == 0
    init = {ev["actor"]: ev for ev in events(e, "initiative")}
    assert init["red_0"]["roll"] is None and init["red_0"]["ambush"] is True
    assert init["red_0"]["initiative"] == 13
    assert init["blue_0"]["roll"] == [5, 6] and init["blue_0"]["ambush"] is False
    assert e.agent_selection == "red_0"
    assert "draw" not in allowed(e)  # prepared: drawn
    act(e, "end_turn")
    assert e.agent_selection == "blue_0"
    assert "draw" in allowed(e)


@pytest.mark.parametrize(("roll", "effect", "first"), [((6, 6), 6, "blue_1"),
                                                       ((1, 1), -4, "red_0")])
def test_r3_3_tactics_effect_is_added_to_the_unit(roll, effect, first):
    """R3.3: the side's tactician checks 2D + Tactics 2 + INT DM 0; its Effect (negative too)
    is added to the Initiative of every combatant of the side."""
    tactician = fighter((2, 5), skills={"gun_combat.slug": 1, "tactics.military": 2})
    sc = scenario([tactician, fighter((2, 7))], [fighter((12, 5))])
    e = make(sc, [(3, 3), (3, 4), (4, 4), roll])  # 6, 7, 8; then the Tactics check
    (tactics,) = events(e, "tactics")
    assert (tactics["actor"], tactics["unit"], tactics["effect"]) == ("blue_0", "blue", effect)
    inits = {c.id: c.initiative for c in e.battle.combatants}
    assert inits == {"blue_0": 6 + effect, "blue_1": 7 + effect, "red_0": 8}
    assert e.agent_selection == first


def test_r3_5_haste_declarations_in_initiative_order_and_hasty_moves_earlier():
    """R3.5: at the start of each round every combatant declares in Initiative order with only
    haste:yes/no legal; a hasty combatant gets +2 for the round (blue 8 -> 10 passes red's 9)
    and DM -1 on its checks; declarations are open; the bonus lasts one round."""
    e = make(one_v_one(hastening=True), [(4, 4), (4, 5)])  # blue 8, red 9
    assert e.agent_selection == "red_0"
    assert allowed(e) == {"haste:yes", "haste:no"}
    assert e.infos["red_0"]["phase"] == "haste"
    assert obs_field(e, "red_0", "self.phase_haste") == 1.0
    assert not e.observe("blue_0")["action_mask"].any()
    act(e, "haste:no")
    assert e.agent_selection == "blue_0"
    assert allowed(e) == {"haste:yes", "haste:no"}
    act(e, "haste:yes")
    assert fields(events(e, "haste")[-1], "actor", "haste", "initiative") == {
        "actor": "blue_0", "haste": True, "initiative": 10}
    assert e.agent_selection == "blue_0"  # hasty: 10 beats red's 9
    assert e.battle.phase == "turn"
    assert e.battle.attack_dms("blue_0", "red_0")["haste"] == -1
    act(e, "end_turn")
    assert e.agent_selection == "red_0"
    act(e, "end_turn")
    # Round 2: the order is back to red 9, blue 8; red declares first, openly.
    assert (e.battle.round, e.agent_selection) == (2, "red_0")
    act(e, "haste:yes")
    assert e.agent_selection == "blue_0"
    assert obs_field(e, "blue_0", "enemy0.hasty") == 1.0
    assert obs_field(e, "blue_0", "enemy0.initiative") == pytest.approx(11 / 30)
    assert obs_field(e, "blue_0", "self.hasty") == 0.0
    act(e, "haste:no")
    assert e.agent_selection == "red_0"
    assert turns(e) == [(1, "blue_0"), (1, "red_0"), (2, "red_0")]


def test_r3_4_r3_6_reaction_interrupt_and_initiative_cost():
    """R3.6: an attack passes the selection to its target for one step with only react:*
    legal (no parry against a ranged attack), then back to the attacker. R3.4: the reaction's
    Initiative -2 applies this round to a reactor yet to act (red 9 -> 7 drops behind blue_1's
    8) and next round to one that has acted (blue_0 10 -> 8 in round 2 only)."""
    blue = [fighter((2, 5)), fighter((2, 7), chars={"DEX": 8})]
    sc = scenario(blue, [fighter((12, 5))], reactions=True)
    # Initiative: blue_0 10, blue_1 8, red_0 9; two attack rolls, both miss.
    e = make(sc, [(5, 5), (4, 4), (4, 5), MISS, MISS])
    assert e.agent_selection == "blue_0"
    act(e, "attack:red_0")
    assert e.agent_selection == "red_0"
    assert e.battle.phase == "reaction"
    assert allowed(e) == {"react:none", "react:dodge"}
    assert not e.observe("blue_0")["action_mask"].any()
    assert obs_field(e, "red_0", "self.phase_reaction") == 1.0
    assert obs_field(e, "red_0", "enemy0.attacking_me") == 1.0
    assert obs_field(e, "red_0", "self.pending_attack_melee") == 0.0
    act(e, "react:dodge")
    change = events(e, "initiative_change")[-1]
    assert (change["actor"], change["change"], change["applies_to"]) == (
        "red_0", -2, "current_round")
    assert events(e, "attack")[-1]["dms"]["dodge"] == -1
    assert e.agent_selection == "blue_0"  # back to the attacker, one Minor left
    assert kinds(e) == {"move", "stance", "aim", "end_turn"}
    act(e, "end_turn")
    assert e.agent_selection == "blue_1"  # red 7 now acts after blue_1 8
    act(e, "end_turn")
    assert e.agent_selection == "red_0"
    act(e, "attack:blue_0")
    assert e.agent_selection == "blue_0"
    assert allowed(e) == {"react:none", "react:dodge"}
    act(e, "react:dodge")
    change = events(e, "initiative_change")[-1]
    assert (change["actor"], change["applies_to"]) == ("blue_0", "next_round")
    assert e.agent_selection == "red_0"
    act(e, "end_turn")
    # Round 2: red 9 (its change is over), blue_1 8 (DEX 8), blue_0 8 (DEX 7).
    order = []
    for _ in range(3):
        order.append(e.agent_selection)
        act(e, "end_turn")
    assert order == ["red_0", "blue_1", "blue_0"]
    round_2 = {ev["actor"]: ev["initiative"] for ev in events(e, "turn") if ev["round"] == 2}
    assert round_2 == {"red_0": 9, "blue_1": 8, "blue_0": 8}
    # Round 3: back to the rolled order.
    assert e.agent_selection == "blue_0"


def test_r3_7_recoil_costs_initiative_next_round():
    """R3.7: a rocket launcher (STR 12 requirement, DM +2) fired by STR 7 (DM 0) costs 2
    Initiative; the attacker has acted, so it applies next round (R3.4): blue 10 -> 8 falls
    behind red's 9 in round 2, and is back to 10 in round 3."""
    rocketeer = fighter((2, 5), weapon="rocket_launcher", skills={"heavy_weapons.portable": 1})
    e = make(one_v_one(rocketeer), [(5, 5), (4, 5), MISS])
    act(e, "attack:red_0")
    change = events(e, "initiative_change")[-1]
    assert fields(change, "actor", "change", "reason", "applies_to") == {
        "actor": "blue_0", "change": -2, "reason": "recoil", "applies_to": "next_round"}
    act(e, "end_turn")
    act(e, "end_turn")  # red
    assert (e.battle.round, e.agent_selection) == (2, "red_0")
    act(e, "end_turn")
    assert e.agent_selection == "blue_0"
    assert events(e, "turn")[-1]["initiative"] == 8
    act(e, "end_turn")
    assert (e.battle.round, e.agent_selection) == (3, "blue_0")
    assert events(e, "turn")[-1]["initiative"] == 10


# ---------------------------------------------------------------------------- illegal actions
@pytest.mark.parametrize(("factory", "options"), [(raw_env, {}),
                                                   (env, {"illegal_action": "raise"})])
def test_illegal_action_raises_naming_agent_label_and_reason(factory, options):
    """R4.1: attacking one's own side is illegal; the ValueError names agent, label, reason
    (``raw_env``'s default; ``env`` raises when asked)."""
    e = factory(one_v_one(), backend="python", **options)
    e.reset(options={"dice": ScriptedDice([(6, 6), (1, 1)])})
    with pytest.raises(ValueError, match="own side") as info:
        e.step(e.unwrapped.action_index("attack:blue_0"))
    message = str(info.value)
    assert "blue_0" in message and "'attack:blue_0'" in message
    assert e.agent_selection == "blue_0"  # nothing happened


def test_refused_action_changes_nothing_and_keeps_the_accumulated_reward():
    """R4.1, R6.1: a refused (raised) action leaves the environment as it was: blue_1's reward
    accumulated from blue_0's hit (shared damage_dealt) is still there for its retry."""
    sc = scenario([fighter((2, 5)), fighter((2, 7))], [fighter((12, 5))])
    sc["rewards"] = {"damage_dealt": 1.0}
    # blue_0 12, blue_1 2, red_0 3; blue_0 hits: 8, Effect 0, damage 1 + 2 + 3 = 6.
    e = make(sc, [(6, 6), (1, 1), (1, 2), (3, 3), (1, 2, 3)])
    act(e, "attack:red_0")
    act(e, "end_turn")
    act(e, "end_turn")  # red
    assert e.agent_selection == "blue_1"
    before = (e.last()[1], json.dumps(e.infos), len(e.battle.events), e.state().tolist())
    with pytest.raises(ValueError, match="own side"):
        act(e, "attack:blue_0")
    assert (e.last()[1], json.dumps(e.infos), len(e.battle.events), e.state().tolist()) == before
    assert before[0] == 6.0
    act(e, "end_turn")
    assert e.rewards["blue_1"] == 0.0


def test_illegal_action_in_haste_phase_names_r3_5():
    """R3.5: during declarations only haste:* is legal."""
    e = make("duel", seed=1)
    with pytest.raises(ValueError, match=r"haste.*R3\.5"):
        act(e, "end_turn")


@pytest.mark.parametrize("bad", [10_000, -1, 1.5, "0", True])
def test_out_of_range_or_non_integer_actions_are_refused(bad):
    """API (R2.1 action space): the action must be an int index into action_labels."""
    e = make(one_v_one(), [(6, 6), (1, 1)])
    with pytest.raises(ValueError, match="out of range"):
        e.step(bad)
    e.step(np.int64(e.action_index("end_turn")))  # NumPy integers are fine
    assert e.agent_selection == "red_0"


def test_none_is_refused_for_a_live_agent():
    """R2.3: a live selected agent must choose an action; None is only for dead steps."""
    e = make(one_v_one(), [(6, 6), (1, 1)])
    with pytest.raises(ValueError, match="None"):
        e.step(None)


def test_penalize_gives_minus_one_and_ends_the_turn():
    """R2.3 / R4.7: with illegal_action=penalize an illegal action earns -1 and forfeits the
    rest of the turn (recorded as an illegal_action event)."""
    e = make(one_v_one(), [(6, 6), (1, 1)], illegal_action="penalize")
    act(e, "aim:red_0")
    act(e, "reload")  # magazine not empty
    assert e.rewards == {"blue_0": -1.0, "red_0": 0.0}
    assert e.agent_selection == "red_0"
    illegal = events(e, "illegal_action")[-1]
    assert (illegal["actor"], illegal["label"]) == ("blue_0", "reload")
    assert events(e, "end_turn")[-1]["reason"] == "illegal action"
    act(e, "end_turn")
    assert e.agent_selection == "blue_0"
    assert e.last()[1] == -1.0  # accumulated until blue acts again


@pytest.mark.parametrize(("phase", "default"), [("haste", "haste"), ("reaction", "reaction")])
def test_penalize_takes_the_do_nothing_default_in_other_phases(phase, default):
    """R3.5 / R3.6: a forfeited declaration is haste:no, a forfeited reaction react:none."""
    sc = one_v_one(hastening=phase == "haste", reactions=phase == "reaction")
    rolls = [(6, 6), (1, 1)] + ([MISS] if phase == "reaction" else [])
    e = make(sc, rolls, illegal_action="penalize")
    if phase == "reaction":
        act(e, "attack:red_0")
    assert e.battle.phase == phase
    agent = e.agent_selection
    act(e, "end_turn" if phase == "reaction" else "attack:red_0")
    assert e.rewards[agent] == -1.0
    if default == "haste":
        assert events(e, "haste")[-1]["haste"] is False
    else:
        assert events(e, "reaction")[-1]["reaction"] == "none"
        assert events(e, "attack")[-1]["reaction"] == "none"


def test_dead_agent_must_step_none():
    """R6.3: an agent taken out terminates and must take its dead step with None; the
    selection then returns to the acting agent, whose info holds the fatal events."""
    blue = [fighter((2, 5), skills={"gun_combat.slug": 3}), fighter((2, 7))]
    red = [fighter((12, 5)), fighter((12, 7), chars=WEAK)]
    e = make(scenario(blue, red), [(6, 6), (1, 1), (1, 2), (1, 1), SURE_HIT, MAX_DAMAGE],
             terminate_on_knockout=True)
    act(e, "attack:red_1")
    assert e.terminations == {"blue_0": False, "blue_1": False, "red_0": False, "red_1": True}
    assert e.agent_selection == "red_1"
    assert not e.observe("red_1")["action_mask"].any()
    with pytest.raises(ValueError, match="None"):
        e.step(e.action_index("end_turn"))
    e.step(None)
    assert "red_1" not in e.agents
    assert e.agent_selection == "blue_0"
    info_types = [ev["type"] for ev in e.infos["blue_0"]["events"]]
    assert info_types == ["attack", "incapacitated"]
    assert "attack:red_1" not in allowed(e)  # R4.1: out of the fight


# ---------------------------------------------------------------------------- rewards and ends
def _kill_in_one_shot(rewards: dict | None = None):
    sc = one_v_one(red=fighter((12, 5), chars=WEAK))
    if rewards is not None:
        sc["rewards"] = rewards
    e = make(sc, [(6, 6), (1, 1), SURE_HIT, MAX_DAMAGE])
    act(e, "attack:red_0")
    return e


def _drain(e) -> dict[str, float]:
    """Take every dead step; return what ``last()`` reported to each agent."""
    seen = {}
    while e.agents:
        agent = e.agent_selection
        _, reward, term, trunc, _ = e.last()
        assert term or trunc
        seen[agent] = reward
        e.step(None)
    return seen


@pytest.mark.parametrize(("rewards", "win", "loss"), [(None, 1.0, -1.0),
                                                      ({"win": 2.5, "loss": -3.0}, 2.5, -3.0)])
def test_r8_2_win_and_loss_rewards(rewards, win, loss):
    """R8.2, R6.3: the last side standing wins: ``win`` to its agents, ``loss`` to the
    others (defaults +1 / -1); every agent terminates and takes its dead step."""
    e = _kill_in_one_shot(rewards)
    assert e.battle.winner == "blue"
    assert e.rewards == {"blue_0": win, "red_0": loss}
    assert all(e.terminations.values()) and not any(e.truncations.values())
    assert _drain(e) == {"blue_0": win, "red_0": loss}
    assert e.agents == []


@pytest.mark.parametrize(("rewards", "draw"), [(None, 0.0), ({"draw": 0.25}, 0.25)])
def test_r8_2_truncation_at_max_rounds_is_a_draw(rewards, draw):
    """R8.2: after max_rounds every agent is truncated (not terminated); the draw reward."""
    sc = one_v_one(max_rounds=2)
    if rewards is not None:
        sc["rewards"] = rewards
    e = make(sc, [(6, 6), (1, 1)])
    for _ in range(3):
        act(e, "end_turn")
    assert e.truncations == {"blue_0": False, "red_0": False}
    act(e, "end_turn")
    assert e.truncations == {"blue_0": True, "red_0": True}
    assert e.terminations == {"blue_0": False, "red_0": False}
    assert e.battle.truncated and e.battle.winner is None
    assert events(e, "end")[-1]["reason"] == "max_rounds"
    assert e.rewards == {"blue_0": draw, "red_0": draw}
    assert _drain(e) == {"blue_0": draw, "red_0": draw}


def test_r2_5_r8_2_mutual_elimination_in_a_tied_group_is_a_draw():
    """R2.5: blue_0 and red_0 tie; red_0, downed by blue_0 in their own group, still takes its
    turn and downs blue_0; both drop out when the group ends: nobody is left, a draw (R8.2)."""
    sc = one_v_one(fighter((2, 5), chars=WEAK | {"DEX": 7}), fighter((12, 5), chars=WEAK
                                                                       | {"DEX": 7}))
    sc["rewards"] = {"draw": -0.5}
    e = make(sc, [(4, 4), (4, 4), SURE_HIT, MAX_DAMAGE, SURE_HIT, MAX_DAMAGE])
    act(e, "attack:red_0")
    assert e.battle.by_id["red_0"].down
    assert e.terminations == {"blue_0": False, "red_0": False}
    act(e, "end_turn")
    assert e.agent_selection == "red_0"
    act(e, "attack:blue_0")
    assert not e.battle.done
    act(e, "end_turn")
    assert e.battle.done and e.battle.winner is None and not e.battle.truncated
    assert e.rewards == {"blue_0": -0.5, "red_0": -0.5}
    assert all(e.terminations.values())
    assert _drain(e) == {"blue_0": -0.5, "red_0": -0.5}


@pytest.mark.parametrize("shared", [True, False])
def test_damage_dealt_and_taken_rewards(shared):
    """R6.1: damage after armour earns damage_dealt per point for the attacker and
    damage_taken for the target; shared: the whole side gets its side's sum."""
    sc = scenario([fighter((2, 5)), fighter((2, 7))], [fighter((12, 5), armour="jack")])
    sc["rewards"] = {"damage_dealt": 1.0, "damage_taken": -0.5, "shared": shared}
    # blue_0 first; attack 3+3+2 = 8, Effect 0; damage 1+2+3 + 0 - jack 1 = 5.
    e = make(sc, [(6, 6), (1, 1), (1, 2), (3, 3), (1, 2, 3)])
    act(e, "attack:red_0")
    assert events(e, "attack")[-1]["damage"] == 5
    expected = {"blue_0": 5.0, "blue_1": 5.0 if shared else 0.0, "red_0": -2.5}
    assert e.rewards == expected
    act(e, "end_turn")
    assert e.rewards == dict.fromkeys(expected, 0.0)  # step rewards, not cumulative
    assert e._cumulative_rewards["blue_1"] == expected["blue_1"]


def test_rewards_for_both_damage_and_the_win_add_up():
    """R6.1 + R8.2: the fatal hit earns its damage and the win in the same step."""
    e = _kill_in_one_shot({"damage_dealt": 0.1, "damage_taken": -0.1})
    dmg = events(e, "attack")[-1]["damage"]
    assert dmg == 18 + 6  # 3D all sixes + Effect 6 (12 + 2)
    assert e.rewards["blue_0"] == pytest.approx(1.0 + 0.1 * dmg)
    assert e.rewards["red_0"] == pytest.approx(-1.0 - 0.1 * dmg)


def test_per_round_reward_when_a_new_round_begins():
    """R2.4: ``per_round`` goes to every agent when a new round begins (round 2 on)."""
    sc = one_v_one()
    sc["rewards"] = {"per_round": -0.05}
    e = make(sc, [(6, 6), (1, 1)])
    act(e, "end_turn")
    assert e.rewards == {"blue_0": 0.0, "red_0": 0.0}
    act(e, "end_turn")  # red ends round 1: round 2 begins
    assert e.battle.round == 2
    assert e.rewards == {"blue_0": -0.05, "red_0": -0.05}


def test_incapacitated_agent_terminates_while_the_battle_goes_on():
    """R6.3, R8.2, ``terminate_on_knockout=True``: one of two blues is taken out: it alone
    terminates (the battle goes on), takes its dead step, and the others play on."""
    red = fighter((12, 5), skills={"gun_combat.slug": 3})
    sc = scenario([fighter((2, 5)), fighter((2, 7), chars=WEAK)], [red])
    e = make(sc, [(1, 1), (1, 2), (6, 6), SURE_HIT, MAX_DAMAGE], terminate_on_knockout=True)
    act(e, "attack:blue_1")
    assert e.terminations == {"blue_0": False, "blue_1": True, "red_0": False}
    assert not e.battle.done
    assert e.infos["blue_1"]["events"][-1]["type"] == "incapacitated"
    assert e.last()[2] is True and e.agent_selection == "blue_1"
    e.step(None)
    assert e.agents == ["blue_0", "red_0"] and e.agent_selection == "red_0"
    act(e, "end_turn")
    assert e.agent_selection == "blue_0"


def test_an_incapacitated_agent_stays_until_the_battle_ends_by_default():
    """R6.3, R8.2, the default: blue_1 is taken out; nobody terminates while the battle goes
    on, blue_1 stays in ``agents`` but is never selected, and its rewards reach it in its dead
    step at the battle's end."""
    red = fighter((12, 5), skills={"gun_combat.slug": 3})
    sc = scenario([fighter((2, 5)), fighter((2, 7), chars=WEAK)], [red])
    sc["rewards"] = {"damage_taken": -0.5}
    e = make(sc, [(1, 1), (1, 2), (6, 6), SURE_HIT, MAX_DAMAGE])
    act(e, "attack:blue_1")
    assert not any(e.terminations.values()) and not e.battle.done
    assert e.battle.by_id["blue_1"].out and "blue_1" in e.agents
    knocked = e._cumulative_rewards["blue_1"]
    assert knocked < 0  # its damage, held for its final step
    act(e, "end_turn")
    seen = []
    for agent in e.agent_iter(10_000):
        _, reward, term, trunc, _ = e.last()
        seen.append(agent)
        if term or trunc:
            assert e.battle.done or e.battle.truncated
            if agent == "blue_1":
                assert term and reward == knocked
            e.step(None)
        else:
            assert agent != "blue_1"
            act(e, "end_turn")
    assert "blue_1" in seen and not e.agents


@pytest.mark.parametrize("name", ["squad", "melee", "ambush"])
def test_infos_hold_the_events_since_the_agents_previous_step(name):
    """infos[agent]["events"]: the battle events from the start of that agent's previous step
    (from the start of the battle before its first), JSON-serialisable, with phase and round."""
    e = raw_env(name, infos="events")
    e.reset(seed=5)
    mark: dict[str, int] = {}

    def check(env_, agent, obs):
        info = env_.infos[agent]
        assert info["events"] == env_.battle.events[mark.get(agent, 0):]
        assert (info["phase"], info["round"]) == (env_.battle.phase, env_.battle.round)
        json.dumps(info)
        assert env_.last()[4] is info
        mark[agent] = len(env_.battle.events)

    policy = RandomPolicy(9)
    for _ in range(400):
        if not e.agents:
            e.reset(seed=6)
            mark.clear()
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            check(e, agent, None)
            e.step(None)
            continue
        obs = e.observe(agent)
        check(e, agent, obs)
        e.step(policy.act(obs["observation"], obs["action_mask"], agent, e))


# ---------------------------------------------------------------------------- observations
@pytest.mark.parametrize("name", BUILTINS)
def test_observation_labels_state_and_spaces(name):
    """R5.1, R8.1 (observed quantities): the observation vector is labelled entry by entry;
    state() matches state_space and state_labels; both stay in their spaces after play."""
    e = raw_env(name)
    e.reset(seed=2)
    space = e.observation_space(e.possible_agents[0])
    for _ in range(2):
        for agent in e.agents:
            obs = e.observe(agent)
            assert obs["observation"].dtype == np.float32
            assert len(e.observation_labels) == obs["observation"].shape[0]
            assert space["observation"].shape == obs["observation"].shape
            assert space.contains(obs)
            slots = e.observation_slots(agent)
            assert agent not in slots
            assert {s for s in slots if s is not None} == set(e.possible_agents) - {agent}
            assert sum(lab.endswith(".present") for lab in e.observation_labels) == len(slots)
        state = e.state()
        assert state.shape == e.state_space.shape == (len(e.state_labels),)
        assert e.state_space.contains(state)
        assert len(set(e.state_labels)) == len(e.state_labels)
        assert len(set(e.observation_labels)) == len(e.observation_labels)
        play_random(e, policy_seed=1, steps=40)


def test_observation_slots_allies_then_enemies_padded():
    """R2.5 scenario order: slots hold allies in scenario order (self excluded) then enemies,
    each padded to the larger side (2v1: one ally slot, two enemy slots); ``present`` marks
    filled slots."""
    sc = scenario([fighter((2, 5)), fighter((2, 7))], [fighter((12, 5))])
    e = make(sc, [(6, 6), (3, 3), (1, 1)])
    assert e.observation_slots("blue_0") == ["blue_1", "red_0", None]
    assert e.observation_slots("blue_1") == ["blue_0", "red_0", None]
    assert e.observation_slots("red_0") == [None, "blue_0", "blue_1"]
    labels = e.observation_labels
    assert [lab for lab in labels if lab.endswith(".present")] == [
        "ally0.present", "enemy0.present", "enemy1.present"]
    assert labels[0] == "self.x"
    assert [obs_field(e, "blue_0", f"{s}.present") for s in ("ally0", "enemy0", "enemy1")] == [
        1.0, 1.0, 0.0]
    assert [obs_field(e, "red_0", f"{s}.present") for s in ("ally0", "enemy0", "enemy1")] == [
        0.0, 1.0, 1.0]
    assert obs_field(e, "blue_0", "enemy0.dx") == pytest.approx(10 / 20)
    assert obs_field(e, "red_0", "enemy1.dy") == pytest.approx(2 / 10)
    assert obs_field(e, "blue_0", "enemy0.band_short") == 1.0
    with pytest.raises(ValueError, match="unknown agent"):
        e.observation_slots("green_0")


def test_state_marks_the_deciding_agent():
    """R2.3: state() has one block per combatant; ``deciding`` follows the selection."""
    e = make(one_v_one(), [(6, 6), (1, 1)])
    labels = e.state_labels
    state = e.state()
    assert state[labels.index("blue_0.deciding")] == 1.0
    assert state[labels.index("red_0.deciding")] == 0.0
    assert state[labels.index("phase_turn")] == 1.0
    act(e, "end_turn")
    state = e.state()
    assert state[labels.index("red_0.deciding")] == 1.0
