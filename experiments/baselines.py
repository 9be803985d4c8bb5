"""The baselines table (docs/baselines.md): what standard learners reach on the benchmark, at a
stated budget, over training seeds, each row reproducible by one command.

Two tasks:

* ``duel-rush`` (the sanity task): learn the built-in ``duel`` against ``rush``; scored by
  ``traveller benchmark POLICY --suite duel-rush`` (400 battles, half from each side).
* ``gen-squad`` (the headline): learn to beat the ladder on ``gen:squad`` (4 against 4 on
  drawn ground, training seeds 0-999); scored on suite ``v2``'s held-out ``gen-squad`` set
  (``--sets gen-squad``: 5 opponents x 400 battles, the IQM of the cells with a stratified
  bootstrap interval).

A row trains with one seed, then scores the policy it wrote through ``traveller benchmark``
(the product's path, a subprocess: its command is kept in the row's record). Each (row, seed)
writes ``results/baselines/<task>/<row>/seed<S>.json`` and is skipped when that exists: rerun
the same command to finish what is missing. A ``train ppo`` row interrupted mid-training
continues from its resume checkpoint (``--resume``: the exact resume). Training outputs go to
``runs/baselines/``. Scripted rows train nothing and are scored once (seed 0).

    python -m experiments.baselines list
    python -m experiments.baselines run duel-rush ppo-mlp --seeds 0,1,2
    python -m experiments.baselines run duel-rush --all --seeds 0,1,2
    python -m experiments.baselines table --out results/baselines/table.md
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Before any row loads torch: its OpenMP threads wait passively (traveller_rl.openmp). With
# torch's default spinning wait, BenchMARL's MAPPO ran 9.6x slower beside one other busy process.
from traveller_rl import openmp  # noqa: F401  isort: skip

RESULTS = Path("results/baselines")
RUNS = Path("runs/baselines")


@dataclass(frozen=True)
class Task:
    """What a row learns and how it is scored."""

    scenario: str
    suite: str
    sets: str = ""  # --sets of the benchmark ('' for the whole suite)
    opponents: str = ""  # training opponents of our `train ppo` rows ('' for the ladder pool)
    #: the scripted side that the rows learning against one side (the other libraries) meet
    against: str = ""


TASKS = {
    "duel-rush": Task("duel", "duel-rush", opponents="red=rush", against="red=rush"),
    "gen-squad": Task("gen:squad", "v2", sets="gen-squad", against="red=tactician"),
}

#: How the gen-squad learners meet the ladder in training: a pool of their own past selves
#: with half the battles against the ladder's scripted rungs; both views (as the league).
SQUAD_PPO = ["--pool", "--pool-scripted", "rush,marksman,cover,tactician",
             "--pool-scripted-share", "0.5", "--move-view", "--attack-view",
             "--num-envs", "256", "--num-steps", "64"]


@dataclass(frozen=True)
class Row:
    """One baseline: how it trains (``argv`` of ``traveller``, or an in-process ``train``),
    the policy it leaves, its budget in learner decisions and what it needs installed."""

    name: str
    what: str
    budgets: dict[str, int] = field(default_factory=dict)  # task -> learner decisions
    argv: Callable[[Task, int, int, Path], list[str]] | None = None
    train: Callable[[Task, int, int, Path], None] | None = None
    policy: Callable[[Path], str] = lambda run: str(run / "ppo.pt")
    needs: tuple[str, ...] = ()
    scripted: str = ""  # a registry name scored as is
    resumable: bool = False
    why_not: dict[str, str] = field(default_factory=dict)  # task -> why the row is not run
    #: task -> why ``--all`` leaves the row out (it still runs when named)
    not_in_all: dict[str, str] = field(default_factory=dict)


def _ppo(extra: Sequence[str], squad: Sequence[str] = ()
         ) -> Callable[[Task, int, int, Path], list[str]]:
    """``traveller train ppo`` with ``extra`` flags (and ``squad`` ones on gen-squad)."""
    def argv(task: Task, budget: int, seed: int, run: Path) -> list[str]:
        side = ["--opponents", task.opponents] if task.opponents else [*SQUAD_PPO, *squad]
        return ["train", "ppo", "--scenario", task.scenario, *side, *extra,
                "--total-timesteps", str(budget), "--seed", str(seed), "--eval-every", "0",
                "--final-eval-battles", "0", "--no-progress", "--out", str(run),
                "--overwrite"]
    return argv


ENTITY = ["--arch", "entity", "--embed", "64", "--hidden", "256,256"]


def _clone(task: Task, budget: int, seed: int, run: Path) -> list[str]:
    """Behaviour cloning of ``tactician``; ``budget``: battles of its self-play recorded."""
    views = ["--move-view", "--attack-view"] if task.scenario.startswith("gen:") else []
    # 64x64 for 10 epochs agreed with tactician on 92% of held-out duel decisions and won no
    # battle: the misses were the shots (it aimed forever); 256x256 for 30 epochs: 99%, 0.84
    return ["train", "clone", "--scenario", task.scenario, "--teacher", "tactician",
            "--battles", str(budget), *views, "--hidden", "256,256", "--epochs", "30",
            "--seed", str(seed), "--out", str(run / "ppo.pt")]


def _rllib(task: Task, budget: int, seed: int, run: Path) -> list[str]:
    return ["train", "rllib", "--scenario", task.scenario, "--opponents", task.against,
            "--env", "core", "--learner-decisions", str(budget), "--seed", str(seed),
            "--eval-battles", "0", "--out", str(run), "--overwrite"]


def _maskable_ppo(task: Task, budget: int, seed: int, run: Path, n_steps: int = 2048,
                  battles: int = 8, **settings: Any) -> None:
    """sb3-contrib's MaskablePPO (MlpPolicy 64x64, SB3's defaults but for ``settings``,
    ``n_steps`` a battle per update) on ``CoreVecEnv`` (``battles`` rows, the opponents in the
    core, slot-relative actions), exported to ONNX."""
    import torch
    from sb3_contrib import MaskablePPO

    from traveller_env.integrations.sb3_vector import CoreVecEnv
    from traveller_rl.common import atomic_save_model
    from traveller_rl.onnx_export import export_onnx

    torch.set_num_threads(1)
    side, name = task.against.split("=")
    venv = CoreVecEnv(task.scenario, num_envs=battles, opponents={side: name}, seed=seed,
                      relative_actions=True)
    model = MaskablePPO("MlpPolicy", venv, seed=seed, verbose=0, n_steps=n_steps,
                        policy_kwargs={"net_arch": [64, 64]}, **settings)
    model.learn(budget)
    run.mkdir(parents=True, exist_ok=True)
    layout = venv.venv.layout  # a distribution's fixed layout (gen:squad: 6v6), kept beside
    atomic_save_model(model, run / "maskable_ppo.zip", task.scenario, action_targets="relative",
                      **({} if layout is None else {"layout": layout.to_dict()}))
    export_onnx(run / "maskable_ppo.zip", run / "maskable_ppo.onnx")


def _tianshou_dqn(task: Task, budget: int, seed: int, run: Path) -> None:
    """Tianshou's DQN over ``masked_learner_env`` (blue learns, the opponent played inside):
    a tanh MLP 64x64, epsilon from 1 to 0.05 over the first half, 3-step returns, a target
    network every 200 updates, one update of 64 per 4 steps on 4 environments (the recipe of
    tests/integrations/test_tianshou.py); exported as the Q-values' argmax."""
    import numpy as np
    import torch
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from traveller_env.integrations.tianshou_scripted import masked_learner_env

    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.set_num_threads(1)
    side, opponent = task.against.split("=")
    learner = "blue" if side != "blue" else "red"
    envs, chunk = 4, 64
    train = DummyVectorEnv([lambda s=s: masked_learner_env(task.scenario, learner=learner,
                                                           opponent=opponent, seed=s)
                            for s in range(seed * envs, seed * envs + envs)])
    probe = masked_learner_env(task.scenario, learner=learner, opponent=opponent)
    net = Net(state_shape=probe.observation_space["obs"].shape[0],
              action_shape=probe.action_space.n, hidden_sizes=[64, 64],
              activation=torch.nn.Tanh)
    policy = DiscreteQLearningPolicy(model=net, action_space=probe.action_space,
                                     eps_training=1.0, eps_inference=0.0)
    dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.99,
              n_step_return_horizon=3, target_update_freq=200)
    buffer = VectorReplayBuffer(50_000, envs)
    collector = Collector(dqn, train, buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(dqn.policy):
        collector.collect(n_step=512)
        for done in range(0, budget, chunk):
            policy.set_eps_training(1.0 - 0.95 * min(1.0, done / (budget / 2)))
            collector.collect(n_step=chunk)
            with torch_train_mode(dqn):
                for _ in range(chunk // 4):
                    dqn.update(buffer, 64)
    _export(net, run / "policy.onnx", task, f"{learner}_0", "tianshou-dqn")


def _benchmarl(algorithm: str) -> Callable[[Task, int, int, Path], None]:
    """BenchMARL's ``algorithm`` (``mappo``, ``ippo``) on its Traveller task (blue learns
    against the opponent; BenchMARL's MLP config and its algorithm's defaults), ``budget``
    frames; the actor exported as its greedy choice."""
    def train(task: Task, budget: int, seed: int, run: Path) -> None:
        import warnings

        from traveller_env.integrations.benchmarl_task import TravellerTask  # before benchmarl

        from benchmarl.algorithms import IppoConfig, MappoConfig  # isort: skip
        from benchmarl.experiment import Experiment, ExperimentConfig  # isort: skip
        from benchmarl.models import MlpConfig  # isort: skip

        warnings.simplefilter("ignore")
        config = ExperimentConfig.get_from_yaml()
        config.loggers, config.create_json, config.render = [], False, False
        config.checkpoint_at_end, config.evaluation = False, False
        config.max_n_frames, config.max_n_iters = budget, None
        run.mkdir(parents=True, exist_ok=True)
        config.save_folder = str(run)
        algo = {"mappo": MappoConfig, "ippo": IppoConfig}[algorithm].get_from_yaml()
        scenario = TravellerTask[task.scenario.upper()]
        _, opponent = task.against.split("=")
        model = MlpConfig.get_from_yaml()
        experiment = Experiment(task=scenario.get_task({"opponent": opponent}),
                                algorithm_config=algo, model_config=model,
                                critic_model_config=model, seed=seed, config=config)
        experiment.run()
        mlp = experiment.policy.module[0].module[0].mlp
        _export(mlp, run / "policy.onnx", task, "blue_0", f"benchmarl-{algorithm}")
    return train


def _export(module: Any, out: Path, task: Task, agent: str, source: str) -> None:
    """A trained tanh MLP (its Linear layers in order, or a BenchMARL ``MultiAgentMLP``'s shared
    ``params.<i>``) as a policy file over ``agent``'s absolute actions."""
    from traveller_rl.onnx_export import export_mlp

    acts = {type(m).__name__ for m in module.modules()} & {"ReLU", "ELU", "GELU", "SiLU"}
    if acts:
        raise ValueError(f"{source}: activations {sorted(acts)}; the export takes tanh MLPs")
    state = module.state_dict()
    names = sorted({k.rsplit(".", 1)[0] for k in state if k.endswith(".weight")},
                   key=lambda k: int(k.rsplit(".", 1)[-1]))
    layers = [(state[f"{n}.weight"].detach().reshape(state[f"{n}.weight"].shape[-2:]).numpy(),
               state[f"{n}.bias"].detach().reshape(-1).numpy()) for n in names]
    export_mlp(layers, out, task.scenario, source, absolute_for=agent)


ONE_SCENARIO_ENV = ("not run: its environment plays one AEC battle of one scenario (a "
                "distribution's draws in a fixed layout are the core vector's: `CoreVecEnv`, "
                "RLlib's core path), `tactician` in Python at about half a second a battle: "
                "3 seeds of 300,000 decisions: 4-5 hours of this machine a row")
ROWS = [
    Row("ppo-mlp", "`traveller train ppo`: masked PPO on the batched core, MLP (duel 64x64, "
        "squad 256x256)", {"duel-rush": 200_000, "gen-squad": 2_000_000},
        argv=_ppo([], ["--hidden", "256,256"]), resumable=True),
    Row("ppo-entity", "`traveller train ppo --arch entity --embed 64 --hidden 256,256`",
        {"duel-rush": 200_000, "gen-squad": 500_000}, argv=_ppo(ENTITY), resumable=True),
    Row("maskable-ppo", "sb3-contrib MaskablePPO (MlpPolicy 64x64) on `CoreVecEnv`",
        {"duel-rush": 100_000, "gen-squad": 300_000}, train=_maskable_ppo,
        policy=lambda run: str(run / "maskable_ppo.onnx"), needs=("sb3_contrib", "onnx")),
    Row("maskable-ppo-256", "MaskablePPO as above with `n_steps=256`: 2,048 decisions an "
        "update (RLlib's batch) where SB3's default makes 16,384", {"gen-squad": 300_000},
        train=lambda task, budget, seed, run: _maskable_ppo(task, budget, seed, run, 256),
        policy=lambda run: str(run / "maskable_ppo.onnx"), needs=("sb3_contrib", "onnx"),
        why_not={"duel-rush": "not run: at SB3's defaults the row above learns duel"}),
    Row("maskable-ppo-rllib", "MaskablePPO with the RLlib row's settings: 64 battles x "
        "`n_steps=32`, `gamma=1.0`, `ent_coef=0.01`, `batch_size=256`", {"gen-squad": 300_000},
        train=lambda task, budget, seed, run: _maskable_ppo(
            task, budget, seed, run, 32, battles=64, gamma=1.0, ent_coef=0.01, batch_size=256),
        policy=lambda run: str(run / "maskable_ppo.onnx"), needs=("sb3_contrib", "onnx"),
        why_not={"duel-rush": "not run: at SB3's defaults the maskable-ppo row learns duel"}),
    Row("rllib-ppo", "Ray RLlib PPO on the core (`traveller train rllib --env core`)",
        {"duel-rush": 100_000, "gen-squad": 300_000}, argv=_rllib,
        policy=lambda run: str(run / "checkpoint"), needs=("ray",)),
    Row("bc-tactician", "behaviour cloning of `tactician` (`traveller train clone`, 256x256, "
        "30 epochs), the imitation reference; budget: battles of its self-play recorded",
        {"duel-rush": 1000, "gen-squad": 2000}, argv=_clone),
    Row("benchmarl-mappo", "BenchMARL MAPPO (its MLP 256x256 config; frames = decisions)",
        {"duel-rush": 100_000}, train=_benchmarl("mappo"),
        policy=lambda run: str(run / "policy.onnx"), needs=("benchmarl", "onnx"),
        why_not={"gen-squad": ONE_SCENARIO_ENV}),
    Row("benchmarl-ippo", "BenchMARL IPPO (as MAPPO)", {"duel-rush": 100_000},
        train=_benchmarl("ippo"), policy=lambda run: str(run / "policy.onnx"),
        needs=("benchmarl", "onnx"), why_not={"gen-squad": ONE_SCENARIO_ENV},
        not_in_all={"duel-rush": "not run: with the one learner seat BenchMARL's tasks train "
                                 "here, MAPPO's centralised critic reads what IPPO's does; "
                                 "run it by name to check"}),
    Row("tianshou-dqn", "Tianshou DQN on `masked_learner_env` (tanh MLP 64x64)",
        {"duel-rush": 100_000}, train=_tianshou_dqn,
        policy=lambda run: str(run / "policy.onnx"), needs=("tianshou", "onnx"),
        why_not={"gen-squad": ONE_SCENARIO_ENV}),
    *(Row(name, f"scripted `{name}` (no training)", scripted=name)
      for name in ("tactician", "cover", "marksman", "rush", "random")),
    Row("wanderer", "league member `wanderer` (self-play on gen:squad, 10.9 M decisions)",
        scripted="results/league/wanderer.onnx", why_not={
            "duel-rush": "plays the 6v6 layout's scenarios: scored on gen-squad only"}),
]
ROW_NAMES = [r.name for r in ROWS]


def row_named(name: str) -> Row:
    """The row called ``name`` (``ValueError`` listing the rows)."""
    for row in ROWS:
        if row.name == name:
            return row
    raise ValueError(f"row {name!r}: one of {', '.join(ROW_NAMES)}")


def missing(row: Row) -> list[str]:
    """The row's dependencies that are not installed."""
    return [m for m in row.needs if importlib.util.find_spec(m) is None]


def traveller(argv: Sequence[str]) -> None:
    """Run ``traveller ARGV`` in a subprocess (``RuntimeError`` with its tail on failure)."""
    done = subprocess.run([sys.executable, "-m", "traveller_cli", *argv],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"traveller {shlex.join(argv)} failed:\n{done.stderr[-2000:]}")


def score(task: Task, policy: str, out: Path) -> dict[str, Any]:
    """``traveller benchmark POLICY`` on the task's suite; the aggregate and cells."""
    argv = ["benchmark", policy, "--suite", task.suite, "--no-progress", "--out", str(out)]
    if task.sets:
        argv += ["--sets", task.sets]
    traveller(argv)
    record = json.loads(out.read_text(encoding="utf-8"))
    (mine,) = record["policies"].values()
    agg = mine["aggregate"]
    return {"score": agg["score"], "ci95": agg["ci95"], "metric": agg["metric"],
            "cells": [{k: c[k] for k in ("set", "opponent", "win_rate", "win_ci95")}
                      for c in mine["cells"]],
            "benchmark_command": "traveller " + shlex.join(argv[:-2])}


def run_row(task_name: str, row: Row, seed: int, results: Path, runs: Path,
            budget: int = 0) -> Path:
    """Train (unless scripted) and score one (row, seed); its record's path. ``budget``
    overrides the row's (a smoke run)."""
    task = TASKS[task_name]
    budget = budget or row.budgets.get(task_name, 0)
    out = results / task_name / row.name / f"seed{seed}.json"
    if out.is_file():
        print(f"{task_name} {row.name} seed {seed}: done before ({out})")
        return out
    run = runs / task_name / row.name / f"seed{seed}"
    started = time.time()
    command = ""
    if row.scripted:
        policy = row.scripted
    else:
        if row.argv is not None:
            argv = row.argv(task, budget, seed, run)
            command = "traveller " + shlex.join(argv)
            if row.resumable and (run / "resume.ckpt").is_file():
                argv = ["train", "ppo", "--resume", str(run)]
            traveller(argv)
        else:
            assert row.train is not None
            command = (f"python -m experiments.baselines run {task_name} {row.name} "
                       f"--seeds {seed}")
            row.train(task, budget, seed, run)
        policy = row.policy(run)
    trained = time.time() - started
    run.mkdir(parents=True, exist_ok=True)
    result = score(task, policy, run / "benchmark.json")
    record = {"task": task_name, "row": row.name, "seed": seed, "what": row.what,
              "budget": budget, "train_seconds": round(trained, 1),
              "train_command": command, **result}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"{task_name} {row.name} seed {seed}: {result['score']:.3f} "
          f"[{result['ci95'][0]:.3f}, {result['ci95'][1]:.3f}] after {trained:.0f} s")
    return out


def over_seeds(scores: Sequence[float]) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval over training seeds (the seed-to-seed spread)."""
    n = len(scores)
    mean = sum(scores) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / (n - 1))
    t = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776}.get(n, 2.0)
    half = t * sd / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def table(results: Path, task_name: str) -> str:
    """The task's rows as Markdown: mean over seeds with its interval, each seed's score
    with its within-run interval, the budget and the training time."""
    lines = ["| row | seeds | mean over seeds [95% t-interval] | each seed [95% CI] | budget "
             "| training (s) |", "|---|---|---|---|---|---|"]
    for row in ROWS:
        if task_name in row.why_not:
            lines.append(f"| {row.name} | - | {row.why_not[task_name]} | | | |")
            continue
        recs = [json.loads(p.read_text(encoding="utf-8"))
                for p in sorted((results / task_name / row.name).glob("seed*.json"))]
        if not recs:
            why = row.not_in_all.get(task_name, "not run yet")
            lines.append(f"| {row.name} | 0 | {why} | | | |")
            continue
        mean, lo, hi = over_seeds([r["score"] for r in recs])
        spread = "" if math.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
        each = "; ".join(f"{r['score']:.3f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
                         for r in recs)
        budget = f"{recs[0]['budget']:,}" if recs[0]["budget"] else "-"
        train = ("-" if row.scripted else
                 f"{sum(r['train_seconds'] for r in recs) / len(recs):.0f}")
        lines.append(f"| {row.name} | {len(recs)} | **{mean:.3f}**{spread} | {each} | "
                     f"{budget} | {train} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The script's commands."""
    p = argparse.ArgumentParser(prog="python -m experiments.baselines", allow_abbrev=False,
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the tasks and rows")
    run = sub.add_parser("run", help="train and score rows (skips those already recorded)")
    run.add_argument("task", choices=sorted(TASKS))
    run.add_argument("rows", nargs="*", help=f"rows to run ({', '.join(ROW_NAMES)})")
    run.add_argument("--all", action="store_true", help="every row the task runs")
    run.add_argument("--seeds", default="0,1,2", help="training seeds (default: 0,1,2)")
    run.add_argument("--results", type=Path, default=RESULTS, help="where records go")
    run.add_argument("--runs", type=Path, default=RUNS, help="where training outputs go")
    run.add_argument("--budget", type=int, default=0,
                     help="override every row's budget (a smoke run: not for the table)")
    tab = sub.add_parser("table", help="print (and write) the tables")
    tab.add_argument("--results", type=Path, default=RESULTS)
    tab.add_argument("--out", type=Path, help="also write the Markdown here")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (status 2 and a message for a bad row or seed)."""
    args = build_parser().parse_args(argv)
    if args.command == "list":
        for name, task in TASKS.items():
            print(f"{name}: {task.scenario}, scored on --suite {task.suite}"
                  + (f" --sets {task.sets}" if task.sets else ""))
        for row in ROWS:
            print(f"  {row.name:16s} {row.what}")
        return 0
    if args.command == "table":
        text = "\n\n".join(f"### {name}\n\n{table(args.results, name)}" for name in TASKS)
        print(text)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text + "\n", encoding="utf-8")
        return 0
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
        rows = ROWS if args.all else [row_named(n) for n in args.rows]
    except ValueError as exc:
        print(f"baselines: error: --seeds/rows: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("baselines: error: name rows or pass --all", file=sys.stderr)
        return 2
    for row in rows:
        reason = row.why_not.get(args.task) or (args.all and row.not_in_all.get(args.task))
        if reason:
            print(f"{args.task} {row.name}: {reason}")
            continue
        if missing(row):
            print(f"{args.task} {row.name}: needs {', '.join(missing(row))} "
                  "(pip install -e '.[all]')")
            continue
        for seed in [0] if row.scripted else seeds:
            run_row(args.task, row, seed, args.results, args.runs, args.budget)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
