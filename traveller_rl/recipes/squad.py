"""Squad tactics from scratch by self-play: a ``train_ppo`` pool run on ``squad`` and its
held-out evaluation against the scripted NPCs.

The headline run trains one policy for every seat of a side against a pool of its own past
checkpoints (the learner's side drawn per battle), observing the move view (what the ground
offers at each square a move could end on), with ``rush`` and ``marksman`` mixed into
the pool on ``--pool-scripted-share`` of the rows; ``tactician`` and ``cover`` never appear in
training (``tactician`` is the held-out opponent; ``cover`` cannot run inside the core and
would slow every update). No imitation: the only signal is the battle's reward.

The evaluation loads the checkpoint as an NPC (greedy) and plays ``--eval-battles`` battles
against each ``--vs`` policy through the AEC env (``traveller_rl.evaluation.evaluate_matchup``:
sides alternate, so half the battles as blue and half as red), on seeds from 200,000 (never
used in training: training battles draw their seeds from the run's seed), in ``--workers``
processes; win rates with Wilson 95% intervals. It also measures the policy's and the
scripted NPCs' behaviour against ``marksman``.

    python -m traveller_rl.recipes.squad --total-timesteps 40000000 --seed 1 \\
        --extra '--stop-after-updates 1630' --json results/squad_ppo.json   # the first headline
    python -m traveller_rl.recipes.squad --total-timesteps 40000000 --seed 1 \\
        --extra '--no-move-view --stop-after-updates 1800'   # the same without the move view
    python -m traveller_rl.recipes.squad --total-timesteps 30000000 --seed 62 \\
        --extra '--scenario configs/training/squad_damage.yaml --potential \\
        clear_shots=1.0,exposed=-1.0 --hidden 256,256 --eval-every 40 \\
        --eval-vs rush,marksman,tactician --stop-after-updates 2000' \\
        --json results/squad_ppo_potential.json   # run w (potential shaping)
    python -m traveller_rl.recipes.squad --total-timesteps 30000000 --seed 62 \\
        --extra '--scenario configs/training/squad_damage_own.yaml --potential \\
        clear_shots=1.0,exposed=-1.0 --hidden 256,256 --eval-every 40 \\
        --eval-vs rush,marksman,tactician --stop-after-updates 1840' \\
        --json results/squad_ppo_own_damage.json   # the best MLP run (per-seat damage)
    python -m traveller_rl.recipes.squad --total-timesteps 11000000 --seed 65 \\
        --extra '--scenario configs/training/squad_damage_own.yaml --attack-view --arch entity \\
        --embed 64 --potential clear_shots=1.0,exposed=-1.0 --hidden 256,256 --eval-every 40 \\
        --eval-vs rush,marksman,tactician --stop-after-updates 320' \\
        --json results/squad_ppo_entity.json   # the best self-play run (the entity actor)
    python -m traveller_rl.recipes.squad --checkpoint runs/squad_ppo/ppo.pt --json out.json
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from traveller_rl.commandline import (
    UsageError,
    check_output_folder,
    check_seed,
    examples_epilog,
    int_at_least,
    run_standalone,
    seed_type,
)
from traveller_rl.common import checkpoint_provenance, result_command, write_json

__all__ = ["TRAIN_FLAGS", "build_parser", "evaluate", "main", "run"]

#: train_ppo flags of the headline run (besides --total-timesteps, --seed, --out).
TRAIN_FLAGS = ["--scenario", "squad", "--move-view", "--pool", "--pool-scripted", "rush,marksman",
               "--pool-scripted-share", "0.3", "--pool-every", "10", "--pool-size", "30",
               "--num-envs", "256", "--num-steps", "64", "--epochs", "4", "--minibatches", "8",
               "--lr", "3e-4", "--ent-coef", "0.01", "--hidden", "128,128",
               "--eval-every", "20", "--eval-vs", "rush,marksman", "--eval-battles", "100",
               "--final-eval-battles", "0"]
EVAL_SEED = 200_000


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options (it writes ``--json`` only when asked)."""
    parser = parser or argparse.ArgumentParser(allow_abbrev=False, prog="traveller train squad-ppo",
                                               description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog("""
        traveller train squad-ppo --total-timesteps 20000000 --out runs/squad_ppo
        traveller train squad-ppo --checkpoint runs/squad_ppo/ppo.pt --eval-battles 200
        traveller train squad-ppo --extra '--pool-scripted rush,marksman' --overwrite""")
    train = parser.add_argument_group("training")
    train.add_argument("--total-timesteps", type=int_at_least(1), default=20_000_000,
                       help="learner decisions (default: 20000000)")
    train.add_argument("--seed", type=seed_type, default=1, help="training seed (default: 1)")
    train.add_argument("--extra", default="",
                       help="more train_ppo flags, as one string (e.g. '--pool-scripted "
                            "rush,marksman,tactician' for the run with tactician in the pool)")
    train.add_argument("--checkpoint", type=Path, default=None,
                       help="evaluate this checkpoint instead of training one")
    evaluation = parser.add_argument_group("evaluation")
    evaluation.add_argument("--vs", default="tactician,cover,marksman,rush",
                            help="evaluation opponents (default: tactician,cover,marksman,rush)")
    evaluation.add_argument("--eval-battles", type=int_at_least(2), default=1000,
                            help="evaluation battles per opponent, half from each side, an even "
                                 "number (default: 1000)")
    evaluation.add_argument("--behaviour-battles", type=int_at_least(0), default=200,
                            help="behaviour battles per policy against marksman (0: none; "
                                 "default: 200)")
    evaluation.add_argument("--workers", type=int_at_least(1), default=2,
                            help="processes (default: 2)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", type=Path, default=Path("runs/squad_ppo"),
                        help="train_ppo's run folder, refused when it holds files unless "
                             "--overwrite (default: runs/squad_ppo)")
    output.add_argument("--overwrite", action="store_true",
                        help="write over the files of an existing --out folder")
    output.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def _chunk(job: tuple[str, str, int, int]) -> dict[str, Any]:
    """One worker's share: ``battles`` battles of the checkpoint against ``opponent`` from
    battle seed ``seed`` (an even count and an even seed offset keep the side alternation)."""
    import warnings

    warnings.filterwarnings("ignore")
    from traveller_agents.registry import make_policy
    from traveller_rl.evaluation import evaluate_matchup

    checkpoint, opponent, seed, battles = job
    return evaluate_matchup(make_policy(checkpoint, scenario="squad"),
                            make_policy(opponent, scenario="squad"), "squad",
                            battles=battles, seed=seed)


def evaluate(checkpoint: str, opponents: list[str], battles: int, workers: int) -> list[dict]:
    """Win/draw/loss of ``checkpoint`` against each opponent (see the module docstring)."""
    from traveller_rl.evaluation import matchup_counts

    size = 50
    jobs = [(checkpoint, opp, EVAL_SEED + start, min(size, battles - start))
            for opp in opponents for start in range(0, battles, size)]
    if workers > 1:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            parts = list(pool.map(_chunk, jobs))
    else:
        parts = [_chunk(j) for j in jobs]
    rows = []
    for opp in opponents:
        mine = [p for j, p in zip(jobs, parts, strict=True) if j[1] == opp]
        row = {"opponent": opp, **matchup_counts(mine)}
        row["lower_bound_above_0.6"] = row["win_ci95"][0] > 0.6
        sides = dict.fromkeys(side for p in mine for side in p["by_side"])  # scenario order
        row["by_side"] = {side: matchup_counts([p["by_side"][side] for p in mine])
                          for side in sides}
        rows.append(row)
    return rows


def run(args: argparse.Namespace) -> int:
    """Train (unless ``--checkpoint``), evaluate, print (and write ``--json``)."""
    import shlex

    from traveller_agents.registry import parse_policy_list
    from traveller_rl.ppo import trainer as train_ppo

    try:
        opponents = parse_policy_list(args.vs)
    except ValueError as exc:
        raise UsageError(f"--vs: {exc}") from None
    if args.eval_battles < 2 or args.eval_battles % 2:
        raise UsageError(f"--eval-battles must be an even number, at least 2, got "
                         f"{args.eval_battles}")
    check_seed("--seed", args.seed)
    trained_s, flags = None, None
    checkpoint = args.checkpoint
    if checkpoint is not None and not checkpoint.is_file():
        raise UsageError(f"--checkpoint {checkpoint}: no such file (a train_ppo .pt)")
    if checkpoint is None:
        check_output_folder("--out", args.out, getattr(args, "overwrite", False))
        flags = [*TRAIN_FLAGS, *shlex.split(args.extra), "--total-timesteps",
                 str(args.total_timesteps), "--seed", str(args.seed), "--out", str(args.out),
                 "--overwrite", "--no-progress"]
        start = time.perf_counter()
        if train_ppo.main(flags):
            return 2
        trained_s = time.perf_counter() - start
        checkpoint = args.out / "ppo.pt"
    t = time.perf_counter()
    rows = evaluate(str(checkpoint), opponents, args.eval_battles, args.workers)
    sides = list(rows[0]["by_side"]) if rows else []
    print("| opponent | W / D / L | win rate (95% CI) | lower bound > 0.6 | "
          + " | ".join(f"as {s}" for s in sides) + " |")
    print("|---|---|---|---|" + "---|" * len(sides))
    for r in rows:
        lo, hi = r["win_ci95"]
        print(f"| {r['opponent']} | {r['wins']} / {r['draws']} / {r['losses']} | "
              f"{r['win_rate']:.3f} ({lo:.3f}-{hi:.3f}) | "
              f"{'yes' if r['lower_bound_above_0.6'] else 'no'} | "
              + " | ".join(f"{r['by_side'][s]['win_rate']:.3f}" for s in sides) + " |")
    print(f"evaluated in {time.perf_counter() - t:.0f} s")
    behaviour = None
    if args.behaviour_battles:
        from traveller_rl.behaviour import behaviour_stats

        behaviour = {p: behaviour_stats(p, "squad", vs="marksman",
                                        battles=args.behaviour_battles, seed=EVAL_SEED)
                     for p in [str(checkpoint), *opponents]}
    if args.json:
        training = (f"--total-timesteps {args.total_timesteps} --seed {args.seed}"
                    + (f" --extra {shlex.quote(args.extra)}" if args.extra else ""))
        command = result_command("traveller_rl.recipes.squad", args.checkpoint, training,
                                 f"--eval-battles {args.eval_battles} --vs {shlex.quote(args.vs)}")
        payload = {"command": command,
                   "train_flags": flags, "checkpoint": str(checkpoint),
                   "train_seconds": trained_s, "eval_seed": EVAL_SEED,
                   "training": checkpoint_provenance(checkpoint), "rows": rows,
                   "behaviour": behaviour}
        write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
