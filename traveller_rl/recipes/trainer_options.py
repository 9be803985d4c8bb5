"""The command line of a recipe that trains with either trainer: ``--trainer {ppo,sb3}`` and
one ``--flag`` for every option of either trainer.

``ppo`` is the batched trainer (``traveller_rl.ppo.trainer``), ``sb3`` MaskablePPO through the
SB3 bridge (``traveller_env.integrations.sb3``). A recipe lists its options as ``Option``s,
each named in the vocabulary of ``traveller_rl.common.PPOArgs`` (the batched trainer's
``--lr`` and SB3's ``--learning-rate`` both give ``learning_rate``) with the default of every
trainer that takes it (``ppo_option``, ``dataclass_options``, ``merge_options``).
``add_options`` puts them on a parser; ``resolve`` turns the parsed flags into the chosen
trainer's values, checked: a flag left out gets that trainer's default, and a flag that only
the other trainer takes is refused as a usage error (exit status 2, its name in the message).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from traveller_rl.commandline import UsageError, check_at_least, check_seed
from traveller_rl.common import _field_docs, field_flag

__all__ = ["TRAINERS", "Option", "add_options", "dataclass_options", "merge_options",
           "ppo_option", "resolve", "trainer_command"]

#: The trainers a recipe can train with.
TRAINERS = ("ppo", "sb3")

_GIVEN = "_trainer_flags_given"   # namespace attribute: the options named on the command line
_PARSER = "_trainer_parser"       # namespace attribute: the parser, for its usage errors


@dataclass(frozen=True)
class Option:
    """One ``--flag`` of a recipe: ``dest`` (its name in the vocabulary of
    ``traveller_rl.common.PPOArgs``, the resolved value's attribute), its help line without the
    default, ``defaults``: the default of each trainer that takes it (the trainers missing
    there refuse it), and ``key``: the flag's name (``_`` for ``-``) where it is not ``dest``
    (the batched trainer's ``--lr`` is ``learning_rate``, as SB3's ``--learning-rate``)."""

    dest: str
    help: str
    defaults: Mapping[str, Any]
    type: Callable[[str], Any] | None = None
    boolean: bool = False
    """``--flag`` / ``--no-flag``"""
    nargs: str | None = None
    key: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.key or self.dest)

    @property
    def flag(self) -> str:
        """The option string, ``--total-timesteps`` for ``total_timesteps``."""
        return "--" + self.key.replace("_", "-")

    def parser_default(self, trainer: str) -> Any:
        """What the parser of a recipe whose ``--trainer`` defaults to ``trainer`` shows: the
        option's default when every trainer that takes it agrees and ``trainer`` is one of
        them, else None (``resolve`` fills in the chosen trainer's)."""
        values = list(self.defaults.values())
        if trainer in self.defaults and all(v == values[0] for v in values):
            return values[0]
        return None

    def help_text(self) -> str:
        """The help line with its default, or each trainer's when they differ (``add_options``
        lists an option that one trainer takes under that trainer's heading)."""
        shown = {t: str(v) if isinstance(v, Path) else repr(v) for t, v in self.defaults.items()}
        if len(set(shown.values())) == 1:
            return f"{self.help} (default: {next(iter(shown.values()))})"
        per_trainer = ", ".join(f"{t} {v}" for t, v in shown.items())
        return f"{self.help} (default: {per_trainer})"


def ppo_option(dest: str, default: Any, help: str, type: Callable[[str], Any] | None = None,
               boolean: bool = False, flag: str | None = None) -> Option:
    """An option of the batched trainer only (``flag``: its flag's name when not ``dest``,
    e.g. ``ppo_option("learning_rate", 1e-3, ..., flag="lr")`` is ``--lr``)."""
    return Option(dest, help, {"ppo": default}, type=type, boolean=boolean, key=flag or "")


def dataclass_options(cls: type, trainer: str = "sb3") -> list[Option]:
    """One option per field of the ``Args`` dataclass ``cls`` (its docstring as help, as
    ``traveller_rl.common.add_dataclass_args`` makes them), taken by ``trainer``."""
    docs = _field_docs(cls)
    options = []
    for f in dataclasses.fields(cls):
        default = (f.default if f.default is not dataclasses.MISSING
                   else f.default_factory())  # type: ignore[misc]
        kind: dict[str, Any] = (
            {"boolean": True} if isinstance(default, bool)
            else {"nargs": "*"} if isinstance(default, list) else {"type": type(default)})
        options.append(Option(f.name, docs.get(f.name, ""), {trainer: default}, **kind,
                              key=field_flag(f)))
    return options


def merge_options(*groups: Iterable[Option]) -> list[Option]:
    """The options of several trainers as one list: a flag in more than one group keeps the
    first one's help and gets the defaults of all."""
    merged: dict[str, Option] = {}
    for option in (o for group in groups for o in group):
        first = merged.get(option.key)
        if first is None:
            merged[option.key] = option
            continue
        if (first.dest, first.type, first.boolean, first.nargs) != (
                option.dest, option.type, option.boolean, option.nargs):
            raise ValueError(f"{option.flag}: the trainers parse it differently")
        merged[option.key] = dataclasses.replace(
            first, defaults={**first.defaults, **option.defaults})
    return list(merged.values())


def _note(namespace: argparse.Namespace, dest: str) -> None:
    """Note on ``namespace`` that the option ``dest`` was given (``resolve`` reads it)."""
    setattr(namespace, _GIVEN, (*getattr(namespace, _GIVEN, ()), dest))


class _NotedStore(argparse.Action):
    """Stores the value and notes that the option was given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        _note(namespace, self.dest)


class _NotedSwitch(argparse.BooleanOptionalAction):
    """``--flag`` / ``--no-flag``, noting that it was given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        _note(namespace, self.dest)


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option],
                trainer: str) -> argparse.ArgumentParser:
    """Add ``--trainer`` (default ``trainer``) and ``options`` to ``parser``."""
    if trainer not in TRAINERS:
        raise ValueError(f"trainer {trainer!r}; allowed: {', '.join(TRAINERS)}")
    options = list(options)
    parser.add_argument("--trainer", choices=TRAINERS, default=trainer,
                        help="how to train: ppo, the batched trainer (traveller_rl.ppo.trainer), "
                             "or sb3, MaskablePPO through the SB3 bridge; the options under "
                             "'options of --trainer X only' are refused with the other "
                             f"(default: {trainer})")
    groups: dict[tuple[str, ...], Any] = {}  # the trainers taking a flag -> its group
    for o in options:
        owners = tuple(t for t in TRAINERS if t in o.defaults)
        if owners not in groups:
            title = ("options of both trainers" if len(owners) == len(TRAINERS)
                     else f"options of --trainer {owners[0]} only")
            groups[owners] = parser.add_argument_group(title)
        common = {"dest": o.key, "default": o.parser_default(trainer), "help": o.help_text()}
        if o.boolean:
            groups[owners].add_argument(o.flag, action=_NotedSwitch, **common)
        else:
            groups[owners].add_argument(o.flag, action=_NotedStore, type=o.type, nargs=o.nargs,
                                        **common)
    parser.set_defaults(**{_PARSER: parser})
    return parser


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """The parser's usage error (status 2), or a ``UsageError`` without a parser."""
    parser = getattr(args, _PARSER, None)
    if parser is not None:
        parser.error(message)
    raise UsageError(message)


#: Options that count something: at least 1 where a recipe has them.
COUNTS = ("total_timesteps", "n_steps", "batch_size", "n_epochs", "torch_threads",
          "range_envs_per_band", "pool_every", "eval_battles", "n_envs", "num_envs",
          "num_steps", "minibatches", "threads", "eval_envs", "behaviour_battles", "workers")
#: Options that must be above 0, in [0, 1], or at least 0.
POSITIVE, SHARES, AT_LEAST_0 = ("learning_rate",), ("gamma", "gae_lambda"), ("ent_coef",)


def check_values(values: Mapping[str, Any], flag: Mapping[str, str]) -> None:
    """A ``UsageError`` naming the flag (``flag``: an option's flag, by its name) for a
    resolved option out of range, before anything trains: counts at least 1, a seed in
    [0, 2**64 - 1], a learning rate above 0, gamma and GAE lambda in [0, 1], an entropy bonus
    at least 0, a ``--json`` that is no folder."""
    if values.get("seed") is not None:
        check_seed("--seed", values["seed"])
    for name in COUNTS:
        if values.get(name) is not None:
            check_at_least(flag[name], values[name], 1)
    for name in POSITIVE:
        if values.get(name) is not None and not values[name] > 0:
            raise UsageError(f"{flag[name]} must be above 0, got {values[name]}")
    for name in SHARES:
        if values.get(name) is not None and not 0 <= values[name] <= 1:
            raise UsageError(f"{flag[name]} must lie in [0, 1], got {values[name]}")
    for name in AT_LEAST_0:
        if values.get(name) is not None:
            check_at_least(flag[name], values[name], 0)
    path = values.get("json")
    if path is not None and Path(path).is_dir():
        raise UsageError(f"--json {path}: is a folder; give a file path")


def resolve(args: argparse.Namespace, options: Iterable[Option]) -> argparse.Namespace:
    """The values of ``args.trainer``'s options, by their ``dest`` and checked
    (``check_values``): each given flag's value, that trainer's default for the others. A
    given flag that only another trainer takes is a usage error."""
    trainer = args.trainer
    options = list(options)
    given = set(getattr(args, _GIVEN, ()))
    foreign = [o for o in options if o.key in given and trainer not in o.defaults]
    if foreign:
        owners = " or ".join(sorted({t for o in foreign for t in o.defaults}))
        flags = ", ".join(o.flag for o in foreign)
        verb = "is an option" if len(foreign) == 1 else "are options"
        _usage_error(args, f"{flags} {verb} of --trainer {owners} only; this run trains with "
                           f"--trainer {trainer}")
    mine = [o for o in options if trainer in o.defaults]
    values = {o.dest: getattr(args, o.key) if o.key in given else copy.copy(o.defaults[trainer])
              for o in mine}
    check_values(values, {o.dest: o.flag for o in mine})
    return argparse.Namespace(**values)


def trainer_command(module: ModuleType, trainer: str) -> ModuleType:
    """The recipe ``module`` as a ``traveller`` command whose ``--trainer`` defaults to
    ``trainer``: the same docstring and ``run``, and ``build_parser(parser=None)`` with that
    default (the protocol of ``traveller_cli.app.Experiment``)."""
    command = ModuleType(f"{module.__name__}[{trainer}]", module.__doc__)
    command.build_parser = functools.partial(module.build_parser, trainer=trainer)
    command.run = module.run
    return command
