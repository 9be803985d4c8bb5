"""The fast trainer on the compiled core, learning something you can see (``traveller demo``).

Two short runs of the batched PPO trainer (``traveller train ppo``), each bounded by training
time, not decisions, so that the demo takes about the same time on any machine:

1. ``duel``: one rifleman learns to beat the scripted ``rush`` (from never winning to winning
   most battles in well under a minute).
2. ``squad``: six against six, the policy trained against the scripted ``rush``, ``marksman``
   and ``cover`` and against its own past selves, then also evaluated against ``tactician``,
   the strongest scripted NPC, which it never met in training.

Each run is evaluated by the trainer itself on the compiled core, before and after training,
on battle seeds that training never draws (Wilson 95% intervals). The table gives a verdict
per row, explained in its own output; the learning-curve PNGs and an HTML replay of the learned
squad against ``tactician`` are written under ``--out``, and their paths printed at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from traveller_rl.commandline import (
    check_at_least,
    check_output_folder,
    check_seed,
    float_above,
    int_at_least,
    run_standalone,
    seed_type,
)

__all__ = ["STAGES", "Stage", "build_parser", "main", "run", "verdict"]


class Stage(NamedTuple):
    """One training run of the demo: its title, trainer flags, how many updates apart its
    evaluations are (the learning curve's points), and the opponents evaluated that it never
    trained against."""

    name: str
    title: str
    flags: tuple[str, ...]
    eval_every: int
    held_out: tuple[str, ...] = ()


STAGES = (
    Stage("duel", "duel: one rifleman against the scripted `rush`",
          ("--scenario", "duel", "--opponents", "red=rush", "--eval-vs", "rush"), eval_every=25),
    Stage("squad", "squad: six against six, against rush, marksman, cover and itself",
          ("--scenario", "squad", "--pool", "--pool-scripted", "rush,marksman,cover",
           "--pool-scripted-share", "0.5", "--eval-vs", "rush,marksman,cover,tactician"),
          eval_every=50, held_out=("tactician",)),
)


def verdict(before: dict, after: dict) -> str:
    """``beats it`` when the 95% lower bound of the learned win rate is above 0.5; ``learned``
    when it is above the untrained network's upper bound but not above 0.5; ``no`` else."""
    if after["win_ci95"][0] > 0.5:
        return "beats it"
    if after["win_ci95"][0] > before["win_ci95"][1]:
        return "learned"
    return "no"


def _rate(row: dict) -> str:
    lo, hi = row["win_ci95"]
    return f"{row['win_rate']:.2f} ({lo:.2f}-{hi:.2f})"


def _train(stage: Stage, seconds: float, battles: int, seed: int, out: Path,
           progress: bool) -> dict[str, Any]:
    """Run the trainer for ``stage``; return its ``evaluation.json``."""
    from traveller_rl.ppo import trainer

    argv = [*stage.flags, "--max-train-seconds", str(seconds), "--total-timesteps",
            "100000000", "--seed", str(seed), "--out", str(out), "--overwrite",
            "--eval-every", str(stage.eval_every), "--eval-battles", str(battles),
            "--final-eval-battles", "0", "--progress" if progress else "--no-progress"]
    status = trainer.main(argv)
    if status:
        raise SystemExit(status)
    return json.loads((out / "evaluation.json").read_text(encoding="utf-8"))


def _replay(checkpoint: Path, path: Path, seed: int) -> Path:
    """An HTML replay of the learned squad (blue) against ``tactician`` (red)."""
    import traveller_env
    from traveller_agents.registry import make_policy
    from traveller_env.replay.html import write_battle_html
    from traveller_rl.evaluation import play_battle

    env = traveller_env.raw_env("squad")
    learned = make_policy(str(checkpoint), scenario="squad")
    tactician = make_policy("tactician")
    policies = {a: learned if env.side_of(a) == 0 else tactician for a in env.possible_agents}
    battle = play_battle(env, policies, seed)
    winner = battle.winner or "nobody (the round limit)"
    return write_battle_html(path, battle, env.scenario, seed=seed,
                             title=f"squad, seed {seed}: learned (blue) vs tactician (red); "
                                   f"winner: {winner}")


def _table(results: Sequence[tuple[Stage, dict]], battles: int) -> list[str]:
    rows = []
    for stage, ev in results:
        for name, after in ev["eval_after"].items():
            before = ev["eval_before"][name]
            label = name + (" (never met in training)" if name in stage.held_out else "")
            rows.append((stage.name, label, _rate(before), _rate(after), verdict(before, after)))
    head = ("task", "opponent", "before training", "after", "verdict")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [f"Win rate of the learned policy, {battles} battles per row on seeds never used "
            "in training, with 95% intervals:", "", line(head),
            "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The demo's options."""
    parser = parser or argparse.ArgumentParser(prog="traveller demo",
                                               description=__doc__.splitlines()[0])
    parser.epilog = ("examples:\n  traveller demo\n  traveller demo --squad-seconds 600 "
                     "--out runs/demo_long --overwrite")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--duel-seconds", type=float_above(1, inclusive=True), default=30.0,
                        help="training time of the duel run, at least 1 (default: 30)")
    parser.add_argument("--squad-seconds", type=float_above(1, inclusive=True), default=120.0,
                        help="training time of the squad run, at least 1 (default: 120)")
    parser.add_argument("--battles", type=int_at_least(1), default=200,
                        help="evaluation battles per opponent (default: 200)")
    parser.add_argument("--seed", type=seed_type, default=1, help="training seed (default: 1)")
    parser.add_argument("--out", type=Path, default=Path("runs/demo"),
                        help="output folder, refused when it holds files unless --overwrite "
                             "(default: runs/demo)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write over the files of an existing --out folder")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def _check(args: argparse.Namespace) -> None:
    for flag, value, low in (("--duel-seconds", args.duel_seconds, 1.0),
                             ("--squad-seconds", args.squad_seconds, 1.0),
                             ("--battles", args.battles, 1)):
        check_at_least(flag, value, low)
    check_seed("--seed", args.seed)
    check_output_folder("--out", args.out, args.overwrite)


def run(args: argparse.Namespace) -> int:
    """Train both stages, evaluate, print the table, write the replay; return 0."""
    _check(args)
    start = time.perf_counter()
    seconds = {"duel": args.duel_seconds, "squad": args.squad_seconds}
    total = sum(seconds.values())
    print(f"Traveller Tactics demo: the batched PPO trainer on the compiled core, "
          f"{total:.0f} s of training in two runs, then evaluation.", flush=True)
    results = []
    for i, stage in enumerate(STAGES, 1):
        print(f"\n[{i}/{len(STAGES)}] {stage.title} ({seconds[stage.name]:.0f} s of training)",
              flush=True)
        ev = _train(stage, seconds[stage.name], args.battles, args.seed, args.out / stage.name,
                    progress=not args.no_progress)
        results.append((stage, ev))
    replay = _replay(args.out / "squad" / "ppo.pt", args.out / "squad_vs_tactician.html",
                     seed=args.seed)
    print("\n" + "\n".join(_table(results, args.battles)))
    print("\nverdict: 'beats it' = the lower end of the 95% interval is above 0.5; 'learned' ="
          " above the untrained network's upper end, but not above 0.5; 'no' = neither.\n"
          "Against tactician, a few minutes are not enough: an hour of self-play reaches "
          "about 0.59 (docs/findings.md).")
    print(f"\nlearning curves: {args.out / 'duel' / 'learning_curve.png'}, "
          f"{args.out / 'squad' / 'learning_curve.png'}")
    print(f"replay (open in a browser): {replay}")
    print(f"checkpoints: {args.out / 'duel' / 'ppo.pt'}, {args.out / 'squad' / 'ppo.pt'}")
    print(f"demo finished in {time.perf_counter() - start:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
