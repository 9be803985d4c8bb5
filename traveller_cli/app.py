"""The ``traveller`` parser: the environment's commands, ``eval``, and the training layer.

Two tables, so that a new command is one entry:

* ``COMMANDS``: name -> ``Command(help, add_arguments, run, examples, needs)``
  (``traveller_rl.commandline.Command``);
* ``EXPERIMENTS``: the command's words -> ``Experiment(help, load, needs)``, for a module of
  ``traveller_rl`` (``load`` imports it) that exposes ``build_parser(parser=None)`` (adds
  its options to the given parser) and ``run(args) -> int``. ``"tournament"`` is
  ``traveller tournament``; ``"train aiming"`` is ``traveller train aiming``, under the group
  ``train`` whose help line is in ``GROUPS``. A training-layer module is imported only when
  the command line names it (training modules pull in heavy libraries), and its parser is
  then the subcommand's, so ``traveller train aiming --help`` lists the module's real options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

from traveller_rl import commandline
from traveller_rl.commandline import Command

from . import behaviour, env_commands, evaluate, export

__all__ = ["COMMANDS", "EXPERIMENTS", "GROUPS", "Experiment", "build_parser", "load_experiment",
           "main"]


class Experiment(NamedTuple):
    """A command of the training layer (``traveller_rl``): its help line and a function that
    imports its module (a plain import, run only when the command line names it, because
    training modules pull in heavy libraries). The module exposes
    ``build_parser(parser=None)`` and ``run(args) -> int``."""

    help: str
    load: Callable[[], ModuleType]
    needs: Callable[[argparse.Namespace], Sequence[str]] | None = None
    """the extras (pyproject.toml) the parsed command needs (``"torch"`` for PyTorch),
    checked before it runs and before its module is imported"""


def _always(*extras: str) -> Callable[[argparse.Namespace], Sequence[str]]:
    """``needs`` of a command that always needs ``extras``."""
    return lambda args: extras


def _model_needs(*paths: str | None) -> list[str]:
    """What playing the policies ``paths`` needs: a MaskablePPO ``.zip`` the ``train`` extra,
    a ``.pt`` checkpoint PyTorch."""
    needs: list[str] = []
    for text in paths:
        for name in str(text or "").split(","):
            if name.endswith(".zip"):
                needs += ["torch", "train"]
            elif name.endswith(".pt"):
                needs.append("torch")
    return needs


def _recipe_needs(args: argparse.Namespace) -> Sequence[str]:
    """A recipe needs PyTorch, and SB3 (the ``train`` extra) with ``--trainer sb3``."""
    return ("torch", "demo", "train") if getattr(args, "trainer", "sb3") == "sb3" \
        else ("torch", "demo")


def _league_needs(args: argparse.Namespace) -> Sequence[str]:
    """``league export`` writes ONNX files; training and adding members need PyTorch."""
    return {"export": ("torch", "onnx"), "train": ("torch", "demo"),
            "add": ("torch",)}.get(getattr(args, "action", ""), ())


#: Commands by name (the environment's own, then those that need ``agents``).
COMMANDS: dict[str, Command] = {
    **env_commands.COMMANDS,
    "eval": Command("evaluate a trained model against scripted policies",
                    evaluate.add_arguments, evaluate.run, evaluate.EXAMPLES,
                    needs=lambda args: _model_needs(str(args.model), args.vs)),
    "export": Command("write a trained policy (.pt or .zip) as an ONNX file that plays "
                      "without PyTorch", export.add_arguments, export.run, export.EXAMPLES,
                      needs=lambda args: ["torch", "onnx", *_model_needs(str(args.policy))]),
    "behaviour": Command("behaviour statistics per policy: stance, cover, focus fire, aiming, "
                         "leadership, distance kept (traveller_rl/behaviour.py)",
                         behaviour.add_arguments, behaviour.run, behaviour.EXAMPLES,
                         needs=lambda args: _model_needs(args.policies, args.vs)),
}

def _recipe_aiming_sb3() -> ModuleType:
    from traveller_rl.recipes import aiming
    return aiming.command("sb3")


def _recipe_leadership_sb3() -> ModuleType:
    from traveller_rl.recipes import leadership
    return leadership.command("sb3")


def _recipe_aiming() -> ModuleType:
    from traveller_rl.recipes import aiming
    return aiming.command("ppo")


def _recipe_leadership() -> ModuleType:
    from traveller_rl.recipes import leadership
    return leadership.command("ppo")


def _recipe_squad() -> ModuleType:
    from traveller_rl.recipes import squad
    return squad


def _trainer() -> ModuleType:
    from traveller_rl.ppo import trainer
    return trainer


def _clone() -> ModuleType:
    from traveller_rl import clone
    return clone


def _rllib() -> ModuleType:
    from traveller_rl import rllib
    return rllib


def _tournament() -> ModuleType:
    from traveller_rl import tournament
    return tournament


def _league() -> ModuleType:
    from traveller_rl import league
    return league


def _demo() -> ModuleType:
    from traveller_rl import demo
    return demo


def _ladder() -> ModuleType:
    from traveller_rl import ladder
    return ladder


def _benchmark() -> ModuleType:
    from traveller_rl import benchmark
    return benchmark


#: Training-layer commands by their words (``"train aiming"`` is ``traveller train aiming``).
EXPERIMENTS: dict[str, Experiment] = {
    "demo": Experiment("the fast trainer learns a duel and squad tactics in about three "
                       "minutes, with verdicts, curves and a replay (traveller_rl.demo)", _demo,
                       _always("torch", "demo")),
    "train aiming": Experiment("learn when and how long to aim, with MaskablePPO "
                               "(traveller_rl.recipes.aiming --trainer sb3)",
                               _recipe_aiming_sb3, _recipe_needs),
    "train leadership": Experiment("learn when to lead and whom to direct, with MaskablePPO "
                                   "(traveller_rl.recipes.leadership --trainer sb3)",
                                   _recipe_leadership_sb3, _recipe_needs),
    "train aiming-ppo": Experiment("learn to aim in each range band with the batched PPO, "
                                   "against the exact optimum (traveller_rl.recipes.aiming "
                                   "--trainer ppo)", _recipe_aiming, _recipe_needs),
    "train leadership-ppo": Experiment("learn when a sergeant should lead, with the batched "
                                       "PPO (traveller_rl.recipes.leadership --trainer ppo)",
                                       _recipe_leadership, _recipe_needs),
    "train squad-ppo": Experiment("squad tactics by self-play with the batched PPO, evaluated "
                                  "against the scripted NPCs (traveller_rl.recipes.squad)",
                                  _recipe_squad, _always("torch", "demo")),
    "train ppo": Experiment("masked PPO on batched battles: scripted opponents, self-play "
                            "or a pool of past selves (traveller_rl.ppo.trainer)", _trainer,
                            _always("torch", "demo")),
    "train clone": Experiment("behaviour cloning of a scripted policy into a train ppo "
                              "checkpoint, an imitation start (traveller_rl.clone)", _clone,
                              _always("torch", "demo")),
    "train rllib": Experiment("PPO on Ray RLlib, locally or across a Ray cluster "
                              "(traveller_rl.rllib)", _rllib, _always("torch", "rllib")),
    "tournament": Experiment("rank policies in a round-robin tournament "
                             "(traveller_rl.tournament)", _tournament,
                             lambda args: _model_needs(getattr(args, "policies", ""))),
    "league": Experiment("train, rate and export a league of opponents "
                         "(traveller_rl.league)", _league, _league_needs),
    "ladder": Experiment("pick a difficulty ladder from a rated league "
                         "(traveller_rl.ladder)", _ladder),
    "benchmark": Experiment("score a policy on a versioned benchmark suite: win rates per "
                            "scenario set and opponent, an aggregate with a bootstrap CI, a "
                            "JSON match record (traveller_rl.benchmark)", _benchmark,
                            lambda args: _model_needs(args.policies)),
}

#: Help lines of command groups (the first word of several experiment commands).
GROUPS: dict[str, str] = {
    "train": "train a policy (one training experiment per subcommand)",
}


def load_experiment(words: str) -> ModuleType:
    """The module of the training-layer command ``words`` (e.g. ``"train aiming"``)."""
    return EXPERIMENTS[words].load()


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
    parser = commandline.new_parser()
    sub = parser.add_subparsers(metavar="COMMAND")
    parsers = commandline.add_commands(sub, COMMANDS)
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
            p.set_defaults(_run=module.run, _parser=p, _needs=exp.needs)
        parsers[words] = p
    return parser, parsers


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``traveller`` command line (``argv`` defaults to ``sys.argv[1:]``); return the
    exit status: 0 on success, 2 on a usage error or a bad scenario (message on stderr, no
    traceback), 1 when an output file cannot be written. Experiments return their own
    status (the tournament 2 on a bad policy or scenario)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser, _ = build_parser(argv)
    except ModuleNotFoundError as exc:  # a command's module imports an extra that is missing
        extra = commandline.extra_of_module(exc.name)
        words = next((w for w in EXPERIMENTS if _named(argv, w)), "")
        problem = commandline.missing_extra(extra) if extra else None
        if problem is None:
            raise
        print(f"{commandline.PROG} {words}: error: {problem}", file=sys.stderr)
        return 2
    return commandline.process_status(lambda: commandline.dispatch(parser, argv))
