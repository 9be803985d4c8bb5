"""The ``traveller`` command line (``traveller_cli``): every command documents its own options,
an experiment command is one table entry, and default outputs go under ``runs/``."""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path

import pytest

import traveller_cli
from traveller_cli import EXPERIMENTS, Experiment, main


def help_of(argv, capsys) -> str:
    """The text ``traveller ARGV`` prints (``--help`` exits 0)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_every_command(capsys):
    out = help_of(["--help"], capsys)
    for name in ("simulate", "scenarios", "eval", "train", "tournament"):
        assert name in out


def test_tournament_help_names_its_real_options(capsys):
    out = help_of(["tournament", "--help"], capsys)
    assert out.startswith("usage: traveller tournament")
    for option in ("--policies", "--scenarios", "--battles", "--seed", "--workers", "--out",
                   "--bootstrap", "--no-progress"):
        assert option in out, option
    assert "runs/tournament" in out and "script_args" not in out


def test_train_help_lists_the_training_experiments(capsys):
    out = help_of(["train", "--help"], capsys)
    assert out.startswith("usage: traveller train")
    assert "aiming" in out and "leadership" in out and "script_args" not in out


@pytest.mark.parametrize(("experiment", "own"), [
    ("aiming", ("--bands", "--self-play", "--pool-every", "--relative-actions")),
    ("leadership", ("--focus", "--assist", "--eval-scenarios")),
])
def test_train_experiment_help_names_its_real_options(experiment, own, capsys):
    out = help_of(["train", experiment, "--help"], capsys)
    assert out.startswith(f"usage: traveller train {experiment}")
    # the shared PPO settings and the experiment's own flags
    for option in ("--seed", "--total-timesteps", "--learning-rate", "--runs-dir", *own):
        assert option in out, option


def test_eval_help_names_its_real_options(capsys):
    out = help_of(["eval", "--help"], capsys)
    assert out.startswith("usage: traveller eval")
    for option in ("model", "--scenario", "--vs", "--battles", "--seed", "--json"):
        assert option in out, option


def test_bare_group_and_unknown_options_are_usage_errors(capsys):
    assert main(["train"]) == 2
    assert "aiming" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["tournament", "--no-such-option"])
    assert exc.value.code == 2
    assert "traveller tournament: error: unrecognized arguments: --no-such-option" in (
        capsys.readouterr().err)


# ---------------------------------------------------------------------------- the table
@pytest.fixture
def fake_experiment(monkeypatch):
    """A module of the experiment protocol (``build_parser(parser)``, ``run(args)``)
    registered as ``traveller train fake`` by one table entry."""
    module = types.ModuleType("fake_experiment")
    module.__doc__ = "A fake experiment for the tests.\n\nLonger text."
    seen: list[argparse.Namespace] = []

    def build_parser(parser=None):
        parser = parser or argparse.ArgumentParser(allow_abbrev=False)
        parser.add_argument("--size", type=int, default=1, help="how big")
        return parser

    def run(args):
        seen.append(args)
        return 7

    module.build_parser, module.run = build_parser, run
    monkeypatch.setitem(EXPERIMENTS, "train fake", Experiment("a fake", lambda: module))
    return seen


def test_one_table_entry_adds_an_experiment_command(fake_experiment, capsys):
    assert "fake" in help_of(["train", "--help"], capsys)
    out = help_of(["train", "fake", "--help"], capsys)
    assert "--size" in out and "A fake experiment for the tests." in out
    assert main(["train", "fake", "--size", "3"]) == 7
    # the handler sees its own options only, not the command line's bookkeeping
    assert vars(fake_experiment[0]) == {"size": 3}


def test_a_command_module_is_imported_only_when_named(monkeypatch):
    loaded = []

    def load():
        loaded.append(True)
        raise AssertionError("imported although not named")

    monkeypatch.setitem(EXPERIMENTS, "train ghost", Experiment("never imported", load))
    _, parsers = traveller_cli.build_parser(["scenarios"])
    assert "train ghost" in parsers and not loaded  # listed, not imported


def test_the_cli_imports_no_module_by_name_string():
    """The training layer is imported by plain import statements, not ``importlib``."""
    import ast
    from pathlib import Path

    for path in Path(traveller_cli.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "importlib" not in names, path


# ---------------------------------------------------------------------------- outputs
def test_tournament_writes_under_runs_by_default(tmp_path, monkeypatch, capsys):
    """With no ``--out`` the tables go to ``runs/tournament`` (git-ignored), never to the
    published ``results/``."""
    from traveller_rl.tournament import DEFAULT_OUT, build_parser

    assert DEFAULT_OUT == "runs/tournament"
    assert build_parser().parse_args([]).out == DEFAULT_OUT
    monkeypatch.chdir(tmp_path)
    assert main(["tournament", "--policies", "rush,random", "--scenarios", "duel",
                 "--battles", "1", "--workers", "1", "--bootstrap", "5",
                 "--no-progress"]) == 0
    assert (tmp_path / "runs" / "tournament" / "results.json").is_file()
    assert not (tmp_path / "results").exists()
    run = json.loads((tmp_path / "runs" / "tournament" / "results.json").read_text())["run"]
    assert run["command"] == ("python -m traveller_rl.tournament --policies rush,random "
                              "--scenarios duel --battles 1 --seed 0 --workers 1 "
                              "--out runs/tournament --bootstrap 5 --no-progress")
    capsys.readouterr()


def test_train_scripts_write_under_runs_by_default():
    from traveller_rl.recipes import aiming, leadership

    for module in (aiming, leadership):
        assert module.build_parser(trainer="sb3").parse_args([]).runs_dir == "runs"


# ------------------------------------------------- one recipe per task, --trainer chooses
@pytest.mark.parametrize(("words", "trainer"), [
    ("train aiming", "sb3"), ("train aiming-ppo", "ppo"),
    ("train leadership", "sb3"), ("train leadership-ppo", "ppo"),
])
def test_each_training_command_has_its_trainer_by_default(words, trainer, capsys):
    parser, _ = traveller_cli.build_parser(words.split())
    assert parser.parse_args(words.split()).trainer == trainer
    other = {"ppo": "sb3", "sb3": "ppo"}[trainer]
    assert parser.parse_args([*words.split(), "--trainer", other]).trainer == other
    out = " ".join(help_of([*words.split(), "--help"], capsys).split())
    assert "--trainer {ppo,sb3} how to train" in out and f"(default: {trainer})" in out


@pytest.mark.parametrize("name", ["aiming", "leadership"])
def test_each_trainer_gets_its_own_defaults(name):
    """A flag left out gets the chosen trainer's default: sb3 exactly its ``Args``, ppo the
    batched trainer's settings; a flag given keeps its value."""
    import importlib

    from traveller_rl.recipes.trainer_options import resolve

    recipe = importlib.import_module(f"traveller_rl.recipes.{name}")
    for default in ("ppo", "sb3"):
        parser = recipe.build_parser(trainer=default)
        sb3 = resolve(parser.parse_args(["--trainer", "sb3"]), recipe.OPTIONS)
        assert recipe.Args(**vars(sb3)) == recipe.Args()
        ppo = resolve(parser.parse_args(["--trainer", "ppo"]), recipe.OPTIONS)
        assert not hasattr(ppo, "runs_dir") and not hasattr(ppo, "n_steps")
        given = resolve(parser.parse_args(["--trainer", "ppo", "--total-timesteps", "7",
                                           "--no-anneal-lr"]), recipe.OPTIONS)
        assert (given.total_timesteps, given.anneal_lr) == (7, False)
    expected = {"aiming": {"total_timesteps": 6_000_000, "eval_battles": 500,
                           "learning_rate": 1e-3, "n_epochs": 10, "minibatches": 8,
                           "num_envs": 192, "seed": 1, "anneal_lr": True,
                           "out": Path("runs/aiming_ppo"), "json": None},
                "leadership": {"total_timesteps": 12_000_000, "eval_battles": 500,
                               "ent_coef": 0.001, "gamma": 0.99, "gae_lambda": 0.8,
                               "num_envs": 256, "net_arch": "128,128", "mates": "marksman",
                               "checkpoint": None, "out": Path("runs/leadership_ppo")}}[name]
    assert {key: getattr(ppo, key) for key in expected} == expected


@pytest.mark.parametrize(("argv", "refused", "trainer"), [
    (["train", "aiming", "--lr", "0.01"], "--lr", "ppo"),
    (["train", "aiming-ppo", "--n-steps", "64"], "--n-steps", "sb3"),
    (["train", "aiming-ppo", "--trainer", "sb3", "--no-anneal-lr"], "--anneal-lr", "ppo"),
    (["train", "leadership", "--trainer", "sb3", "--checkpoint", "x.pt"], "--checkpoint",
     "ppo"),
    (["train", "leadership-ppo", "--assist", ""], "--assist", "sb3"),
])
def test_a_flag_of_the_other_trainer_is_refused(argv, refused, trainer, capsys):
    """Refused before anything trains: a usage error (status 2) naming the flag."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"traveller {' '.join(argv[:2])}: error: {refused} is an option of --trainer " \
           f"{trainer} only" in err
    assert "Traceback" not in err


def test_the_sb3_command_evaluates_a_ppo_checkpoint_with_trainer_ppo(tmp_path, capsys):
    """``traveller train leadership --trainer ppo`` is ``train leadership-ppo``."""
    import torch

    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic
    from traveller_env import vector

    venv = vector.make("leadership_l3", num_envs=1, seed=0, backend="python",
                       relative_actions=True)
    torch.manual_seed(0)
    net = ActorCritic(venv.obs_dim, venv.n_actions, [16])
    ckpt = tmp_path / "ppo.pt"
    ckpt.write_bytes(checkpoint_bytes(net, "leadership_l3", venv.action_labels))
    outputs = {}
    for words in (["train", "leadership", "--trainer", "ppo"], ["train", "leadership-ppo"]):
        report = tmp_path / f"{words[1]}.json"
        assert main([*words, "--checkpoint", str(ckpt), "--eval-battles", "1",
                     "--json", str(report)]) == 0
        outputs[words[1]] = capsys.readouterr().out.replace(str(report), "REPORT")
        data = json.loads(report.read_text())
        assert data["command"].startswith("python -m traveller_rl.recipes.leadership "
                                          f"--checkpoint {ckpt}")
        assert [r["sergeant"] for r in data["rows"]] == [
            "learned", "never_lead", "always_lead", "leader"] * 2
    assert outputs["leadership"] == outputs["leadership-ppo"]
    assert "| leadership_l0 | leader |" in outputs["leadership"]


@pytest.mark.parametrize("module", ["experiments.bench_env", "experiments.bench_train",
                                    "experiments.soak", "traveller_rl.recipes.optimum",
                                    "experiments.profile_env"])
def test_benchmarks_write_no_file_unless_asked(module):
    """Their ``--json`` is off by default: the docs' figures are written only when asked."""
    import importlib

    args = importlib.import_module(module).build_parser().parse_args([])
    assert not getattr(args, "json", None)


def test_environment_commands_run_alone(capsys):
    """``traveller_cli.env_commands`` holds the environment's own commands, runnable alone."""
    from traveller_cli import env_commands as cli

    assert cli.main(["scenarios"]) == 0
    assert "duel" in capsys.readouterr().out
    assert set(cli.COMMANDS) == {"simulate", "scenarios", "replay"}
    assert set(cli.COMMANDS) < set(traveller_cli.COMMANDS)
