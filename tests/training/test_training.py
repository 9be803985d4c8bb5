"""The exact aiming optimum (R4.3, R5), evaluation statistics, and smoke runs of every
training script and of ``traveller eval`` at a tiny budget."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from traveller_agents.aiming import AimProblem, outcome_distribution, problem_from_battle, solve
from traveller_env.rules.dice import parse_dice
from traveller_env.scenario import build_battle
from traveller_rl.evaluation import aims_before_first_shot, mean_interval, wilson_interval


# ------------------------------------------------------------------ value iteration (R4.3)
def test_one_sure_hit_always_incapacitates_in_one_round_without_aiming():
    """R6: a hit that always knocks the target out; any hit chance of 1 means one round and
    no aim (ties go to firing at once)."""
    sol = solve(AimProblem(base_dm=20, damage=parse_dice("1D"), protection=0, target=(1, 1, 1)))
    assert sol.expected_rounds == pytest.approx(1.0)
    assert sol.aims_before_first_shot() == 0


def test_an_impossible_shot_never_ends():
    """R1.2: with every DM so low that 2D+DM+6 < 8 the target is never hit: infinite rounds,
    and the policy does not fire."""
    sol = solve(AimProblem(base_dm=-20, damage=parse_dice("1D"), protection=0, target=(1, 1, 1)))
    assert math.isinf(sol.expected_rounds)


def test_one_hit_kills_with_aim_worth_one_minor_action():
    """R2.1 + R4.3: one Minor and one Significant per round. If one hit always incapacitates and
    the chance of a hit is p(aim), the best plan aims once per round (a free Minor) then fires:
    the expected rounds are 1 / p(+1 aim) from round 1, then 1 / p(+2) etc. once aim carries
    over. With DM +0 (2D >= 8: 15/36), +1 (21/36): expected rounds = 36/21 if the aim resets
    after a miss (R4.3: the attack spends it)."""
    problem = AimProblem(base_dm=0, damage=parse_dice("1D+20"), protection=0, target=(7, 7, 7))
    sol = solve(problem)
    # Each round: aim (+1, the free Minor), fire at 21/36; a miss spends the aim.
    assert sol.expected_rounds == pytest.approx(36 / 21)
    assert sol.aims_before_first_shot() == 1


def test_outcome_distribution_is_a_distribution_with_the_exact_miss_chance():
    """R1.2, R6.1: P(damage 0) includes exactly the miss chance (2D + DM < 8)."""
    problem = AimProblem(base_dm=-1, damage=parse_dice("3D"), protection=0, target=(7, 7, 7))
    dist = outcome_distribution(problem, aim=0)
    assert sum(dist.values()) == pytest.approx(1.0)
    assert dist[0] == pytest.approx(26 / 36)  # 2D - 1 >= 8 needs 9+: 10/36 hit


def test_optimum_matches_simulated_battles_of_the_engine():
    """The value iteration uses the engine's own DMs: its expected rounds agree with 300
    seeded battles of the optimal policy within 4 standard errors."""
    from traveller_agents.aiming import OptimalAimPolicy
    from traveller_env import raw_env
    from traveller_env.policy import PassivePolicy
    from traveller_rl.evaluation import play_battle

    sol = solve(problem_from_battle(build_battle("range_short", seed=0), "blue_0", "red_0"))
    env = raw_env("range_short")
    policies = {"blue_0": OptimalAimPolicy(), "red_0": PassivePolicy()}
    rounds = [play_battle(env, policies, s).round for s in range(300)]
    se = np.std(rounds, ddof=1) / np.sqrt(len(rounds))
    assert abs(np.mean(rounds) - sol.expected_rounds) < 4 * se


# ------------------------------------------------------------------ statistics
def test_wilson_interval_known_values():
    """Wilson 95% for 8/10 is (0.490, 0.943); 0/0 is the whole range; always contains p."""
    lo, hi = wilson_interval(8, 10)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for k, n in ((0, 5), (5, 5), (37, 100)):
        lo, hi = wilson_interval(k, n)
        assert lo <= k / n <= hi


def test_a_matchup_splits_its_counts_by_the_side_played():
    """Sides alternate by battle (even battles on the first side); ``by_side`` counts each
    side's battles apart and they add up to the totals, with their own intervals."""
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import evaluate_matchup, matchup_counts

    seen = []
    row = evaluate_matchup(make_policy("marksman"), make_policy("rush"), "duel", battles=7,
                           seed=3, on_battle=lambda i, b, side: seen.append(
                               (side, b.winner)))
    assert list(row["by_side"]) == ["blue", "red"]
    blue, red = row["by_side"]["blue"], row["by_side"]["red"]
    assert (blue["battles"], red["battles"]) == (4, 3)
    for name, side in (("blue", 0), ("red", 1)):
        mine = [w for s, w in seen if s == side]
        assert row["by_side"][name]["wins"] == sum(w == name for w in mine)
        assert row["by_side"][name]["draws"] == sum(w is None for w in mine)
    for key in ("battles", "wins", "draws", "losses"):
        assert blue[key] + red[key] == row[key]
    assert blue["win_ci95"] == list(wilson_interval(blue["wins"], 4))
    assert matchup_counts([blue, red]) == {k: row[k] for k in matchup_counts([blue, red])}


def test_mean_interval_known_values():
    """Normal 95% interval: mean 2, sd 1, n 4 -> 2 ± 1.96 * 0.5."""
    mean, lo, hi = mean_interval([1, 2, 2, 3])
    assert mean == 2
    assert hi - mean == pytest.approx(1.959964 * np.std([1, 2, 2, 3], ddof=1) / 2, rel=1e-5)
    assert lo == pytest.approx(2 * mean - hi)


def test_aims_before_first_shot_counts_only_the_shooters_aims():
    events = [{"type": "aim", "actor": "a"}, {"type": "aim", "actor": "b"},
              {"type": "aim", "actor": "a"}, {"type": "attack", "actor": "a"},
              {"type": "aim", "actor": "a"}]
    assert aims_before_first_shot(events, "a") == 2
    assert aims_before_first_shot(events, "c") is None


# ------------------------------------------------------------------ smoke runs
@pytest.fixture
def runs(tmp_path):
    return tmp_path / "runs"


def test_train_aiming_smoke(runs, capsys):
    """A tiny run writes every artifact, and the saved model evaluates via `traveller eval`."""
    from traveller_rl.recipes import aiming

    run = aiming.train_sb3(aiming.Args(
        total_timesteps=256, n_steps=64, batch_size=64, n_epochs=1, eval_battles=2,
        runs_dir=str(runs), bands="short,extreme"))
    for name in ("model.zip", "model.meta.json", "config.json", "evaluation.json",
                 "learning_curve.png", "monitor.csv"):
        assert (run / name).is_file(), name
    assert list((run / "tb").rglob("events.out.tfevents*")), "no TensorBoard log"
    evaluation = json.loads((run / "evaluation.json").read_text())
    assert {r["scenario"] for r in evaluation["range"]} == {"range_short", "range_extreme"}
    assert {r["opponent"] for r in evaluation["duel"]} == {"marksman", "rush", "random"}
    config = json.loads((run / "config.json").read_text())
    assert config["args"]["seed"] == 1 and "torch" in config["versions"]
    out = capsys.readouterr().out
    assert "learned rounds" in out and "learning curve:" in out

    from traveller_cli import main

    report = runs / "eval.json"
    assert main(["eval", str(run / "model.zip"), "--scenario", "duel", "--vs", "rush",
                 "--battles", "2", "--json", str(report)]) == 0
    rows = json.loads(report.read_text())
    assert rows[0]["wins"] + rows[0]["draws"] + rows[0]["losses"] == 2
    # 256 steps of training: it never beats rush, which wins from each side
    assert {s: (c["wins"], c["losses"]) for s, c in rows[0]["by_side"].items()} == {
        "blue": (0, 1), "red": (0, 1)}


def test_train_aiming_self_play_modes_smoke(runs):
    """Self-play: shared policy in every seat, and a pool of its own checkpoints."""
    from traveller_rl.recipes import aiming

    for mode in ("shared", "pool"):
        run = aiming.train_sb3(aiming.Args(
            total_timesteps=256, n_steps=64, batch_size=64, n_epochs=1, eval_battles=1,
            runs_dir=str(runs), bands="short", duel_opponents="", self_play=mode,
            pool_every=64, exp_name=f"sp_{mode}"))
        assert (run / "model.zip").is_file()
        if mode == "pool":
            assert list((run / "pool").glob("ckpt_*.zip")), "no pool checkpoint saved"


def test_train_leadership_smoke(runs):
    """A tiny assisted run: the model decides leadership only and loads back as an
    AssistedPolicy through its metadata."""
    from traveller_agents.trained import AssistedPolicy, load_policy
    from traveller_rl.recipes import leadership

    run = leadership.train_sb3(leadership.Args(
        total_timesteps=128, n_envs=1, n_steps=64, batch_size=64, n_epochs=1, eval_battles=1,
        eval_scenarios="squad_commander0", runs_dir=str(runs)))
    evaluation = json.loads((run / "evaluation.json").read_text())
    assert [r["sergeant"] for r in evaluation["evaluation"]] == [
        "learned", "leader", "never_lead", "always_lead"]
    assert isinstance(load_policy(run / "model.zip", "squad"), AssistedPolicy)


def test_aiming_optimum_script(tmp_path, capsys):
    from traveller_rl.recipes import optimum as aiming_optimum

    out = tmp_path / "opt.json"
    assert aiming_optimum.main(["--battles", "0", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["scenario"] for r in rows] == ["range_short", "range_medium", "range_long",
                                             "range_extreme"]
    # Farther bands take longer and deserve at least as much aim.
    assert all(a["expected_rounds"] < b["expected_rounds"] for a, b in itertools.pairwise(rows))
    assert all(a["optimal_aims_before_first_shot"] <= b["optimal_aims_before_first_shot"]
               for a, b in itertools.pairwise(rows))
