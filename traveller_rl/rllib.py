"""Train PPO on Ray RLlib (new API stack) in a built-in scenario, on one machine or a cluster.

Two environments (``--env``):

* ``core`` (the default when the compiled core is built and the run fits it): single-agent
  RLlib over one side's seats, each env runner stepping 64 battles per call in the compiled
  core with the opponents played there (``traveller_env.integrations.rllib.core``); one
  learned module, ``default_policy``; ``--opponents`` must play every other side with
  policies that run in the core (default: the scenario's default opponent,
  ``gymnasium_vector.default_opponent``);
* ``aec``: the turn-based multi-agent env ``traveller_env.integrations.rllib.
  TravellerMultiAgentEnv``, one battle per environment stepped in Python, for self-play,
  several learning sides and any NPC.

Actions are slot-relative on both (one policy can play any seat) and the learned modules are
``MaskedPPOTorchRLModule``s. On the AEC env:

* ``--policy-mapping shared`` (default): one module, ``shared``, plays every seat that is not
  an NPC (self-play when there is no NPC);
* ``--policy-mapping per-side``: one module per side, named after the side.

``--opponents red=rush`` (a seat, agent id or side, ``=`` any policy name of
``traveller_agents.registry``) has the environment play that seat with the scripted NPC, through a
``ScriptedRLModule`` that is listed among the modules but not in ``policies_to_train``.

    python traveller_rl/rllib.py --scenario duel --num-env-runners 2 \\
        --total-timesteps 200000 --opponents red=random
    traveller train rllib --scenario duel --num-env-runners 2 --total-timesteps 8000 --out DIR

Without ``--address`` Ray starts locally (no dashboard, no usage statistics); with
``--address HOST:6379`` (or ``auto``) the run joins an existing cluster started with
``ray start --head`` / ``ray start --address=...`` (every node needs this project and the
same ``ray[rllib]`` installed; with Ray's default token authentication, set
``RAY_AUTH_MODE=token`` and copy the head's ``~/.ray/auth_token``);
``--env-runner-resources worker_node=1`` places the env runners on the nodes that offer that
custom resource. ``--total-timesteps`` counts environment steps (on the AEC env every
decision of every seat, NPCs included; on the core the learner side's); ``progress.jsonl``
also records each module's own decisions, and ``--learner-decisions N`` stops on those
instead.

The run folder (``--out``, default ``runs/rllib__<scenario>__<seed>__<time>``) holds
``config.json`` (arguments, package versions), ``progress.jsonl`` (one line per training
iteration), ``checkpoint/`` (RLlib's algorithm checkpoint, with ``traveller.json``: scenario,
modules, which agent each plays) and ``evaluation.json``: each learned module loaded back from
the checkpoint as an NPC policy (``traveller_agents.rllib_policy``) and played against ``--eval-vs``
with sides alternating, wins with Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traveller_env.scenario_set import is_set_source
from traveller_rl.commandline import (
    UsageError,
    check_output_folder,
    check_seed,
    examples_epilog,
    run_standalone,
)
from traveller_rl.common import (
    add_dataclass_args,
    check_minimums,
    dataclass_flags,
    flag_field,
    hidden_sizes,
    parse_opponents,
    versions,
    write_json,
)

MAPPINGS = ("shared", "per-side")
ENVS = ("auto", "core", "aec")
#: Environments per env runner when ``--num-envs-per-env-runner`` is 0.
AEC_ENVS_PER_RUNNER, CORE_ENVS_PER_RUNNER = 8, 64
#: Training iterations without a single environment step before the run gives up.
STALL_ITERATIONS = 3
#: The name ``make_core_env`` is registered under (``ray.tune.registry.register_env``).
CORE_ENV_ID = "traveller_core"
META_FILE = "traveller.json"  # the same name as traveller_agents.rllib_policy.META_FILE


@dataclass
class Args:
    """Arguments of the RLlib trainer (each is also a ``--flag``). The PPO hyperparameters
    have ``traveller_rl.common.PPOArgs``'s names (``learning_rate``, ``n_epochs``,
    ``ent_coef``, ``net_arch``) and keep their flags (``--lr``, ``--num-epochs``,
    ``--entropy-coeff``, ``--hidden``)."""

    scenario: str = "duel"
    """built-in scenario name or path to a scenario YAML"""
    num_env_runners: int = 2
    """RLlib env runners (sampling actors; 0 samples in the driver)"""
    num_envs_per_env_runner: int = 0
    """environments (battles) each env runner steps (batched inference); 0: 8 on the AEC
    env, 64 on the core"""
    env: str = "auto"
    """'core' (single-agent RLlib over one side against opponents played in the compiled
    core), 'aec' (the turn-based multi-agent env: self-play, per-side modules, any NPC) or
    'auto' (core when it is built and the run fits it, else aec)"""
    env_runner_resources: str = ""
    """custom Ray resources each env runner needs, e.g. 'worker_node=1' (places them on the
    nodes started with --resources '{"worker_node": N}')"""
    total_timesteps: int = 200_000
    """environment steps to sample (AEC env: all seats' decisions, NPCs included; core: the
    learner side's)"""
    learner_decisions: int = 0
    """if > 0, stop instead when the learned modules made this many decisions in all"""
    out: str = ""
    """run folder (default: runs/rllib__<scenario>__<seed>__<unix time>)"""
    overwrite: bool = False
    """write over the files of an existing --out folder instead of refusing it"""
    seed: int = 1
    """seed of RLlib (env runners' battle seeds, network initialisation)"""
    address: str = ""
    """Ray cluster to join (HOST:PORT or 'auto'); empty: start Ray locally"""
    policy_mapping: str = "shared"
    """'shared' (one learned module for every seat) or 'per-side' (one per side)"""
    opponents: str = ""
    """scripted seats, e.g. 'red=rush' or 'red_0=marksman,red_1=rush' (not trained)"""
    learning_rate: float = flag_field(3e-4, flag="lr")
    """Adam learning rate"""
    train_batch_size: int = 2000
    """environment steps per training iteration"""
    minibatch_size: int = 256
    """PPO minibatch size"""
    n_epochs: int = flag_field(10, flag="num_epochs")
    """PPO epochs per training batch"""
    gamma: float = 1.0
    """discount"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    ent_coef: float = flag_field(0.01, flag="entropy_coeff")
    """entropy bonus"""
    net_arch: str = flag_field("64,64", flag="hidden")
    """hidden layer sizes of the policy and value networks"""
    eval_battles: int = 200
    """evaluation battles per learned module and opponent (0: no evaluation)"""
    eval_vs: str = "random,rush"
    """opponents of the evaluation, comma-separated registry names"""
    torch_threads: int = 1
    """torch CPU threads of the learner (in this process; more oversubscribes small CPUs)"""

    def check(self) -> None:
        """``ValueError`` naming the flag for values out of range."""
        if self.policy_mapping not in MAPPINGS:
            raise ValueError(f"--policy-mapping must be one of {', '.join(MAPPINGS)}, got "
                             f"{self.policy_mapping!r}")
        check_minimums((("--num-env-runners", self.num_env_runners, 0),
                        ("--num-envs-per-env-runner", self.num_envs_per_env_runner, 0),
                        ("--total-timesteps", self.total_timesteps, 1),
                        ("--learner-decisions", self.learner_decisions, 0),
                        ("--train-batch-size", self.train_batch_size, 1),
                        ("--minibatch-size", self.minibatch_size, 1),
                        ("--num-epochs", self.n_epochs, 1),
                        ("--eval-battles", self.eval_battles, 0),
                        ("--torch-threads", self.torch_threads, 1)))
        for flag, value in (("--lr", self.learning_rate),):
            if not value > 0:
                raise ValueError(f"{flag} must be above 0, got {value}")
        for flag, value in (("--gamma", self.gamma), ("--gae-lambda", self.gae_lambda)):
            if not 0 <= value <= 1:
                raise ValueError(f"{flag} must lie in [0, 1], got {value}")
        if not self.ent_coef >= 0:
            raise ValueError(f"--entropy-coeff must be at least 0, got {self.ent_coef}")
        if self.env not in ENVS:
            raise ValueError(f"--env must be one of {', '.join(ENVS)}, got {self.env!r}")
        parse_resources(self.env_runner_resources)
        check_seed("--seed", self.seed)
        if self.out:
            check_output_folder("--out", self.out, self.overwrite)
        if self.eval_battles:
            from traveller_agents.registry import parse_policy_list

            try:
                parse_policy_list(self.eval_vs)
            except ValueError as exc:
                raise ValueError(f"--eval-vs: {exc}") from None
        hidden_sizes(self.net_arch)


def parse_resources(text: str) -> dict[str, float]:
    """``"worker_node=1,gpu_box=0.5"`` -> ``{"worker_node": 1.0, "gpu_box": 0.5}``
    (``ValueError`` naming ``--env-runner-resources``)."""
    out: dict[str, float] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        name, sep, amount = item.partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = -1.0
        if not sep or not name.strip() or not value > 0:
            raise ValueError(f"--env-runner-resources: {item!r} is not NAME=AMOUNT with an "
                             "amount above 0 (e.g. worker_node=1)")
        out[name.strip()] = value
    return out


def core_plan(scenario: str, opponents: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    """For the core path: ``({agent: module}, "")``, the learner side's seats played by
    RLlib's single module and every other seat by an in-core NPC (``opponents``, default
    ``gymnasium_vector.default_opponent``), or ``(None, why the run needs --env aec)``."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    from traveller_env import core, raw_env
    from traveller_env.core.vector import CORE_POLICIES
    from traveller_env.integrations.gymnasium_vector import default_opponent
    from traveller_env.policy import is_search_name
    from traveller_env.scenario_set import set_sources

    if not core.available():
        return None, f"the compiled core is not built ({core.status()})"
    # a distribution (gen:squad): its draws share their sides; the first one names the seats
    aec = raw_env(set_sources(scenario, None)[0] if is_set_source(scenario) else scenario)
    sides = {a: aec.scenario.sides[aec.side_of(a)].name for a in aec.possible_agents}
    names = list(dict.fromkeys(sides.values()))
    if not opponents:
        opponents = {side: default_opponent(scenario) for side in names[1:]}
    npc = {a: opponents.get(a, opponents.get(side)) for a, side in sides.items()}
    free = {sides[a] for a, name in npc.items() if name is None}
    if len(free) != 1:
        return None, ("--opponents must play every side but one on the core (self-play and "
                      "several learning sides need --env aec)")
    slow = sorted({n for n in npc.values()
                   if n is not None and n not in CORE_POLICIES and not is_search_name(n)})
    if slow:
        return None, (f"--opponents {', '.join(slow)} do(es) not run in the compiled core "
                      f"(there: {', '.join(CORE_POLICIES)}, search-<budget>)")
    return {a: DEFAULT_MODULE_ID if n is None else f"npc_{n}" for a, n in npc.items()}, ""


def module_plan(env: Any, mapping: str, opponents: dict[str, str]) -> dict[str, str]:
    """Which module plays each agent: ``npc_<name>`` for scripted seats, otherwise
    ``shared`` or the agent's side name."""
    sides = [s.name for s in env.aec.scenario.sides]
    npc_names = {a: name for seat, name in opponents.items()
                 for a in env.possible_agents
                 if a == seat or sides[env.aec.side_of(a)] == seat}
    plan = {}
    ids: dict[str, str] = {}
    for a in env.possible_agents:
        if a in npc_names:
            name = npc_names[a]
            safe = name if name.isidentifier() else f"{len(ids)}"
            plan[a] = ids.setdefault(name, f"npc_{safe}")
        else:
            plan[a] = "shared" if mapping == "shared" else sides[env.aec.side_of(a)]
    return plan


def build_config(args: Args, env_config: dict, plan: dict[str, str], space: Any,
                 action_space: Any) -> Any:
    """The ``PPOConfig``. ``args.env == "core"``: single-agent RLlib on
    ``integrations.rllib.core`` (``make_core_env``, ``core_runner.CoreEnvRunner``) with one
    ``MaskedPPOTorchRLModule``; ``"aec"``: ``TravellerMultiAgentEnv`` with one
    ``MaskedPPOTorchRLModule`` per learned module, one ``ScriptedRLModule`` per NPC, and the
    policy mapping ``plan``."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from traveller_env.integrations.rllib import TravellerMultiAgentEnv
    from traveller_env.integrations.rllib.modules import MaskedPPOTorchRLModule, ScriptedRLModule

    model_config = {"fcnet_hiddens": hidden_sizes(args.net_arch), "fcnet_activation": "tanh",
                    "vf_share_layers": False}
    core = args.env == "core"
    config = (
        PPOConfig()
        .env_runners(num_env_runners=args.num_env_runners,
                     num_envs_per_env_runner=args.num_envs_per_env_runner or (
                         CORE_ENVS_PER_RUNNER if core else AEC_ENVS_PER_RUNNER),
                     num_cpus_per_env_runner=1,
                     custom_resources_per_env_runner=parse_resources(args.env_runner_resources))
        .learners(num_learners=0)
        .training(lr=args.learning_rate, train_batch_size_per_learner=args.train_batch_size,
                  minibatch_size=args.minibatch_size, num_epochs=args.n_epochs,
                  gamma=args.gamma, lambda_=args.gae_lambda, entropy_coeff=args.ent_coef)
        .debugging(seed=args.seed, log_level="ERROR"))
    if core:
        from ray.tune.registry import register_env

        from traveller_env.integrations.rllib.core import make_core_env
        from traveller_env.integrations.rllib.core_runner import CoreEnvRunner

        register_env(CORE_ENV_ID, make_core_env)  # kept in the cluster's registry
        return (config
                # Discrete actions: nothing to unsquash or clip (RLlib would deep-copy them).
                .environment(CORE_ENV_ID, env_config=env_config, disable_env_checking=True,
                             normalize_actions=False, clip_actions=False)
                .env_runners(env_runner_cls=CoreEnvRunner,
                             gym_env_vectorize_mode="vector_entry_point")
                .rl_module(rl_module_spec=RLModuleSpec(
                    module_class=MaskedPPOTorchRLModule, observation_space=space,
                    action_space=action_space, model_config=model_config)))

    learned = sorted({m for m in plan.values() if not m.startswith("npc_")})
    specs = {}
    for mid in sorted(set(plan.values())):
        if mid in learned:
            specs[mid] = RLModuleSpec(
                module_class=MaskedPPOTorchRLModule, observation_space=space,
                action_space=action_space, model_config=model_config)
        else:
            specs[mid] = RLModuleSpec(module_class=ScriptedRLModule, observation_space=space,
                                      action_space=action_space)
    mapping = dict(plan)

    def policy_mapping_fn(agent_id: str, episode: Any, **kwargs: Any) -> str:
        return mapping[agent_id]

    return (
        config
        # RLlib's env checker steps every agent with unmasked random actions, which the
        # environment refuses by design (illegal actions raise).
        # tests/integrations/test_rllib.py runs the checker against illegal_action="penalize"
        # instead.
        .environment(TravellerMultiAgentEnv, env_config=env_config, disable_env_checking=True)
        .multi_agent(policies=set(specs), policy_mapping_fn=policy_mapping_fn,
                     policies_to_train=learned)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )


def start_ray(address: str, num_env_runners: int) -> bool:
    """Connect to ``address`` or start a local Ray without dashboard or usage statistics;
    returns whether a local instance was started (and should be shut down)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    env_vars = {"RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"}
    if address:
        try:
            ray.init(address=address, runtime_env={"env_vars": env_vars}, log_to_driver=False)
        except ConnectionError as exc:
            raise ConnectionError(
                f"--address {address}: cannot join a Ray cluster there ({exc}). Is `ray start "
                "--head` running there, and, since Ray's clusters use token authentication by "
                "default, is RAY_AUTH_MODE=token set here with the head's ~/.ray/auth_token "
                "copied to this machine (or RAY_AUTH_TOKEN set)?") from None
        return False
    # address="local": a new instance even if another cluster runs on this machine.
    ray.init(address="local", num_cpus=num_env_runners + 1, include_dashboard=False,
             log_to_driver=False, object_store_memory=256 * 2**20,
             runtime_env={"env_vars": env_vars}, configure_logging=False)
    return True


def summary(result: dict, plan: dict[str, str]) -> dict[str, Any]:
    """The figures of one training iteration worth keeping."""
    runners = result.get("env_runners", {})
    learned = sorted({m for m in plan.values() if not m.startswith("npc_")})
    returns = runners.get("module_episode_returns_mean", {})
    agent_returns = runners.get("agent_episode_returns_mean", {})
    steps = runners.get("num_module_steps_sampled_lifetime", {})
    return {
        "iteration": result.get("training_iteration"),
        "env_steps": int(runners.get("num_env_steps_sampled_lifetime", 0)),
        "episodes": int(runners.get("num_episodes_lifetime", 0)),
        "episode_len_mean": runners.get("episode_len_mean"),
        "episode_return_mean": runners.get("episode_return_mean"),
        "module_return_mean": {m: returns.get(m) for m in sorted(set(plan.values()))},
        "agent_return_mean": {a: agent_returns.get(a) for a in plan},
        "module_steps": {m: int(steps.get(m, 0)) for m in learned},
    }


def write_meta(checkpoint: Path, args: Args, env_config: dict, plan: dict[str, str],
               probe: Any = None) -> None:
    """``traveller.json`` in the checkpoint: what ``traveller_agents.rllib_policy`` needs to
    load it. On the core (``probe``, its env) it also keeps the observation size, the
    slot-relative action labels and the layout of a distribution, with which the benchmark
    plays the checkpoint batched (``traveller_rl.scenario_eval.load_learned``)."""
    learned = sorted({m for m in plan.values() if not m.startswith("npc_")})
    meta: dict[str, Any] = {
        "scenario": args.scenario, "relative_actions": env_config["relative_actions"],
        "trained_modules": learned, "module_of_agent": plan,
        "npcs": env_config.get("npcs", env_config.get("opponents", {})),
        "modules_dir": "learner_group/learner/rl_module"}
    if probe is not None and args.env == "core":
        vec = probe.venv.venv
        meta.update(obs_dim=int(vec.obs_dim), action_labels=list(vec.action_labels),
                    layout=None if vec.layout is None else vec.layout.to_dict())
    write_json(checkpoint / META_FILE, meta)


def evaluate(checkpoint: Path, args: Args, plan: dict[str, str]) -> list[dict]:
    """Each learned module, loaded back from the checkpoint as an NPC policy, against each
    ``--eval-vs`` opponent (sides alternating)."""
    from traveller_agents.registry import make_policy
    from traveller_agents.rllib_policy import load_rllib_policy
    from traveller_rl.evaluation import evaluate_matchup

    rows = []
    for mid in sorted({m for m in plan.values() if not m.startswith("npc_")}):
        learned = load_rllib_policy(checkpoint, args.scenario, module=mid)
        for name in [n.strip() for n in args.eval_vs.split(",") if n.strip()]:
            row = evaluate_matchup(learned, make_policy(name, scenario=args.scenario),
                                   args.scenario, battles=args.eval_battles)
            rows.append({"module": mid, **row})
    return rows


def print_rows(rows: list[dict]) -> None:
    """The evaluation table (per module and opponent: W/D/L and the Wilson 95% interval)."""
    from traveller_rl.evaluation import format_matchups

    for mid in dict.fromkeys(r["module"] for r in rows):
        print(f"module {mid}:")
        print(format_matchups([r for r in rows if r["module"] == mid]))


def prepare(args: Args) -> tuple[dict, dict[str, str], Any]:
    """Check the arguments (``ValueError`` naming the flag) and build the env config, the
    module of each agent and a probe environment (for the spaces). Resolves ``args.env``:
    ``auto`` becomes ``core`` when ``core_plan`` accepts the run, else ``aec``."""
    args.check()
    from traveller_env.integrations.rllib import TravellerMultiAgentEnv

    opponents = parse_opponents(args.opponents)
    if args.env != "aec":
        plan, why = (core_plan(args.scenario, opponents) if args.policy_mapping == "shared"
                     else (None, "--policy-mapping per-side trains several sides"))
        if plan is None and args.env == "core":
            raise ValueError(f"--env core: {why}; use --env aec")
        if plan is not None:
            from traveller_env.integrations.rllib.core import make_core_env

            args.env = "core"
            env_config = {"scenario": args.scenario, "relative_actions": True,
                          "opponents": {a: m[len("npc_"):] for a, m in plan.items()
                                        if m.startswith("npc_")}}
            probe = make_core_env({**env_config, "num_envs": 1})  # bad scenarios fail here
            return env_config, plan, probe
        args.env = "aec"
    env_config: dict[str, Any] = {"scenario": args.scenario, "relative_actions": True}
    if opponents:
        env_config["npcs"] = opponents
    probe = TravellerMultiAgentEnv(env_config)  # bad scenarios and opponents fail here
    plan = module_plan(probe, args.policy_mapping, opponents)
    if all(m.startswith("npc_") for m in plan.values()):
        raise ValueError("--opponents: every seat is scripted, nothing left to train")
    return env_config, plan, probe


def train(args: Args, prepared: tuple[dict, dict[str, str], Any] | None = None) -> Path:
    """Train, checkpoint, evaluate; return the run folder."""
    env_config, plan, probe = prepared or prepare(args)
    out = Path(args.out) if args.out else (
        Path("runs") / f"rllib__{Path(args.scenario).stem}__{args.seed}__{int(time.time())}")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "config.json", {"args": dataclass_flags(args), "env_config": env_config,
                                     "module_of_agent": plan,
                                     "versions": {**versions(), "ray": _version("ray")}})
    spaces = ((probe.single_observation_space, probe.single_action_space)
              if args.env == "core" else (probe.observation_space, probe.action_space))
    config = build_config(args, env_config, plan, *spaces)

    import ray
    import torch

    torch.set_num_threads(args.torch_threads)
    started = start_ray(args.address, args.num_env_runners)
    try:
        algo = config.build_algo()
        start = time.perf_counter()
        progress = out / "progress.jsonl"
        progress.unlink(missing_ok=True)
        row: dict[str, Any] = {"env_steps": 0, "module_steps": {}}
        while (sum(row["module_steps"].values()) < args.learner_decisions
               if args.learner_decisions else row["env_steps"] < args.total_timesteps):
            row = summary(algo.train(), plan)
            row["seconds"] = round(time.perf_counter() - start, 2)
            if row["env_steps"] == 0 and row["iteration"] >= STALL_ITERATIONS:
                raise RuntimeError(f"no environment step sampled in {row['iteration']} "
                                   "training iterations: the env runners fail (Ray's logs, in its "
                                   "temporary folder, say why)")
            with progress.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            rets = ", ".join(f"{a} {v:+.3f}" for a, v in row["agent_return_mean"].items()
                             if v is not None)
            if not rets and row["episode_return_mean"] is not None:  # the core: one side
                rets = f"{row['episode_return_mean']:+.3f}"
            length = row["episode_len_mean"]
            print(f"iter {row['iteration']:>3}  env steps {row['env_steps']:>8}  "
                  f"{row['seconds']:>7.1f} s  episode length "
                  f"{'-' if length is None else f'{length:.1f}'}  return: {rets or '-'}",
                  flush=True)
        train_seconds = time.perf_counter() - start
        checkpoint = Path(algo.save_to_path((out / "checkpoint").resolve()))
        algo.stop()
    finally:
        if started:
            ray.shutdown()
    write_meta(checkpoint, args, env_config, plan, probe)
    results: dict[str, Any] = {
        "train_seconds": train_seconds, "env_steps": row["env_steps"],
        "env_steps_per_second": row["env_steps"] / train_seconds,
        "module_steps": row["module_steps"],
        "learner_decisions": sum(row["module_steps"].values()),
        "num_env_runners": args.num_env_runners}
    print(f"\ntrained {row['env_steps']} env steps in {train_seconds:.0f} s "
          f"({results['env_steps_per_second']:.0f} steps/s); checkpoint: {checkpoint}")
    if args.eval_battles and is_set_source(args.scenario):
        print(f"a distribution has no one scenario to evaluate on: score the checkpoint with "
              f"traveller benchmark {checkpoint} --suite v2")
    elif args.eval_battles:
        results["evaluation"] = evaluate(checkpoint, args, plan)
        print_rows(results["evaluation"])
    write_json(out / "evaluation.json", results)
    return out


def _version(package: str) -> str:
    import importlib.metadata as md

    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return "not installed"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The trainer's arguments, one ``--flag`` per field of ``Args`` (added to ``parser`` when
    given, e.g. the ``traveller train rllib`` subcommand's)."""
    if parser is None:
        parser = argparse.ArgumentParser(allow_abbrev=False, prog="traveller train rllib",
                                         description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog("""
        traveller train rllib --scenario duel --opponents red=rush --total-timesteps 200000
        traveller train rllib --scenario squad --policy-mapping per-side --out runs/rllib_squad
        traveller train rllib --address auto --num-env-runners 16 --total-timesteps 5000000""")
    add_dataclass_args(parser, Args, groups={
        "scenario and opponents": ("scenario", "opponents", "policy_mapping"),
        "budget": ("total_timesteps", "learner_decisions", "seed", "env", "num_env_runners",
                   "num_envs_per_env_runner", "torch_threads", "address",
                   "env_runner_resources"),
        "PPO hyperparameters": ("learning_rate", "train_batch_size", "minibatch_size",
                                "n_epochs", "gamma", "gae_lambda", "ent_coef", "net_arch"),
        "evaluation": ("eval_battles", "eval_vs"),
        "output": ("out", "overwrite")})
    return parser


def run(parsed: argparse.Namespace) -> int:
    """Train with the parsed arguments (a ``UsageError`` naming the flag on a bad argument,
    before Ray starts; exit status 1 when the Ray cluster cannot be reached)."""
    args = Args(**vars(parsed))
    try:
        prepared = prepare(args)
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    try:
        train(args, prepared)
    except ConnectionError as exc:
        print(f"traveller train rllib: error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``Args`` from the command line and train (status 2 and the message on stderr
    for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
