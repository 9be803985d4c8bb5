"""The league (traveller_rl/league.py) and the difficulty ladder (traveller_rl/ladder.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from traveller_cli import main as cli_main
from traveller_rl.ladder import level_names, pick_levels
from traveller_rl.league import load_config, load_league

TINY = {"scenario": "duel", "generations": 2, "decisions_per_generation": 256,
        "train": {"num_envs": 8, "num_steps": 16, "epochs": 1, "minibatches": 1,
                  "pool_every": 1, "eval_battles": 2, "eval_envs": 2, "backend": "python"},
        "learners": [{"name": "calm", "style": {}},
                     {"name": "close", "style": {"distance": -0.05, "shots": 0.01}}]}


def write(tmp_path, data, name="league.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def tiny_league(tmp_path_factory):
    base = tmp_path_factory.mktemp("league")
    config = write(base, TINY)
    out = base / "run"
    assert cli_main(["league", "train", "--config", str(config), "--out", str(out),
                     "--no-progress"]) == 0
    return out


def test_every_learner_trains_every_generation_against_the_league(tiny_league):
    league = load_league(tiny_league)
    names = [m["name"] for m in league["members"]]
    assert names == ["calm_g1", "close_g1", "calm_g2", "close_g2"]
    done = [m["training_decisions"] for m in league["members"]]  # whole rollouts: >= asked
    assert done[0] >= 256 and done[1] >= 256 and done[2] >= done[0] + 256
    assert done[3] >= done[1] + 256
    assert league["members"][1]["style"] == {"distance": -0.05, "shots": 0.01}
    for m in league["members"]:
        assert (tiny_league / "members" / f"{m['name']}.pt").is_file()
    # the second generation starts from its own first and plays every other member
    config = json.loads((tiny_league / "runs" / "close_g2" / "config.json").read_text())["args"]
    assert config["init"].endswith("close_g1.pt")
    assert config["style"] == "distance=-0.05,shots=0.01"
    assert config["pool_sampling"] == "uniform"  # TINY does not set pfsp
    opponents = config["pool_opponents"].split(",")
    assert sorted(o.rsplit("/", 1)[1] for o in opponents) == ["calm_g1.pt", "calm_g2.pt"]


def test_rating_and_ladder(tiny_league, capsys):
    assert cli_main(["league", "rate", str(tiny_league), "--scripted", "rush", "--battles",
                     "2", "--workers", "1", "--behaviour-battles", "1",
                     "--no-progress"]) == 0
    league = load_league(tiny_league)
    assert all("elo" in m["rating"] for m in league["members"])
    assert league["scripted"][0]["name"] == "rush"
    assert league["members"][0]["behaviour"]["distance_m"] > 0
    assert (tiny_league / "population.png").is_file()
    json.dumps(league, allow_nan=False)  # undefined shares are null, not NaN
    assert (tiny_league / "tournament" / "ratings.csv").is_file()
    # every member played the 3 other members and rush, on both sides, 2 battles each
    assert league["members"][0]["rating"]["battles"] == 4 * 2 * 2
    out = tiny_league / "ladder.json"
    assert cli_main(["ladder", "duel", "--levels", "3", "--league", str(tiny_league),
                     "--battles", "4", "--out", str(out)]) == 0
    ladder = json.loads(out.read_text())
    elos = [lv["elo"] for lv in ladder["levels"]]
    assert elos == sorted(elos) and len(elos) == 3
    assert [lv["name"] for lv in ladder["levels"]] == ["easy", "medium", "hard"]
    assert "next_level_win_rate" in ladder["levels"][0]
    assert "next_level_win_rate" not in ladder["levels"][-1]
    assert cli_main(["ladder", "squad", "--league", str(tiny_league)]) == 2
    assert "plays 'duel', not 'squad'" in capsys.readouterr().err


def test_pick_levels_spaces_ratings_evenly():
    rated = [("a", 1000.0), ("b", 1100.0), ("c", 1190.0), ("d", 1205.0), ("e", 1400.0)]
    assert pick_levels(rated, 3) == [("a", 1000.0), ("d", 1205.0), ("e", 1400.0)]
    assert pick_levels(rated, 5) == rated
    with pytest.raises(ValueError, match="only 5 rated policies"):
        pick_levels(rated, 6)
    with pytest.raises(ValueError, match="at least 2"):
        pick_levels(rated, 1)
    assert level_names(5)[0] == "very easy" and level_names(7)[-1] == "level 7"


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": "red"}, "unknown keys ['colour']"),
    ({"learners": []}, "learners must be a non-empty list"),
    ({"learners": [{"name": "a"}, {"name": "a"}]}, "learner and import names repeated: ['a']"),
    ({"learners": [{"name": "a", "style": {"speed": 1}}]}, "learners[0].style: --style: "
                                                          "unknown term 'speed'"),
    ({"train": {"seed": 3}}, "train.seed: not a train_ppo flag the league may set"),
    ({"train": {"warp": 3}}, "train.warp: not a train_ppo flag"),
    ({"generations": 0}, "generations must be a positive integer"),
    ({"imports": [{"name": "old"}]}, "imports[0] must have exactly the keys name and checkpoint"),
    ({"imports": [{"name": "old", "checkpoint": "gone.pt"}]}, "imports[0].checkpoint: 'gone.pt'"),
])
def test_bad_configs_are_refused_naming_the_file_and_key(tmp_path, change, message):
    path = write(tmp_path, {**TINY, **change})
    with pytest.raises(ValueError) as exc:
        load_config(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_the_cli_reports_a_missing_league(tmp_path, capsys):
    assert cli_main(["league", "rate", str(tmp_path)]) == 2
    assert "no league here" in capsys.readouterr().err


def test_export_writes_onnx_members_that_play(tiny_league, tmp_path):
    pytest.importorskip("onnxruntime")
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import evaluate_matchup
    from traveller_rl.league import policy_path

    to = tmp_path / "shipped"
    assert cli_main(["league", "export", str(tiny_league), "--to", str(to)]) == 0
    league = load_league(to)
    assert [m["onnx"] for m in league["members"]] == [
        "calm_g1.onnx", "close_g1.onnx", "calm_g2.onnx", "close_g2.onnx"]
    assert all(m["checkpoint"] is None for m in league["members"])
    path = policy_path(to, league["members"][-1])
    assert path.endswith(".onnx")
    row = evaluate_matchup(make_policy(path, scenario="duel"), make_policy("rush"), "duel",
                           battles=2)
    assert row["battles"] == 2


def test_imported_checkpoints_join_the_league_and_its_pools(tiny_league, tmp_path):
    old = str(tiny_league / "members" / "calm_g1.pt")
    config = write(tmp_path, {**TINY, "generations": 1, "learners": [{"name": "new"}],
                              "imports": [{"name": "veteran", "checkpoint": old}]})
    out = tmp_path / "run"
    assert cli_main(["league", "train", "--config", str(config), "--out", str(out),
                     "--no-progress"]) == 0
    league = load_league(out)
    assert [(m["name"], m["learner"]) for m in league["members"]] == [
        ("veteran", "imported"), ("new_g1", "new")]
    assert league["members"][0]["training_decisions"] == load_league(tiny_league)[
        "members"][0]["training_decisions"]
    args = json.loads((out / "runs" / "new_g1" / "config.json").read_text())["args"]
    assert args["pool_opponents"].endswith("veteran.pt")


def test_add_joins_a_checkpoint_to_a_league_and_refuses_bad_input(tiny_league, tmp_path,
                                                                   capsys):
    """``traveller league add``: a checkpoint trained elsewhere becomes an imported member
    (copied into members/, listed in league.json); a taken name, a missing file or a
    checkpoint of another scenario is refused naming the argument, and nothing changes."""
    import shutil

    league_dir = tmp_path / "league"
    shutil.copytree(tiny_league, league_dir)
    before = load_league(league_dir)
    source = league_dir / "members" / "calm_g1.pt"
    assert cli_main(["league", "add", str(league_dir), "--name", "guest",
                     "--checkpoint", str(source)]) == 0
    league = load_league(league_dir)
    assert len(league["members"]) == len(before["members"]) + 1
    guest = league["members"][-1]
    assert (guest["name"], guest["learner"], guest["imported_from"]) == (
        "guest", "imported", str(source))
    assert (league_dir / "members" / "guest.pt").read_bytes() == source.read_bytes()
    assert "rate the league again" in capsys.readouterr().out
    assert "imitation" not in guest  # trained by RL alone

    squad_ckpt = tmp_path / "squad.pt"
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic
    from traveller_env.env import TravellerEnv

    squad = TravellerEnv("squad")  # a squad checkpoint: does not fit the duel league
    net = ActorCritic(len(squad.observation_labels), squad.relative_actions.n, [8])
    squad_ckpt.write_bytes(checkpoint_bytes(net, "squad", squad.relative_actions.labels))
    for argv, message in (
            (["--name", "guest", "--checkpoint", str(source)], "member of that name"),
            (["--name", "x y", "--checkpoint", str(source)], "--name 'x y'"),
            (["--name", "other", "--checkpoint", str(tmp_path / "no.pt")], "--checkpoint"),
            (["--name", "other", "--checkpoint", str(squad_ckpt)], "do not fit scenario")):
        assert cli_main(["league", "add", str(league_dir), *argv]) == 2
        assert message in capsys.readouterr().err
    assert len(load_league(league_dir)["members"]) == len(before["members"]) + 1

    # a member that began as a behaviour clone says so in the manifest
    import torch

    from traveller_agents.checkpoint import read_checkpoint
    cloned = tmp_path / "cloned.pt"
    data = read_checkpoint(source)
    data["imitation"] = "tactician"
    torch.save(data, cloned)
    assert cli_main(["league", "add", str(league_dir), "--name", "copycat",
                     "--checkpoint", str(cloned)]) == 0
    assert load_league(league_dir)["members"][-1]["imitation"] == "tactician"
    capsys.readouterr()


# ============================================================================ resume
RESUMABLE = {**TINY, "generations": 1, "decisions_per_generation": 512,
             "train": {**TINY["train"], "threads": 1, "eval_every": 0,
                       "checkpoint_every": 1}}


def _comparable(folder):
    """``league.json`` without its timings, the folder's own path written as ``OUT``."""
    text = (folder / "league.json").read_text().replace(str(folder), "OUT")
    league = json.loads(text)
    for member in league["members"]:
        member.pop("train_seconds", None)
    return league


def test_a_league_killed_mid_way_resumes_to_the_same_league(tmp_path):
    """SIGKILL ``league train`` after its first member, at a random moment of the second's
    training; ``--resume`` keeps that member, continues the second from its resume checkpoint,
    and writes the league an uninterrupted run writes (but for the timings)."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    config = write(tmp_path, RESUMABLE)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    base = ["league", "train", "--config", str(config), "--no-progress"]
    assert cli_main([*base, "--out", str(whole)]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "traveller_rl.league", *base[1:],
                             "--out", str(killed)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    # the second member's first resume checkpoint written: its run resumes from it
    while (time.monotonic() < deadline and proc.poll() is None
           and not (killed / "runs" / "close_g1" / "resume.ckpt").exists()):
        time.sleep(0.01)
    time.sleep(random.Random().uniform(0.0, 0.5))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr.read().decode()
    assert cli_main([*base, "--out", str(killed), "--resume"]) == 0
    assert _comparable(killed) == _comparable(whole)
    assert [m["name"] for m in load_league(killed)["members"]] == ["calm_g1", "close_g1"]


def test_league_resume_refuses_a_changed_seed_or_overwrite(tmp_path, capsys):
    config = write(tmp_path, {**RESUMABLE, "learners": [{"name": "calm"}]})
    out = tmp_path / "run"
    base = ["league", "train", "--config", str(config), "--out", str(out), "--no-progress"]
    assert cli_main(base) == 0
    capsys.readouterr()
    assert cli_main([*base, "--resume", "--seed", "2"]) == 2
    assert "--seed 2" in capsys.readouterr().err
    assert cli_main([*base, "--resume", "--overwrite"]) == 2
    assert "--resume and --overwrite" in capsys.readouterr().err
    assert cli_main([*base, "--resume"]) == 0  # a finished league: nothing left to train


def test_a_ladder_from_a_tournament_folder(tmp_path, capsys):
    """``traveller ladder --tournament DIR`` rates from a tournament's ratings.csv (as the
    search NPC's budgets are rated) and plays each level against the next."""
    folder = tmp_path / "t"
    assert cli_main(["tournament", "--policies", "random,marksman,rush", "--scenarios", "duel",
                     "--battles", "4", "--workers", "1", "--no-progress", "--out",
                     str(folder)]) == 0
    out = tmp_path / "ladder.json"
    assert cli_main(["ladder", "duel", "--tournament", str(folder), "--levels", "2",
                     "--battles", "4", "--out", str(out)]) == 0
    ladder = json.loads(out.read_text())
    assert ladder["tournament"] == str(folder) and "league" not in ladder
    assert [lv["name"] for lv in ladder["levels"]] == ["easy", "hard"]
    assert ladder["levels"][0]["elo"] <= ladder["levels"][1]["elo"]
    capsys.readouterr()
    assert cli_main(["ladder", "duel", "--tournament", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--tournament" in err and "no ratings.csv" in err


# ============================================================================ joining later
def _rating_files(folder):
    """What a rating wrote, the folder's own path written as ``OUT``."""
    league = json.loads((folder / "league.json").read_text().replace(str(folder), "OUT"))
    tables = {name: (folder / "tournament" / name).read_text().replace(str(folder), "OUT")
              for name in ("games.csv", "ratings.csv", "pairings.csv")}
    return league, tables


def test_rate_resume_plays_only_what_a_new_member_adds(tiny_league, tmp_path, capsys):
    """A member added after a rating, and a new scripted NPC: ``rate --resume`` keeps the
    recorded games and behaviour, plays only the new pairings, and writes what a whole
    rating of the grown league writes; a changed --battles is refused, naming it."""
    import shutil

    resumed, whole = tmp_path / "resumed", tmp_path / "whole"
    for folder in (resumed, whole):
        shutil.copytree(tiny_league, folder)
        shutil.rmtree(folder / "tournament", ignore_errors=True)
    rate = ["--battles", "2", "--workers", "1", "--behaviour-battles", "1", "--no-progress"]
    assert cli_main(["league", "rate", str(resumed), "--scripted", "rush", *rate]) == 0
    capsys.readouterr()
    for folder in (resumed, whole):
        assert cli_main(["league", "add", str(folder), "--name", "guest", "--checkpoint",
                         str(tiny_league / "members" / "calm_g1.pt")]) == 0
    assert cli_main(["league", "rate", str(resumed), "--scripted", "rush,marksman", *rate,
                     "--resume"]) == 0
    # 4 members and rush: 10 pairings x 2 battles x 2 sides recorded; 7 policies: 21 pairings
    assert "resumed: 40 battles were recorded, 44 played" in capsys.readouterr().out
    assert cli_main(["league", "rate", str(whole), "--scripted", "rush,marksman", *rate]) == 0
    assert _rating_files(resumed) == _rating_files(whole)
    capsys.readouterr()
    assert cli_main(["league", "rate", str(resumed), "--scripted", "rush", "--battles", "3",
                     "--resume", "--no-progress"]) == 2
    assert "--battles (recorded: 2, now: 3)" in capsys.readouterr().err
    assert cli_main(["league", "rate", str(tiny_league.parent / "nowhere"), "--resume"]) == 2


def test_an_exported_league_takes_members_as_onnx(tiny_league, tmp_path, capsys):
    """In an exported league (every member ONNX) ``add`` keeps the folder ONNX-only: an
    ``.onnx`` is copied, a ``.pt`` exported; both then play; ``export`` copies them along."""
    pytest.importorskip("onnxruntime")
    from traveller_agents.registry import make_policy
    from traveller_rl.league import policy_path

    shipped = tmp_path / "shipped"
    assert cli_main(["league", "export", str(tiny_league), "--to", str(shipped)]) == 0
    source = tiny_league / "members" / "close_g2.pt"
    assert cli_main(["league", "add", str(shipped), "--name", "from_pt",
                     "--checkpoint", str(source)]) == 0
    assert cli_main(["league", "add", str(shipped), "--name", "from_onnx",
                     "--checkpoint", str(shipped / "calm_g1.onnx")]) == 0
    league = load_league(shipped)
    from_pt, from_onnx = league["members"][-2:]
    assert (from_pt["onnx"], from_pt["checkpoint"]) == ("from_pt.onnx", None)
    from traveller_agents.checkpoint import read_checkpoint
    assert from_pt["training_decisions"] == read_checkpoint(source)["decisions"]
    assert (shipped / "from_onnx.onnx").read_bytes() == (shipped / "calm_g1.onnx").read_bytes()
    assert from_onnx["training_decisions"] == league["members"][0]["training_decisions"]
    assert not (shipped / "members").exists()
    for member in (from_pt, from_onnx):
        make_policy(policy_path(shipped, member), scenario="duel")
    again = tmp_path / "again"
    assert cli_main(["league", "export", str(shipped), "--to", str(again)]) == 0
    assert (again / "from_onnx.onnx").is_file()
    capsys.readouterr()
    assert cli_main(["league", "add", str(shipped), "--name", "bad", "--checkpoint",
                     str(tmp_path / "x.txt")]) == 2
    assert "--checkpoint" in capsys.readouterr().err
