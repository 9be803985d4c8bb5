"""The ``traveller`` parser: the environment's commands, ``eval``, and the experiments.

Two tables, so that a new command is one entry:

* ``COMMANDS``: name -> ``Command(help, add_arguments, run)`` (``traveller_env.cli.Command``);
* ``EXPERIMENTS``: the command's words -> ``Experiment(help, module)``, for a module of
  ``experiments/`` that exposes ``build_parser(parser=None)`` (adds its options to the given
  parser) and ``run(args) -> int``. ``"tournament"`` is ``traveller tournament``; ``"train
  aiming"`` is ``traveller train aiming``, under the group ``train`` whose help line is in
  ``GROUPS``. An experiment's module is imported only when the command line names it (training
  modules pull in heavy libraries), and its parser is then the subcommand's, so ``traveller
  train aiming --help`` lists the experiment's real options.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

from traveller_env import cli as env_cli
from traveller_env.cli import PROG, Command

from . import behaviour, evaluate, export

__all__ = ["COMMANDS", "EXPERIMENTS", "GROUPS", "Experiment", "build_parser", "load_experiment",
           "main"]


class Experiment(NamedTuple):
    """A command that runs a module of ``experiments/``: its help line and the module's
    import name. The module exposes ``build_parser(parser=None)`` and ``run(args) -> int``."""

    help: str
    module: str


#: Commands by name (the environment's own, then those that need ``agents``).
COMMANDS: dict[str, Command] = {
    **env_cli.COMMANDS,
    "eval": Command("evaluate a trained model against scripted policies",
                    evaluate.add_arguments, evaluate.run),
    "export": Command("write a trained policy (.pt or .zip) as an ONNX file that plays "
                      "without PyTorch", export.add_arguments, export.run),
    "behaviour": Command("behaviour statistics per policy: stance, cover, focus fire, aiming, "
                         "leadership, distance kept (agents/behaviour.py)",
                         behaviour.add_arguments, behaviour.run),
}

#: Experiment commands by their words (``"train aiming"`` is ``traveller train aiming``).
EXPERIMENTS: dict[str, Experiment] = {
    "train aiming": Experiment("learn when and how long to aim, with MaskablePPO "
                               "(experiments/train_aiming.py)", "experiments.train_aiming"),
    "train leadership": Experiment("learn when to lead and whom to direct, with MaskablePPO "
                                   "(experiments/train_leadership.py)",
                                   "experiments.train_leadership"),
    "train aiming-ppo": Experiment("learn to aim in each range band with the batched PPO, "
                                   "against the exact optimum (experiments/aiming_ppo.py)",
                                   "experiments.aiming_ppo"),
    "train leadership-ppo": Experiment("learn when a sergeant should lead, with the batched "
                                       "PPO (experiments/leadership_ppo.py)",
                                       "experiments.leadership_ppo"),
    "train squad-ppo": Experiment("squad tactics by self-play with the batched PPO, evaluated "
                                  "against the scripted NPCs (experiments/squad_ppo.py)",
                                  "experiments.squad_ppo"),
    "train ppo": Experiment("masked PPO on batched battles: scripted opponents, self-play "
                            "or a pool of past selves (experiments/train_ppo.py)",
                            "experiments.train_ppo"),
    "train clone": Experiment("behaviour cloning of a scripted policy into a train_ppo "
                              "checkpoint, an imitation start (experiments/clone_scripted.py)",
                              "experiments.clone_scripted"),
    "train rllib": Experiment("PPO on Ray RLlib, locally or across a Ray cluster "
                              "(experiments/train_rllib.py)", "experiments.train_rllib"),
    "tournament": Experiment("rank policies in a round-robin tournament "
                             "(experiments/tournament.py)", "experiments.tournament"),
    "league": Experiment("train, rate and export a league of opponents "
                         "(experiments/league.py)", "experiments.league"),
    "ladder": Experiment("pick a difficulty ladder from a rated league "
                         "(experiments/ladder.py)", "experiments.ladder"),
}

#: Help lines of command groups (the first word of several experiment commands).
GROUPS: dict[str, str] = {
    "train": "train a policy (one training experiment per subcommand)",
}


def load_experiment(words: str) -> ModuleType:
    """The module of the experiment command ``words`` (e.g. ``"train aiming"``). Exits with a
    clear message when the ``experiments`` package is not importable (an install without the
    repository)."""
    name = EXPERIMENTS[words].module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
            raise  # a dependency of the experiment is missing: say which, with a traceback
        raise SystemExit(
            f"{PROG}: error: `{PROG} {words}` runs {name.replace('.', '/')}.py, which ships "
            "with the repository: clone it and install it with `pip install -e .`") from exc


def _summary(module: ModuleType, default: str) -> str:
    """The first paragraph of ``module``'s docstring (``default`` without one)."""
    doc = (module.__doc__ or "").strip()
    return doc.split("\n\n")[0] if doc else default


def _group_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a bare group command (``traveller train``): its help on stderr, 2."""

    def run(args: argparse.Namespace) -> int:
        del args
        parser.print_help(sys.stderr)
        return 2

    return run


def _named(argv: Sequence[str], words: str) -> bool:
    """Whether ``argv`` starts with the command ``words``."""
    split = words.split()
    return list(argv[:len(split)]) == split


def build_parser(argv: Sequence[str] = ()
                 ) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``traveller`` parser and its subparsers by command words (``"simulate"``,
    ``"train"``, ``"train aiming"``, ...). The experiment command that ``argv`` names gets its
    module's options; the others only their help line until they are named."""
    parser = env_cli.new_parser()
    sub = parser.add_subparsers(metavar="COMMAND")
    parsers = env_cli.add_commands(sub, COMMANDS)
    groups: dict[str, Any] = {}  # group word -> its subparsers action
    for words, exp in EXPERIMENTS.items():
        *group, name = words.split()
        action = sub
        if group:
            head = " ".join(group)
            if head not in groups:
                help_line = GROUPS.get(head, f"{head} commands")
                gp = sub.add_parser(head, help=help_line, description=help_line)
                gp.set_defaults(_run=_group_help(gp), _parser=gp)
                groups[head] = gp.add_subparsers(metavar="EXPERIMENT", title="experiments")
                parsers[head] = gp
            action = groups[head]
        p = action.add_parser(name, help=exp.help, description=exp.help)
        if _named(argv, words):
            module = load_experiment(words)
            p.description = _summary(module, exp.help)
            module.build_parser(p)
            p.set_defaults(_run=module.run, _parser=p)
        parsers[words] = p
    return parser, parsers


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``traveller`` command line (``argv`` defaults to ``sys.argv[1:]``); return the
    exit status: 0 on success, 2 on a usage error or a bad scenario (message on stderr, no
    traceback), 1 when an output file cannot be written. Experiments return their own
    status (the tournament 2 on a bad policy or scenario)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, _ = build_parser(argv)
    return env_cli.dispatch(parser, argv)
