"""``traveller benchmark`` (``traveller_rl.benchmark``): versioned suites, per-cell Wilson
intervals, a bootstrap aggregate, not-playable cells and the JSON match record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from traveller_rl.benchmark import (
    aggregate,
    build_parser,
    cell_summaries,
    load_suite,
    plan_battles,
    run,
)

ROOT = Path(__file__).resolve().parents[2]
UNDERSTUDY = str(ROOT / "results" / "league" / "understudy.onnx")

TINY = """\
version: 7
description: a test suite
battles_per_cell: 2
seed: 5
scenario_sets:
  duel:
    scenarios: [duel]
  gen-duel:
    distribution: gen:duel
    seeds: [1000, 1001]
opponents: [passive]
"""


def test_version_1_still_loads():
    suite = load_suite("v1")
    assert suite.version == 1 and suite.name == "v1"
    assert suite.path.name == "v1.yaml"
    assert suite.scenario_sets["squad"] == ("squad",)
    assert suite.scenario_sets["gen-squad-heldout"] == tuple(
        f"gen:squad@{s}" for s in range(1000, 1004))
    assert "tactician" in suite.opponents
    assert all(min(int(n.split("@")[1]) for n in names) >= 1000  # held-out seeds
               for set_name, names in suite.scenario_sets.items() if set_name.startswith("gen"))


def test_the_plan_covers_both_sides_and_every_scenario():
    suite = load_suite("v1")
    plan = plan_battles(suite, "rush")
    assert len(plan) == len(suite.cells()) * suite.battles_per_cell
    cell = [b for b in plan if b["set"] == "gen-squad-heldout" and b["opponent"] == "tactician"]
    assert [b["side"] for b in cell] == [0, 1] * 4
    assert {b["scenario"] for b in cell} == set(suite.scenario_sets["gen-squad-heldout"])
    assert plan == plan_battles(suite, "rush")


def test_a_bad_suite_is_named(tmp_path):
    known = "duel-rush, gen-squad-validation, v1, v2"
    with pytest.raises(ValueError, match=f"no such benchmark suite; versions: {known}"):
        load_suite("v99")
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.replace("battles_per_cell: 2", "battles_per_cell: 3"))
    with pytest.raises(ValueError, match="even number"):
        load_suite(bad)


def test_a_benchmark_run_writes_its_match_record(tmp_path, capsys):
    suite_file = tmp_path / "tiny.yaml"
    suite_file.write_text(TINY)
    out = tmp_path / "record.json"
    args = build_parser().parse_args(["rush," + UNDERSTUDY, "--suite", str(suite_file),
                                      "--out", str(out), "--no-progress"])
    assert run(args) == 0
    text = capsys.readouterr().out
    assert "rush on benchmark v7" in text and "aggregate" in text
    record = json.loads(out.read_text())
    assert record["suite"]["version"] == 7 and len(record["suite"]["sha256"]) == 64
    rush = record["policies"]["rush"]
    assert [b["seed"] for b in rush["battles"]] == [5, 6, 5, 6]
    assert {b["result"] for b in rush["battles"]} <= {"win", "draw", "loss"}
    assert rush["cells"][0]["battles"] == 2 and rush["cells"][0]["win_ci95"] is not None
    agg = rush["aggregate"]
    assert agg["cells_used"] == 2 and agg["ci95"][0] <= agg["score"] <= agg["ci95"][1]
    # The league's squad policy cannot play a duel: recorded, with the reason, not played.
    learned = record["policies"][UNDERSTUDY]
    assert all(b["result"] == "not_playable" for b in learned["battles"])
    assert "observation [batch, 333]" in learned["cells"][0]["reason"]
    assert learned["aggregate"]["score"] is None and "n/p" in text


def test_the_aggregate_is_the_mean_of_cells_with_a_bootstrap_interval():
    suite = load_suite("v1")
    battles = []
    for k, (set_name, opponent) in enumerate(suite.cells()):
        for i in range(suite.battles_per_cell):
            result = "win" if i < k else "loss"
            battles.append({"set": set_name, "opponent": opponent, "result": result})
    cells = cell_summaries(suite, battles)
    rates = [c["win_rate"] for c in cells]
    assert rates == [min(k, 8) / 8 for k in range(len(cells))]
    agg = aggregate(suite, battles)
    assert agg["score"] == pytest.approx(sum(rates) / len(rates))
    assert agg["ci95"][0] < agg["score"] < agg["ci95"][1]
    assert agg == aggregate(suite, battles)  # seeded bootstrap


def test_the_command_is_registered():
    from traveller_cli.app import EXPERIMENTS

    assert "benchmark" in EXPERIMENTS
    assert EXPERIMENTS["benchmark"].load().__name__ == "traveller_rl.benchmark"


def test_a_battle_that_fails_is_recorded_not_scored(tmp_path):
    from traveller_rl.benchmark import play_one

    broken = tmp_path / "broken.py"
    broken.write_text("class Broken:\n"
                      "    def reset(self, seed=None):\n        pass\n"
                      "    def act(self, observation, action_mask, agent, env):\n"
                      "        raise KeyError('no plan for this map')\n")
    record = play_one({"set": "s", "opponent": "rush", "scenario": "duel", "index": 0,
                       "side": 0, "seed": 0, "policy": f"{broken}:Broken"})
    assert record["result"] == "error" and "no plan for this map" in record["reason"]
    suite = load_suite("v1")
    cells = cell_summaries(suite, [{**record, "set": "squad", "opponent": "tactician"}])
    assert cells[0]["battles"] == 0 and cells[0]["not_playable"] == 1


# ---------------------------------------------------------------------------- vector suites
TINY_VECTOR = ROOT / "tests" / "data" / "benchmark_tiny.yaml"


def test_version_2_is_a_ladder_of_held_out_cells():
    suite = load_suite("v2")
    assert suite.version == 2 and suite.play == "vector" and suite.metric == "iqm"
    assert len(suite.cells()) >= 12 and suite.battles_per_cell >= 400
    assert suite.opponents[:4] == ("rush", "marksman", "cover", "tactician")
    assert suite.opponents[4].endswith(".onnx")
    for set_name, names in suite.scenario_sets.items():
        if set_name.startswith("gen"):
            seeds = [int(n.split("@")[1]) for n in names]
            assert (min(seeds), max(seeds)) == (1000, 4999)


def test_a_vector_plan_meets_the_same_draws_from_both_sides():
    suite = load_suite(TINY_VECTOR)
    plan = plan_battles(suite, "rush")
    assert len(plan) == 2 * 4
    first, second = plan[:4], plan[4:]
    assert [b["side"] for b in first] == [0, 1, 0, 1]
    assert first[0]["scenario"] == first[1]["scenario"] != first[2]["scenario"]
    # Every opponent (and every policy) meets the same scenarios and seeds.
    assert [(b["scenario"], b["seed"]) for b in first] == [(b["scenario"], b["seed"])
                                                          for b in second]
    assert plan == plan_battles(suite, "tactician") or all(
        b["policy"] == "tactician" for b in plan_battles(suite, "tactician"))


def test_a_vector_suite_run_writes_record_table_and_report(tmp_path, capsys):
    out, html, md = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.md"
    args = build_parser().parse_args(
        ["tactician", "--suite", str(TINY_VECTOR), "--against", "rush", "--out", str(out),
         "--html", str(html), "--markdown", str(md), "--no-progress"])
    assert run(args) == 0
    text = capsys.readouterr().out
    assert "IQM of cell win rates" in text and "P(tactician > rush) = " in text
    record = json.loads(out.read_text())
    tactician = record["policies"]["tactician"]
    assert len(tactician["battles"]) == 8
    paths = {b["opponent"]: b["path"] for b in tactician["battles"]}
    assert paths == {"rush": "core", "results/league/wanderer.onnx": "vector"}
    assert all(b["result"] in ("win", "draw", "loss") and b["battle_seed"] > 0
               for b in tactician["battles"])
    agg = tactician["aggregate"]
    assert agg["cells_used"] == 2 and agg["ci95"][0] <= agg["score"] <= agg["ci95"][1]
    assert len(agg["profile"]["fraction"]) == len(agg["profile"]["tau"])
    poi = record["probability_of_improvement"]
    assert poi["over"] == "rush" and 0 <= poi["of"]["tactician"]["score"] <= 1
    page = html.read_text()
    assert page.count("<svg") >= 3 and "<script" not in page and "<link" not in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched: opens offline
    assert md.read_text().startswith("| policy | IQM [95% CI]")
    # The same suite and policies give the same battles.
    again = build_parser().parse_args(["tactician", "--suite", str(TINY_VECTOR), "--out",
                                       str(tmp_path / "again.json"), "--no-progress"])
    assert run(again) == 0
    assert json.loads((tmp_path / "again.json").read_text())["policies"]["tactician"][
        "battles"] == tactician["battles"]


def test_the_iqm_aggregate_and_the_improvement_by_hand():
    from traveller_rl.benchmark import improvement

    suite = load_suite(TINY_VECTOR)
    rates = {("gen-duel", "rush"): 0.75, ("gen-duel", suite.opponents[1]): 0.25}

    def battles(shift: float) -> list[dict]:
        out = []
        for (set_name, opponent), rate in rates.items():
            wins = round(4 * min(1.0, rate + shift))
            out += [{"set": set_name, "opponent": opponent,
                     "result": "win" if i < wins else "loss"} for i in range(4)]
        return out

    agg = aggregate(suite, battles(0.0))
    assert agg["score"] == pytest.approx(0.5) and agg["mean"] == pytest.approx(0.5)
    # Both cells 0.25 better: per cell 0.5 + 0.25 / 2.
    poi = improvement(suite, battles(0.25), battles(0.0))
    assert poi["score"] == pytest.approx(0.625) and poi["cells_used"] == 2


def test_sets_plays_part_of_a_suite_on_the_same_battles(tmp_path, capsys):
    suite_file = tmp_path / "tiny.yaml"
    suite_file.write_text(TINY)
    suite = load_suite(suite_file)
    part = suite.only(["gen-duel"])
    assert list(part.scenario_sets) == ["gen-duel"] and part.opponents == suite.opponents
    whole = [b for b in plan_battles(suite, "rush") if b["set"] == "gen-duel"]
    assert plan_battles(part, "rush") == whole
    with pytest.raises(ValueError, match="--sets nope: v7 has the scenario sets duel, gen-duel"):
        suite.only(["nope"])
    out = tmp_path / "r.json"
    assert run(build_parser().parse_args(["rush", "--suite", str(suite_file), "--sets",
                                          "gen-duel", "--out", str(out), "--no-progress"])) == 0
    record = json.loads(out.read_text())
    assert record["suite"]["sets"] == ["gen-duel"] and "--sets gen-duel" in record["command"]
    assert {b["set"] for b in record["policies"]["rush"]["battles"]} == {"gen-duel"}
    assert run(build_parser().parse_args(["rush", "--suite", str(suite_file), "--sets", "nope",
                                          "--no-progress"])) == 2
    assert "--sets nope" in capsys.readouterr().err


def test_a_named_suite_is_found_by_its_name():
    """``configs/benchmarks/duel-rush.yaml`` (the baselines' sanity task) is ``--suite
    duel-rush``: its ``name`` is what the table and the record call it."""
    suite = load_suite("duel-rush")
    assert suite.name == "duel-rush" and suite.cells() == [("duel", "rush")]
    assert suite.battles_per_cell == 400 and suite.play == "vector"
    with pytest.raises(ValueError, match=r"no such benchmark suite; versions: .*duel-rush"):
        load_suite("nothing-here")
