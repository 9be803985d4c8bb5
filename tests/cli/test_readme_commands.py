"""Every command of README.md's command table runs in the install README gives (`make demo`:
the base dependencies, torch and the `demo` extra), from a folder outside the checkout.

The table is parsed from README.md, so the test follows it: each command runs in a subprocess
whose imports of the other extras' packages fail (every ``sys.meta_path`` finder wrapped so
that it finds none of them, as if they were not installed), with ``cwd`` a temporary folder and
tiny budgets (``TINY``). A command whose "needs" column names a blocked extra must exit 2 with
one line naming the extra and its ``pip install`` line; every other command must succeed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

#: The extras that `make demo` does not install, and the packages they provide.
BLOCKED_EXTRAS = {"train", "rllib", "onnx", "torchrl", "tianshou", "benchmarl", "browser"}
BLOCKED_MODULES = ("stable_baselines3", "sb3_contrib", "ray", "torchrl", "tensordict",
                   "tianshou", "benchmarl", "onnx", "selenium", "supersuit")

PRELUDE = textwrap.dedent(f"""
    import sys

    class _Hidden:
        \"\"\"A finder of ``sys.meta_path`` that finds nothing of the blocked packages, as if
        they were not installed (``importlib.util.find_spec`` gives None, an import raises
        ``ModuleNotFoundError``).\"\"\"

        blocked = {BLOCKED_MODULES!r}

        def __init__(self, finder):
            self.finder = finder

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.blocked:
                return None
            return self.finder.find_spec(name, path, target)

        def __getattr__(self, attr):
            return getattr(self.finder, attr)

    sys.meta_path[:] = [_Hidden(f) for f in sys.meta_path]
    from traveller_cli import main
    sys.exit(main(sys.argv[1:]))
""")


TINY_TRAIN = ["--total-timesteps", "64", "--num-envs", "4"]
#: Extra flags that keep each README command tiny (placeholders are filled by ``_argv``).
TINY: dict[str, list[str]] = {
    "traveller simulate --scenario squad --seed 1": ["--quiet", "--json", "log.jsonl"],
    "traveller scenarios": [],
    "traveller replay LOG.jsonl --scenario squad --html out.html": [],
    "traveller eval MODEL --scenario duel --vs marksman,rush": ["--battles", "1"],
    "traveller export CKPT.pt --onnx npc.onnx": [],
    "traveller behaviour --policies rush,tactician --vs marksman": ["--battles", "1",
                                                                     "--no-progress"],
    "traveller tournament --policies rush,marksman,tactician --scenarios duel":
        ["--battles", "1", "--no-progress"],
    "traveller demo": ["--duel-decisions", "64", "--squad-decisions", "64", "--battles", "1",
                       "--no-progress"],
    "traveller train ppo --scenario duel --opponents red=rush":
        [*TINY_TRAIN, "--num-steps", "8", "--eval-every", "0", "--final-eval-battles", "0",
         "--no-progress", "--out", "runs/ppo", "--overwrite"],
    "traveller train aiming-ppo": [*TINY_TRAIN, "--bands", "short", "--eval-battles", "1"],
    "traveller train leadership-ppo": [*TINY_TRAIN, "--eval-battles", "1"],
    "traveller train squad-ppo": ["--total-timesteps", "64", "--eval-battles", "2",
                                  "--behaviour-battles", "0", "--workers", "1"],
    "traveller train aiming": ["--total-timesteps", "64"],
    "traveller train leadership": ["--total-timesteps", "64"],
    "traveller train clone --teacher tactician --out bc.pt": ["--battles", "1", "--epochs",
                                                              "1"],
    "traveller train rllib --scenario duel": [],
    "traveller benchmark POLICY": ["--no-progress"],
    "traveller scenarios generate gen:skirmish --seed 7 --out x.yaml": [],
    "traveller league train": ["--config", "league.yaml", "--out", "runs/league",
                               "--no-progress"],
    "traveller league rate": ["runs/league", "--battles", "1", "--workers", "1",
                              "--behaviour-battles", "0", "--scripted", "rush",
                              "--no-progress"],
    "traveller league add": ["runs/league", "--name", "extra", "--checkpoint",
                             "runs/ppo/ppo.pt"],
    "traveller league export": ["runs/league", "--to", "runs/league_onnx"],
    "traveller ladder squad --levels 5 --league results/league": ["--battles", "1",
                                                                   "--levels", "2"],
}

#: Placeholders of README's command lines and what stands for them.
PLACEHOLDERS = {"LOG.jsonl": "log.jsonl", "MODEL": "runs/ppo/ppo.pt",
                "CKPT.pt": "runs/ppo/ppo.pt", "POLICY": "rush"}

#: A league of one tiny learner on duel (``traveller league train``).
LEAGUE = {"scenario": "duel", "generations": 1, "decisions_per_generation": 64, "init": "",
          "imports": [], "train": {"num_envs": 4, "num_steps": 8},
          "learners": [{"name": "tiny", "style": {}}]}


def readme_commands() -> list[tuple[str, set[str]]]:
    """README's command table: each command line (a row with several commands gives each
    one; ``league train|rate|add|export`` gives four) and the extras its row needs."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| command | needs |"):]
    table = table[:table.index("\n\n")]
    out = []
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        first, needs = cells[0], cells[1]
        extras = set(re.findall(r"`(\w+)`", needs.split("(")[0]))
        codes = [c.replace("\\|", "|") for c in re.findall(r"`([^`]+)`", first)]
        head = codes[0]
        if "|" in head:  # traveller league train|rate|add|export
            stem, _, alternatives = head.rpartition(" ")
            codes = [f"{stem} {a}" for a in alternatives.split("|")]
            out += [(c, extras | ({"onnx"} if c.endswith("export") else set()))
                    for c in codes]
            continue
        base = head.rsplit(" ", 1)[0]
        out += [(c if c.startswith("traveller") else f"{base} {c}", extras) for c in codes]
    return out


COMMANDS = readme_commands()


def test_the_table_is_read_and_every_command_has_tiny_flags():
    assert len(COMMANDS) >= 20
    assert {c for c, _ in COMMANDS} == set(TINY)


def _argv(command: str) -> list[str]:
    words = [PLACEHOLDERS.get(w, w) for w in command.split()[1:]]
    return words + TINY[command]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the checkout holding what the placeholders name: a battle log and
    a tiny ``train ppo`` checkpoint, and a tiny league config."""
    where = tmp_path_factory.mktemp("readme")
    (where / "league.yaml").write_text(json.dumps(LEAGUE), encoding="utf-8")
    for command in ("traveller simulate --scenario squad --seed 1",
                    "traveller train ppo --scenario duel --opponents red=rush"):
        done = _run(command, where)
        assert done.returncode == 0, done.stderr[-2000:]
    return where


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PRELUDE, *_argv(command)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(("command", "extras"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_readme_command_runs_or_names_its_extra(command, extras, folder):
    done = _run(command, folder)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    blocked = extras & BLOCKED_EXTRAS
    if blocked:
        assert done.returncode == 2, output[-2000:]
        lines = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(lines) == 1, done.stderr
        assert "pip install" in lines[0]
        assert any(f"'{extra}' extra" in lines[0] for extra in blocked), lines[0]
    else:
        assert done.returncode == 0, output[-3000:]


def test_an_abbreviated_option_is_refused_by_every_subcommand():
    """No ``traveller`` parser accepts an abbreviation of a long option (``--htm`` for
    ``--html``): every subcommand's parser, the training layer's included, has
    ``allow_abbrev`` off."""
    from traveller_cli.app import EXPERIMENTS, build_parser

    _, parsers = build_parser()
    words = list(parsers)
    for name in EXPERIMENTS:
        _, loaded = build_parser(name.split())
        parsers[name] = loaded[name]
    checked = 0
    for name in words + list(EXPERIMENTS):
        parser = parsers[name]
        assert parser.allow_abbrev is False, name
        for action in parser._actions:
            long = [o for o in action.option_strings if o.startswith("--") and len(o) > 5]
            if long and long[0] != "--help":
                try:
                    _, extra = parser.parse_known_args([*_positionals(parser), long[0][:-1]])
                except SystemExit:  # a group's parser: its subcommand is required
                    break
                assert long[0][:-1] in extra, (name, long[0])
                checked += 1
                break
    assert checked >= 20


def _positionals(parser) -> list[str]:
    """Placeholder values for ``parser``'s required positionals (none for optional ones)."""
    values = []
    for action in parser._actions:
        if not action.option_strings and action.nargs not in ("?", "*", 0) and \
                action.dest not in ("_run", "_parser") and not action.choices:
            values.append("x")
    return values
