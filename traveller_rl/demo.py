"""The fast trainer on the compiled core, learning something you can see (``traveller demo``).

Two short runs of the batched PPO trainer (``traveller train ppo``), each bounded by a fixed
number of learner decisions (``--duel-decisions``, ``--squad-decisions``), so that the same
seed gives the same verdicts on any machine, busy or quiet; only the time changes (about three
minutes on a quiet 2-core machine; the trainer prints its rate, decisions/s, as it goes):

1. ``duel``: one rifleman learns to beat the scripted ``rush`` (from never winning to winning
   most battles in well under a minute).
2. ``squad``: the built-in squad scenario (its sides' sizes are read from it), the policy
   trained against the scripted ``rush``, ``marksman`` and ``cover`` and against its own past
   selves, then also evaluated against ``tactician``, the strongest scripted NPC, which it
   never met in training.

Each run is evaluated by the trainer itself on the compiled core, before and after training,
on battle seeds that training never draws (Wilson 95% intervals). The table gives a verdict
per row, explained in its own output; a learning-curve PNG (a panel per task and opponent) and
an HTML replay of the learned squad against ``tactician`` are written under ``--out``, and
their paths printed at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from traveller_rl.commandline import (
    UsageError,
    check_at_least,
    check_output_folder,
    check_seed,
    float_above,
    int_at_least,
    run_standalone,
    seed_type,
)

#: The default budgets in learner decisions (``--total-timesteps`` of each run), fixed so that
#: the verdicts do not depend on the machine's load. Sized from the trainer's quiet 2-core
#: figures (docs/performance.md: duel 300,000 decisions in 24 s; squad 16,000-24,000
#: decisions/s): the duel trains in about 30 s and the squad in about 2 minutes there.
DUEL_DECISIONS = 400_000
SQUAD_DECISIONS = 1_500_000

__all__ = ["STAGES", "Stage", "build_parser", "main", "plot_curves", "run", "verdict"]


class Stage(NamedTuple):
    """One training run of the demo: its scenario, what it trains against (the title says it
    after the sides' sizes), trainer flags, its default budget in learner decisions, how many
    updates apart its evaluations are (the learning curve's points), and the opponents
    evaluated that it never trained against."""

    name: str
    against: str
    flags: tuple[str, ...]
    decisions: int
    eval_every: int
    held_out: tuple[str, ...] = ()

    def title(self) -> str:
        """``squad: 4 against 4, against ...``: the sizes read from the scenario."""
        from traveller_env.scenario import load_scenario

        sides = load_scenario(self.name).sides
        sizes = " against ".join(str(len(side.combatants)) for side in sides)
        if sizes == "1 against 1":
            sizes = "one rifleman against one"
        return f"{self.name}: {sizes}, {self.against}"


STAGES = (
    Stage("duel", "against the scripted `rush`",
          ("--scenario", "duel", "--opponents", "red=rush", "--eval-vs", "rush"),
          decisions=DUEL_DECISIONS, eval_every=25),
    Stage("squad", "against rush, marksman, cover and its own past selves",
          ("--scenario", "squad", "--pool", "--pool-scripted", "rush,marksman,cover",
           "--pool-scripted-share", "0.5", "--eval-vs", "rush,marksman,cover,tactician"),
          decisions=SQUAD_DECISIONS, eval_every=50, held_out=("tactician",)),
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


def _train(stage: Stage, decisions: int, seconds: float | None, battles: int, seed: int,
           out: Path, progress: bool) -> dict[str, Any]:
    """Run the trainer for ``stage`` (``decisions`` learner decisions; ``seconds``, when
    given, also caps its training time); return its ``evaluation.json``."""
    from traveller_rl.ppo import trainer

    argv = [*stage.flags, "--total-timesteps", str(decisions), "--seed", str(seed),
            "--out", str(out), "--overwrite", "--eval-every", str(stage.eval_every),
            "--eval-battles", str(battles), "--final-eval-battles", "0",
            "--progress" if progress else "--no-progress"]
    if seconds is not None:
        argv += ["--max-train-seconds", str(seconds)]
    status = trainer.main(argv)
    if status:
        raise SystemExit(status)
    return json.loads((out / "evaluation.json").read_text(encoding="utf-8"))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def plot_curves(runs: Sequence[tuple[Stage, Path]], png: Path) -> Path:
    """The demo's learning curves as small multiples: a panel per task and evaluation
    opponent (win rate with its 95% interval over learner decisions, the training battles'
    win rate dotted), one shared legend below the panels; return ``png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for stage, folder in runs:
        evals = _read_jsonl(folder / "progress.jsonl")
        names = list(dict.fromkeys(k for h in evals for k in h.get("eval", {})))
        panels += [(stage, folder, evals, name) for name in names]
    cols = min(3, max(1, len(panels)))
    rows = max(1, -(-len(panels) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows + 0.8),
                             sharey=True, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (stage, folder, evals, name) in zip(axes.flat, panels, strict=False):
        pts = [h for h in evals if name in h.get("eval", {})]
        x = [h["decisions"] for h in pts]
        ax.plot(x, [h["eval"][name]["win_rate"] for h in pts], marker="o", ms=3,
                color="C0", label="evaluation (greedy, seeds never trained on), 95% interval")
        ax.fill_between(x, [h["eval"][name]["win_ci95"][0] for h in pts],
                        [h["eval"][name]["win_ci95"][1] for h in pts], color="C0", alpha=0.2)
        train = [h for h in _read_jsonl(folder / "training.jsonl")
                 if h.get("train_win_rate") is not None]
        ax.plot([h["decisions"] for h in train], [h["train_win_rate"] for h in train], ":",
                color="grey", label="training battles (all opponents)")
        held = " (never met in training)" if name in stage.held_out else ""
        ax.set_title(f"{stage.name} vs {name}{held}", fontsize=9)
        ax.set_xlabel("learner decisions", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("win rate")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("traveller demo: win rate of the learned policy", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


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
    parser = parser or argparse.ArgumentParser(prog="traveller demo", allow_abbrev=False,
                                               description=__doc__.splitlines()[0])
    parser.epilog = ("examples:\n  traveller demo\n  traveller demo --squad-decisions 10000000 "
                     "--out runs/demo_long --overwrite\n  traveller demo --duel-decisions 2048 "
                     "--squad-decisions 2048 --battles 2 --out runs/demo_smoke --overwrite")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--duel-decisions", type=int_at_least(1), default=DUEL_DECISIONS,
                        help="learner decisions of the duel run (default: "
                             f"{DUEL_DECISIONS:,}; the trainer rounds up to whole updates)")
    parser.add_argument("--squad-decisions", type=int_at_least(1), default=SQUAD_DECISIONS,
                        help="learner decisions of the squad run (default: "
                             f"{SQUAD_DECISIONS:,})")
    parser.add_argument("--duel-seconds", type=float_above(1, inclusive=True), default=None,
                        help="also stop the duel run after this much training time, at least "
                             "1 (default: no limit; a time limit makes the verdicts depend on "
                             "the machine's load)")
    parser.add_argument("--squad-seconds", type=float_above(1, inclusive=True), default=None,
                        help="also stop the squad run after this much training time "
                             "(default: no limit)")
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
    for flag, value, low in (("--duel-decisions", args.duel_decisions, 1),
                             ("--squad-decisions", args.squad_decisions, 1),
                             ("--duel-seconds", args.duel_seconds, 1.0),
                             ("--squad-seconds", args.squad_seconds, 1.0),
                             ("--battles", args.battles, 1)):
        if value is not None:
            check_at_least(flag, value, low)
    check_seed("--seed", args.seed)
    check_output_folder("--out", args.out, args.overwrite)
    if not isinstance(args.duel_decisions, int) or not isinstance(args.squad_decisions, int):
        raise UsageError("--duel-decisions and --squad-decisions must be whole numbers")


def run(args: argparse.Namespace) -> int:
    """Train both stages, evaluate, print the table, write the curves and the replay;
    return 0."""
    _check(args)
    start = time.perf_counter()
    decisions = {"duel": args.duel_decisions, "squad": args.squad_decisions}
    seconds = {"duel": args.duel_seconds, "squad": args.squad_seconds}
    print(f"Traveller Tactics demo: the batched PPO trainer on the compiled core, "
          f"{sum(decisions.values()):,} learner decisions in two runs (about three minutes "
          "on a quiet 2-core machine), then evaluation.", flush=True)
    results, runs = [], []
    for i, stage in enumerate(STAGES, 1):
        cap = f", at most {seconds[stage.name]:.0f} s" if seconds[stage.name] else ""
        print(f"\n[{i}/{len(STAGES)}] {stage.title()} ({decisions[stage.name]:,} decisions"
              f"{cap})", flush=True)
        ev = _train(stage, decisions[stage.name], seconds[stage.name], args.battles,
                    args.seed, args.out / stage.name, progress=not args.no_progress)
        print(f"[{i}/{len(STAGES)}] {stage.name}: {ev['decisions']:,} decisions in "
              f"{ev['train_seconds']:.0f} s of training, {ev['decisions_per_second']:,.0f} "
              "decisions/s", flush=True)
        results.append((stage, ev))
        runs.append((stage, args.out / stage.name))
    curves = plot_curves(runs, args.out / "learning_curves.png")
    replay = _replay(args.out / "squad" / "ppo.pt", args.out / "squad_vs_tactician.html",
                     seed=args.seed)
    print("\n" + "\n".join(_table(results, args.battles)))
    print("\nverdict: 'beats it' = the lower end of the 95% interval is above 0.5; 'learned' ="
          " above the untrained network's upper end, but not above 0.5; 'no' = neither.\n"
          "Against tactician, a few minutes are not enough: an hour of self-play reaches "
          "about 0.59 (docs/findings.md).")
    print(f"\nlearning curves: {curves}")
    print(f"replay (open in a browser): {replay}")
    print(f"checkpoints: {args.out / 'duel' / 'ppo.pt'}, {args.out / 'squad' / 'ppo.pt'}")
    print(f"demo finished in {time.perf_counter() - start:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
