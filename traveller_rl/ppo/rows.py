"""The rows of the PPO trainer's batch: which vector (``Group``) fills which rows, by opponent
mode; the sides the learner plays; the scenarios; the views each network reads and the
observation columns they are; the training and evaluation vectors; and ``RowBatch``, every
group's rows side by side.

**Row layout.** Without ``--pool`` the rows are one vector per ``--scenario`` (shared out
evenly), with the ``--opponents`` inside (or none: self-play). With ``--pool``,
``--pool-scripted-share`` of them are scripted battles: one vector per (scripted policy,
learner side) with that policy inside, rows shared out evenly (or by ``--side-shares``); the
other rows form one vector with no opponents, whose opponent seats the trainer plays with the
pool's frozen checkpoints (``traveller_rl.ppo.pool``).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.common import parse_opponents
from traveller_rl.ppo.args import Args, names_list, parse_seed_range
from traveller_rl.ppo.shaping import parse_terms

__all__ = ["Group", "RowBatch", "apportion", "build_groups", "check_compatible", "draw_sides",
           "env_threads", "learner_obs_dim", "learner_views", "make_eval_vectors", "make_vector",
           "observation_columns", "parse_side_shares", "scenario_list", "split_rows",
           "thread_count", "trained_views", "vector_threads", "vector_views"]


def parse_side_shares(text: str, sides: list[str]) -> np.ndarray | None:
    """``"blue=0.65,red=0.35"`` -> the share per side in ``sides`` order, or ``None`` for
    ``""`` (every side alike). ``ValueError`` naming ``--side-shares`` for an unknown or
    missing side, a negative share, or shares that do not sum to 1."""
    if not text.strip():
        return None
    terms = parse_terms(text, "--side-shares", tuple(sides))
    missing = [side for side in sides if side not in terms]
    if missing:
        raise ValueError(f"--side-shares: no share for {', '.join(missing)}; name every side "
                         f"({', '.join(sides)})")
    shares = np.array([terms[side] for side in sides], dtype=np.float64)
    if (shares < 0).any():
        raise ValueError(f"--side-shares: {text!r}: a share must be at least 0")
    if abs(shares.sum() - 1.0) > 1e-6:
        raise ValueError(f"--side-shares: {text!r}: the shares must sum to 1 (they sum to "
                         f"{shares.sum():g})")
    return shares


def draw_sides(rng: np.random.Generator, count: int, n_sides: int,
               shares: np.ndarray | None) -> np.ndarray:
    """The learner's side in ``count`` new pool battles: uniform, or by ``--side-shares``."""
    if shares is None:  # kept as it was, so runs without the flag replay byte for byte
        return rng.integers(n_sides, size=count)
    return rng.choice(n_sides, size=count, p=shares)


def apportion(total: int, weights: list[float]) -> list[int]:
    """``total`` rows shared out in proportion to ``weights`` (largest remainders; ties to the
    first)."""
    exact = np.asarray(weights, dtype=np.float64) / sum(weights) * total
    rows = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - rows), kind="stable")[:total - rows.sum()]:
        rows[i] += 1
    return [int(r) for r in rows]


# ============================================================================ the battles
@dataclass
class Group:
    """One vector and the rows it fills in the trainer's batch (``start:stop``)."""

    venv: Any
    start: int
    stop: int
    kind: str  # "learn" (every returned decision is a learner's), "pool", "scripted"
    learner_side: int  # the side the learner plays, -1: every side (self-play) or per row
    label: str
    backend: str


def scenario_list(args: Args) -> list[str]:
    """The ``--scenario`` names (``ValueError`` naming the flag when none is given or one is
    repeated)."""
    names = names_list(args.battles.scenario)
    if not names:
        raise ValueError("--scenario: no scenario given")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"--scenario: listed twice: {', '.join(dupes)}")
    return names


def split_rows(total: int, parts: int) -> list[int]:
    """``total`` rows shared out as evenly as possible over ``parts`` (the first get more)."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@functools.lru_cache(maxsize=64)
def trained_views(path: str) -> tuple[tuple[str, bool], ...]:
    """The views (``traveller_agents.views.VIEWS``) the checkpoint at ``path`` was trained
    with (none when unreadable: ``check_checkpoints`` reports that file)."""
    from traveller_agents.checkpoint import read_checkpoint
    from traveller_agents.views import VIEWS, views_of

    try:
        return tuple(views_of(read_checkpoint(path)).items())
    except (OSError, ValueError):
        return tuple((v, False) for v in VIEWS)


def learner_views(args: Args) -> dict[str, bool]:
    """The views the learner reads (``--move-view``, ``--aim-view``, ``--attack-view``)."""
    from traveller_agents.views import VIEWS

    return {view: getattr(args.views, view) for view in VIEWS}


def vector_views(args: Args) -> dict[str, bool]:
    """The views the vectors observe: the learner's, and any ``--pool-opponents``
    checkpoint's. Each network reads its own columns of the observation
    (``observation_columns``), so a pool may mix checkpoints with and without a view."""
    out = learner_views(args)
    for path in names_list(args.pool.opponents):
        for view, on in trained_views(path):
            out[view] = out[view] or on
    return out


def observation_columns(venv: Any, views: dict[str, bool]) -> slice | np.ndarray:
    """The columns of the vector's observations a network trained with ``views`` reads: a
    slice when they are a prefix (no copy), else an index array."""
    from traveller_agents.views import view_sizes

    sizes = view_sizes(venv.observation_labels)
    start = venv.obs_dim - sum(sizes.values())
    cols = [np.arange(start)]
    for view, size in sizes.items():
        if views.get(view, False):
            cols.append(np.arange(start, start + size))
        start += size
    idx = np.concatenate(cols)
    return slice(0, len(idx)) if np.array_equal(idx, np.arange(len(idx))) else idx


def learner_obs_dim(args: Args, venv: Any) -> int:
    """The learner's observation size: the vector's, less the views it does not read."""
    cols = observation_columns(venv, learner_views(args))
    return cols.stop if isinstance(cols, slice) else len(cols)


#: The most battle threads ``--env-threads 0`` picks (beyond it the step's serial part and the
#: memory bandwidth dominate for the trainer's row counts).
MAX_AUTO_ENV_THREADS = 8


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def thread_count(k: int, flag: str, most: int) -> int:
    """A thread-count flag's value: ``k``, or with 0 one per available core up to ``most``
    (``ValueError`` naming ``flag`` if ``k`` is not an int in [0, 256])."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 256:
        raise ValueError(f"{flag} must be an int in [0, 256] (0: one per core, at most "
                         f"{most}), got {k!r}")
    return k or min(available_cores(), most)


def env_threads(args: Args) -> int:
    """The threads stepping the battles: ``--env-threads``, or with 0 one per available core
    up to ``MAX_AUTO_ENV_THREADS`` (``ValueError`` naming the flag if negative or > 256)."""
    return thread_count(args.budget.env_threads, "--env-threads", MAX_AUTO_ENV_THREADS)


def vector_threads(args: Args) -> int:
    """The threads the trainer's vectors step with: ``env_threads`` on the core, 1 on the
    python backend (its rows are stepped in turn)."""
    return env_threads(args) if args.budget.backend == "core" else 1


def layout_options(args: Args, scenario: str, seeds: tuple[int, int] | None = None
                   ) -> dict[str, Any]:
    """``vector.make``'s ``layout`` and ``seeds`` from ``--layout`` and ``--scenario-seeds``
    (``seeds``: instead of ``--scenario-seeds``, e.g. the validation seeds)."""
    from traveller_env.scenario_set import is_set_source

    out: dict[str, Any] = {}
    if args.battles.layout:
        out["layout"] = args.battles.layout
    if is_set_source(scenario):
        if seeds is None and args.battles.scenario_seeds:
            seeds = parse_seed_range(args.battles.scenario_seeds, "--scenario-seeds")
        if seeds is not None:
            out["seeds"] = seeds
    elif args.battles.scenario_seeds:
        raise ValueError(f"--scenario-seeds: only a distribution --scenario (gen:<name>, "
                         f"without @seed) takes seeds; {scenario!r} is one scenario")
    return out


def make_vector(args: Args, seed: int, num_envs: int, opponents: dict[str, str] | None,
                flag: str, fallback: bool = False, scenario: str | None = None,
                seeds: tuple[int, int] | None = None) -> tuple[Any, str]:
    """``vector.make`` with the trainer's scenario and backend; a bad opponent is reported
    under ``flag``. With ``fallback``, an opponent the core cannot run is played on the
    python backend instead, and said so on stderr (returns the backend used)."""
    from traveller_env import vector

    scenario = scenario or scenario_list(args)[0]
    threads = vector_threads(args)
    extra = layout_options(args, scenario, seeds)
    try:
        return vector.make(scenario, num_envs=num_envs, seed=seed, backend=args.budget.backend,
                           opponents=opponents, relative_actions=True, threads=threads,
                           **extra, **vector_views(args)), args.budget.backend
    except (ValueError, TypeError) as exc:
        if not (fallback and args.budget.backend != "python"):
            raise ValueError(f"{flag}: {exc}") from None
        try:
            venv = vector.make(scenario, num_envs=num_envs, seed=seed, backend="python",
                               opponents=opponents, relative_actions=True, **extra,
                               **vector_views(args))
        except (ValueError, TypeError):
            raise ValueError(f"{flag}: {exc}") from None
        print(f"train_ppo: note: {flag} {opponents}: not on backend {args.budget.backend!r} "
              f"({exc}); these battles run on the python backend", file=sys.stderr)
        return venv, "python"


def build_groups(args: Args, make: Callable[..., tuple[Any, str]] | None = None) -> list[Group]:
    """The training vectors, by opponent mode (see the module docstring). ``make`` builds
    each group's vector (``make_vector``'s signature; ``--overlap`` passes
    ``overlap.halved_vector``, which splits each group's rows in two vectors)."""
    from traveller_env.rules.rng import derive_seed

    n = args.budget.num_envs
    scenarios = scenario_list(args)
    probe = make_vector(args, 0, 1, None, "--scenario")[0]
    make = make or make_vector
    check_compatible(args, probe, scenarios)
    if len(scenarios) > 1 and args.pool.enabled:
        raise ValueError("--pool trains on one --scenario; several scenarios train against "
                         "--opponents or by self-play")
    if len(scenarios) > n:
        raise ValueError(f"--num-envs {n} is fewer than the {len(scenarios)} scenarios of "
                         "--scenario: each needs a row")
    if not args.pool.enabled:
        opponents = parse_opponents(args.battles.opponents)
        groups, start = [], 0
        for k, (name, rows) in enumerate(zip(scenarios, split_rows(n, len(scenarios)),
                                             strict=True)):
            venv, backend = make(args, derive_seed(args.budget.seed, 0 if k == 0 else 100 + k),
                                 rows, opponents or None, "--opponents", scenario=name)
            sides = {int(venv.agent_sides[venv.possible_agents.index(a)])
                     for a in venv.learners}
            side = sides.pop() if len(sides) == 1 else -1
            label = f"vs {args.battles.opponents}" if opponents else "self-play"
            if len(scenarios) > 1:
                label += f" on {venv.scenario.name}"
            groups.append(Group(venv, start, start + rows, "learn", side, label, backend))
            start += rows
        return groups
    scripted = names_list(args.pool.scripted)
    sides = probe.sides
    shares = parse_side_shares(args.battles.side_shares, sides)
    cells = [(name, s) for name in scripted for s in range(len(sides))
             if shares is None or shares[s] > 0]
    n_scripted = round(args.pool.scripted_share * n) if scripted else 0
    if cells and n_scripted < len(cells):
        raise ValueError(f"--pool-scripted: {len(cells)} (policy, learner side) pairs need "
                         f"at least {len(cells)} rows, but --num-envs {n} x "
                         f"--pool-scripted-share {args.pool.scripted_share} gives {n_scripted}")
    if n - n_scripted < 1:
        raise ValueError(f"--pool-scripted-share {args.pool.scripted_share} leaves no row for "
                         "the pool of past checkpoints: lower it")
    groups = []
    venv, backend = make(args, derive_seed(args.budget.seed, 0), n - n_scripted, None, "--scenario")
    groups.append(Group(venv, 0, n - n_scripted, "pool", -1, "vs pool", backend))
    start = n - n_scripted
    cell_rows = (split_rows(n_scripted, len(cells)) if shares is None
                 else apportion(n_scripted, [shares[side] for _, side in cells]))
    if min(cell_rows, default=1) < 1:
        raise ValueError(f"--side-shares {args.battles.side_shares}: too few --pool-scripted rows "
                         f"({n_scripted}) to give every policy a row on each side with a "
                         "share: raise --num-envs or --pool-scripted-share")
    for i, ((name, side), rows) in enumerate(zip(cells, cell_rows, strict=True)):
        opponents = {other: name for j, other in enumerate(sides) if j != side}
        venv, backend = make(args, derive_seed(args.budget.seed, 1 + i), rows, opponents,
                             "--pool-scripted", fallback=True)
        groups.append(Group(venv, start, start + rows, "scripted", side,
                            f"vs {name} as {sides[side]}", backend))
        start += rows
    return groups




def check_compatible(args: Args, probe: Any, scenarios: list[str]) -> None:
    """Several ``--scenario``s must give one policy the same inputs and outputs: the same
    seats, observation size and (slot-relative) action labels (``ValueError`` naming the
    first that differs)."""
    for name in scenarios[1:]:
        other = make_vector(args, 0, 1, None, "--scenario", scenario=name)[0]
        for what, a, b in (("seats", probe.possible_agents, other.possible_agents),
                           ("observation size", probe.obs_dim, other.obs_dim),
                           ("action labels", probe.action_labels, other.action_labels)):
            if a != b:
                raise ValueError(f"--scenario: {name!r} has other {what} than "
                                 f"{scenarios[0]!r} ({b if what != 'action labels' else len(b)}"
                                 f" against {a if what != 'action labels' else len(a)}); one "
                                 "policy trains only on scenarios with the same seats, "
                                 "observation size and action labels")




def make_eval_vectors(args: Args, sides: list[str]) -> dict[str, list[tuple[Any, int]]]:
    """Per ``--eval-vs`` policy (and scenario, when there are several: keyed
    ``policy@scenario``), one vector per side the learner plays (held-out seeds; a
    distribution's battles drawn from its validation seeds, ``scenario_set.VALIDATION_SEEDS``,
    never trained on)."""
    from traveller_env.scenario_set import VALIDATION_SEEDS

    out: dict[str, list[tuple[Any, int]]] = {}
    scenarios = scenario_list(args)
    for scenario in scenarios:
        for name in names_list(args.eval.vs):
            key = name if len(scenarios) == 1 else f"{name}@{Path(scenario).stem}"
            out[key] = []
            for side in range(len(sides)):
                opponents = {other: name for j, other in enumerate(sides) if j != side}
                venv, _ = make_vector(args, 0, args.eval.envs, opponents, "--eval-vs",
                                      fallback=True, scenario=scenario,
                                      seeds=VALIDATION_SEEDS)
                out[key].append((venv, side))
    return out




class RowBatch:
    """Every group's rows side by side: the arrays the trainer reads each step, filled from the
    groups' vectors by ``reset`` and ``step``.

    ``obs`` holds the vectors' whole observations, ``learner_obs`` the learner's columns (a
    view: its prefix of ``learner_dim`` columns); ``agent`` the seat deciding in each row;
    ``rewards`` ``[rows, seats]``, ``ended`` and ``winner`` what the last step returned;
    ``side`` the side the learner plays in each row (-1: every side, or drawn per battle in
    pool rows) and ``group`` the index of each row's group.
    """

    def __init__(self, groups: list[Group], learner_dim: int) -> None:
        first = groups[0].venv
        n = groups[-1].stop
        self.groups = groups
        self.obs = np.zeros((n, first.obs_dim), dtype=np.float32)
        self.learner_obs = self.obs[:, :learner_dim]  # a view: the learner's prefix
        self.mask = np.zeros((n, first.n_actions), dtype=bool)
        self.agent = np.zeros(n, dtype=np.int64)
        self.rewards = np.zeros((n, first.num_agents), dtype=np.float32)
        self.ended = np.zeros(n, dtype=bool)
        self.winner = np.full(n, -1, dtype=np.int64)
        self.side = np.full(n, -1, dtype=np.int64)
        self.group = np.zeros(n, dtype=np.int64)
        for i, g in enumerate(groups):
            self.side[g.start:g.stop] = g.learner_side
            self.group[g.start:g.stop] = i

    def reset(self) -> None:
        """Reset every group's vector."""
        self.gather([g.venv.reset() for g in self.groups])

    def step(self, actions: np.ndarray) -> None:
        """Step every group's vector with its rows' ``actions``."""
        self.gather([g.venv.step(actions[g.start:g.stop]) for g in self.groups])

    def gather(self, results: list[tuple]) -> None:
        """Copy the groups' ``reset`` or ``step`` results into the rows."""
        for g, res in zip(self.groups, results, strict=True):
            self.fill(slice(g.start, g.stop), res)

    def fill(self, sl: slice, res: tuple) -> None:
        """Copy one vector's ``reset`` or ``step`` results into rows ``sl``."""
        self.obs[sl], self.mask[sl] = res[0], res[1]
        self.agent[sl] = res[-1]["agent"]
        if len(res) == 6:
            self.rewards[sl] = res[2]
            self.ended[sl] = res[3] | res[4]
            self.winner[sl] = res[5]["winner"]
