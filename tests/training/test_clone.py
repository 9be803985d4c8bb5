"""traveller_rl/clone.py: the teacher's decisions recorded faithfully (legal,
slot-relative, returns to the battle's end) and fitted into a checkpoint that plays. How well the
fit learns the teacher is checked against the strongest trivial baseline (the most frequent
legal action) in test_learning.py::test_cloning_beats_the_most_frequent_legal_action."""

from __future__ import annotations

import json

import numpy as np
import pytest

from traveller_agents.checkpoint import read_checkpoint
from traveller_agents.ppo_policy import load_ppo_policy
from traveller_env import raw_env
from traveller_rl.clone import collect, main


def test_to_relative_inverts_to_absolute_for_every_seat():
    env = raw_env("squad")
    rel = env.relative_actions
    for agent in env.possible_agents:
        for i in range(rel.n):
            try:
                a = rel.to_absolute(agent, i)
            except ValueError:  # an empty slot
                continue
            assert rel.to_relative(agent, a) == i
    with pytest.raises(ValueError, match="no slot-relative action"):
        rel.to_relative("blue_0", rel._n_abs + 5)


def test_recorded_actions_are_legal_and_returns_are_the_battle_result():
    """On duel (R8: win +1, loss -1 and nothing before the end) every decision's return is
    its seat's battle result, so the winner's rows are all +1 and the loser's all -1."""
    demos, labels, name = collect("duel", "tactician", battles=6, seed=3, move_view=False,
                                  aim_view=False)
    assert name == "duel" and demos.mask.shape[1] == len(labels)
    assert demos.mask[np.arange(len(demos.action)), demos.action].all()
    assert set(np.unique(demos.battle)) == set(range(6))
    for b in range(6):
        rows = demos.battle == b
        assert set(np.unique(demos.ret[rows])) <= {-1.0, 0.0, 1.0}
    # decisions of both seats, and the two seats' returns are opposite in a decided battle
    decided = [b for b in range(6) if set(np.unique(demos.ret[demos.battle == b])) == {-1, 1}]
    assert decided, "six duels without a winner"


def test_the_same_seed_records_the_same_decisions():
    a, _, _ = collect("duel", "tactician", battles=3, seed=8, move_view=False, aim_view=False)
    b, _, _ = collect("duel", "tactician", battles=3, seed=8, move_view=False, aim_view=False)
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.action, b.action)


def test_the_checkpoint_plays_as_an_npc_and_names_its_teacher(tmp_path):
    out = tmp_path / "bc.pt"
    assert main(["--scenario", "duel", "--battles", "4", "--epochs", "1", "--hidden", "16",
                 "--move-view", "--out", str(out)]) == 0
    data = read_checkpoint(out)
    assert data["imitation"] == "tactician" and data["move_view"] is True
    assert (tmp_path / "bc.json").is_file()
    policy = load_ppo_policy(out, "duel")
    env = raw_env("duel")
    env.reset(seed=0)
    obs, *_ = env.last()
    a = policy.act(obs["observation"], obs["action_mask"], env.agent_selection, env)
    assert obs["action_mask"][a]


def test_runs_from_a_clone_keep_the_imitation_on_record(tmp_path):
    """train_ppo --init and widen_checkpoint carry ``imitation`` forward, and the result
    scripts' provenance reports it: a result built on a cloned start says so."""
    from traveller_cli.app import main as cli_main
    from traveller_rl.checkpoints import widen as widen_checkpoint
    from traveller_rl.common import checkpoint_provenance

    bc = tmp_path / "bc.pt"
    assert main(["--scenario", "duel", "--battles", "4", "--epochs", "1", "--hidden", "16",
                 "--out", str(bc)]) == 0
    run = tmp_path / "run"
    assert cli_main(["train", "ppo", "--scenario", "duel", "--opponents", "red=rush",
                     "--init", str(bc), "--hidden", "16", "--total-timesteps", "512",
                     "--num-envs", "8", "--num-steps", "32", "--eval-every", "0",
                     "--final-eval-battles", "2", "--threads", "1", "--no-progress",
                     "--out", str(run)]) == 0
    assert read_checkpoint(run / "ppo.pt")["imitation"] == "tactician"
    assert checkpoint_provenance(run / "ppo.pt")["imitation"] == "tactician"
    wide = tmp_path / "wide.pt"
    assert widen_checkpoint.main([str(run / "ppo.pt"), "--hidden", "32", "--out",
                                  str(wide)]) == 0
    assert read_checkpoint(wide)["imitation"] == "tactician"
    plain = tmp_path / "plain"
    assert cli_main(["train", "ppo", "--scenario", "duel", "--opponents", "red=rush",
                     "--hidden", "16", "--total-timesteps", "256", "--num-envs", "8",
                     "--num-steps", "32", "--eval-every", "0", "--final-eval-battles", "2",
                     "--threads", "1", "--no-progress", "--out", str(plain)]) == 0
    assert "imitation" not in read_checkpoint(plain / "ppo.pt")


def _status(argv, capsys) -> tuple[int, str]:
    """``main(argv)``'s exit status (argparse's refusals exit 2) and its stderr."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--battles", "0"], "argument --battles: must be an integer >= 1, got '0'"),
    (["--lr", "0"], "--lr must be positive"),
    (["--out", "x.zip"], "ending in .pt"),
    (["--teacher", "search-0"], "--teacher 'search-0': Policy: policy 'search-0': budget must be"),
    (["--scenario-seeds", "9-3"], "--scenario-seeds '9-3': expected LO-HI"),
    (["--student", "nothing.pt"], "--student: 'nothing.pt' is not a train_ppo checkpoint"),
    (["--scenario", "gen:squad", "--layout", "9v1"], "--scenario/--layout: "),
])
def test_bad_arguments_are_refused_naming_the_flag(argv, message, tmp_path, capsys):
    argv = [*argv] + ([] if "--out" in argv else ["--out", str(tmp_path / "o.pt")])
    status, err = _status(argv, capsys)
    assert status == 2
    assert "traveller train clone: error: " in err and message in err


def test_an_unknown_teacher_is_named(tmp_path, capsys):
    status, err = _status(["--teacher", "nobody", "--battles", "1", "--out",
                           str(tmp_path / "o.pt")], capsys)
    assert status == 2
    assert "traveller train clone: error: --teacher 'nobody'" in err


def test_a_distribution_is_cloned_through_a_layout_and_plays_held_out_draws(tmp_path):
    """``--scenario gen:squad``: each battle a draw of the training seeds, observed through the
    6v6 layout with the views asked for; the checkpoint keeps the layout and plays a held-out
    draw it never saw."""
    from traveller_rl.clone import battle_scenarios
    from traveller_rl.scenario_eval import load_learned, play_scenarios

    names = battle_scenarios("gen:squad", 50, seed=2, seeds=(10, 19))
    assert len(set(names)) > 3 and all(10 <= int(n.split("@")[1]) <= 19 for n in names)
    assert battle_scenarios("duel", 3, seed=2) == ["duel"] * 3
    out = tmp_path / "bc.pt"
    assert main(["--scenario", "gen:squad", "--scenario-seeds", "0-9", "--battles", "3",
                 "--epochs", "1", "--hidden", "16", "--attack-view", "--out", str(out)]) == 0
    data = read_checkpoint(out)
    assert data["scenario"] == "gen:squad" and data["layout"]["name"] == "6v6"
    assert data["attack_view"] is True
    records = play_scenarios(load_learned(out), ["gen:squad@1000"], opponent="rush")
    assert [r["result"] in ("win", "draw", "loss") for r in records] == [True, True]


def test_with_a_student_the_student_plays_and_the_teacher_labels(tmp_path):
    """DAgger / expert iteration: the student's moves make the states, the teacher's choices
    are the labels (so the labels differ from what was played where the two disagree)."""
    student = tmp_path / "student.pt"
    assert main(["--scenario", "duel", "--teacher", "rush", "--battles", "2", "--epochs", "1",
                 "--hidden", "8", "--out", str(student)]) == 0
    plain, _, _ = collect("duel", "tactician", battles=2, seed=4, move_view=False,
                          aim_view=False)
    taught, _, _ = collect("duel", "tactician", battles=2, seed=4, move_view=False,
                           aim_view=False, student=str(student))
    assert not np.array_equal(plain.obs[:len(taught.obs)], taught.obs[:len(plain.obs)])
    assert taught.mask[np.arange(len(taught.action)), taught.action].all()
    data_out = tmp_path / "taught.pt"
    assert main(["--scenario", "duel", "--teacher", "search-2", "--student", str(student),
                 "--battles", "2", "--epochs", "1", "--hidden", "8", "--out",
                 str(data_out)]) == 0
    data = read_checkpoint(data_out)
    assert data["imitation"] == "search-2" and data["student"] == str(student)


def test_recordings_are_saved_and_aggregated(tmp_path, capsys):
    """``--save-demos`` writes plain arrays; ``--add-demos`` fits them together with the new
    recording (DAgger's aggregate); another scenario's recording is refused by name."""
    first = tmp_path / "a.npz"
    assert main(["--scenario", "duel", "--battles", "3", "--epochs", "1", "--hidden", "8",
                 "--save-demos", str(first), "--out", str(tmp_path / "a.pt")]) == 0
    one = json.loads((tmp_path / "a.json").read_text())["decisions"]
    assert main(["--scenario", "duel", "--battles", "3", "--epochs", "1", "--hidden", "8",
                 "--seed", "1", "--add-demos", str(first), "--out", str(tmp_path / "b.pt")]) == 0
    both = json.loads((tmp_path / "b.json").read_text())["decisions"]
    assert one < both < 3 * one
    with np.load(first, allow_pickle=False) as data:
        assert data["obs"].shape[0] == one and data["labels"].dtype.kind == "U"
    capsys.readouterr()
    status, err = _status(["--scenario", "squad", "--battles", "1", "--epochs", "1",
                           "--add-demos", str(first), "--out", str(tmp_path / "c.pt")], capsys)
    assert status == 2 and f"--add-demos {first}: recorded with other actions" in err
    status, err = _status(["--add-demos", str(tmp_path / "none.npz"), "--out",
                           str(tmp_path / "c.pt")], capsys)
    assert status == 2 and "no such file" in err
