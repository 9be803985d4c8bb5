"""Behaviour cloning: a scripted policy's choices as a ``train_ppo`` checkpoint to start from.

An imitation start for league learners (the league allows it; the squad self-play result does
not). The scripted ``--teacher`` (run inside the compiled core) plays every seat of
``--battles`` battles; every decision is recorded as the seat's observation, its
slot-relative mask and the teacher's slot-relative action, with the seat's return from that
decision to the end of the battle (undiscounted, as ``train_ppo``'s default gamma of 1). An
``ActorCritic`` is then fitted: the actor by cross-entropy on the teacher's actions over the
legal ones, the critic by squared error on the returns. The last tenth of the battles is held
out and reported (how often the actor's most probable action is the teacher's).

The checkpoint is an ordinary ``train_ppo`` checkpoint (it plays as an NPC anywhere a policy
name is accepted; continue it with ``train_ppo --init OUT``) with one more entry,
``imitation``: the teacher's name, so that a result built on it can say where it started.

    python -m traveller_rl.clone --scenario configs/training/squad_damage.yaml \\
        --teacher tactician --move-view --aim-view --hidden 256,256 --out runs/clone/bc.pt
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.rules.rng import derive_seed
from traveller_rl.commandline import (
    UsageError,
    check_seed,
    examples_epilog,
    int_at_least,
    run_standalone,
    seed_type,
)

from .common import atomic_write_bytes, check_minimums, hidden_sizes_arg, write_json

__all__ = ["Demonstrations", "build_parser", "collect", "fit", "main", "run"]


@dataclass
class Demonstrations:
    """The teacher's recorded decisions, one row each (``battle``: the battle's index)."""

    obs: np.ndarray  # float32 [N, obs_dim]
    mask: np.ndarray  # bool [N, n_relative_actions]
    action: np.ndarray  # int64 [N], slot-relative
    ret: np.ndarray  # float32 [N], the seat's reward from this decision to the battle's end
    battle: np.ndarray  # int64 [N]


def collect(scenario: str, teacher: str, battles: int, seed: int, move_view: bool,
            aim_view: bool) -> tuple[Demonstrations, list[str], str]:
    """Play ``battles`` battles with the core's ``teacher`` in every seat (battle ``i`` from
    seed ``derive_seed(seed, i)``) and record every decision. Returns the demonstrations, the
    scenario's slot-relative action labels and its name."""
    from traveller_env import _core
    from traveller_env.env import CoreTravellerEnv

    if teacher not in _core.CORE_POLICIES:
        raise ValueError(f"--teacher {teacher!r}: not a policy of the compiled core; one of "
                         f"{', '.join(_core.CORE_POLICIES)}")
    env = CoreTravellerEnv(scenario, move_view=move_view, aim_view=aim_view)
    rel = env.relative_actions
    seats = {a: i for i, a in enumerate(env.possible_agents)}
    policies = [_core.Policy(teacher, 0) for _ in seats]
    obs, masks, actions, battle_of, seat_of = [], [], [], [], []
    returns: list[float] = []  # what the seat had gained so far, made its return at the end
    for b in range(battles):
        battle_seed = derive_seed(seed, b)
        env.reset(seed=battle_seed)
        for i, p in enumerate(policies):
            p.reset(derive_seed(battle_seed, 1 + i))
        gained = np.zeros(len(seats))  # each seat's reward so far in this battle
        first = len(actions)
        for agent in env.agent_iter():
            o, r, term, trunc, _ = env.last()
            seat = seats[agent]
            gained[seat] += r
            if term or trunc:
                env.step(None)
                continue
            a = policies[seat].act(env.battle.core.handle, seat)
            obs.append(o["observation"].copy())
            masks.append(rel.mask(agent, o["action_mask"]).astype(bool))
            actions.append(rel.to_relative(agent, a))
            battle_of.append(b)
            seat_of.append(seat)
            returns.append(gained[seat])
            env.step(a)
        for k in range(first, len(actions)):  # the return: what the seat gained afterwards
            returns[k] = gained[seat_of[k]] - returns[k]
    demos = Demonstrations(np.asarray(obs, dtype=np.float32), np.asarray(masks, dtype=bool),
                           np.asarray(actions, dtype=np.int64),
                           np.asarray(returns, dtype=np.float32),
                           np.asarray(battle_of, dtype=np.int64))
    return demos, list(rel.labels), env.scenario.name


def fit(demos: Demonstrations, hidden: list[int], epochs: int, lr: float, batch: int,
        seed: int, holdout: float = 0.1, log: Any = print) -> tuple[Any, dict]:
    """Fit an ``ActorCritic`` to ``demos`` (the last ``holdout`` share of battles held out).
    Returns the network and its metrics per epoch (held-out agreement, losses)."""
    import torch
    from torch.nn import functional as F

    from traveller_agents.nets import ActorCritic

    torch.manual_seed(seed)
    n_battles = int(demos.battle.max()) + 1
    cut = round(n_battles * (1.0 - holdout))
    train_rows = np.flatnonzero(demos.battle < cut)
    test_rows = np.flatnonzero(demos.battle >= cut)
    obs, mask = torch.from_numpy(demos.obs), torch.from_numpy(demos.mask)
    action, ret = torch.from_numpy(demos.action), torch.from_numpy(demos.ret)
    net = ActorCritic(obs.shape[1], mask.shape[1], hidden)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr, eps=1e-5)
    gen = torch.Generator().manual_seed(derive_seed(seed, 1) & (2**63 - 1))
    history = []
    steps_total = epochs * max(1, len(train_rows) // batch)
    step = 0
    for epoch in range(epochs):
        net.train()
        order = torch.from_numpy(train_rows)[torch.randperm(len(train_rows), generator=gen)]
        pi_sum = v_sum = 0.0
        batches = max(1, len(order) // batch)
        for k in range(batches):
            for group in optimizer.param_groups:  # linear annealing to 0
                group["lr"] = lr * (1.0 - step / steps_total)
            idx = order[k * batch:(k + 1) * batch]
            logits = net.logits(obs[idx], mask[idx])
            pi_loss = F.cross_entropy(logits, action[idx])
            v_loss = F.mse_loss(net.value(obs[idx]), ret[idx])
            loss = pi_loss + 0.5 * v_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            pi_sum += pi_loss.item()
            v_sum += v_loss.item()
            step += 1
        net.eval()
        with torch.no_grad():
            agree = v_test = 0.0
            for k in range(0, len(test_rows), 8192):
                idx = torch.from_numpy(test_rows[k:k + 8192])
                pred = net.logits(obs[idx], mask[idx]).argmax(-1)
                agree += float((pred == action[idx]).sum())
                v_test += float(((net.value(obs[idx]) - ret[idx]) ** 2).sum())
        row = {"epoch": epoch + 1, "train_policy_loss": pi_sum / batches,
               "train_value_loss": v_sum / batches,
               "heldout_agreement": agree / max(1, len(test_rows)),
               "heldout_value_mse": v_test / max(1, len(test_rows))}
        history.append(row)
        log(json.dumps(row))
    return net, {"train_decisions": len(train_rows),
                 "heldout_decisions": len(test_rows), "epochs": history}


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The script's options."""
    p = parser or argparse.ArgumentParser(allow_abbrev=False, prog="traveller train clone",
                                          description=__doc__.split("\n\n")[0])
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = examples_epilog("""
        traveller train clone --teacher tactician --scenario squad --out runs/clone/tactician.pt
        traveller train clone --teacher marksman --scenario duel --battles 500 --out runs/m.pt
        traveller train ppo --scenario squad --init runs/clone/tactician.pt --pool""")
    data = p.add_argument_group("demonstrations")
    data.add_argument("--scenario", default="squad",
                      help="built-in scenario name or YAML path (default: squad)")
    data.add_argument("--teacher", default="tactician",
                      help="the core's scripted policy to imitate (default: tactician)")
    data.add_argument("--battles", type=int_at_least(1), default=4000,
                      help="battles of the teacher against itself to record (default: 4000)")
    data.add_argument("--move-view", action="store_true", help="observe the move view")
    data.add_argument("--aim-view", action="store_true", help="observe the aim view")
    data.add_argument("--seed", type=seed_type, default=0,
                      help="seed of the battles and the fit (default: 0)")
    fit_ = p.add_argument_group("fit")
    fit_.add_argument("--hidden", type=hidden_sizes_arg, default=[256, 256],
                      help="hidden layer sizes (default: 256,256)")
    fit_.add_argument("--epochs", type=int_at_least(1), default=10,
                      help="passes over the data (default: 10)")
    fit_.add_argument("--lr", type=float, default=1e-3,
                      help="Adam learning rate, annealed linearly to 0 (default: 1e-3)")
    fit_.add_argument("--batch", type=int_at_least(1), default=1024,
                      help="minibatch size (default: 1024)")
    fit_.add_argument("--threads", type=int_at_least(1), default=1,
                      help="torch threads (default: 1)")
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, required=True,
                     help="the checkpoint to write (.pt); a JSON of metrics lands beside it")
    return p


def _check(args: argparse.Namespace) -> None:
    """Every flag checked before any battle is recorded (a ``UsageError`` naming it)."""
    from traveller_env import _core
    from traveller_env.scenario import load_scenario

    try:
        check_minimums(tuple((f"--{name}", getattr(args, name), 1)
                             for name in ("battles", "epochs", "batch", "threads")))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_seed("--seed", args.seed)
    if not args.lr > 0:
        raise UsageError(f"--lr must be positive, got {args.lr}")
    if args.out.suffix != ".pt":
        raise UsageError(f"--out {args.out}: a checkpoint path ending in .pt")
    if args.out.is_dir():
        raise UsageError(f"--out {args.out}: is a folder; give a checkpoint path ending in .pt")
    if args.teacher not in _core.CORE_POLICIES:
        raise UsageError(f"--teacher {args.teacher!r}: not a policy of the compiled core; one "
                         f"of {', '.join(_core.CORE_POLICIES)}")
    load_scenario(args.scenario)


def run(args: argparse.Namespace) -> int:
    """Collect, fit, write the checkpoint and ``<out>.json``."""
    import torch

    from traveller_agents.checkpoint import checkpoint_bytes

    _check(args)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    demos, labels, name = collect(args.scenario, args.teacher, args.battles, args.seed,
                                  args.move_view, args.aim_view)
    t1 = time.time()
    print(f"recorded {len(demos.action):,} decisions of {args.battles:,} battles in "
          f"{t1 - t0:.0f} s")
    net, metrics = fit(demos, args.hidden, args.epochs, args.lr, args.batch, args.seed)
    views = {v: True for v, on in (("move_view", args.move_view), ("aim_view", args.aim_view))
             if on}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, checkpoint_bytes(net, name, labels, decisions=0, update=0,
                                                  seed=int(args.seed),
                                                  imitation=args.teacher, **views))
    write_json(args.out.with_suffix(".json"), {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                 if k != "func"},
        "scenario": name, "decisions": len(demos.action),
        "collect_seconds": round(t1 - t0, 1), "fit_seconds": round(time.time() - t1, 1),
        **metrics}, with_versions=True)
    print(f"wrote {args.out} (held-out agreement "
          f"{metrics['epochs'][-1]['heldout_agreement']:.3f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (status 2 and the message on stderr for a bad flag)."""
    return run_standalone(build_parser(), run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
