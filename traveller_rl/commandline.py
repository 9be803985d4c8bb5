"""The command line's shared plumbing: argument types and checks (``seed_type``,
``int_at_least``, ``check_output_folder``, ...), ``UsageError``, and the subcommand machinery
(``Command``, ``CommandParser``, ``add_commands``, ``dispatch``, ``run_standalone``) that the
training layer's modules (each runnable as ``python -m traveller_rl.X``) and the ``traveller``
command (``traveller_cli``) build on. A bad value raises ``UsageError`` naming the flag; it
and a bad scenario print as ``<prog>: error: <message>`` with exit status 2, no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from traveller_env.scenario import ScenarioError

__all__ = ["EXTRA_MODULES", "PROG", "SEED_MAX", "TORCH_VERSION", "Command", "CommandParser",
           "MissingExtra", "UsageError", "add_commands", "check_at_least", "check_input_file",
           "check_output_folder", "check_seed", "dispatch", "examples_epilog", "extra_of_module",
           "float_above", "install_line", "int_at_least", "missing_extra", "new_parser",
           "require_extras", "run_standalone", "seed_type"]

PROG = "traveller"


class UsageError(ValueError):
    """A bad value on the command line (a flag, a name, a path): the command's handler raises
    it with a message naming the flag and what is allowed; ``dispatch`` prints it as
    ``traveller <command>: error: <message>`` and returns 2, with no traceback."""


class MissingExtra(UsageError):
    """A command that needs an optional dependency (an extra of pyproject.toml) that is not
    installed: the message names the extra and the exact ``pip install`` line."""


#: The modules each extra of pyproject.toml provides that the commands import (a command that
#: needs an extra checks them before any work; see ``require_extras``). ``torch`` is no extra:
#: the Makefile installs its CPU build first (every extra that needs it leaves it out).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "demo": ("tqdm", "matplotlib"),
    "train": ("stable_baselines3", "sb3_contrib"),
    "onnx": ("onnx",),
    "rllib": ("ray",),
    "torchrl": ("torchrl", "tensordict"),
    "tianshou": ("tianshou",),
    "benchmarl": ("benchmarl",),
    "browser": ("selenium",),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder refusing it, or a module without a spec
        return False


def install_line(extra: str) -> str:
    """The exact command that installs ``extra``: in a checkout (an editable install) the
    ``pip install -e`` that ``make install EXTRAS=...`` runs (it reuses the compiled core's
    build folder), else ``pip install 'traveller-tactics[extra]'`` (which keeps the installed
    package and adds the extra's dependencies)."""
    if extra == "torch":
        return (f"pip install torch=={TORCH_VERSION} (its CPU build: see the Makefile's "
                "TORCH_CPU_INDEX)")
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "csrc").is_dir():
        return (f"pip install --no-build-isolation -e '{root}[{extra}]' (or, in {root}: "
                f"make install EXTRAS={extra})")
    return f"pip install 'traveller-tactics[{extra}]'"


def missing_extra(extra: str) -> MissingExtra | None:
    """A ``MissingExtra`` when a module of ``extra`` cannot be imported, else None."""
    missing = [m for m in EXTRA_MODULES[extra] if not _importable(m)]
    if not missing:
        return None
    what = "PyTorch" if extra == "torch" else f"the '{extra}' extra"
    return MissingExtra(f"this command needs {what} ({', '.join(missing)} not installed): "
                        f"{install_line(extra)}")


def require_extras(*extras: str) -> None:
    """Raise ``MissingExtra`` (status 2 through ``dispatch``) unless every extra in
    ``extras`` is installed; commands call it before any work."""
    for extra in extras:
        problem = missing_extra(extra)
        if problem is not None:
            raise problem


def extra_of_module(module: str | None) -> str | None:
    """The extra that provides the top-level module ``module`` (None: not an extra's)."""
    top = (module or "").split(".")[0]
    return next((e for e, mods in EXTRA_MODULES.items() if top in mods), None)


#: The torch release the Makefile installs (its CPU build).
TORCH_VERSION = "2.13.0"

#: The largest seed a battle accepts (seeds are ints in [0, 2**64 - 1]).
SEED_MAX = 2**64 - 1


def _int_text(text: str, allowed: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None


def seed_type(text: str) -> int:
    """argparse ``type`` of a seed flag: an int in [0, 2**64 - 1] (``SEED_MAX``)."""
    allowed = "an integer in [0, 2**64 - 1]"
    value = _int_text(text, allowed)
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
    return value


def int_at_least(low: int) -> Callable[[str], int]:
    """argparse ``type`` of a count flag: an int >= ``low`` (e.g. battles >= 1)."""

    def parse(text: str) -> int:
        allowed = f"an integer >= {low}"
        value = _int_text(text, allowed)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = f"int_at_least_{low}"
    return parse


def float_above(low: float, *, inclusive: bool = False) -> Callable[[str], float]:
    """argparse ``type`` of a finite number above ``low`` (at least ``low`` when
    ``inclusive``), e.g. seconds or a learning rate."""
    allowed = f"a number {'>=' if inclusive else '>'} {low:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
        if not (math.isfinite(value) and (value >= low if inclusive else value > low)):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def check_seed(flag: str, value: int) -> None:
    """``UsageError`` naming ``flag`` unless ``value`` is a seed (an int in [0, 2**64 - 1])."""
    if not (isinstance(value, int) and 0 <= value <= SEED_MAX):
        raise UsageError(f"{flag} must be an integer in [0, 2**64 - 1], got {value!r}")


def check_at_least(flag: str, value: float, low: float) -> None:
    """``UsageError`` naming ``flag`` unless ``value >= low``."""
    if not value >= low:
        raise UsageError(f"{flag} must be at least {low}, got {value}")


def check_output_folder(flag: str, folder: str | os.PathLike[str], overwrite: bool) -> None:
    """The one rule for a command's output folder: a missing or empty folder is used, a file
    is refused, and an existing folder with files in it is refused unless ``overwrite``
    (``--overwrite``). ``UsageError`` naming ``flag`` otherwise."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path}: is a file, not a folder; choose a folder path")
    if path.is_dir() and not overwrite and any(path.iterdir()):
        raise UsageError(f"{flag} {path}: exists and is not empty; choose another folder, or "
                         "pass --overwrite to write over its files")


def check_input_file(flag: str, path: str | os.PathLike[str]) -> None:
    """``UsageError`` naming ``flag`` and ``path`` when ``path`` is not an existing file."""
    if not Path(path).is_file():
        what = "is a folder, not a file" if Path(path).is_dir() else "no such file"
        raise UsageError(f"{flag} {path}: {what}")


class Command(NamedTuple):
    """One subcommand: its help line, a function adding its arguments, and its handler
    (which returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    examples: str = ""
    """example command lines, one a line, shown at the end of the command's ``--help``"""
    needs: Callable[[argparse.Namespace], Sequence[str]] | None = None
    """the extras (pyproject.toml) that the parsed command needs, checked before it runs"""


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``<prog>: error: <message>``
    (status 2), without the usage block; ``--help`` shows the usage. Subcommand parsers
    made by ``add_subparsers`` are of the same class. Long options are never abbreviated
    (``--htm`` is not ``--html``): ``allow_abbrev`` defaults to False."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` on stderr and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def new_parser() -> argparse.ArgumentParser:
    """The top-level ``traveller`` parser, without commands."""
    return CommandParser(
        prog=PROG, description="Mongoose Traveller 2e personal combat simulator.")


def add_commands(sub: Any, commands: dict[str, Command]) -> dict[str, argparse.ArgumentParser]:
    """Add ``commands`` to the subparsers action ``sub``; return their parsers by name. Each
    parser's handler is its ``_run`` default and the parser itself its ``_parser`` default
    (``dispatch`` removes both before the handler sees ``args``)."""
    parsers: dict[str, argparse.ArgumentParser] = {}
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=examples_epilog(cmd.examples))
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run, _parser=p, _needs=cmd.needs)
        parsers[name] = p
    return parsers


def examples_epilog(examples: str) -> str | None:
    """The ``--help`` epilog listing ``examples`` (one command line a line), or None."""
    lines = [line.strip() for line in examples.strip().splitlines() if line.strip()]
    return "examples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None


def dispatch(parser: argparse.ArgumentParser, argv: Sequence[str]) -> int:
    """Parse ``argv`` with ``parser`` and run the chosen handler; return the exit status:
    0 on success, 2 on a usage error or a bad scenario (message on stderr, no traceback),
    1 when an output file cannot be written. Without a command, the help goes to stderr
    (status 2)."""
    args, extra = parser.parse_known_args(list(argv))
    chosen = vars(args).pop("_parser", parser)
    if extra:  # reported by the command's own parser, with its usage
        chosen.error(f"unrecognized arguments: {' '.join(extra)}")
    run = vars(args).pop("_run", None)
    needs = vars(args).pop("_needs", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if needs is not None:
            require_extras(*needs(args))
        return run(args)
    except (ScenarioError, UsageError) as exc:
        print(f"{chosen.prog}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an extra's module that the command's check missed
        extra = extra_of_module(exc.name)
        if extra is None:
            raise
        print(f"{chosen.prog}: error: {missing_extra(extra) or exc}",
              file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"{chosen.prog}: error: {exc}", file=sys.stderr)
        return 1


def process_status(main: Callable[[], int]) -> int:
    """``main()``'s exit status, for a process's entry point. In a process that joined a
    data-parallel run (``traveller_rl.ppo.distributed.join``; a ``SystemExit`` of ``main``
    included) the process ends here instead, through ``distributed.leave_process``."""
    def joined() -> bool:  # the module is imported by the commands that may join, if any
        return bool(getattr(sys.modules.get("traveller_rl.ppo.distributed"), "JOINED", False))

    try:
        status = main()
    except SystemExit as exc:
        if not joined():
            raise
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    if joined():
        sys.modules["traveller_rl.ppo.distributed"].leave_process(status)
    return status


def run_standalone(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
                   argv: Sequence[str] | None = None) -> int:
    """A module's own ``main`` (``python -m traveller_rl.clone ...``): parse ``argv`` with
    ``parser`` and run ``run``, a usage error or a bad scenario printed as
    ``<prog>: error: <message>`` with status 2, as ``dispatch`` does."""
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return run(args)
    except (ScenarioError, UsageError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
