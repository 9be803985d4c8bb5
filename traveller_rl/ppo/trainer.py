"""Masked PPO on batched battles (``traveller_env.vector``): one shared policy for every seat it
plays, GAE per seat, scripted opponents, self-play or a pool of its own past checkpoints.

    traveller train ppo --scenario duel --opponents red=rush --total-timesteps 300000 \\
        --seed 1 --out DIR
    python -m traveller_rl.ppo.trainer --scenario squad --pool --pool-scripted rush,marksman

**The loop** (CleanRL's PPO, adapted to many seats). Every call steps ``--num-envs`` battles
(rows) of ``vector.make(..., relative_actions=True)``: targets are named by observation slot,
so the same network plays any seat. Each step, the rows' observations and masks go through the
network in one batch; the action is drawn from the masked softmax (an illegal action has
probability exactly 0: ``traveller_rl.ppo.rollout.sample_masked``). After ``--num-steps``
steps, GAE is computed per seat and the policy is updated for ``--epochs`` epochs of
``--minibatches`` minibatches (clipped surrogate, clipped value loss, entropy bonus,
gradient-norm clipping, learning rate annealed to 0 over ``--total-timesteps``). With
``--overlap`` the rows are two halves that take turns, one half's battles stepped in a
background thread while the network chooses the other half's actions
(``traveller_rl.ppo.overlap``). ``train`` reads in that order: the setup, then the loop
(anneal, rollout, advantages, update, log, pool, evaluation, checkpoint); the run's state is a
``traveller_rl.ppo.run_state.RunState``, which saves and restores itself, and a rollout's steps
are ``traveller_rl.ppo.collect.Collector``'s.

**GAE per seat** (``traveller_rl.ppo.rollout.SeatRollout``). A decision is a transition of the
seat that made it; its reward is everything the vector credits to that seat (``rewards[row,
seat]``, at every step, whoever acted) until the same seat's next decision in that battle, or
the battle's end; its successor is that next decision. Each row keeps one pending transition
per seat. A transition whose successor has not come by the end of a rollout bootstraps its
predecessor and is carried into the next rollout. ``--total-timesteps`` counts learner
decisions (the seats being trained; frozen and scripted seats are not counted). A battle cut at
``max_rounds`` (``truncated``) ends like a decided one: the draw is part of the game.

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

**Several processes.** Under ``torchrun --nproc-per-node N -m traveller_cli train ppo ...``
each process steps battles of its own and the gradients are averaged over them before every
optimizer step; ``--total-timesteps`` counts every process's decisions and only rank 0 writes
(``traveller_rl.ppo.distributed``).

**Evaluation.** Every ``--eval-every`` updates (and before the first), the greedy policy (the
checkpoint's default NPC behaviour) plays ``--eval-battles`` battles against each
``--eval-vs`` policy, half from each side, on fixed held-out battle seeds (the same battles
every time), through vectors with the opponent inside; win rates with Wilson 95% intervals go
to TensorBoard, ``progress.jsonl`` and the learning curve. At the end, the saved checkpoint is
loaded back as an NPC policy (``traveller_agents.trained.load_policy``) and played through the
AEC env (``traveller_rl.evaluation.evaluate_matchup``, seeds from 20,000, sides alternating)
against each ``--eval-vs`` policy for ``--final-eval-battles`` battles.

**Outputs** (``--out DIR``, default ``runs/ppo__<scenario>__<seed>__<unix time>``):
``ppo.pt`` (the checkpoint, ``traveller_agents.ppo_policy``'s format, written atomically every
evaluation and at the end: ``traveller eval DIR/ppo.pt``, ``--policies DIR/ppo.pt`` in the
tournament), ``config.json`` (every argument by flag name, the resolved layout, package
versions), ``tb/``
(TensorBoard), ``progress.jsonl`` (one line per evaluation), ``training.jsonl`` (one line
per update: decisions, seconds, the training battles' win rate, per group when there are
several), ``learning_curve.png`` (evaluations with intervals, training win rates dotted) and
``evaluation.json``; ``resume.ckpt`` (every ``--checkpoint-every``, a minute by default), which
``--resume DIR`` continues from (either backend; a run stopped before its first starts again
from its ``config.json``; see docs/training.md). The same seed
and flags on one thread (``--threads 1``) give the same ``ppo.pt``, byte for byte, on either
backend (the backends play the same battles), resumed or not, for any ``--env-threads`` and
the same ``--update-threads`` count (the update's torch threads, by default one per core).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.scenario_set import is_set_source
from traveller_rl.commandline import UsageError, examples_epilog, process_status, run_standalone
from traveller_rl.common import hidden_sizes, versions, write_json
from traveller_rl.openmp import contention_note
from traveller_rl.ppo.args import EXAMPLES, Args, add_flags, names_list
from traveller_rl.ppo.checkpoints import check_checkpoints
from traveller_rl.ppo.distributed import Cluster, agreed, check_world, from_environment, quiet
from traveller_rl.ppo.overlap import halved_vector
from traveller_rl.ppo.pool import FrozenPool
from traveller_rl.ppo.progress import (
    BattleStats,
    NullWriter,
    ProgressBar,
    Timers,
    limits_note,
    log_update,
    metrics_writer,
)
from traveller_rl.ppo.resume import (
    REQUIRED,
    RESUME_FILE,
    CheckpointSchedule,
    check_resumable_config,
    read_checkpoint,
)
from traveller_rl.ppo.rows import (
    Group,
    RowBatch,
    build_groups,
    learner_obs_dim,
    make_eval_vectors,
    scenario_list,
)
from traveller_rl.ppo.run_state import RESUMED_LOGS, PolicySaver, RunState
from traveller_rl.ppo.shaping import RewardShaping
from traveller_rl.ppo.update import (
    UpdateSettings,
    ppo_update,
    resolve_device,
    torch_threads,
    update_threads,
)

__all__ = ["OUTPUTS", "build_parser", "final_evaluation", "main", "make_network", "prepare",
           "run", "run_folder", "train", "write_config"]

#: The files a run writes in its folder (besides the folders tb/ and pool/).
OUTPUTS = ("config.json", "ppo.pt", "progress.jsonl", "training.jsonl", "evaluation.json",
           "learning_curve.png", "resume.ckpt")


def prepare(args: Args, cluster: Cluster | None = None
            ) -> tuple[list[Group], dict[str, list[tuple[Any, int]]]]:
    """Check the arguments and build the training and evaluation vectors (``ValueError``
    naming the flag on bad input); with ``cluster`` (several processes,
    ``traveller_rl.ppo.distributed``), this rank's training vectors, and the evaluation's on
    rank 0 only."""
    cluster = cluster or Cluster()
    args.check()
    resolve_device(args.budget.device)  # ValueError naming --device before any battle
    update_threads(args.budget.update_threads)  # and --update-threads
    if args.output.resume and not (Path(args.output.resume) / RESUME_FILE).exists():
        start_over(args)  # killed before its first resume checkpoint: from its config.json
    if args.output.resume and cluster.writer:  # the checkpoint is there and the flags match it
        saved = read_checkpoint(Path(args.output.resume), REQUIRED)
        check_world(saved, cluster.world)
        check_resume(args, saved)
    groups = build_groups(cluster.battle_args(args), halved_vector if args.budget.overlap else None)
    if args.budget.overlap:
        from traveller_rl.ppo.overlap import check_halves

        check_halves(groups)
    check_checkpoints(args, groups[0].venv)
    eval_vectors = (make_eval_vectors(args, groups[0].venv.sides)
                    if args.eval.battles and cluster.writer else {})
    return groups, eval_vectors


# ============================================================================ training
def train(args: Args, prepared: tuple[list[Group], dict] | None = None,
          cluster: Cluster | None = None) -> Path:
    """Train, checkpoint, evaluate; return the run folder. With ``cluster``, as one rank of a
    data-parallel run (``traveller_rl.ppo.distributed``: only rank 0 writes)."""
    import torch

    from traveller_env.rules.rng import derive_seed
    from traveller_rl.ppo import rollout as rollouts
    from traveller_rl.ppo.collect import Collector

    # ---- setup: the vectors, the run folder, the seeds, the network, the rows, the pool
    cluster = cluster or Cluster()  # a process alone: every agreement is the identity
    groups, eval_vectors = prepared or prepare(args, cluster)
    first, budget = groups[0].venv, args.budget
    scenario = run_scenario(args, groups)
    resumed = None
    if args.output.resume:  # the run's own folder; its arguments checked against the checkpoint's
        resumed = cluster.resumed(Path(args.output.resume))  # this rank's part
        check_resume(args, resumed)
        args.output.out = args.output.resume
    out = cluster.writers_result(lambda: run_folder(args))  # rank 0 makes it
    obs_dim = learner_obs_dim(args, first)  # the vector's observation, or its prefix
    if resumed is None and cluster.writer:
        write_config(out, args, scenario, groups, obs_dim)
    torch.set_num_threads(budget.threads)  # seeding: torch's initialisation, the sampler, NumPy
    learner_threads = update_threads(budget.update_threads)  # widened for the update only
    if cluster.writer and contention_note(learner_threads):  # OpenMP threads that spin
        print(contention_note(learner_threads))
    torch.manual_seed(budget.seed)
    device = resolve_device(budget.device)  # the learner's: the rollout, inference, update
    seed = cluster.seed(budget.seed)  # this rank's sampling and minibatches (rank 0: the seed)
    gen = torch.Generator(device=device).manual_seed(derive_seed(seed, 1) & (2**63 - 1))
    # the frozen pool plays on the CPU: it shares the sampler's generator there
    pool_gen = gen if device.type == "cpu" else \
        torch.Generator().manual_seed(derive_seed(seed, 3) & (2**63 - 1))
    rng = np.random.default_rng(derive_seed(seed, 2))
    net, inherited = make_network(args, first, obs_dim)
    net.to(device)
    if budget.compile:
        if not hasattr(net, "compile_modules"):
            raise ValueError(f"--compile: the --init network ({type(net).__name__}) is not "
                             "one actor and critic; train it without --compile")
        net.compile_modules()
    cluster.share_weights(net)  # rank 0's start on every rank
    optimizer = torch.optim.Adam(net.parameters(), lr=args.ppo.learning_rate, eps=1e-5)
    writer = metrics_writer(out / "tb") if cluster.writer else NullWriter()
    writer.add_text("config", "```\n" + json.dumps(args.flags(), indent=1) + "\n```")
    save_policy = PolicySaver(net, args, scenario, first.action_labels, inherited)
    if not cluster.writer:
        save_policy = cluster.no_save  # type: ignore[assignment]
    batch, pipeline = make_rows(args, groups, obs_dim)
    pool = make_pool(args, groups, batch, obs_dim, rng, pool_gen, net, out, save_policy, resumed)
    if resumed is None and cluster.writer:
        for name in RESUMED_LOGS:
            (out / name).unlink(missing_ok=True)
    timers = Timers()
    t = time.perf_counter()
    batch.reset()
    timers.env += time.perf_counter() - t
    n = budget.num_envs
    # the rollout's tensors live on the learner's device (docs/performance.md)
    rollout = rollouts.SeatRollout(n, first.num_agents, obs_dim, first.n_actions,
                                   budget.num_steps, device)
    stats = BattleStats(n, len(groups), first.agent_sides, len(first.sides))
    run = cluster.run_state_type()(args, out, net, optimizer, rng,
                                   [gen] if pool_gen is gen else [gen, pool_gen], groups, batch,
                                   rollout, stats, pool, timers, save_policy)
    collector = Collector(n, net, batch, pool, rollout,
                          rollouts.StepUpload(n, obs_dim, first.n_actions, device),
                          RewardShaping.of(args, first), stats, gen, args.ppo.gamma,
                          first.agent_sides, pipeline)
    settings = UpdateSettings.of(args)
    if resumed is None:
        run.evaluate(eval_vectors, writer, None)
    else:
        run.restore(resumed)
    schedule = CheckpointSchedule.parse(args.output.checkpoint_every, time.perf_counter(),
                                        run.update)
    bar = ProgressBar(args.output.progress and cluster.writer, budget.total_timesteps,
                      budget.max_train_seconds,
                      run.decisions)
    if run.history[-1]["eval"]:
        bar.log("before training: " + ", ".join(f"vs {k} {v['win_rate']:.3f}"
                                                for k, v in run.history[-1]["eval"].items()))
    title = f"PPO {scenario} ({curve_label(groups, pool)}, seed {budget.seed})"

    # ---- the loop (CleanRL's): anneal, rollout, advantages, update, log, pool, eval, checkpoint
    out_of_time = False  # --max-train-seconds reached
    told_limits = False  # the line saying which limit binds, after the first update
    while not run.finished() and not out_of_time:
        if args.ppo.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.ppo.learning_rate * max(
                0.0, 1.0 - run.decisions / budget.total_timesteps)

        # rollout: the learner's seats sample from the policy, the pool's play frozen
        made = cluster.total(collector.collect(budget.num_steps, timers))  # every rank's
        run.decisions += made

        # GAE per seat, then the PPO update
        t = time.perf_counter()
        idx, adv, ret = rollout.advantages(args.ppo.gamma, args.ppo.gae_lambda)
        with torch_threads(learner_threads):
            losses = ppo_update(net, optimizer, rollout, idx, adv, ret, rng, settings,
                                cluster if cluster.joined else None)
        carried = rollout.carry()
        run.update += 1
        timers.update += time.perf_counter() - t

        # logging
        elapsed = timers.training()
        out_of_time = cluster.writers(  # rank 0's clock
            bool(budget.max_train_seconds and elapsed >= budget.max_train_seconds))
        cluster.merge_stats(stats)
        point = log_update(writer, run.update, run.decisions, elapsed,
                           optimizer.param_groups[0]["lr"], timers, carried, stats, losses,
                           [g.label for g in groups])
        run.record_update(point)
        train_win = point["train_win_rate"]
        bar.advance(run.update, run.decisions, made, elapsed, train_win)
        if not told_limits:  # which of the two limits ends the run, now the rate is known
            told_limits = True
            note = limits_note(budget.total_timesteps, budget.max_train_seconds,
                               run.decisions, elapsed)
            if note and cluster.writer:
                bar.log(note)
        stats.clear()

        # the pool's next frozen copy
        if pool is not None and run.update % args.pool.every == 0:
            save_policy(out / pool.freeze(net, run.update), run.update, run.decisions)
            pool.watch()

        # evaluation (and the policy's checkpoint, the learning curve)
        last = run.finished() or out_of_time
        if (args.eval.every and run.update % args.eval.every == 0) or last:
            record = run.evaluate(eval_vectors, writer, train_win)
            t = time.perf_counter()
            save_policy(out / "ppo.pt", run.update, run.decisions)
            if record["eval"]:
                bar.log(f"update {run.update:>4}  {run.decisions:>9,} decisions  "
                        f"{record['seconds']:>7.1f} s  " + "  ".join(
                            f"vs {k} {v['win_rate']:.3f}" for k, v in record["eval"].items()))
            for warning in record.get("warnings", ()):  # a degenerate policy (progress.jsonl)
                bar.log(f"warning: {warning}")
            if cluster.writer:
                rollouts.plot_curve(run.history, out / "learning_curve.png", title,
                                    run.training_curve)
            timers.eval += time.perf_counter() - t  # checkpoint and curve: not training

        # the resume checkpoint
        if not last and cluster.writers(schedule.due(run.update, time.perf_counter())):
            t = time.perf_counter()
            run.checkpoint()
            schedule.written(run.update, time.perf_counter())
            timers.eval += time.perf_counter() - t  # the resume checkpoint: not training
    bar.close()
    if pipeline is not None:
        pipeline.close()
    writer.close()
    cluster.check_same_weights(net)
    cluster.close()  # the ranks are done with each other
    if not cluster.writer:
        return out
    results = run_results(run, scenario)
    if args.eval.final_battles and names_list(args.eval.vs):
        results["final_evaluation"] = final_evaluation(out / "ppo.pt", args)
    write_json(out / "evaluation.json", results)
    return out


# ============================================================================ a run's pieces
def run_scenario(args: Args, groups: list[Group]) -> str:
    """The run's scenario as checkpoints record it: its scenarios' names, comma-separated (a
    distribution's source as given)."""
    return ",".join(dict.fromkeys(
        args.battles.scenario if getattr(g.venv, "scenario_set", None) is not None
        else g.venv.scenario.name
        for g in groups))


def make_rows(args: Args, groups: list[Group], obs_dim: int) -> tuple[Any, Any]:
    """The rows the trainer steps (``RowBatch``) and, with ``--overlap``, the ``Pipeline``
    that steps their two halves in turns beside the inference (else ``None``)."""
    if not args.budget.overlap:
        return RowBatch(groups, obs_dim), None
    from traveller_rl.ppo.overlap import HalvedBatch, Pipeline

    batch = HalvedBatch(groups, obs_dim)
    return batch, Pipeline(batch)


def make_pool(args: Args, groups: list[Group], batch: Any, obs_dim: int,
              rng: np.random.Generator, gen: Any, net: Any, out: Path,
              save_policy: PolicySaver, resumed: dict[str, Any] | None) -> FrozenPool | None:
    """The pool of frozen past selves of the pool's rows (``None`` without ``--pool``): a new
    run's with its first member frozen before any update and its rows' first battles drawn;
    a resumed run's members, statistics and draws as its checkpoint left them."""
    pool_rows = next((g for g in groups if g.kind == "pool"), None)
    if pool_rows is None:
        return None
    rows = range(pool_rows.start, pool_rows.stop)
    pool = FrozenPool.from_args(args, groups[0].venv, rows, obs_dim, rng, gen)
    if resumed is not None:
        pool.load_state(resumed["pool"], net, out)
        return pool
    save_policy(out / pool.freeze(net, 0), 0, 0)
    pool.watch()
    pool.start_battles(np.arange(rows.start, rows.stop), batch.side)
    return pool


def curve_label(groups: list[Group], pool: FrozenPool | None) -> str:
    """What the learning curve's training win rates are of."""
    return (groups[0].label if len(groups) == 1
            else "pool" if pool is not None else "all scenarios")


def run_results(run: RunState, scenario: str) -> dict[str, Any]:
    """``evaluation.json``'s figures of a finished run (its final evaluation aside), printed
    in one line."""
    timers, backend = run.timers, run.args.budget.backend
    seconds = timers.training()
    results: dict[str, Any] = {
        "scenario": scenario, "decisions": run.decisions, "updates": run.update,
        "train_seconds": seconds, "decisions_per_second": run.decisions / seconds,
        "time_shares": {"env": timers.env / seconds, "inference": timers.inference / seconds,
                        "update": timers.update / seconds},
        "eval_seconds": timers.eval, "backend": backend,
        "battles_skipped": sum(g.venv.battles_skipped for g in run.groups),
        "eval_before": run.history[0]["eval"], "eval_after": run.history[-1]["eval"]}
    if run.pool is not None:
        results["pool"] = run.pool.summary()
    shares = results["time_shares"]
    print(f"\ntrained {run.decisions:,} decisions in {seconds:.0f} s "
          f"({results['decisions_per_second']:,.0f} decisions/s, {backend} backend; "
          f"environment {shares['env']:.0%}, inference {shares['inference']:.0%}, updates "
          f"{shares['update']:.0%}); checkpoint: {run.out / 'ppo.pt'}")
    return results


def check_resume(args: Args, checkpoint: dict[str, Any]) -> None:
    """``ValueError`` naming each flag of ``args`` that differs from the checkpoint's run
    (budgets and verbosity may change; the folder is the run's own, whatever ``--out`` first
    named it)."""
    # a checkpoint from before --overlap and --compile existed ran without them, and before
    # --update-threads it updated on --threads
    saved = checkpoint["args"]
    check_resumable_config({"overlap": False, "compile": False,
                            "update_threads": saved.get("threads", 1),
                            **saved, "out": ""},
                           {**args.flags(), "out": ""})


def start_over(args: Args) -> None:
    """``--resume DIR`` of a run killed before its first resume checkpoint: the run again from
    its start, in ``DIR``, replacing its outputs; the flags given must be those its
    ``config.json`` recorded, as on a resume (``ValueError`` naming each that differs, or
    saying that ``DIR`` holds neither a resume checkpoint nor a run's configuration)."""
    folder = Path(args.output.resume)
    config = folder / "config.json"
    try:
        saved = json.loads(config.read_text())["args"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"--resume {folder}: no resume checkpoint ({RESUME_FILE}) in it, and "
                         "no run configuration (config.json) to start it again from") from None
    if not isinstance(saved, dict):
        raise ValueError(f"--resume {folder}: config.json holds no run arguments")
    check_resumable_config({**saved, "out": ""}, {**args.flags(), "out": ""})
    print(f"resume: {folder} has no resume checkpoint yet (stopped before its first): "
          "training it again from its start, with the configuration in its config.json")
    args.output.out, args.output.resume, args.output.overwrite = str(folder), "", True


def run_folder(args: Args) -> Path:
    """The run folder (``--out``, or ``runs/ppo__<scenario>__<seed>__<unix time>``), created;
    with ``--overwrite``, the outputs of the run already there removed (anything else in the
    folder stays)."""
    out = Path(args.output.out) if args.output.out else (
        Path("runs") / f"ppo__{'+'.join(Path(s).stem for s in scenario_list(args))}__"
                       f"{args.budget.seed}__{int(time.time())}")
    if args.output.overwrite:
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

    first, budget = groups[0].venv, args.budget
    write_json(out / "config.json", {
        "args": args.flags(), "scenario": scenario,  # by flag name, as Args(**flags) takes them
        "threads": {"env": vector_threads(args), "update": update_threads(budget.update_threads),
                    "choose": budget.threads},
        "possible_agents": first.possible_agents, "sides": first.sides,
        "obs_dim": obs_dim, "n_actions": first.n_actions, "action_labels": first.action_labels,
        "groups": [{"label": g.label, "rows": g.stop - g.start, "kind": g.kind,
                    "backend": g.backend, "learners": g.venv.learners,
                    "opponents": g.venv.opponents} for g in groups],
        "versions": {**versions(), "backend": budget.backend}})


def make_network(args: Args, venv: Any, obs_dim: int) -> tuple[Any, dict[str, str]]:
    """The network to train: ``--init``'s (in train mode), or a fresh one shaped by
    ``--arch``, ``--hidden``, ``--embed``, ``--critic`` and ``--attention``; and the imitation
    start it descends from (kept on record in every checkpoint it writes)."""
    from traveller_agents.checkpoint import imitation_of, network_from_checkpoint, read_checkpoint
    from traveller_agents.nets import ActorCritic

    if args.net.init:
        init_data = read_checkpoint(args.net.init)
        inherited = imitation_of(init_data)
        net = network_from_checkpoint(init_data)
        net.train()
        return net, inherited
    shape = args.net
    return ActorCritic(obs_dim, venv.n_actions, hidden_sizes(shape.net_arch), arch=shape.arch,
                       observation_labels=venv.observation_labels,
                       action_labels=venv.action_labels, embed=shape.embed,
                       critic=shape.critic, attention=shape.attention), {}


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
                                  scenario, battles=args.eval.final_battles)
                 for name in names_list(args.eval.vs)]
    print(format_matchups(rows))
    return rows


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The trainer's arguments, one ``--flag`` per field of ``Args``'s groups, one argument
    group each (added to ``parser`` when given, e.g. the ``traveller train ppo``
    subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(allow_abbrev=False, prog="traveller train ppo",
                                         description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.usage = "%(prog)s [--scenario NAME] [--opponents SEAT=POLICY | --pool] [options]"
    parser.epilog = (examples_epilog(EXAMPLES) or "") + (
        "\n\nEach flag's full description: python -m pydoc traveller_rl.ppo.args")
    add_flags(parser)
    return parser


def run(parsed: argparse.Namespace) -> int:
    """Train with the parsed arguments (a ``UsageError`` naming the flag on a bad argument,
    before any battle)."""
    args = Args(**vars(parsed))
    cluster, finished = None, False
    try:
        try:
            # under torchrun, one rank of a data-parallel run (traveller_rl.ppo.distributed)
            cluster = from_environment(args.budget.device)
            with quiet(cluster):
                prepared = agreed(cluster, lambda: prepare(args, cluster))
        except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as exc:
            raise UsageError(str(exc)) from None
        with quiet(cluster):
            train(args, prepared, cluster)
        finished = True
    finally:
        if cluster is not None:
            cluster.close(finished)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``Args`` from the command line and train (status 2 on a bad argument, its
    message on stderr)."""
    return process_status(lambda: run_standalone(build_parser(), run, argv))


if __name__ == "__main__":
    raise SystemExit(main())
