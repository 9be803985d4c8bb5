"""Behaviour cloning: a scripted policy's choices as a ``train_ppo`` checkpoint to start from.

An imitation start for league learners (the league allows it; the squad self-play result does
not). The scripted ``--teacher`` (run inside the compiled core) plays every seat of
``--battles`` battles; every decision is recorded as the seat's observation, its
slot-relative mask and the teacher's slot-relative action, with the seat's return from that
decision to the end of the battle (undiscounted, as ``train_ppo``'s default gamma of 1). An
``ActorCritic`` is then fitted: the actor by cross-entropy on the teacher's actions over the
legal ones, the critic by squared error on the returns. The last tenth of the battles is held
out and reported (how often the actor's most probable action is the teacher's).

``--scenario gen:<name>`` records a distribution: battle ``i`` plays a draw of the training
seeds (``--scenario-seeds``, default 0-999) through a fixed layout (``--layout``, default
``6v6``), which the checkpoint keeps, so it plays any draw that fits. The teacher may be a
search NPC (``search-16``). With ``--student CHECKPOINT`` the student plays every seat and the
teacher only labels the states it reaches (DAgger; with a search teacher, one step of expert
iteration: the network learns the search's improved decisions on its own play).

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

    def save(self, path: Path, labels: list[str]) -> None:
        """Write the recording (and its action labels) as a NumPy ``.npz`` (``--save-demos``):
        plain arrays, read back without unpickling anything."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, obs=self.obs, mask=self.mask, action=self.action,
                            ret=self.ret, battle=self.battle, labels=np.array(labels))

    @classmethod
    def load(cls, path: Path, labels: list[str], obs_dim: int) -> Demonstrations:
        """Read a ``save``d recording (``ValueError`` naming the file when it is not one, or
        when its action labels or observation size differ from ``labels`` and ``obs_dim``)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in ("obs", "mask", "action", "ret", "battle")}
                theirs = [str(x) for x in data["labels"]]
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"--add-demos {path}: not a recording of train clone "
                             f"--save-demos ({exc})") from None
        if theirs != labels or arrays["obs"].shape[1] != obs_dim:
            raise ValueError(f"--add-demos {path}: recorded with other actions or "
                             f"observations ({len(theirs)} actions, observation size "
                             f"{arrays['obs'].shape[1]}; this run: {len(labels)}, {obs_dim})")
        return cls(**arrays)

    def before(self, earlier: Demonstrations) -> Demonstrations:
        """``earlier`` followed by these (battle numbers shifted after its own, so the
        held-out tenth stays the newest battles)."""
        shift = int(earlier.battle.max()) + 1 if len(earlier.battle) else 0
        return Demonstrations(np.concatenate([earlier.obs, self.obs]),
                              np.concatenate([earlier.mask, self.mask]),
                              np.concatenate([earlier.action, self.action]),
                              np.concatenate([earlier.ret, self.ret]),
                              np.concatenate([earlier.battle, self.battle + shift]))


def battle_scenarios(scenario: str, battles: int, seed: int,
                     seeds: tuple[int, int] | None = None) -> list[str]:
    """The scenario of each recorded battle: ``scenario`` itself, or for a distribution
    (``gen:<name>`` without a seed) battle ``i``'s draw ``gen:<name>@<s>``, ``s`` taken from
    the generator seeds ``seeds`` (default ``TRAINING_SEEDS``) by ``derive_seed(seed, i)``."""
    from traveller_env.scenario_set import TRAINING_SEEDS, is_set_source

    if not is_set_source(scenario):
        return [scenario] * battles
    lo, hi = seeds or TRAINING_SEEDS
    return [f"{scenario}@{lo + derive_seed(seed, i) % (hi - lo + 1)}" for i in range(battles)]


def collect(scenario: str, teacher: str, battles: int, seed: int, move_view: bool,
            aim_view: bool, *, attack_view: bool = False, layout: str | None = None,
            seeds: tuple[int, int] | None = None,
            student: str | None = None) -> tuple[Demonstrations, list[str], str]:
    """Play ``battles`` battles and record every decision with the core's ``teacher``'s choice
    (battle ``i`` from seed ``derive_seed(seed, i)``; a distribution's draws as
    ``battle_scenarios``, through ``layout``). Without ``student`` the teacher plays every seat;
    with one (a ``train ppo`` checkpoint) the student plays every seat and the teacher only
    labels (DAgger, expert iteration: states from the student's play, the teacher's improved
    choices). Returns the demonstrations, the slot-relative action labels and the name the
    checkpoint records (the scenario, or the distribution)."""
    from traveller_agents.registry import make_policy
    from traveller_env import _core
    from traveller_env.env import CoreTravellerEnv
    from traveller_env.policy import policy_action
    from traveller_env.scenario import load_scenario

    views = {"move_view": move_view, "aim_view": aim_view, "attack_view": attack_view}
    obs, masks, actions, battle_of, seat_of = [], [], [], [], []
    returns: list[float] = []  # what the seat had gained so far, made its return at the end
    labels: list[str] = []
    env: Any = None
    player: Any = None
    drawn = ""  # the scenario ``env`` plays: rebuilt only when a distribution draws another
    for b, name in enumerate(battle_scenarios(scenario, battles, seed, seeds)):
        if name != drawn:
            env, drawn = CoreTravellerEnv(load_scenario(name), layout=layout, **views), name
            rel = env.relative_actions
            labels = list(rel.labels)
            seats = {a: i for i, a in enumerate(env.possible_agents)}
        battle_seed = derive_seed(seed, b)
        env.reset(seed=battle_seed)
        teachers = [_core.Policy(teacher, derive_seed(battle_seed, 1 + i)) for i in seats.values()]
        if student is not None and player is None:  # read once; it plays any draw of the layout
            player = make_policy(student, scenario=env.scenario, seed=battle_seed)
        elif player is not None:
            player.reset(battle_seed)
        gained = np.zeros(len(seats))  # each seat's reward so far in this battle
        first = len(actions)
        for agent in env.agent_iter():
            o, r, term, trunc, _ = env.last()
            seat = seats[agent]
            gained[seat] += r
            if term or trunc:
                env.step(None)
                continue
            label = teachers[seat].act(env.battle.core.handle, seat)
            obs.append(o["observation"].copy())
            masks.append(rel.mask(agent, o["action_mask"]).astype(bool))
            actions.append(rel.to_relative(agent, label))
            battle_of.append(b)
            seat_of.append(seat)
            returns.append(gained[seat])
            env.step(label if player is None else policy_action(player, env, agent))
        for k in range(first, len(actions)):  # the return: what the seat gained afterwards
            returns[k] = gained[seat_of[k]] - returns[k]
    demos = Demonstrations(np.asarray(obs, dtype=np.float32), np.asarray(masks, dtype=bool),
                           np.asarray(actions, dtype=np.int64),
                           np.asarray(returns, dtype=np.float32),
                           np.asarray(battle_of, dtype=np.int64))
    return demos, labels, scenario if layout is not None else env.scenario.name


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
                      help="built-in scenario name or YAML path, or a distribution gen:<name> "
                           "(each battle a draw of --scenario-seeds) (default: squad)")
    data.add_argument("--scenario-seeds", default="",
                      help="LO-HI: the generator seeds a distribution's battles are drawn from "
                           "(default 0-999, clear of the benchmark's held-out seeds)")
    data.add_argument("--layout", default="",
                      help="a fixed observation and action layout (traveller_env.layout); a "
                           "distribution's default is 6v6")
    data.add_argument("--teacher", default="tactician",
                      help="the core's policy to imitate: a scripted NPC or a search NPC "
                           "(search-16, ...) (default: tactician)")
    data.add_argument("--student", default="",
                      help="a train ppo checkpoint that plays the battles while the teacher "
                           "only labels its states (DAgger, expert iteration); default: the "
                           "teacher plays")
    data.add_argument("--battles", type=int_at_least(1), default=4000,
                      help="battles of the teacher against itself to record (default: 4000)")
    data.add_argument("--move-view", action="store_true", help="observe the move view")
    data.add_argument("--aim-view", action="store_true", help="observe the aim view")
    data.add_argument("--attack-view", action="store_true", help="observe the attack view")
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
    data.add_argument("--save-demos", default="",
                      help="also write this run's recording here (.npz), to fit again or to "
                           "aggregate (DAgger) with --add-demos")
    data.add_argument("--add-demos", default="",
                      help="earlier recordings (--save-demos files, comma-separated) fitted "
                           "together with this run's, before it")
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, required=True,
                     help="the checkpoint to write (.pt); a JSON of metrics lands beside it")
    return p


def _check(args: argparse.Namespace) -> None:
    """Every flag checked before any battle is recorded (a ``UsageError`` naming it)."""
    from traveller_env import _core
    from traveller_env.layout import LayoutError, resolve_layout
    from traveller_env.policy import is_search_name
    from traveller_env.scenario import ScenarioError, load_scenario
    from traveller_rl.ppo.args import check_checkpoint_file, parse_seed_range

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
    if args.save_demos and not args.save_demos.endswith(".npz"):
        raise UsageError(f"--save-demos {args.save_demos}: a path ending in .npz")
    for earlier in (p for p in args.add_demos.split(",") if p):
        if not Path(earlier).is_file():
            raise UsageError(f"--add-demos {earlier}: no such file")
    if is_search_name(args.teacher):
        try:
            _core.Policy(args.teacher, 0)
        except ValueError as exc:
            raise UsageError(f"--teacher {args.teacher!r}: {exc}") from None
    elif args.teacher not in _core.CORE_POLICIES:
        raise UsageError(f"--teacher {args.teacher!r}: not a policy of the compiled core; one "
                         f"of {', '.join(_core.CORE_POLICIES)}, or a search NPC (search-16)")
    if args.scenario_seeds:
        try:
            parse_seed_range(args.scenario_seeds, "--scenario-seeds")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.student:
        try:
            check_checkpoint_file("--student", args.student)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        first = battle_scenarios(args.scenario, 1, args.seed, _seeds(args))[0]
        load_scenario(first)
        if args.layout:
            resolve_layout(args.layout)
    except (ScenarioError, LayoutError, ValueError) as exc:
        raise UsageError(f"--scenario/--layout: {exc}") from None


def _seeds(args: argparse.Namespace) -> tuple[int, int] | None:
    """``--scenario-seeds`` as (low, high), or ``None`` for the default."""
    from traveller_rl.ppo.args import parse_seed_range

    return parse_seed_range(args.scenario_seeds, "--scenario-seeds") if args.scenario_seeds \
        else None


def _layout(args: argparse.Namespace) -> str | None:
    """The layout the battles are observed through: ``--layout``, or a distribution's
    default."""
    from traveller_env.scenario_set import is_set_source
    from traveller_env.vector import DEFAULT_SET_LAYOUT

    if args.layout:
        return args.layout
    return DEFAULT_SET_LAYOUT if is_set_source(args.scenario) else None


def run(args: argparse.Namespace) -> int:
    """Collect, fit, write the checkpoint and ``<out>.json``."""
    import torch

    from traveller_agents.checkpoint import checkpoint_bytes

    _check(args)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    layout = _layout(args)
    demos, labels, name = collect(args.scenario, args.teacher, args.battles, args.seed,
                                  args.move_view, args.aim_view, attack_view=args.attack_view,
                                  layout=layout, seeds=_seeds(args),
                                  student=args.student or None)
    t1 = time.time()
    print(f"recorded {len(demos.action):,} decisions of {args.battles:,} battles in "
          f"{t1 - t0:.0f} s")
    if args.save_demos:
        demos.save(Path(args.save_demos), labels)
    for earlier in reversed([p for p in args.add_demos.split(",") if p]):
        try:
            demos = demos.before(Demonstrations.load(Path(earlier), labels,
                                                     demos.obs.shape[1]))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    net, metrics = fit(demos, args.hidden, args.epochs, args.lr, args.batch, args.seed)
    views = {v: True for v, on in (("move_view", args.move_view), ("aim_view", args.aim_view),
                                   ("attack_view", args.attack_view)) if on}
    if layout is not None:
        from traveller_env.layout import resolve_layout

        views["layout"] = resolve_layout(layout).to_dict()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, checkpoint_bytes(net, name, labels, decisions=0, update=0,
                                                  seed=int(args.seed),
                                                  imitation=args.teacher,
                                                  **({"student": args.student}
                                                     if args.student else {}), **views))
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
