"""Behaviour statistics (``traveller_rl.behaviour``, ``traveller behaviour``): exact counts on
hand-built event logs over small maps, the replay against the engine's own state, and real
battles of scripted policies whose behaviour is known."""

from __future__ import annotations

import json
import math

import pytest
from conftest import fighter, scenario

from traveller_agents.registry import make_policy
from traveller_cli import main
from traveller_env.env import TravellerEnv
from traveller_env.rules.events import check_event
from traveller_rl.behaviour import (
    COUNTS,
    DESCRIPTORS,
    BattleStart,
    BehaviourTally,
    _Replay,
    behaviour_stats,
    format_behaviour,
    tally_battle,
)
from traveller_rl.evaluation import evaluate_matchup, play_battle

VITALS = 21  # STR + DEX + END of conftest's average fighter


# ---------------------------------------------------------------------------- log builders
def ev(kind: str, **fields) -> dict:
    """An event of ``kind`` with every field of the vocabulary, in log order (unset: None)."""
    from traveller_env.rules.events import EVENT_KINDS

    event = {"type": kind, **{f: fields.pop(f, None) for f in EVENT_KINDS[kind].fields}}
    assert not fields, f"not fields of {kind}: {fields}"
    assert check_event(event) is None
    return event


def turn(actor, rnd=1):
    return ev("turn", actor=actor, initiative=7, round=rnd)


def end_turn(actor):
    return ev("end_turn", actor=actor, reason="chosen")


def stance(actor, frm, to):
    return ev("stance", actor=actor, **{"from": frm, "to": to})


def move(actor, frm, to):
    return ev("move", actor=actor, metres=1.5, **{"from": list(frm), "to": list(to)})


def attack(actor, target, apos, tpos, after=VITALS, damage=0, melee=False, dms=None):
    """An attack leaving the target with STR + DEX + END = ``after`` (taken from END)."""
    return ev("attack", actor=actor, target=target, weapon="autorifle", damage_dice="3D",
              melee=melee, range_m=0.0, actor_pos=list(apos), target_pos=list(tpos),
              ammo_left=None if melee else 10, reaction="none", roll=[3, 4], dms=dms or {},
              total=7, effect=-1, hit=damage > 0, damage_roll=None, damage=damage, protection=0,
              target_after={"STR": 7, "DEX": 7, "END": after - 14})


def down(actor, by):
    return ev("incapacitated", actor=actor, by=by, state="unconscious",
              stays_until_group_ends=False)


def end(winner="blue"):
    return ev("end", round=1, winner=winner, reason="victory" if winner else "max_rounds")


def layout_of(blue, red, **kw) -> BattleStart:
    return BattleStart.from_scenario(scenario([fighter(p) for p in blue], [fighter(p) for p in red],
                                         **kw))


# ---------------------------------------------------------------------------- stance and turns
def test_a_seat_that_ends_every_turn_prone_scores_prone_share_one():
    lay = layout_of([(0, 0)], [(9, 0)])
    log = [turn("blue_0"), stance("blue_0", "stand", "prone"), end_turn("blue_0"),
           turn("red_0"), stance("red_0", "stand", "crouch"), end_turn("red_0"),
           turn("blue_0", 2), end_turn("blue_0"),  # still prone: it never stood up
           turn("red_0", 2), stance("red_0", "crouch", "stand"), end_turn("red_0"), end()]
    blue = tally_battle(log, lay, 0).descriptors()
    assert (blue["prone_share"], blue["crouch_share"]) == (1.0, 0.0)
    red = tally_battle(log, lay, 1)
    assert (red.turns, red.turns_crouch, red.turns_prone) == (2, 1, 0)
    assert red.descriptors()["crouch_share"] == 0.5


def test_the_stance_at_the_end_of_the_turn_counts_not_in_between():
    lay = layout_of([(0, 0)], [(9, 0)])
    log = [turn("blue_0"), stance("blue_0", "stand", "prone"), stance("blue_0", "prone", "stand"),
           end_turn("blue_0"), end()]
    assert tally_battle(log, lay, 0).turns_prone == 0


def test_a_turn_cut_short_by_the_battle_end_counts_without_a_cover_question():
    lay = layout_of([(0, 0)], [(1, 0)])
    log = [turn("blue_0"), stance("blue_0", "stand", "crouch"),
           attack("blue_0", "red_0", (0, 0), (1, 0), after=0, damage=21), down("red_0", "blue_0"),
           end("blue")]
    t = tally_battle(log, lay, 0)
    assert (t.turns, t.turns_crouch, t.turns_with_enemy, t.wins) == (1, 1, 0, 1)
    assert math.isnan(t.descriptors()["in_cover_share"])


# ---------------------------------------------------------------------------- distance
def test_distance_kept_is_the_mean_distance_to_the_nearest_living_enemy_at_turn_start():
    lay = layout_of([(0, 0)], [(3, 4), (9, 4)])
    log = [turn("blue_0"), end_turn("blue_0"),  # nearest red_0: 5 squares = 7.5 m
           down("red_0", "blue_0"),
           turn("blue_0", 2), end_turn("blue_0"),  # red_0 down: red_1, hypot(9, 4) squares
           end()]
    t = tally_battle(log, lay, 0)
    assert t.distance_turns == 2
    assert t.descriptors()["distance_m"] == pytest.approx((7.5 + math.hypot(9, 4) * 1.5) / 2)


def test_distance_follows_moves():
    lay = layout_of([(0, 0)], [(6, 0)])
    log = [turn("blue_0"), move("blue_0", (0, 0), (2, 0)), end_turn("blue_0"),
           turn("red_0"), move("red_0", (6, 0), (4, 0)), end_turn("red_0"),
           turn("blue_0", 2), end_turn("blue_0"), end()]
    assert tally_battle(log, lay, 0).descriptors()["distance_m"] == pytest.approx((9 + 3) / 2)
    assert tally_battle(log, lay, 1).descriptors()["distance_m"] == pytest.approx(6.0)


# ---------------------------------------------------------------------------- cover
COVER_MAP = ["..........",
             "..........",
             ".....c....",
             "..........",
             ".....#...."]


def test_moves_toward_cover_and_time_in_cover():
    lay = layout_of([(0, 2)], [(9, 2)], width=10, height=5, terrain=COVER_MAP)
    grid = lay.grid  # the map's own answers: (4, 2) is behind the low wall at (5, 2)
    assert grid.cover_between((9, 2), (4, 2)) and not grid.cover_between((9, 2), (2, 2))
    log = [turn("blue_0"), move("blue_0", (0, 2), (2, 2)), move("blue_0", (2, 2), (4, 2)),
           end_turn("blue_0"),  # standing behind cover: not in cover (R5.3)
           turn("blue_0", 2), stance("blue_0", "stand", "crouch"), end_turn("blue_0"),
           turn("blue_0", 3), move("blue_0", (4, 2), (4, 1)), end_turn("blue_0"),  # out again
           end()]
    t = tally_battle(log, lay, 0)
    assert (t.moves, t.moves_to_cover) == (3, 1)
    assert (t.turns, t.turns_with_enemy, t.turns_in_cover) == (3, 3, 1)
    d = t.descriptors()
    assert d["cover_moves"] == pytest.approx(1 / 3) and d["in_cover_share"] == pytest.approx(1 / 3)


def test_out_of_sight_behind_a_wall_counts_as_cover_standing_or_not():
    lay = layout_of([(2, 4)], [(9, 4)], width=10, height=5, terrain=COVER_MAP)
    assert not lay.grid.line_of_sight((9, 4), (4, 4))
    log = [turn("blue_0"), move("blue_0", (2, 4), (4, 4)), end_turn("blue_0"), end()]
    t = tally_battle(log, lay, 0)
    assert (t.moves_to_cover, t.turns_in_cover) == (0, 1)  # (2, 4) was already out of sight
    assert lay.grid.line_of_sight((2, 4), (8, 2))
    log = [turn("red_0"), move("red_0", (9, 4), (8, 3)), move("red_0", (8, 3), (8, 2)),
           end_turn("red_0"), end()]
    t = tally_battle(log, lay, 1)  # red steps out of the wall's shadow into blue's sight
    assert (t.moves, t.moves_to_cover, t.turns_in_cover) == (2, 0, 0)


def test_cover_from_more_enemies_is_better_cover_and_time_in_cover_asks_the_nearest():
    lay = layout_of([(4, 1)], [(9, 2), (0, 2)], width=10, height=5, terrain=COVER_MAP)
    g = lay.grid
    assert g.cover_between((9, 2), (4, 2)) and not g.cover_between((0, 2), (4, 2))
    assert not g.cover_between((9, 2), (4, 1)) and not g.cover_between((0, 2), (4, 1))
    log = [turn("blue_0"), move("blue_0", (4, 1), (4, 2)), stance("blue_0", "stand", "prone"),
           end_turn("blue_0"), end()]
    t = tally_battle(log, lay, 0)
    # shielded from red_0 now (1 enemy against 0): toward cover; but the nearest enemy is
    # red_1 (4 squares against 5), with a clear line: not in cover
    assert (t.moves_to_cover, t.turns_in_cover, t.turns_prone) == (1, 0, 1)


# ---------------------------------------------------------------------------- focus fire
def test_focus_fire_counts_attacks_on_the_most_wounded_visible_enemy():
    lay = layout_of([(0, 0)], [(5, 0), (5, 2), (5, 4)])
    b, r0, r1 = (0, 0), (5, 0), (5, 2)  # red_2 at (5, 4): in sight, never hurt
    log = [turn("blue_0"),
           attack("blue_0", "red_0", b, r0, after=VITALS - 5, damage=5),  # nobody hurt: no choice
           attack("blue_0", "red_0", b, r0, after=VITALS - 8, damage=3),  # the most hurt: focus
           attack("blue_0", "red_1", b, r1, after=VITALS - 2, damage=2),  # not the most hurt
           down("red_0", "blue_0"),
           attack("blue_0", "red_1", b, r1, after=VITALS - 4, damage=2),  # red_1 now most hurt
           end_turn("blue_0"), end()]
    t = tally_battle(log, lay, 0)
    assert (t.attacks, t.focus_choices, t.focus_attacks) == (4, 3, 2)
    assert t.descriptors()["focus_fire"] == pytest.approx(2 / 3)
    assert (t.damage_dealt, t.shots) == (12, 4)
    assert tally_battle(log, lay, 1).damage_taken == 12


def test_hit_rate_and_cover_met_by_shots_both_ways():
    """R5.3: an attack on a target in cover carries the cover DM; hit_rate and
    shots_into_cover count the side's ranged attacks, fired_on_in_cover the enemy's ranged
    attacks on it; melee attacks count in neither."""
    lay = layout_of([(0, 0)], [(5, 0)])
    b, r = (0, 0), (5, 0)
    log = [turn("blue_0"),
           attack("blue_0", "red_0", b, r, after=VITALS - 3, damage=3, dms={"cover": -2}),
           attack("blue_0", "red_0", b, r, after=VITALS - 3, damage=0),
           attack("blue_0", "red_0", b, r, after=VITALS - 5, damage=2),
           end_turn("blue_0"), turn("red_0"),
           attack("red_0", "blue_0", r, b, after=VITALS - 1, damage=1, dms={"cover": -2}),
           attack("red_0", "blue_0", r, b, after=VITALS - 1, damage=0, melee=True,
                  dms={"cover": -2}),
           end_turn("red_0"), end()]
    blue = tally_battle(log, lay, 0).descriptors()
    assert blue["hit_rate"] == pytest.approx(2 / 3)
    assert blue["shots_into_cover"] == pytest.approx(1 / 3)
    assert blue["fired_on_in_cover"] == 1.0
    red = tally_battle(log, lay, 1).descriptors()
    assert red["hit_rate"] == 1.0 and red["shots_into_cover"] == 1.0
    assert red["fired_on_in_cover"] == pytest.approx(1 / 3)


def test_an_enemy_out_of_sight_is_no_choice():
    terrain = ["......", "......", "..#...", "......"]
    lay = layout_of([(0, 2)], [(5, 0), (3, 3)], width=6, height=4, terrain=terrain)
    g = lay.grid
    assert g.line_of_sight((0, 2), (3, 3)) and not g.line_of_sight((0, 2), (4, 3))
    b, r0 = (0, 2), (5, 0)
    log = [turn("blue_0"), attack("blue_0", "red_1", b, (3, 3), after=VITALS - 4, damage=4),
           end_turn("blue_0"),  # nobody hurt yet: no choice
           turn("red_1"), move("red_1", (3, 3), (4, 3)), end_turn("red_1"),  # out of sight
           turn("blue_0", 2), attack("blue_0", "red_0", b, r0, after=VITALS - 2, damage=2),
           end_turn("blue_0"),  # the hurt red_1 is out of sight: red_0 is the only choice
           turn("red_1", 2), move("red_1", (4, 3), (3, 3)), end_turn("red_1"),  # back in sight
           turn("blue_0", 3), attack("blue_0", "red_0", b, r0, after=VITALS - 5, damage=3),
           end_turn("blue_0"),  # red_1 (4 taken) is in sight and more hurt than red_0 (2)
           end()]
    t = tally_battle(log, lay, 0)
    assert (t.attacks, t.focus_choices, t.focus_attacks) == (3, 1, 0)


# ---------------------------------------------------------------------------- counts
def test_aims_reloads_leadership_bonuses_and_outcome():
    lay = layout_of([(0, 0), (0, 2)], [(9, 0)])
    log = [turn("blue_0"),
           ev("leadership", actor="blue_0", roll=[5, 5], dms={}, total=10, effect=2, bonuses=2,
              penalties=0),
           ev("bonus_granted", actor="blue_0", target="blue_1"),
           ev("bonus_granted", actor="blue_0", target="blue_0"),
           end_turn("blue_0"),
           turn("blue_1"), ev("aim", actor="blue_1", target="red_0", aim=1),
           ev("aim", actor="blue_1", target="red_0", aim=2),
           attack("blue_1", "red_0", (0, 2), (9, 0)),
           ev("reload", actor="blue_1", weapon="autorifle", progress=1, needed=2, done=False),
           end_turn("blue_1"),
           turn("red_0"), ev("aim", actor="red_0", target="blue_0", aim=1), end_turn("red_0"),
           turn("blue_1", 2),
           ev("reload", actor="blue_1", weapon="autorifle", progress=2, needed=2, done=True),
           attack("blue_1", "red_0", (0, 2), (9, 0), melee=True), end_turn("blue_1"),
           end(None)]
    t = tally_battle(log, lay, 0)
    assert (t.turns, t.aims, t.attacks, t.shots, t.reloads) == (3, 2, 2, 1, 1)
    assert (t.leadership_checks, t.bonuses_granted, t.wins, t.draws) == (1, 2, 0, 1)
    d = t.descriptors()
    assert d["aims_per_shot"] == 1.0 and d["leadership_per_turn"] == pytest.approx(1 / 3)
    assert d["draw_rate"] == 1.0 and d["win_rate"] == 0.0
    red = tally_battle(log, lay, 1)
    assert (red.aims, red.turns, red.draws) == (1, 1, 1)
    assert math.isnan(red.descriptors()["aims_per_shot"])  # no attack: undefined, not 0


def test_reactions_aims_lost_and_turns_ended_early():
    """R3.6 reactions (dodge or parry against none), R4.3 aims broken before an attack spends
    them, and turns ended by choice rather than by a spent budget (R2.1, R2.3)."""
    lay = layout_of([(0, 0)], [(9, 0)])
    log = [turn("blue_0"), ev("aim", actor="blue_0", target="red_0", aim=1),
           ev("aim", actor="blue_0", target="red_0", aim=2), end_turn("blue_0"),
           turn("red_0"), ev("reaction", actor="blue_0", reaction="dodge", attacker="red_0"),
           ev("aim_lost", actor="blue_0", target="red_0"),
           attack("red_0", "blue_0", (9, 0), (0, 0), dms={"dodge": -1}),
           ev("end_turn", actor="red_0", reason="budget spent"),
           turn("blue_0", 2), ev("aim", actor="blue_0", target="red_0", aim=1),
           attack("blue_0", "red_0", (0, 0), (9, 0)),
           ev("reaction", actor="red_0", reaction="none", attacker="blue_0"),
           ev("end_turn", actor="blue_0", reason="budget spent"),
           turn("red_0", 2), ev("reaction", actor="blue_0", reaction="none", attacker="red_0"),
           attack("red_0", "blue_0", (9, 0), (0, 0)), end_turn("red_0"), end()]
    blue, red = tally_battle(log, lay, 0), tally_battle(log, lay, 1)
    assert (blue.reactions, blue.reacted, blue.aims, blue.aims_lost) == (2, 1, 3, 1)
    assert (blue.turns, blue.turns_ended_early) == (2, 1)
    d = blue.descriptors()
    assert d["reacted_share"] == 0.5 and d["aims_lost_share"] == pytest.approx(1 / 3)
    assert d["turns_ended_early"] == 0.5
    assert (red.reactions, red.reacted, red.turns_ended_early, red.turns) == (1, 0, 1, 2)
    assert math.isnan(red.descriptors()["aims_lost_share"])  # no aim: undefined


def test_tallies_add_up_and_descriptors_are_ratios_of_sums():
    lay = layout_of([(0, 0)], [(9, 0)])
    prone = [turn("blue_0"), stance("blue_0", "stand", "prone"), end_turn("blue_0"), end()]
    stand = [turn("blue_0"), end_turn("blue_0"), turn("blue_0", 2), end_turn("blue_0"),
             turn("blue_0", 3), end_turn("blue_0"), end("red")]
    total = BehaviourTally()
    total += tally_battle(prone, lay, 0)
    total += tally_battle(stand, lay, 0)
    d = total.descriptors()
    assert (total.battles, total.turns, total.wins) == (2, 4, 1)
    assert d["prone_share"] == 0.25 and d["win_rate"] == 0.5
    assert set(d) == set(DESCRIPTORS) and set(total.counts()) == set(COUNTS)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("log", "side", "message"), [
    ([turn("green_0"), end()], 0, "actor 'green_0' is not a combatant"),
    ([move("blue_0", (3, 3), (4, 3)), end()], 0, "differs from blue_0's square"),
    ([attack("blue_0", "red_0", (0, 0), (8, 0)), end()], 1, "target_pos [8, 0] differs"),
    ([turn("blue_0"), end_turn("blue_0")], 0, "no 'end' event"),
    ([end("green")], 0, "winner 'green' is not a side"),
    ([end()], 2, "side must be 0..1"),
])
def test_a_log_that_does_not_fit_the_layout_is_refused_by_name(log, side, message):
    lay = layout_of([(0, 0)], [(9, 0)])
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tally_battle(log, lay, side)


def test_behaviour_stats_refuses_bad_arguments():
    with pytest.raises(ValueError, match="battles"):
        behaviour_stats("rush", "duel", "marksman", battles=0)
    with pytest.raises(ValueError, match="unknown policy"):
        behaviour_stats("rush", "duel", "nope", battles=1)
    with pytest.raises(ValueError, match="at least one opponent"):
        behaviour_stats("rush", "duel", [], battles=1)


# ---------------------------------------------------------------------------- real battles
def test_the_replay_ends_where_the_engine_ends():
    """Positions, stances, STR + DEX + END and incapacitation replayed from the log equal the
    Python engine's own at the end of real squad battles (movers, crouchers, shooters)."""
    env = TravellerEnv("squad")
    lay = BattleStart.from_scenario("squad")
    for seed, (a, b) in enumerate([("tactician", "cover"), ("rush", "cover")]):
        policies = {ag: make_policy(a if env.side_of(ag) == 0 else b) for ag in env.possible_agents}
        battle = play_battle(env, policies, 100 + seed)
        replay = _Replay(lay)
        for i, event in enumerate(battle.events):
            replay.apply(i, event)
        for c in battle.combatants:
            seat = replay.by_id[c.id]
            assert (seat.pos, seat.stance, seat.down) == (tuple(c.pos), c.stance, c.down)
            assert seat.vitals == sum(c.chars[k] for k in ("STR", "DEX", "END"))


def test_rush_keeps_less_distance_than_marksman_and_only_cover_gets_down():
    """Real squad battles against ``marksman``: ``rush`` closes in (its spare Minor action
    moves it toward the nearest enemy) where ``marksman`` holds its ground or backs away, so
    rush starts its turns nearer the enemy (over 20 windows of 6 battles, seeds 0-19,000:
    rush 27.9-32.6 m, marksman 37.0-37.6 m). Neither ever changes stance; ``cover`` ends
    every turn crouched and 95-100% of them in cover, and 64-82% of its moves go toward
    cover; only marksman aims (0.80-0.98 aims per shot; rush never aims)."""
    rows = {p: behaviour_stats(p, "squad", "marksman", battles=3, seed=5000)
            for p in ("rush", "marksman", "cover")}
    rush, marksman, cover = rows["rush"], rows["marksman"], rows["cover"]
    assert rush["distance_m"] < marksman["distance_m"] - 3.0
    assert rush["prone_share"] == rush["crouch_share"] == 0.0
    assert marksman["prone_share"] == marksman["crouch_share"] == 0.0
    assert cover["crouch_share"] > 0.8 and cover["in_cover_share"] > 0.8
    assert cover["cover_moves"] > 0.5
    assert rush["aims_per_shot"] == 0.0 and marksman["aims_per_shot"] > 0.5
    assert marksman["leadership_per_turn"] == 0.0 == marksman["bonuses_per_battle"]
    assert all(r["battles"] == 6 for r in rows.values())


def test_outcomes_match_the_evaluation_and_both_engines_agree():
    """The same battles on the compiled core and the Python engine give the same statistics;
    the wins are ``evaluate_matchup``'s; opponents are kept apart in ``by_opponent``."""
    core = behaviour_stats("marksman", "squad", ["rush", "passive"], battles=2, seed=77,
                           backend="core")
    python = behaviour_stats("marksman", "squad", ["rush", "passive"], battles=2, seed=77,
                             backend="python")
    assert json.dumps(core) == json.dumps(python)
    assert core["battles"] == 8 and list(core["by_opponent"]) == ["rush", "passive"]
    ev_rush = evaluate_matchup(make_policy("marksman"), make_policy("rush"), "squad",
                               battles=4, seed=77)
    assert core["by_opponent"]["rush"]["win_rate"] == ev_rush["win_rate"]
    assert core["by_opponent"]["passive"]["win_rate"] == 1.0
    assert core["counts"]["wins"] == ev_rush["wins"] + 4


def test_by_side_splits_the_battles_by_the_side_the_policy_played():
    """``by_side`` holds the same battles as the total, split by the side played (sides
    alternate, so each gets ``battles`` per opponent): counts summed over the sides are the
    total's, and a side's win rate is its own battles' (checked against the evaluation)."""
    r = behaviour_stats("marksman", "squad", ["rush", "cover"], battles=3, seed=91)
    sides = r["by_side"]
    assert list(sides) == ["blue", "red"]
    assert [s["battles"] for s in sides.values()] == [6, 6]
    total_wins = sum(round(s["win_rate"] * s["battles"]) for s in sides.values())
    assert total_wins == r["counts"]["wins"]
    shots = sum(s["shots_per_battle"] * s["battles"] for s in sides.values())
    assert shots == pytest.approx(r["counts"]["shots"])
    ev = evaluate_matchup(make_policy("marksman"), make_policy("rush"), "squad", battles=6,
                          seed=91)
    ev_cover = evaluate_matchup(make_policy("marksman"), make_policy("cover"), "squad",
                                battles=6, seed=91)
    for side in ("blue", "red"):
        wins = ev["by_side"][side]["wins"] + ev_cover["by_side"][side]["wins"]
        assert round(sides[side]["win_rate"] * 6) == wins


def test_format_behaviour_marks_undefined_cells():
    row = {"policy": "p", "battles": 2, **BehaviourTally(battles=2).descriptors()}
    md = format_behaviour([row], markdown=True).splitlines()
    assert len(md) == 3 and md[0].startswith("| policy | battles | win |")
    cells = dict(zip(md[0].strip("| ").split(" | "), md[2].strip("| ").split(" | "), strict=True))
    assert cells["win"] == "0.00" and cells["dealt"] == "0.0"  # 0 of 2 battles
    assert cells["prone"] == cells["focus"] == cells["dist m"] == "-"  # no turn, no attack
    text = format_behaviour([row]).splitlines()
    assert text[0].split()[:3] == ["policy", "battles", "win"] and text[1].split()[:2] == ["p", "2"]


# ---------------------------------------------------------------------------- the command
def test_the_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["behaviour", "--scenario", "duel", "--policies", "marksman,passive",
                 "--vs", "rush", "--battles", "1", "--json", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["policy", "marksman", "passive"]
    data = json.loads(out.read_text())
    assert data["descriptors"] == list(DESCRIPTORS) and data["battles_per_side"] == 1
    passive = data["policies"][1]
    assert passive["policy"] == "passive" and passive["focus_fire"] is None  # NaN -> null
    assert data["command"].startswith("traveller behaviour --scenario duel")


def test_the_command_prints_a_row_per_side_when_asked(capsys):
    assert main(["behaviour", "--scenario", "duel", "--policies", "marksman", "--vs", "rush",
                 "--battles", "2", "--markdown", "--by-side", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.strip("| ").split(" | ") for ln in lines[2:]]
    assert [r[0] for r in rows] == ["marksman as blue", "marksman as red"]
    assert [r[1] for r in rows] == ["2", "2"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--policies", "rush,nope"], "unknown policy 'nope'"),
    (["--policies", "rush", "--battles", "0"], "--battles: must be an integer >= 1"),
    (["--policies", "rush,rush"], "policy listed twice"),
])
def test_the_command_refuses_bad_input_by_name(argv, message, capsys):
    try:
        status = main(["behaviour", *argv, "--no-progress"])
    except SystemExit as exc:  # a value its argument type refuses: argparse exits
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
