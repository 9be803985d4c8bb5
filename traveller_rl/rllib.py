"""Train PPO on Ray RLlib (new API stack) in a built-in scenario, on one machine or a cluster.

The environment is ``traveller_env.integrations.rllib.TravellerMultiAgentEnv`` (slot-relative actions, so
one policy can play any seat) and the learned modules are ``MaskedPPOTorchRLModule``s:

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
``RAY_AUTH_MODE=token`` and copy the head's ``~/.ray/auth_token``). ``--total-timesteps``
counts environment steps (every decision of every seat, NPCs included); ``progress.jsonl``
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
    num_envs_per_env_runner: int = 8
    """environments each env runner steps (batched inference: far faster than 1)"""
    total_timesteps: int = 200_000
    """environment steps to sample (all seats' decisions, NPCs included)"""
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
                        ("--num-envs-per-env-runner", self.num_envs_per_env_runner, 1),
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
    """The ``PPOConfig``: the env, one ``MaskedPPOTorchRLModule`` per learned module, one
    ``ScriptedRLModule`` per NPC, and the policy mapping ``plan``."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from traveller_env.integrations.rllib import TravellerMultiAgentEnv
    from traveller_env.integrations.rllib.modules import MaskedPPOTorchRLModule, ScriptedRLModule

    learned = sorted({m for m in plan.values() if not m.startswith("npc_")})
    specs = {}
    for mid in sorted(set(plan.values())):
        if mid in learned:
            specs[mid] = RLModuleSpec(
                module_class=MaskedPPOTorchRLModule, observation_space=space,
                action_space=action_space,
                model_config={"fcnet_hiddens": hidden_sizes(args.net_arch),
                              "fcnet_activation": "tanh", "vf_share_layers": False})
        else:
            specs[mid] = RLModuleSpec(module_class=ScriptedRLModule, observation_space=space,
                                      action_space=action_space)
    mapping = dict(plan)

    def policy_mapping_fn(agent_id: str, episode: Any, **kwargs: Any) -> str:
        return mapping[agent_id]

    return (
        PPOConfig()
        # RLlib's env checker steps every agent with unmasked random actions, which the
        # environment refuses by design (illegal actions raise). tests/test_rllib.py runs the
        # checker against illegal_action="penalize" instead.
        .environment(TravellerMultiAgentEnv, env_config=env_config, disable_env_checking=True)
        .env_runners(num_env_runners=args.num_env_runners,
                     num_envs_per_env_runner=args.num_envs_per_env_runner,
                     num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .training(lr=args.learning_rate, train_batch_size_per_learner=args.train_batch_size,
                  minibatch_size=args.minibatch_size, num_epochs=args.n_epochs,
                  gamma=args.gamma, lambda_=args.gae_lambda, entropy_coeff=args.ent_coef)
        .multi_agent(policies=set(specs), policy_mapping_fn=policy_mapping_fn,
                     policies_to_train=learned)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .debugging(seed=args.seed, log_level="ERROR")
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
        "module_return_mean": {m: returns.get(m) for m in sorted(set(plan.values()))},
        "agent_return_mean": {a: agent_returns.get(a) for a in plan},
        "module_steps": {m: int(steps.get(m, 0)) for m in learned},
    }


def write_meta(checkpoint: Path, args: Args, env_config: dict, plan: dict[str, str]) -> None:
    """``traveller.json`` in the checkpoint: what ``traveller_agents.rllib_policy`` needs to load it."""
    learned = sorted({m for m in plan.values() if not m.startswith("npc_")})
    write_json(checkpoint / META_FILE, {
        "scenario": args.scenario, "relative_actions": env_config["relative_actions"],
        "trained_modules": learned, "module_of_agent": plan,
        "npcs": env_config.get("npcs", {}),
        "modules_dir": "learner_group/learner/rl_module"})


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
    module of each agent and a probe environment (for the spaces)."""
    args.check()
    from traveller_env.integrations.rllib import TravellerMultiAgentEnv

    opponents = parse_opponents(args.opponents)
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
    config = build_config(args, env_config, plan, probe.observation_space, probe.action_space)

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
            with progress.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            rets = ", ".join(f"{a} {v:+.3f}" for a, v in row["agent_return_mean"].items()
                             if v is not None)
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
    write_meta(checkpoint, args, env_config, plan)
    results: dict[str, Any] = {
        "train_seconds": train_seconds, "env_steps": row["env_steps"],
        "env_steps_per_second": row["env_steps"] / train_seconds,
        "module_steps": row["module_steps"],
        "learner_decisions": sum(row["module_steps"].values()),
        "num_env_runners": args.num_env_runners}
    print(f"\ntrained {row['env_steps']} env steps in {train_seconds:.0f} s "
          f"({results['env_steps_per_second']:.0f} steps/s); checkpoint: {checkpoint}")
    if args.eval_battles:
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
        parser = argparse.ArgumentParser(prog="traveller train rllib",
                                         description=__doc__.splitlines()[0])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples_epilog("""
        traveller train rllib --scenario duel --opponents red=rush --total-timesteps 200000
        traveller train rllib --scenario squad --policy-mapping per-side --out runs/rllib_squad
        traveller train rllib --address auto --num-env-runners 16 --total-timesteps 5000000""")
    add_dataclass_args(parser, Args, groups={
        "scenario and opponents": ("scenario", "opponents", "policy_mapping"),
        "budget": ("total_timesteps", "learner_decisions", "seed", "num_env_runners",
                   "num_envs_per_env_runner", "torch_threads", "address"),
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
