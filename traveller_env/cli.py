"""The environment's own commands and the pieces of the ``traveller`` command line.

The ``traveller`` console command is ``traveller_cli.main``: it sits above ``agents`` and
``experiments`` and assembles every command. This module keeps what needs only the
environment (no ``agents``, no ``experiments``), as library functions:

* ``traveller simulate --scenario squad --seed 1 [--json out.jsonl] [--gif out.gif] [--quiet]``
  plays one battle with uniformly random legal actions and prints the narrated log and a
  summary (``play_random``, ``result_line``);
* ``traveller scenarios`` lists the built-in scenarios;
* ``traveller replay BATTLE.jsonl --html out.html`` writes a replay page
  (``traveller_env.replay_html``);
* ``Command`` (one subcommand: help, argument set-up, handler), ``COMMANDS`` (these three),
  ``add_commands`` and ``dispatch`` (parse, run, and turn errors into exit statuses), which
  ``traveller_cli`` builds on.

``main`` runs these environment commands alone (``python -m traveller_env.cli simulate``). A bad
scenario prints its message on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

from .scenario import ScenarioError, build_battle, builtin_scenarios, load_scenario

if TYPE_CHECKING:  # pragma: no cover
    from .rules.battle import Battle

__all__ = ["COMMANDS", "SEED_MAX", "Command", "CommandParser", "UsageError", "add_commands",
           "build_parser",
           "check_at_least", "check_input_file", "check_output_folder", "check_seed", "dispatch",
           "examples_epilog", "float_above", "int_at_least", "main", "new_parser", "play_random",
           "result_line", "run_standalone", "seed_type"]

PROG = "traveller"


class UsageError(ValueError):
    """A bad value on the command line (a flag, a name, a path): the command's handler raises
    it with a message naming the flag and what is allowed; ``dispatch`` prints it as
    ``traveller <command>: error: <message>`` and returns 2, with no traceback."""


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


# ---------------------------------------------------------------------------- playing
def play_random(battle: Battle, rng: random.Random,
                on_turn_end: Callable[[Battle, list[dict[str, Any]]], None] | None = None,
                ) -> int:
    """Play ``battle`` to its end, each decision a uniformly random legal action drawn with
    ``rng`` (separate from the battle's dice). After every action that ends a turn (or the
    battle), ``on_turn_end(battle, attacks)`` is called with that turn's attack events, each
    copied with ``actor_pos`` and ``target_pos`` (the squares at the time of the attack).
    Returns the number of actions taken."""
    steps = 0
    attacks: list[dict[str, Any]] = []
    while not battle.done:
        before = len(battle.events)
        battle.apply(rng.choice(battle.legal_actions()))
        steps += 1
        new = battle.events[before:]
        for e in new:
            if e.get("type") == "attack":
                a, t = battle.by_id[e["actor"]], battle.by_id[e["target"]]
                attacks.append({**e, "actor_pos": list(a.pos), "target_pos": list(t.pos)})
        if any(e.get("type") in ("end_turn", "end") for e in new):
            if on_turn_end is not None:
                on_turn_end(battle, attacks)
            attacks = []
    return steps


def result_line(battle: Battle) -> str:
    """``Winner: blue after 7 rounds.``, ``Draw: ...`` or ``Truncated: ...`` for a finished
    battle (``In progress: ...`` otherwise)."""
    rounds = f"{battle.round} round" + ("" if battle.round == 1 else "s")
    if not battle.done:
        return f"In progress: round {battle.round}."
    if battle.winner is not None:
        return f"Winner: {battle.winner} after {rounds}."
    if battle.truncated:
        return f"Truncated: no winner after {rounds} (max_rounds reached)."
    return f"Draw: no one left able to fight after {rounds}."


def _caption(battle: Battle, events: Sequence[dict[str, Any]],
             attacks: Sequence[dict[str, Any]]) -> str:
    ended = [e.get("actor") for e in events if e.get("type") == "end_turn"]
    begun = [e.get("actor") for e in events if e.get("type") == "turn"]
    actor = ended[-1] if ended else begun[-1] if begun else None  # no end_turn: battle over
    head = f"Round {battle.round} - " + (f"{actor}'s turn" if actor is not None else "start")
    if attacks:
        hits = sum(1 for a in attacks if a.get("hit"))
        misses = len(attacks) - hits
        head += (f" - {hits} hit{'' if hits == 1 else 's'}, "
                 f"{misses} miss{'' if misses == 1 else 'es'}")
    if battle.done:
        head += " - " + result_line(battle)
    return head


# ---------------------------------------------------------------------------- simulate
def _add_simulate_args(p: argparse.ArgumentParser) -> None:
    battle = p.add_argument_group("battle")
    battle.add_argument("--scenario", default="squad",
                        help="built-in scenario name or path to a scenario YAML (default: squad)")
    battle.add_argument("--seed", type=seed_type, default=1,
                        help="seed of the battle's dice and of the random action choices, in "
                             "[0, 2**64-1] (default: 1)")
    output = p.add_argument_group("output")
    output.add_argument("--quiet", action="store_true",
                        help="print only the summary, not the narrated log")
    output.add_argument("--json", metavar="PATH", type=Path,
                        help="write the event log as JSON lines to PATH")
    output.add_argument("--html", metavar="PATH", type=Path,
                        help="write a self-contained replay page to PATH (traveller replay)")
    output.add_argument("--gif", metavar="PATH", type=Path,
                        help="write an animated replay to PATH (one frame per turn, written as "
                             "it is played; a frame has at most 4 million pixels)")
    output.add_argument("--fps", type=float_above(0), default=4.0,
                        help="frames per second of --gif (default: 4)")
    output.add_argument("--cell", type=int_at_least(1), default=None,
                        help="pixels per square in --gif (default: chosen from the map size; "
                             "scaled down on big maps to keep a frame within 4 million pixels)")


def _check_output_files(args: argparse.Namespace) -> None:
    for flag in ("json", "gif", "html"):
        path = getattr(args, flag)
        if path is not None and path.is_dir():
            raise UsageError(f"--{flag} {path}: is a folder; give a file path")


def _cmd_simulate(args: argparse.Namespace) -> int:
    _check_output_files(args)
    battle = build_battle(args.scenario, seed=args.seed)
    rng = random.Random(args.seed)
    gif = None
    on_turn_end = None
    with contextlib.ExitStack() as stack:
        if args.gif is not None:
            from .render import GifWriter, gif_cell, render_rgb

            try:
                cell = gif_cell(battle.grid.width, battle.grid.height, args.cell)
            except ValueError as exc:
                raise UsageError(f"--gif: {exc}") from None
            gif = stack.enter_context(GifWriter(args.gif, fps=args.fps))
            gif.add(render_rgb(battle, cell=cell, caption=_caption(battle, battle.events, [])))
            seen = [len(battle.events)]

            def on_turn_end(b: Battle, attacks: list[dict[str, Any]]) -> None:
                events = b.events[seen[0]:]
                seen[0] = len(b.events)
                gif.add(render_rgb(b, attacks=attacks, cell=cell,
                                   caption=_caption(b, events, attacks)))

        steps = play_random(battle, rng, on_turn_end)

    out: TextIO = sys.stdout
    if not args.quiet:
        from .rules.narrate import narrate_log

        for line in narrate_log(battle.events):
            print(line, file=out)
        print(file=out)
    _print_summary(battle, steps, args, out)

    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        with args.json.open("w", encoding="utf-8") as fh:
            for e in battle.events:
                fh.write(json.dumps(e) + "\n")
        print(f"Event log: {args.json} ({len(battle.events)} events)", file=out)
    if gif is not None:
        print(f"Replay: {args.gif} ({gif.frames} frames)", file=out)
    if args.html is not None:
        from .replay_html import write_battle_html

        write_battle_html(args.html, battle, args.scenario, seed=args.seed)
        print(f"Replay page: {args.html}", file=out)
    return 0


def _print_summary(battle: Battle, steps: int, args: argparse.Namespace, out: TextIO) -> None:
    from .render import combatant_line

    print(result_line(battle), file=out)
    print(f"Scenario {args.scenario}, seed {args.seed}: {battle.round} rounds, {steps} actions, "
          f"{len(battle.events)} events.", file=out)
    width = max(len(c.id) for c in battle.combatants)
    nwidth = max(len(c.name) for c in battle.combatants)
    for c in battle.combatants:
        print("  " + combatant_line(battle, c, width, nwidth), file=out)


# ---------------------------------------------------------------------------- scenarios
def _add_scenarios_args(p: argparse.ArgumentParser) -> None:
    from .generate_cli import add_scenarios_args  # ``generate``: draw from a distribution

    add_scenarios_args(p)


def _cmd_scenarios(args: argparse.Namespace) -> int:
    if getattr(args, "seed", None) is not None:
        check_seed("--seed", args.seed)
    if getattr(args, "action", "list") == "generate":
        from .generate_cli import run_generate

        return run_generate(args)
    names = builtin_scenarios()
    width = max((len(n) for n in names), default=0)
    for name in names:
        sc = load_scenario(name)
        sides = " vs ".join(f"{s.name} {len(s.combatants)}" for s in sc.sides)
        print(f"{name:<{width}}  {sc.map.width}x{sc.map.height}, {sides}: "
              f"{sc.description.strip() or '(no description)'}")
    return 0


# ---------------------------------------------------------------------------- replay
def _add_replay_args(p: argparse.ArgumentParser) -> None:
    from .replay_html import add_replay_args

    add_replay_args(p)


def _cmd_replay(args: argparse.Namespace) -> int:
    from .replay_html import ReplayError, _check_fits, cmd_replay, read_replay_jsonl, replay_header

    check_input_file("BATTLE.jsonl", args.log)
    try:  # an unusable log, or one of another scenario, is a usage error naming it
        header, events, _ = read_replay_jsonl(args.log)
        if args.scenario is not None:
            _check_fits(args.log, events, replay_header(args.scenario, title=args.title))
    except ReplayError as exc:
        raise UsageError(str(exc)) from None
    if header is None and args.scenario is None:
        raise UsageError(f"{args.log}: no header line, so the scenario is unknown: pass "
                         "--scenario NAME_OR_PATH, the scenario the battle was played on")
    if args.html.is_dir():
        raise UsageError(f"--html {args.html}: is a folder; give a file path")
    return cmd_replay(args)


#: The environment's subcommands by name (``traveller_cli.COMMANDS`` adds the others).
COMMANDS: dict[str, Command] = {
    "simulate": Command("play one battle with uniformly random legal actions",
                        _add_simulate_args, _cmd_simulate, """
                        traveller simulate --scenario duel --seed 7
                        traveller simulate --scenario squad --quiet --gif runs/squad.gif
                        traveller simulate --scenario my_map.yaml --json runs/battle.jsonl"""),
    "scenarios": Command("list the built-in scenarios", _add_scenarios_args, _cmd_scenarios,
                         "traveller scenarios"),
    "replay": Command("write a self-contained HTML replay page of a battle's event log",
                      _add_replay_args, _cmd_replay, """
                      traveller simulate --scenario duel --json runs/duel.jsonl
                      traveller replay runs/duel.jsonl --html runs/duel.html"""),
}


# ---------------------------------------------------------------------------- entry point
class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``<prog>: error: <message>``
    (status 2), without the usage block; ``--help`` shows the usage. Subcommand parsers
    made by ``add_subparsers`` are of the same class."""

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
        p.set_defaults(_run=cmd.run, _parser=p)
        parsers[name] = p
    return parsers


def examples_epilog(examples: str) -> str | None:
    """The ``--help`` epilog listing ``examples`` (one command line a line), or None."""
    lines = [line.strip() for line in examples.strip().splitlines() if line.strip()]
    return "examples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser of the environment's commands and a dict of its subparsers by name."""
    parser = new_parser()
    sub = parser.add_subparsers(metavar="COMMAND")
    return parser, add_commands(sub, COMMANDS)


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
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run(args)
    except (ScenarioError, UsageError) as exc:
        print(f"{chosen.prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"{chosen.prog}: error: {exc}", file=sys.stderr)
        return 1


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the environment's commands (``argv`` defaults to ``sys.argv[1:]``); return the exit
    status as ``dispatch`` does. The full ``traveller`` command is ``traveller_cli.main``."""
    return dispatch(build_parser()[0], sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
