"""The result recipes (``traveller_rl.recipes``: aiming, leadership, squad) whose figures
docs/findings.md quotes: their evaluation paths on tiny budgets (the runs themselves are
experiments, not tests)."""

from __future__ import annotations

import json

from checkpoint_helpers import random_checkpoint

from traveller_agents.registry import make_policy


def test_the_leadership_scenarios_differ_only_in_leadership():
    import traveller_env

    l3 = traveller_env.load_scenario("leadership_l3").model_dump()
    l0 = traveller_env.load_scenario("leadership_l0").model_dump()
    for sc, level in ((l3, 3), (l0, 0)):
        sergeants = [side["combatants"][0] for side in sc["sides"]]
        assert [s["skills"]["leadership"] for s in sergeants] == [level, level]
        assert all(s["weapon"] == "autopistol" for s in sergeants)
        assert all(c["radio"] for side in sc["sides"] for c in side["combatants"])
        for side in sc["sides"]:
            side["combatants"][0]["skills"]["leadership"] = None
        sc.pop("name"), sc.pop("description")
    assert l3 == l0


def test_leadership_evaluation_counts_the_sergeants_checks():
    from traveller_rl.recipes.leadership import evaluate_sergeant

    always = evaluate_sergeant(make_policy("always_lead", seed=1), "leadership_l3", 2)
    never = evaluate_sergeant(make_policy("never_lead", seed=1), "leadership_l3", 2)
    assert always["leads_per_turn"] > 0.9 and always["bonuses_per_battle"] > 0
    assert never["leads_per_turn"] == 0 and never["bonuses_per_battle"] == 0
    assert always["battles"] == 2 and 0 <= always["win_ci95"][0] <= always["win_rate"]
    # R4.2/R2.1: leading spends the Significant action a shot would use; the choice is
    # counted per turn in which both were legal.
    assert always["turns_lead_or_shoot"] > 0 and always["leads_instead_of_shot"] > 0.9
    assert never["turns_lead_or_shoot"] > 0 and never["leads_instead_of_shot"] == 0


def test_squad_evaluation_plays_both_sides_on_held_out_seeds(tmp_path, capsys):
    from traveller_rl.recipes.squad import main

    ckpt = random_checkpoint(tmp_path / "squad.pt", "squad")
    out = tmp_path / "squad.json"
    assert main(["--checkpoint", str(ckpt), "--vs", "rush", "--eval-battles", "4",
                 "--workers", "1", "--behaviour-battles", "0", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert data["command"].startswith(f"python -m traveller_rl.recipes.squad --checkpoint {ckpt}")
    assert data["training"]["scenario"] == "squad" and data["training"]["run"] is None
    assert rows[0]["opponent"] == "rush" and rows[0]["battles"] == 4
    assert rows[0]["wins"] + rows[0]["draws"] + rows[0]["losses"] == 4
    assert {s: r["battles"] for s, r in rows[0]["by_side"].items()} == {"blue": 2, "red": 2}
    assert "| rush |" in capsys.readouterr().out
