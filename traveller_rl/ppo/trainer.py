"""Masked PPO on batched battles (``traveller_env.vector``): one shared policy for every seat it
plays, GAE per seat, scripted opponents, self-play or a pool of its own past checkpoints.

    traveller train ppo --scenario duel --opponents red=rush --total-timesteps 300000 \\
        --seed 1 --out DIR
    python -m traveller_rl.ppo.trainer --scenario squad --pool --pool-scripted rush,marksman

**The loop** (CleanRL's PPO, adapted to many seats). Every call steps ``--num-envs`` battles
(rows) of ``vector.make(..., relative_actions=True)``: targets are named by observation slot,
so the same network plays any seat. Each step, the rows' observations and masks go through the
network in one batch; the action is drawn from the masked softmax (an illegal action has
probability exactly 0: ``ppo_common.sample_masked``). After ``--num-steps`` steps, GAE is
computed per seat and the policy is updated for ``--epochs`` epochs of ``--minibatches``
minibatches (clipped surrogate, clipped value loss, entropy bonus, gradient-norm clipping,
learning rate annealed to 0 over ``--total-timesteps``). With ``--overlap`` the rows are two
halves that take turns, one half's battles stepped in a background thread while the network
chooses the other half's actions (``traveller_rl.ppo.overlap``).

**GAE per seat** (``ppo_common.SeatRollout``). A decision is a transition of the seat that made
it; its reward is everything the vector credits to that seat (``rewards[row, seat]``, at every
step, whoever acted) until the same seat's next decision in that battle, or the battle's end;
its successor is that next decision. Each row keeps one pending transition per seat. A
transition whose successor has not come by the end of a rollout bootstraps its predecessor and
is carried into the next rollout. ``--total-timesteps`` counts learner decisions (the seats
being trained; frozen and scripted seats are not counted). A battle cut at ``max_rounds``
(``truncated``) ends like a decided one: the draw is part of the game.

**Opponent modes.**

* ``--opponents red=rush`` (``SEAT=POLICY``, comma-separated; a side or an agent id): those
  seats are played inside the vector (in the compiled core with ``--backend core``, which runs
  ``random``, ``passive``, ``rush``, ``marksman``, ``leader`` and ``tactician``), so every
  decision the trainer sees is a learner's.
* self-play (no ``--opponents``, no ``--pool``): every seat learns, one policy for all.
* ``--pool``: the policy plays against frozen copies of itself, saved every ``--pool-every``
  updates (the first before any update) into ``DIR/pool/`` (each a checkpoint that loads as an
  NPC like the final one), optionally mixed with scripted policies (``--pool-scripted
  rush,marksman``). Design: the rows are split. ``--pool-scripted-share`` of them are scripted
  battles: one vector per (scripted policy, learner side) with that policy inside the vector
  (``opponents={other sides: name}``), rows shared out evenly (or by ``--side-shares``), so the
  scripted mix is exact rather than sampled and the scripted seats run at the vector's own
  speed. The other rows form one vector with no opponents; at the start of each battle, each of
  these rows draws the side the learner plays (uniformly, or by ``--side-shares``) and one of
  the ``--pool-size`` latest frozen checkpoints for the other sides. The trainer runs the
  frozen seats itself (the learner's own past copies stacked into one batched forward pass,
  ``traveller_rl.ppo.stacked``; any other checkpoint in a pass of its own; sampling from its
  masked distribution, not trained on; in ``--pool-greedy-share`` of the battles, drawn per
  battle, it plays its most probable legal action instead, as an evaluated checkpoint does).
* ``--pool-watch OTHER_RUN``: two learners at once, each in its own process, each with the
  other's pool checkpoints in its pool as they appear (a league's main learner and its
  exploiter: ``--pool-watch-share 1`` makes a run play only the watched checkpoints). Which
  checkpoint a battle meets then depends on the other process's timing: such runs are not
  reproducible byte for byte, and their ``evaluation.json`` lists what was met.

**Evaluation.** Every ``--eval-every`` updates (and before the first), the greedy policy (the
checkpoint's default NPC behaviour) plays ``--eval-battles`` battles against each
``--eval-vs`` policy, half from each side, on fixed held-out battle seeds (the same battles
every time), through vectors with the opponent inside; win rates with Wilson 95% intervals go
to TensorBoard, ``progress.jsonl`` and the learning curve. At the end, the saved checkpoint is
loaded back as an NPC policy (``traveller_agents.trained.load_policy``) and played through the AEC env
(``traveller_rl.evaluation.evaluate_matchup``, seeds from 20,000, sides alternating) against each
``--eval-vs`` policy for ``--final-eval-battles`` battles.

**Outputs** (``--out DIR``, default ``runs/ppo__<scenario>__<seed>__<unix time>``):
``ppo.pt`` (the checkpoint, ``traveller_agents.ppo_policy``'s format, written atomically every
evaluation and at the end: ``traveller eval DIR/ppo.pt``, ``--policies DIR/ppo.pt`` in the
tournament), ``config.json`` (every argument, the resolved layout, package versions), ``tb/``
(TensorBoard), ``progress.jsonl`` (one line per evaluation), ``training.jsonl`` (one line
per update: decisions, seconds, the training battles' win rate, per group when there are
several), ``learning_curve.png`` (evaluations with intervals, training win rates dotted) and
``evaluation.json``; with ``--checkpoint-every``, ``resume.ckpt``, which ``--resume DIR``
continues from (either backend; see docs/training.md). The same seed
and flags on one thread (``--threads 1``) give the same ``ppo.pt``, byte for byte, on either
backend (the backends play the same battles), resumed or not, for any ``--env-threads`` and
the same ``--update-threads`` count (the update's torch threads, by default one per core).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from traveller_env.scenario_set import is_set_source
from traveller_rl.commandline import UsageError, examples_epilog, run_standalone
from traveller_rl.common import (
    add_dataclass_args,
    atomic_write_bytes,
    hidden_sizes,
    versions,
    write_json,
)
from traveller_rl.ppo.args import (
    EXAMPLES,
    HELP_GROUPS,
    Args,
    names_list,
)
from traveller_rl.ppo.checkpoints import check_checkpoints
from traveller_rl.ppo.overlap import halved_vector
from traveller_rl.ppo.pool import FrozenPool
from traveller_rl.ppo.progress import (
    BattleStats,
    Timers,
    evaluate_greedy,
    log_update,
    metrics_writer,
)
from traveller_rl.ppo.resume import (
    CheckpointSchedule,
    check_resumable_config,
    count_lines,
    generator_states,
    read_checkpoint,
    restore_generators,
    truncate_lines,
    write_checkpoint,
)
from traveller_rl.ppo.rows import (
    Group,
    RowBatch,
    build_groups,
    learner_obs_dim,
    learner_views,
    make_eval_vectors,
    scenario_list,
)
from traveller_rl.ppo.shaping import (
    RewardShaping,
)
from traveller_rl.ppo.update import (
    UpdateSettings,
    ppo_update,
    resolve_device,
    torch_threads,
    update_threads,
)

# the trainer's own names, and the ones that lived here before it was split by
# responsibility and are imported from here still
__all__ = ["OUTPUTS", "Chosen", "build_parser", "final_evaluation", "main", "make_network",
           "prepare", "run", "run_folder", "save_checkpoint", "train", "write_config"]

#: The files a run writes in its folder (besides the folders tb/ and pool/).
OUTPUTS = ("config.json", "ppo.pt", "progress.jsonl", "training.jsonl", "evaluation.json",
           "learning_curve.png", "resume.ckpt")
#: The logs a resumed run cuts back to the line counts its checkpoint recorded.
RESUMED_LOGS = ("progress.jsonl", "training.jsonl")
#: The ``RowBatch`` arrays a resume checkpoint holds (the next step reads them).
BATCH_ARRAYS = ("obs", "mask", "agent", "rewards", "ended", "winner", "side", "group")


class Chosen(NamedTuple):
    """One step's choice for some rows: ``actions`` (one per row of the batch; those of the
    rows not chosen for are 0), the learner's ``rows``, and with ``--style`` each of those
    rows' deciding seat and style reward (added once the step is done)."""

    actions: np.ndarray
    rows: np.ndarray
    style_seat: np.ndarray | None = None
    style_reward: np.ndarray | None = None


def prepare(args: Args) -> tuple[list[Group], dict[str, list[tuple[Any, int]]]]:
    """Check the arguments and build the training and evaluation vectors (``ValueError``
    naming the flag on bad input)."""
    args.check()
    resolve_device(args.device)  # ValueError naming --device before any battle is built
    update_threads(args.update_threads)  # and --update-threads
    if args.resume:  # the checkpoint is there and the flags match it, before any battle
        check_resume(args, read_checkpoint(Path(args.resume)))
    groups = build_groups(args, halved_vector if args.overlap else None)
    if args.overlap:
        from traveller_rl.ppo.overlap import check_halves

        check_halves(groups)
    check_checkpoints(args, groups[0].venv)
    eval_vectors = make_eval_vectors(args, groups[0].venv.sides) if args.eval_battles else {}
    return groups, eval_vectors


# ============================================================================ training
def train(args: Args, prepared: tuple[list[Group], dict] | None = None) -> Path:
    """Train, checkpoint, evaluate; return the run folder."""
    import torch

    from traveller_env.rules.rng import derive_seed
    from traveller_rl.ppo.rollout import SeatRollout, StepUpload, plot_curve, sample_masked

    groups, eval_vectors = prepared or prepare(args)
    first = groups[0].venv
    scenario = ",".join(dict.fromkeys(
        args.scenario if getattr(g.venv, "scenario_set", None) is not None
        else g.venv.scenario.name
        for g in groups))
    resumed = None
    if args.resume:  # the run's own folder; its arguments checked against the checkpoint's
        resumed = read_checkpoint(Path(args.resume))
        check_resume(args, resumed)
        args.out = args.resume
    out = run_folder(args)
    n = args.num_envs
    # the learner's inputs: the vector's observation, or its prefix without the later views
    obs_dim = learner_obs_dim(args, first)
    if resumed is None:
        write_config(out, args, scenario, groups, obs_dim)

    # ---- seeding: one block (torch's initialisation, the sampler, NumPy's shuffles)
    torch.set_num_threads(args.threads)
    learner_threads = update_threads(args.update_threads)  # widened for the update only
    torch.manual_seed(args.seed)
    device = resolve_device(args.device)  # the learner's: the rollout, inference, update
    gen = torch.Generator(device=device).manual_seed(derive_seed(args.seed, 1) & (2**63 - 1))
    # the frozen pool plays on the CPU: it shares the sampler's generator there
    pool_gen = gen if device.type == "cpu" else \
        torch.Generator().manual_seed(derive_seed(args.seed, 3) & (2**63 - 1))
    rng = np.random.default_rng(derive_seed(args.seed, 2))

    net, inherited = make_network(args, first, obs_dim)
    net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, eps=1e-5)
    writer = metrics_writer(out / "tb")
    writer.add_text("config", "```\n" + json.dumps(dataclasses.asdict(args), indent=1) + "\n```")

    def save(path: Path, update: int, decisions: int) -> None:
        save_checkpoint(path, net, args, scenario, first.action_labels, inherited, update,
                        decisions)

    # ---- the rows, and the pool of frozen past selves (pool mode)
    pipeline = None
    if args.overlap:  # two halves of the rows, stepped in turns beside the inference
        from traveller_rl.ppo.overlap import HalvedBatch, Pipeline

        batch = HalvedBatch(groups, obs_dim)
        pipeline = Pipeline(batch)
    else:
        batch = RowBatch(groups, obs_dim)
    pool_rows = next((g for g in groups if g.kind == "pool"), None)
    pool = None
    if pool_rows is not None:
        pool = FrozenPool.from_args(args, first, range(pool_rows.start, pool_rows.stop),
                                    obs_dim, rng, pool_gen)
        if resumed is None:
            save(out / pool.freeze(net, 0), 0, 0)
            pool.watch()
            pool.start_battles(np.arange(pool_rows.start, pool_rows.stop), batch.side)
        else:  # its members from their checkpoints, its statistics and draws as they were
            pool.load_state(resumed["pool"], net, out)

    # ---- evaluation
    history: list[dict] = []
    training_curve: list[dict] = []  # one point per update: the training battles' win rate
    timers = Timers()

    def evaluate(update: int, decisions: int, train_win: float | None) -> dict:
        t = time.perf_counter()
        results = evaluate_greedy(net, eval_vectors, args.eval_battles)
        for name, result in results.items():
            writer.add_scalar(f"eval/win_rate_vs_{name}", result["win_rate"], decisions)
        timers.eval += time.perf_counter() - t
        record = {"update": update, "decisions": decisions, "train_win_rate": train_win,
                  "eval": results, "seconds": round(timers.training(), 2),
                  "wall_seconds": round(timers.wall(), 2)}
        history.append(record)
        with (out / "progress.jsonl").open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        return record

    if resumed is None:
        (out / "progress.jsonl").unlink(missing_ok=True)
        (out / "training.jsonl").unlink(missing_ok=True)
    curve_label = (groups[0].label if len(groups) == 1
                   else "pool" if pool is not None else "all scenarios")
    t = time.perf_counter()
    batch.reset()
    timers.env += time.perf_counter() - t

    # the rollout's tensors live on the learner's device (docs/performance.md)
    rollout = SeatRollout(n, first.num_agents, obs_dim, first.n_actions, args.num_steps, device)
    upload = StepUpload(n, obs_dim, first.n_actions, device)
    shaping = RewardShaping.of(args, first)
    stats = BattleStats(n, len(groups), first.agent_sides, len(first.sides))
    settings = UpdateSettings.of(args)
    decisions, update = 0, 0
    torch_gens = [gen] if pool_gen is gen else [gen, pool_gen]

    def run_state() -> dict[str, Any]:
        """Everything the rest of the run depends on (the resume checkpoint's contents)."""
        return {"args": dataclasses.asdict(args), "update": update, "decisions": decisions,
                "net": net.state_dict(), "optimizer": optimizer.state_dict(),
                "generators": generator_states(rng, torch_gens),
                "vectors": [g.venv.snapshot() for g in groups],
                "batch": {name: getattr(batch, name).copy() for name in BATCH_ARRAYS},
                "rollout": rollout.state(), "stats": stats.state(),
                "pool": pool.state() if pool is not None else None,
                "history": history, "training_curve": training_curve,
                "timers": {"wall": timers.wall(), "env": timers.env,
                           "inference": timers.inference, "update": timers.update,
                           "eval": timers.eval},
                "lines": {name: count_lines(out / name) for name in RESUMED_LOGS}}

    if resumed is None:
        evaluate(0, 0, None)
    else:  # put the run back where its checkpoint left it
        for name, lines in resumed["lines"].items():
            truncate_lines(out / name, lines)
        update, decisions = resumed["update"], resumed["decisions"]
        net.load_state_dict(resumed["net"])
        optimizer.load_state_dict(resumed["optimizer"])
        for g, snapshot in zip(groups, resumed["vectors"], strict=True):
            g.venv.restore(snapshot)
        for name in BATCH_ARRAYS:
            getattr(batch, name)[...] = resumed["batch"][name]
        rollout.load_state(resumed["rollout"])
        stats.load_state(resumed["stats"])
        history[:] = resumed["history"]
        training_curve[:] = resumed["training_curve"]
        saved_time = resumed["timers"]
        timers.start = time.perf_counter() - saved_time["wall"]
        for part in ("env", "inference", "update", "eval"):
            setattr(timers, part, saved_time[part])
        restore_generators(resumed["generators"], rng, torch_gens)
        print(f"resumed {out} at update {update} ({decisions:,} decisions)")
    schedule = CheckpointSchedule.parse(args.checkpoint_every, time.perf_counter(), update)
    bar = None
    if args.progress:
        from tqdm import tqdm

        # a run bounded by training time shows the time; otherwise the decisions
        by_time = bool(args.max_train_seconds)
        bar = tqdm(total=args.max_train_seconds if by_time else args.total_timesteps,
                   initial=0 if by_time else decisions, unit="s" if by_time else "dec",
                   smoothing=0.1, dynamic_ncols=True,
                   bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s [{elapsed}{postfix}]"
                   if by_time else None)
    log = bar.write if bar is not None else print
    if history[-1]["eval"]:
        log("before training: " + ", ".join(f"vs {k} {v['win_rate']:.3f}"
                                            for k, v in history[-1]["eval"].items()))

    agent_sides = first.agent_sides

    def decide(part: np.ndarray | None) -> Chosen:
        """Choose the actions of the rows in ``part`` (``None``: every row) and record the
        learner's decisions: the learner's seats sample from the policy, the pool's play
        frozen."""
        nonlocal decisions
        every = np.arange(n) if part is None else part
        whole = part is None and pool is None  # every row is a learner's: no gathering copy
        if pool is None:
            rows, others = every, every[:0]
        else:
            learner = ((pool.member[every] < 0)
                       | (agent_sides[batch.agent[every]] == batch.side[every]))
            rows, others = every[learner], every[~learner]
        actions = np.zeros(n, dtype=np.int64)
        # the learner's rows on the device: one copy each, read by the network and the rollout
        o, m = upload(batch.learner_obs, batch.mask, None if whole else rows)
        with torch.no_grad():
            a, logp = sample_masked(net.actor(o), m, gen)
            value = net.value(o)
            actions[rows] = a.cpu().numpy()  # the step's one copy back: the vectors' actions
            if len(others):
                actions[others] = pool.actions(others, torch.from_numpy(batch.obs),
                                               torch.from_numpy(batch.mask), batch.agent)
        seen = batch.obs if whole else batch.obs[rows]
        phi = None if shaping.potential is None else shaping.potential(seen)
        prog = None if shaping.knockout is None else shaping.knockout(seen)
        rollout.add(rows, batch.agent if whole else batch.agent[rows], o, m, a, logp, value,
                    phi, args.gamma, prog)
        decisions += len(rows)
        stats.decided_in(rows)
        if shaping.style is None:
            return Chosen(actions, rows)
        # read before the step overwrites the observations
        return Chosen(actions, rows, batch.agent[rows].copy(),
                      shaping.style(batch.obs[rows], actions[rows]))

    def absorb(part: np.ndarray | None, chosen: Chosen) -> None:
        """Take in the step of the rows in ``part`` (``None``: every row) that applied
        ``chosen``: rewards, ended battles, the pool's next opponents."""
        if chosen.style_reward is not None:
            batch.rewards[chosen.rows, chosen.style_seat] += chosen.style_reward
        rollout.credit(batch.rewards, batch.ended, part)
        stats.rewarded(batch.rewards, batch.side, part)
        ended = batch.ended if part is None else batch.ended[part]
        if ended.any():
            done_rows = np.flatnonzero(ended) if part is None else part[ended]
            stats.ended(done_rows, batch.winner, batch.side, batch.group)
            if pool is not None:
                pool.end_battles(done_rows, batch.winner, batch.side)

    out_of_time = False  # --max-train-seconds reached
    while decisions < args.total_timesteps and not out_of_time and not (
            args.stop_after_updates and update >= args.stop_after_updates):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.lr * max(
                0.0, 1.0 - decisions / args.total_timesteps)
        rollout_start = decisions

        # ---- rollout: the learner's seats sample from the policy, the pool's play frozen
        if pipeline is None:
            for _ in range(args.num_steps):
                t = time.perf_counter()
                chosen = decide(None)
                t2 = time.perf_counter()
                timers.inference += t2 - t
                batch.step(chosen.actions)
                timers.env += time.perf_counter() - t2
                absorb(None, chosen)
        else:  # --overlap: one half's battles step while the other half's actions are chosen
            pipeline.rollout(args.num_steps, decide, absorb, timers)

        # ---- GAE per seat, then the PPO update
        t = time.perf_counter()
        idx, adv, ret = rollout.advantages(args.gamma, args.gae_lambda)
        with torch_threads(learner_threads):
            losses = ppo_update(net, optimizer, rollout, idx, adv, ret, rng, settings)
        carried = rollout.carry()
        update += 1
        timers.update += time.perf_counter() - t

        # ---- logging, pool, evaluation, checkpoint
        elapsed = timers.training()
        out_of_time = bool(args.max_train_seconds and elapsed >= args.max_train_seconds)
        point = log_update(writer, update, decisions, elapsed, optimizer.param_groups[0]["lr"],
                           timers, carried, stats, losses, [g.label for g in groups])
        training_curve.append(point)
        with (out / "training.jsonl").open("a") as fh:
            fh.write(json.dumps(point) + "\n")
        train_win = point["train_win_rate"]
        if bar is not None:
            if by_time:
                bar.update(min(elapsed, bar.total) - bar.n)
            else:
                bar.total = max(bar.total, decisions)  # the last rollout may overshoot
                bar.update(decisions - rollout_start)
            bar.set_postfix_str(f"upd {update} {decisions:,} dec {decisions / elapsed:,.0f} dec/s"
                                + (f" train win {train_win:.2f}" if train_win is not None
                                   else ""))
        stats.clear()
        if pool is not None and update % args.pool_every == 0:
            save(out / pool.freeze(net, update), update, decisions)
            pool.watch()
        last = (decisions >= args.total_timesteps or update == args.stop_after_updates
                or out_of_time)
        if (args.eval_every and update % args.eval_every == 0) or last:
            rec = evaluate(update, decisions, train_win)
            t = time.perf_counter()
            save(out / "ppo.pt", update, decisions)
            if rec["eval"]:
                log(f"update {update:>4}  {decisions:>9,} decisions  {rec['seconds']:>7.1f} s  "
                    + "  ".join(f"vs {k} {v['win_rate']:.3f}" for k, v in rec["eval"].items()))
            plot_curve(history, out / "learning_curve.png",
                       f"PPO {scenario} ({curve_label}, seed {args.seed})", training_curve)
            timers.eval += time.perf_counter() - t  # checkpoint and curve: not training
        if not last and schedule.due(update, time.perf_counter()):
            t = time.perf_counter()
            write_checkpoint(out, run_state())
            schedule.written(update, time.perf_counter())
            timers.eval += time.perf_counter() - t  # the resume checkpoint: not training
    if bar is not None:
        bar.close()
    if pipeline is not None:
        pipeline.close()
    train_seconds = timers.training()
    writer.close()
    results: dict[str, Any] = {
        "scenario": scenario, "decisions": decisions, "updates": update,
        "train_seconds": train_seconds, "decisions_per_second": decisions / train_seconds,
        "time_shares": {"env": timers.env / train_seconds,
                        "inference": timers.inference / train_seconds,
                        "update": timers.update / train_seconds},
        "eval_seconds": timers.eval, "backend": args.backend,
        "battles_skipped": sum(g.venv.battles_skipped for g in groups),
        "eval_before": history[0]["eval"], "eval_after": history[-1]["eval"]}
    if pool is not None:
        results["pool"] = pool.summary()
    print(f"\ntrained {decisions:,} decisions in {train_seconds:.0f} s "
          f"({results['decisions_per_second']:,.0f} decisions/s, {args.backend} backend; "
          f"environment {results['time_shares']['env']:.0%}, inference "
          f"{results['time_shares']['inference']:.0%}, updates "
          f"{results['time_shares']['update']:.0%}); checkpoint: {out / 'ppo.pt'}")
    if args.final_eval_battles and names_list(args.eval_vs):
        results["final_evaluation"] = final_evaluation(out / "ppo.pt", args)
    write_json(out / "evaluation.json", results)
    return out


# ============================================================================ a run's pieces
def check_resume(args: Args, checkpoint: dict[str, Any]) -> None:
    """``ValueError`` naming each flag of ``args`` that differs from the checkpoint's run
    (budgets and verbosity may change; the folder is the run's own, whatever ``--out`` first
    named it)."""
    # a checkpoint from before --overlap existed ran without it, and before --update-threads
    # it updated on --threads
    saved = checkpoint["args"]
    check_resumable_config({"overlap": False, "update_threads": saved.get("threads", 1),
                            **saved, "out": ""},
                           {**dataclasses.asdict(args), "out": ""})


def run_folder(args: Args) -> Path:
    """The run folder (``--out``, or ``runs/ppo__<scenario>__<seed>__<unix time>``), created;
    with ``--overwrite``, the outputs of the run already there removed (anything else in the
    folder stays)."""
    out = Path(args.out) if args.out else (
        Path("runs") / f"ppo__{'+'.join(Path(s).stem for s in scenario_list(args))}__"
                       f"{args.seed}__{int(time.time())}")
    if args.overwrite:
        for name in ("tb", "pool"):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in OUTPUTS:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_config(out: Path, args: Args, scenario: str, groups: list[Group],
                 obs_dim: int) -> None:
    """``config.json``: every argument, the resolved layout, the thread counts the run used
    (``--update-threads 0`` resolved: a run's bytes depend on it), package versions."""
    from traveller_rl.ppo.rows import vector_threads

    first = groups[0].venv
    write_json(out / "config.json", {
        "args": dataclasses.asdict(args), "scenario": scenario,
        "threads": {"env": vector_threads(args),
                    "update": update_threads(args.update_threads), "choose": args.threads},
        "possible_agents": first.possible_agents, "sides": first.sides,
        "obs_dim": obs_dim, "n_actions": first.n_actions, "action_labels": first.action_labels,
        "groups": [{"label": g.label, "rows": g.stop - g.start, "kind": g.kind,
                    "backend": g.backend, "learners": g.venv.learners,
                    "opponents": g.venv.opponents} for g in groups],
        "versions": {**versions(), "backend": args.backend}})


def make_network(args: Args, venv: Any, obs_dim: int) -> tuple[Any, dict[str, str]]:
    """The network to train: ``--init``'s (in train mode), or a fresh one shaped by
    ``--arch``, ``--hidden``, ``--embed``, ``--critic`` and ``--attention``; and the imitation
    start it descends from (kept on record in every checkpoint it writes)."""
    from traveller_agents.checkpoint import imitation_of, network_from_checkpoint, read_checkpoint
    from traveller_agents.nets import ActorCritic

    if args.init:
        init_data = read_checkpoint(args.init)
        inherited = imitation_of(init_data)
        net = network_from_checkpoint(init_data)
        net.train()
        return net, inherited
    return ActorCritic(obs_dim, venv.n_actions, hidden_sizes(args.hidden), arch=args.arch,
                       observation_labels=venv.observation_labels,
                       action_labels=venv.action_labels, embed=args.embed,
                       critic=args.critic, attention=args.attention), {}


def save_checkpoint(path: Path, net: Any, args: Args, scenario: str, action_labels: list[str],
                    inherited: dict[str, str], update: int, decisions: int) -> None:
    """Write ``net``'s checkpoint (``traveller_agents.ppo_policy``'s format) to ``path`` atomically."""
    from traveller_agents.checkpoint import checkpoint_bytes

    if any(p.device.type != "cpu" for p in net.parameters()):
        net = net.twin().cpu()  # checkpoints hold CPU tensors: they load on any machine
    layout = {}
    if getattr(args, "layout", "") or is_set_source(scenario_list(args)[0]):
        from traveller_env.layout import LAYOUTS, resolve_layout
        from traveller_env.vector import DEFAULT_SET_LAYOUT

        layout = {"layout": resolve_layout(args.layout or LAYOUTS[DEFAULT_SET_LAYOUT]).to_dict()}
    atomic_write_bytes(path, checkpoint_bytes(net, scenario, action_labels,
                                              decisions=int(decisions), update=int(update),
                                              seed=int(args.seed), **inherited, **layout,
                                              **{v: True for v, on
                                                 in learner_views(args).items() if on}))


def final_evaluation(checkpoint: Path, args: Args) -> list[dict]:
    """The checkpoint loaded back as an NPC policy and played through the AEC env against each
    ``--eval-vs`` policy (``traveller_rl.evaluation.evaluate_matchup``: sides alternate)."""
    from traveller_agents.registry import make_policy
    from traveller_agents.trained import load_policy
    from traveller_rl.evaluation import evaluate_matchup, format_matchups

    rows = []
    for scenario in scenario_list(args):
        if is_set_source(scenario):
            print(f"final evaluation: {scenario} is a distribution; score the checkpoint on "
                  f"held-out draws with `traveller benchmark {checkpoint}`")
            continue
        learned = load_policy(checkpoint, scenario)
        rows += [evaluate_matchup(learned, make_policy(name, scenario=scenario),
                                  scenario, battles=args.final_eval_battles)
                 for name in names_list(args.eval_vs)]
    print(format_matchups(rows))
    return rows


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The trainer's arguments, one ``--flag`` per field of ``Args`` (added to ``parser`` when
    given, e.g. the ``traveller train ppo`` subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(prog="traveller train ppo",
                                         description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.usage = "%(prog)s [--scenario NAME] [--opponents SEAT=POLICY | --pool] [options]"
    parser.epilog = (examples_epilog(EXAMPLES) or "") + (
        "\n\nEach flag's full description: python -m pydoc traveller_rl.ppo.args.Args")
    add_dataclass_args(parser, Args, groups=HELP_GROUPS, short=True)
    return parser


def run(parsed: argparse.Namespace) -> int:
    """Train with the parsed arguments (a ``UsageError`` naming the flag on a bad argument,
    before any battle)."""
    args = Args(**vars(parsed))
    try:
        prepared = prepare(args)
    except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as exc:
        raise UsageError(str(exc)) from None
    train(args, prepared)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``Args`` from the command line and train (status 2 on a bad argument, its
    message on stderr)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
