"""The ``traveller`` command line.

Commands (one function each; ``COMMANDS`` maps a name to its help, its argument set-up and its
handler, so that later commands such as ``train``, ``eval`` or ``tournament`` are one entry
more):

* ``traveller simulate --scenario squad --seed 1 [--json out.jsonl] [--gif out.gif] [--quiet]``
  plays one battle with uniformly random legal actions and prints the narrated log and a
  summary;
* ``traveller scenarios`` lists the built-in scenarios;
* ``traveller train aiming|leadership [args]`` runs a training script of ``experiments/``;
* ``traveller eval MODEL --scenario duel --vs marksman,rush`` evaluates a trained model;
* ``traveller tournament [args]`` runs ``experiments/tournament.py``.

A bad scenario prints its message on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from .scenario import ScenarioError, build_battle, builtin_scenarios, load_scenario

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .rules.battle import Battle

__all__ = ["COMMANDS", "Command", "build_parser", "main", "play_random", "result_line"]

PROG = "traveller"


class Command(NamedTuple):
    """One subcommand: its help line, a function adding its arguments, and its handler
    (which returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


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
    p.add_argument("--scenario", default="squad",
                   help="built-in scenario name or path to a scenario YAML (default: squad)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the battle's dice and of the random action choices (default: 1)")
    p.add_argument("--json", metavar="PATH", type=Path,
                   help="write the event log as JSON lines to PATH")
    p.add_argument("--gif", metavar="PATH", type=Path,
                   help="write an animated replay to PATH (one frame per turn)")
    p.add_argument("--fps", type=float, default=4.0, help="frames per second of --gif (4)")
    p.add_argument("--cell", type=int, default=None,
                   help="pixels per square in --gif (default: chosen from the map size)")
    p.add_argument("--quiet", action="store_true",
                   help="print only the summary, not the narrated log")


def _cmd_simulate(args: argparse.Namespace) -> int:
    battle = build_battle(args.scenario, seed=args.seed)
    rng = random.Random(args.seed)
    frames: list[np.ndarray] = []
    on_turn_end = None
    if args.gif is not None:
        from .render import render_rgb

        frames.append(render_rgb(battle, cell=args.cell,
                                 caption=_caption(battle, battle.events, [])))
        seen = [len(battle.events)]

        def on_turn_end(b: Battle, attacks: list[dict[str, Any]]) -> None:
            events = b.events[seen[0]:]
            seen[0] = len(b.events)
            frames.append(render_rgb(b, attacks=attacks, cell=args.cell,
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
    if args.gif is not None:
        from .render import write_gif

        write_gif(frames, args.gif, fps=args.fps)
        print(f"Replay: {args.gif} ({len(frames)} frames)", file=out)
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
    del p  # no options


def _cmd_scenarios(args: argparse.Namespace) -> int:
    del args
    names = builtin_scenarios()
    width = max((len(n) for n in names), default=0)
    for name in names:
        sc = load_scenario(name)
        sides = " vs ".join(f"{s.name} {len(s.combatants)}" for s in sc.sides)
        print(f"{name:<{width}}  {sc.map.width}x{sc.map.height}, {sides}: "
              f"{sc.description.strip() or '(no description)'}")
    return 0


# ---------------------------------------------------------------------------- experiments
EXPERIMENTS = {"aiming": "train_aiming.py", "leadership": "train_leadership.py",
               "tournament": "tournament.py", "rllib": "train_rllib.py"}


def experiment_main(name: str) -> Callable[[list[str]], int]:
    """The ``main(argv)`` of a script in the repository's ``experiments/`` folder."""
    import importlib.util

    folder = Path(__file__).resolve().parents[1] / "experiments"
    path = folder / EXPERIMENTS[name]
    if not path.is_file():
        raise SystemExit(f"{PROG}: error: {path} not found: the experiments ship with the "
                         "repository (install it with `pip install -e .` from a clone)")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # the scripts import their shared helpers
    spec = importlib.util.spec_from_file_location(f"_traveller_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look their module up there
    spec.loader.exec_module(module)
    return module.main


def _add_train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("experiment", choices=["aiming", "leadership", "rllib"],
                   help="which training script (experiments/train_<name>.py)")
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments for the script (see `traveller train aiming --help`)")


def _cmd_train(args: argparse.Namespace) -> int:
    return experiment_main(args.experiment)(list(args.script_args))


def _add_tournament_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments of experiments/tournament.py (e.g. --policies rush,random "
                        "--scenarios duel --battles 200)")


def _cmd_tournament(args: argparse.Namespace) -> int:
    return experiment_main("tournament")(list(args.script_args))


def _add_eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", type=Path, help="a MaskablePPO .zip saved by a training script")
    p.add_argument("--scenario", default="duel", help="scenario to play (default: duel)")
    p.add_argument("--vs", default="marksman",
                   help="opponent policies, comma-separated (default: marksman)")
    p.add_argument("--battles", type=int, default=200, help="battles per opponent")
    p.add_argument("--seed", type=int, default=20_000, help="first battle seed")
    p.add_argument("--json", type=Path, default=None, help="write the results here")


def _cmd_eval(args: argparse.Namespace) -> int:
    from agents.evaluation import evaluate_matchup, format_matchups
    from agents.registry import make_policy
    from agents.trained import load_policy

    try:
        learned = load_policy(args.model, args.scenario)
        rows = [evaluate_matchup(learned, make_policy(name), args.scenario,
                                 battles=args.battles, seed=args.seed)
                for name in args.vs.split(",") if name]
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(format_matchups(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


#: Subcommands by name.
COMMANDS: dict[str, Command] = {
    "simulate": Command("play one battle with uniformly random legal actions",
                        _add_simulate_args, _cmd_simulate),
    "scenarios": Command("list the built-in scenarios", _add_scenarios_args, _cmd_scenarios),
    "train": Command("train a policy (experiments/train_aiming.py, train_leadership.py)",
                     _add_train_args, _cmd_train),
    "eval": Command("evaluate a trained model against scripted policies",
                    _add_eval_args, _cmd_eval),
    "tournament": Command("rank policies in a round-robin tournament "
                          "(experiments/tournament.py)", _add_tournament_args,
                          _cmd_tournament),
}


# ---------------------------------------------------------------------------- entry point
def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and a dict of its subparsers by command name."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Mongoose Traveller 2e personal combat simulator.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers: dict[str, argparse.ArgumentParser] = {}
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
        subparsers[name] = p
    return parser, subparsers


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (``argv`` defaults to ``sys.argv[1:]``); return the exit status:
    0 on success, 2 on a usage error or a bad scenario (message on stderr, no traceback),
    1 when an output file cannot be written."""
    parser, _ = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Experiment scripts parse their own options: hand them everything after the command
    # (argparse's REMAINDER cannot take a leading --option inside a subcommand).
    if argv[:1] == ["tournament"] and argv[1:2] not in (["-h"], ["--help"]):
        return experiment_main("tournament")(argv[1:])
    if argv[:1] == ["train"] and argv[1:2] in (["aiming"], ["leadership"], ["rllib"]):
        return experiment_main(argv[1])(argv[2:])
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run(args)
    except ScenarioError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
