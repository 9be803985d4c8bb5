"""Every user error of every ``traveller`` subcommand: one line ``traveller <command>: error:
<message>`` naming the flag (or the bad value), exit status 2, no traceback, and nothing
started (no battle, tournament or training) before the refusal.

The cases are generated from the parsers (``traveller_cli.build_parser(argv)`` for each
command): an int flag gets -1 and ``x``, a seed also 2**64, a float ``x``, -1 and ``nan``, a
flag with choices an unknown one. Semantic errors (unknown names, missing or corrupt files,
existing output folders, scenario files with many mistakes) are written by hand. Everything
runs in-process through ``traveller_cli.main`` except a few end-to-end cases; the functions that
would start work are replaced by ones that fail the test, so a value that slips through
validation cannot start a long run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from traveller_cli import COMMANDS, EXPERIMENTS, build_parser, main

#: Every command's words (league's actions and scenarios' generate included).
ALL_COMMANDS = [*COMMANDS, *EXPERIMENTS]

#: Arguments every case of a command starts from (valid enough that the bad flag is what is
#: refused); ``{tmp}`` is the case's temporary folder (see ``workspace``).
BASE: dict[str, list[str]] = {
    "replay": ["{tmp}/battle.jsonl", "--html", "{tmp}/page.html"],
    "eval": ["{tmp}/model.pt"],
    "export": ["{tmp}/model.pt", "--onnx", "{tmp}/model.onnx"],
    "behaviour": ["--policies", "rush", "--no-progress"],
    "demo": ["--out", "{tmp}/new"],
    "train aiming-ppo": ["--out", "{tmp}/new"],
    "train leadership-ppo": ["--out", "{tmp}/new"],
    "train squad-ppo": ["--out", "{tmp}/new"],
    "train ppo": ["--backend", "python", "--out", "{tmp}/new", "--no-progress"],
    "train clone": ["--out", "{tmp}/new.pt"],
    "train rllib": ["--out", "{tmp}/new"],
    "tournament": ["--out", "{tmp}/new", "--no-progress"],
    "league train": ["--out", "{tmp}/new"],
    "league rate": ["{tmp}/league"],
    "league add": ["{tmp}/league", "--name", "guest", "--checkpoint", "{tmp}/model.pt"],
    "league export": ["{tmp}/league", "--to", "{tmp}/new"],
    "ladder": ["duel", "--league", "{tmp}/league"],
    "benchmark": ["rush", "--no-progress"],
    "scenarios generate": ["generate", "gen:skirmish"],
}

#: Functions that start real work: each is replaced by one that fails the test.
WORK = [
    ("traveller_env.simulate", "play_random"),
    ("traveller_rl.evaluation", "evaluate_matchup"),
    ("traveller_rl.behaviour", "behaviour_stats"),
    ("traveller_rl.tournament", "run_tournament"),
    ("traveller_rl.ppo.trainer", "train"),
    ("traveller_rl.clone", "collect"),
    ("traveller_rl.recipes.aiming", "train_sb3"),
    ("traveller_rl.recipes.leadership", "train_sb3"),
    ("traveller_rl.league", "train"),
    ("traveller_rl.league", "rate"),
    ("traveller_rl.rllib", "train"),
    ("traveller_rl.benchmark", "run_benchmark"),
]


@pytest.fixture(autouse=True)
def no_work(monkeypatch):
    """A value that slips through validation fails the test instead of starting a run."""
    import importlib

    def started(*args, **kwargs):
        raise AssertionError("work started before the arguments were refused")

    # Import every module before patching any: a module imported while an earlier one is
    # patched would bind the failing stand-in for good (``from ... import evaluate_matchup``).
    modules = {}
    for module, _ in WORK:
        try:
            modules[module] = importlib.import_module(module)
        except ImportError:  # an optional trainer not installed here
            continue
    for module, name in WORK:
        if module in modules and hasattr(modules[module], name):
            monkeypatch.setattr(modules[module], name, started)


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A folder with a model file, a battle log, a league and a folder holding a file."""
    (tmp_path / "model.pt").write_bytes(b"not a checkpoint")
    (tmp_path / "battle.jsonl").write_text('{"type": "turn", "actor": "a"}\n')
    (tmp_path / "league").mkdir()
    (tmp_path / "league" / "league.json").write_text(
        '{"format": "traveller-league", "format_version": 1, "scenario": "duel", '
        '"members": []}')
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("an earlier run")
    (tmp_path / "corrupt.yaml").write_text("name: [unclosed\n")
    return tmp_path


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """``traveller ARGV`` in-process: its exit status (argparse's refusals exit) and stderr."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    return status, capsys.readouterr().err


def assert_usage_error(argv: list[str], words: str, status: int, err: str,
                       *named: str) -> None:
    """Status 2, the ``traveller WORDS: error:`` line, one of ``named`` in it, no traceback."""
    assert status == 2, (argv, status, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if f"traveller {words}: error: " in line]
    assert lines, (argv, err)
    assert any(n in err for n in named), (argv, named, err)
    assert len(err.strip().splitlines()) == 1, err  # one line, no usage block



def _parser_of(words: str) -> argparse.ArgumentParser:
    _, parsers = build_parser(words.split())
    head, _, action = words.partition(" ")
    if head == "league" and action:  # league's actions are its own subparsers
        sub = next(a for a in parsers["league"]._actions
                   if isinstance(a, argparse._SubParsersAction))
        return sub.choices[action]
    return parsers["scenarios" if words == "scenarios generate" else words]


def _bad_values(action: argparse.Action) -> list[str]:
    kind = action.type
    name = getattr(kind, "__name__", "")
    if action.choices is not None and not isinstance(action.choices, dict):
        return ["nosuch"]
    if name == "seed_type" or (action.dest == "seed" and kind is int):
        return ["-1", str(2**64), "x"]
    if name.startswith("int_at_least_"):
        return [str(int(name.rsplit("_", 1)[1]) - 1), "x"]
    if kind is int:
        return ["-1", "x"]
    if kind is float or name == "number":
        return ["-1", "x", "nan"]
    return []


def _generated_cases() -> list:
    cases = []
    commands = [w for w in ALL_COMMANDS if w not in ("league", "scenarios")]
    commands += ["league train", "league rate", "league add", "league export",
                 "scenarios generate"]
    for words in commands:
        for action in _parser_of(words)._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            flag = action.option_strings[0]
            if flag in BASE.get(words, []):
                continue
            for value in _bad_values(action):
                cases.append(pytest.param(words, flag, value, id=f"{words}-{flag}={value}"))
    return cases


def _argv(words: str, tmp: Path, *extra: str) -> list[str]:
    head = words.split() if words != "scenarios generate" else ["scenarios"]
    base = [a.replace("{tmp}", str(tmp)) for a in BASE.get(words, [])]
    return [*head, *base, *extra]


@pytest.mark.parametrize(("words", "flag", "value"), _generated_cases())
def test_every_numeric_and_choice_flag_refuses_a_bad_value(words, flag, value, workspace,
                                                           capsys):
    argv = _argv(words, workspace, flag, value)
    status, err = run_cli(argv, capsys)
    prog = "scenarios" if words == "scenarios generate" else words
    assert_usage_error(argv, prog, status, err, flag, value)


def test_the_generated_cases_cover_every_command():
    covered = {p.values[0] for p in _generated_cases()}
    for words in ALL_COMMANDS:
        if words in ("scenarios", "league"):
            continue
        has_numbers = any(_bad_values(a) for a in _parser_of(words)._actions
                          if a.option_strings)
        assert words in covered or not has_numbers, words


# ---------------------------------------------------------------------------- by hand
HAND_WRITTEN = [
    # unknown names
    ("simulate", ["--scenario", "nosuch"], "nosuch"),
    ("eval", ["--vs", "nosuch"], "--vs"),
    ("eval", ["--scenario", "nosuch"], "nosuch"),
    ("behaviour", ["--vs", "nosuch"], "--vs"),
    ("behaviour", ["--scenario", "nosuch"], "nosuch"),
    ("tournament", ["--policies", "rush,nosuch"], "--policies"),
    ("tournament", ["--policies", "rush"], "at least two policies"),
    ("tournament", ["--scenarios", "nosuch"], "--scenarios"),
    ("tournament", ["--scenarios", ","], "--scenarios"),
    ("train clone", ["--teacher", "nosuch"], "--teacher 'nosuch'"),
    ("train clone", ["--scenario", "nosuch"], "nosuch"),
    ("train clone", ["--hidden", "0"], "--hidden"),
    ("train aiming-ppo", ["--bands", "nosuch"], "--bands"),
    ("train aiming", ["--lr", "0.1"], "--lr is an option of --trainer ppo only"),
    ("train ppo", ["--scenario", "nosuch"], "nosuch"),
    ("train ppo", ["--opponents", "red=nosuch"], "nosuch"),
    ("train ppo", ["--arch", "nosuch"], "--arch"),
    ("train squad-ppo", ["--vs", "nosuch"], "--vs"),
    ("train squad-ppo", ["--eval-battles", "3"], "--eval-battles"),
    ("league rate", ["--scripted", "nosuch"], "--scripted"),
    ("ladder", ["--levels", "0"], "--levels"),
    ("benchmark", ["--suite", "nosuch"], "nosuch"),
    # missing or corrupt input files
    ("eval", ["{tmp}/nothing.pt", "--scenario", "duel"], "nothing.pt"),
    ("eval", ["rush"], "traveller tournament"),
    ("export", ["{tmp}/nothing.pt", "--onnx", "{tmp}/x.onnx"], "nothing.pt"),
    ("replay", ["{tmp}/nothing.jsonl", "--html", "{tmp}/p.html"], "nothing.jsonl"),
    ("replay", ["{tmp}/corrupt.yaml", "--html", "{tmp}/p.html"], "corrupt.yaml"),
    ("simulate", ["--scenario", "{tmp}/corrupt.yaml"], "not valid YAML"),
    ("simulate", ["--scenario", "{tmp}/nothing.yaml"], "nothing.yaml"),
    ("train ppo", ["--init", "{tmp}/nothing.pt"], "--init"),
    ("train leadership-ppo", ["--checkpoint", "{tmp}/nothing.pt"], "--checkpoint"),
    ("train squad-ppo", ["--checkpoint", "{tmp}/nothing.pt"], "--checkpoint"),
    ("league train", ["--config", "{tmp}/nothing.yaml"], "--config"),
    ("league rate", ["{tmp}/nothing"], "no league here"),
    ("league add", ["{tmp}/league", "--name", "guest", "--checkpoint", "{tmp}/nothing.pt"],
     "--checkpoint"),
    ("ladder", ["duel", "--league", "{tmp}/nothing"], "no league here"),
    # output paths: one rule for folders (a folder with files needs --overwrite)
    ("tournament", ["--out", "{tmp}/full"], "--out"),
    ("train ppo", ["--out", "{tmp}/full"], "--out"),
    ("train aiming-ppo", ["--out", "{tmp}/full"], "--out"),
    ("train leadership-ppo", ["--out", "{tmp}/full"], "--out"),
    ("train squad-ppo", ["--out", "{tmp}/full"], "--out"),
    ("demo", ["--out", "{tmp}/full"], "--out"),
    ("league train", ["--out", "{tmp}/full"], "--out"),
    ("league export", ["--to", "{tmp}/full"], "--to"),
    ("train clone", ["--out", "{tmp}/model.txt"], "--out"),
    ("simulate", ["--gif", "{tmp}/full"], "--gif"),
    ("eval", ["--json", "{tmp}/full"], "--json"),
    # semantic
    ("tournament", ["--seed", str(2**64 - 1), "--battles", "2"], "--seed"),
    ("train ppo", ["--pool-scripted", "rush"], "--pool-scripted needs --pool"),
    ("train aiming", ["--total-timesteps", "-5"], "--total-timesteps"),
    ("train leadership", ["--gamma", "2"], "--gamma"),
]


@pytest.mark.parametrize(("words", "extra", "named"),
                         [pytest.param(w, e, n, id=f"{w}-{' '.join(e)}")
                          for w, e, n in HAND_WRITTEN])
def test_semantic_errors_are_named(words, extra, named, workspace, capsys):
    extra = [a.replace("{tmp}", str(workspace)) for a in extra]
    base = [a.replace("{tmp}", str(workspace)) for a in BASE.get(words, [])]
    if extra and not extra[0].startswith("-"):
        base = []  # the case gives the command's positional arguments: all of them
    kept, i = [], 0
    while i < len(base):  # the case's own value of a flag replaces the base's
        if base[i] in extra:
            i += 2
            continue
        kept.append(base[i])
        i += 1
    argv = [*words.split(), *kept, *extra]
    status, err = run_cli(argv, capsys)
    assert_usage_error(argv, words, status, err, named)


def test_an_existing_folder_is_used_with_overwrite_and_when_empty(workspace, capsys):
    """The one rule's other half: ``--overwrite`` (or an empty folder) passes the check, and
    the command goes on to its work (here a stand-in that stops it)."""
    (workspace / "empty").mkdir()
    for out, extra in ((workspace / "full", ["--overwrite"]), (workspace / "empty", [])):
        with pytest.raises(AssertionError, match="work started"):
            main(["tournament", "--policies", "rush,marksman", "--scenarios", "duel",
                  "--battles", "1", "--out", str(out), "--no-progress", *extra])
    capsys.readouterr()


def test_a_scenario_with_many_mistakes_reports_each_with_its_field_path(tmp_path, capsys):
    from traveller_env.scenario import config_dir

    data = yaml.safe_load((config_dir() / "scenarios" / "squad.yaml").read_text())
    data["max_rounds"] = "many"
    for c in data["sides"][0]["combatants"]:
        c["characteristics"]["STR"] = 99
    data["sides"][1]["combatants"][0]["stance"] = "kneel"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    status, err = run_cli(["simulate", "--scenario", str(bad)], capsys)
    assert status == 2 and "Traceback" not in err
    assert err.startswith(f"traveller simulate: error: {bad}: max_rounds: ")
    problems = 2 + len(data["sides"][0]["combatants"])
    assert f"({problems} problems in all, the others below)" in err
    assert "sides[1].combatants[0].stance" in err
    for i in range(len(data["sides"][0]["combatants"])):
        assert f"sides[0].combatants[{i}].characteristics.STR" in err
    assert err.count("traveller simulate: error: ") == 1  # one error block


def test_a_scenario_with_very_many_mistakes_lists_twenty_then_counts(tmp_path):
    from traveller_env.scenario import MAX_LISTED_PROBLEMS, ScenarioError, load_scenario

    data = yaml.safe_load((Path(__file__).parents[2] / "configs" / "scenarios" /
                           "squad.yaml").read_text())
    for k in range(30):
        data[f"unknown_{k}"] = k
    with pytest.raises(ScenarioError) as exc:
        load_scenario(data)
    text = str(exc.value)
    assert len(exc.value.problems) == 30
    assert len(text.splitlines()) == MAX_LISTED_PROBLEMS + 1  # 20 listed, then the count
    assert text.splitlines()[-1].strip() == f"and {30 - MAX_LISTED_PROBLEMS} more"


def test_gif_frames_stay_within_the_pixel_budget_on_big_maps():
    from traveller_env.replay.render import GIF_PIXEL_BUDGET, gif_cell

    assert gif_cell(20, 10) == 32 and gif_cell(20, 10, cell=12) == 12
    assert 1000 * 1000 * gif_cell(1000, 1000, cell=32) ** 2 <= GIF_PIXEL_BUDGET
    with pytest.raises(ValueError, match="--html"):
        gif_cell(3000, 3000)


def test_a_streamed_gif_reads_back_frame_for_frame(tmp_path):
    from PIL import Image

    from traveller_env.replay.render import GifWriter, render_rgb
    from traveller_env.scenario import build_battle

    battle = build_battle("duel", seed=1)
    frames = [render_rgb(battle, cell=8, caption="start")]
    battle.apply(battle.legal_actions()[0])
    frames.append(render_rgb(battle, cell=8, caption="next"))
    with GifWriter(tmp_path / "a.gif", fps=2) as gif:
        for frame in frames:
            gif.add(frame)
    with Image.open(tmp_path / "a.gif") as im:
        assert im.n_frames == 2 and im.size == frames[0].shape[1::-1]
        assert im.info["duration"] == 500


# ---------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("argv", [
    ["simulate", "--seed", "-1"],
    ["tournament", "--policies", "rush,marksman", "--scenarios", "duel", "--seed", "-1"],
    ["eval", "rush"],
])
def test_the_console_command_prints_one_line(argv, tmp_path):
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", "traveller_cli", *argv],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"traveller {argv[0]}: error: "), lines
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------------- help
#: Commands whose help is not yet held to the examples rule.
HELP_WITHOUT_EXAMPLES: set[str] = set()


@pytest.mark.parametrize("words", [w for w in ALL_COMMANDS if w != "league"]
                         + ["league train", "league rate", "league add", "league export"])
def test_every_help_is_short_with_examples_and_each_default_once(words, capsys):
    parser = _parser_of(words)
    text = parser.format_help()
    assert len(text.splitlines()) <= 200, words
    if words not in HELP_WITHOUT_EXAMPLES:
        assert "\nexamples:\n  traveller " in text, words
    for action in parser._actions:
        shown = (action.help or "") % {"default": action.default, "prog": parser.prog}
        assert shown.count("default:") <= 1, (words, action.option_strings, shown)
