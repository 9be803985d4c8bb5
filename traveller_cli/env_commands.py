"""The environment's own commands of ``traveller``: ``simulate`` (one battle with random legal
actions, narrated, with ``--json``/``--gif``/``--html`` outputs), ``scenarios`` (list them, or
``generate`` from a distribution: ``traveller_cli.generate``) and ``replay`` (a self-contained
replay page from an event log: ``traveller_env.replay.html``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from traveller_env.replay.html import (
    ReplayError,
    build_payload,
    read_replay_jsonl,
    replay_header,
)
from traveller_env.replay.html import _page as replay_page
from traveller_env.scenario import build_battle, builtin_scenarios, load_scenario
from traveller_env.simulate import play_random, result_line
from traveller_rl.commandline import (
    Command,
    UsageError,
    add_commands,
    check_input_file,
    check_seed,
    dispatch,
    float_above,
    int_at_least,
    new_parser,
    seed_type,
)

if TYPE_CHECKING:  # pragma: no cover
    from traveller_env.rules.battle import Battle

__all__ = ["COMMANDS", "build_parser", "main"]


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
            from traveller_env.replay.render import GifWriter, gif_cell, render_rgb

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
        from traveller_env.rules.narrate import narrate_log

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
        from traveller_env.replay.html import write_battle_html

        write_battle_html(args.html, battle, args.scenario, seed=args.seed)
        print(f"Replay page: {args.html}", file=out)
    return 0


def _print_summary(battle: Battle, steps: int, args: argparse.Namespace, out: TextIO) -> None:
    from traveller_env.replay.render import combatant_line

    print(result_line(battle), file=out)
    print(f"Scenario {args.scenario}, seed {args.seed}: {battle.round} rounds, {steps} actions, "
          f"{len(battle.events)} events.", file=out)
    width = max(len(c.id) for c in battle.combatants)
    nwidth = max(len(c.name) for c in battle.combatants)
    for c in battle.combatants:
        print("  " + combatant_line(battle, c, width, nwidth), file=out)


# ---------------------------------------------------------------------------- scenarios
def _add_scenarios_args(p: argparse.ArgumentParser) -> None:
    from traveller_cli.generate import add_scenarios_args  # ``generate``: draw from a distribution

    add_scenarios_args(p)


def _cmd_scenarios(args: argparse.Namespace) -> int:
    if getattr(args, "seed", None) is not None:
        check_seed("--seed", args.seed)
    if getattr(args, "action", "list") == "generate":
        from traveller_cli.generate import run_generate

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
    add_replay_args(p)


def _cmd_replay(args: argparse.Namespace) -> int:
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


def add_replay_args(p: argparse.ArgumentParser) -> None:
    """Arguments of ``traveller replay``."""
    p.add_argument("log", type=Path, metavar="BATTLE.jsonl",
                   help="event log (JSON lines), with or without a header line")
    p.add_argument("--html", type=Path, metavar="PATH", required=True,
                   help="write the self-contained replay page here")
    p.add_argument("--scenario", default=None, metavar="NAME_OR_PATH",
                   help="the scenario the battle was played on (needed when the log has no "
                        "header line; replaces the header when it has one)")
    p.add_argument("--title", default=None, help="title shown in the page")


def cmd_replay(args: argparse.Namespace) -> int:
    """``traveller replay``: read the log, write the page; exit 2 on an unusable file."""
    try:
        header, events, problems = read_replay_jsonl(args.log)
        if args.scenario is not None:
            header = replay_header(args.scenario, title=args.title)
            _check_fits(args.log, events, header)
        elif header is None:
            raise ReplayError(
                f"{args.log}: no header line ({{\"type\": \"header\", ...}}), so the scenario "
                "(map, names, equipment) is unknown: pass --scenario NAME_OR_PATH, the "
                "scenario the battle was played on (e.g. `traveller replay "
                f"{args.log} --scenario squad --html out.html`)")
        elif args.title is not None:
            header = {**header, "title": args.title}
    except ReplayError as exc:
        print(f"traveller: error: {exc}", file=sys.stderr)
        return 2
    payload = build_payload(header, events, problems)
    args.html.parent.mkdir(parents=True, exist_ok=True)
    args.html.write_text(replay_page(payload), encoding="utf-8")
    if payload["problems"]:
        first = payload["problems"][0]["message"]
        print(f"traveller: warning: {len(payload['problems'])} of {len(events)} events cannot "
              f"be shown (the page lists them); first: {first}", file=sys.stderr)
    print(f"Replay: {args.html} ({len(events)} events)")
    return 0


def _check_fits(source: Path, events: Sequence[Any], header: Mapping[str, Any]) -> None:
    """The engine opens every log with one ``initiative`` event per combatant, in scenario
    order: they must name the scenario's combatants (else ``--scenario`` is the wrong one)."""
    rolled = []
    for e in events:
        if not (isinstance(e, dict) and e.get("type") == "initiative"):
            break
        rolled.append(e.get("actor"))
    ids = [c["id"] for c in header["combatants"]]
    if rolled and rolled != ids:
        raise ReplayError(f"{source}: the log's combatants {rolled} (its initiative events) are "
                          f"not those of scenario {header['scenario']!r} {ids}: pass the "
                          "scenario the battle was played on")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser of the environment's commands and a dict of its subparsers by name."""
    parser = new_parser()
    sub = parser.add_subparsers(metavar="COMMAND")
    return parser, add_commands(sub, COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the environment's commands (``argv`` defaults to ``sys.argv[1:]``); return the exit
    status as ``dispatch`` does. The full ``traveller`` command is ``traveller_cli.main``."""
    return dispatch(build_parser()[0], sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
