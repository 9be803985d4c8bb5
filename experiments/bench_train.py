"""Training speed: MaskablePPO frames per second on ``duel`` through the SB3 bridge, and the
share of wall time spent inside the environment; then ``traveller_rl/ppo/trainer.py`` end to end
on ``duel`` and ``squad`` beside MaskablePPO on the same scenarios, in the same run.

The environment's share is measured by a thin ``VecEnvWrapper`` timing every call into the
vectorised environment (``step``, ``reset``, and the ``action_masks`` calls MaskablePPO makes)
with ``time.perf_counter``, over one training run: low overhead, unlike a profiler, which
inflates pure-Python code. The opponent is the uniform random policy, so the figure is the
environment's own cost, not a scripted NPC's thinking time.

**train_ppo** (the section after): the batched trainer (``traveller_env.vector``, one
shared policy for every learner seat, GAE per seat) on each ``--ppo-scenarios`` scenario with
the same opponent (``--opponents red=random``: the learner plays every blue seat, as the
bridge's ``learner="blue"``), on each ``--ppo-backends`` backend, for ``--ppo-decisions``
learner decisions (``--ppo-fast-decisions`` on the core and the free environment), no
evaluation (python: ``--ppo-num-envs`` x ``--ppo-num-steps``, 64 x 64; core and the free
environment: ``--ppo-fast-num-envs`` x ``--ppo-fast-num-steps``, 1024 x 32, as a run on the
core would use). Its decisions per second are the trainer's own end-to-end
figure (rollouts, inference, GAE, the PPO updates, TensorBoard logging; not the start-up), and
its environment share is the time inside the vector's ``reset``/``step``. A last row per
scenario, ``free env``, trains on ``FreeVector`` (the scenario's shapes at almost no cost):
the trainer's own ceiling on this machine, now. MaskablePPO runs on the same scenarios with
the same ``--timesteps`` (reusing the figure above for ``--scenario``), so the ratio compares
the two trainers on one machine at one moment. The core backend runs once per
``--ppo-env-threads`` count (battle threads; 0: the trainer's default, one per core up to 8)
and every row once per ``--ppo-device`` (``cpu``, ``cuda``): each row gives its decisions per
second and the shares of battles (env), inference and updates.

**Overlap** (``--ppo-overlap off,on``): the core rows run once per mode, without and with the
trainer's ``--overlap`` (two halves of the rows in turns: one half's battles in a background
thread while the policy chooses the other half's actions). ``--ppo-repeats R`` runs every
core row R times in alternating rounds (each configuration once per round, so a busy spell
of the shared machine falls on all of them alike) and reports the median; each row also
gives its ratio to the first core row of its scenario (the first ``--ppo-env-threads`` count,
without overlap), its decisions per second in every round, and ``others_cpu``: the cores
other processes used during each run (from ``/proc/stat``, Linux), so a round taken while the
machine was busy can be told apart (``--ppo-wait-quiet S``: before each run, wait up to S
seconds for a quiet spell). With ``--overlap`` the environment share is the time the
trainer waited for a half's battles (the part nothing overlapped), and the inference share
its time choosing actions (beside the battles); ``rollout_decisions_per_second`` is the
decisions over the time of both (the rollouts without the updates, the part that battle
threads and overlap can speed up). The comparison of the performance docs:

    python -m experiments.bench_train --skip-maskable --skip-free --ppo-scenarios squad \
        --ppo-backends core --ppo-opponents red=tactician --ppo-fast-num-envs 1024 \
        --ppo-fast-num-steps 16 --ppo-fast-decisions 262144 --ppo-env-threads 1,2 \
        --ppo-overlap off,on --ppo-repeats 5 --ppo-wait-quiet 120 \\
        --json results/bench_overlap.json

    python -m experiments.bench_train --timesteps 20000 --json runs/bench_train.json

**Recipe** (``--recipe``, instead of everything above): the research recipe (``RECIPE``: entity
net, embed 64, 256x256, both views, pool) run with the entity network as first written
(``reference_encode``, ``reference_actor_forward``: the reference the package's restructured
network is tested against) and with the package's, in alternating rounds, and the ratio of
their median decisions per second:

    python -m experiments.bench_train --recipe --recipe-decisions 65536 --recipe-repeats 2

``--recipe-compile`` adds a third path, the package's with ``train ppo --compile``; the
rates over each run's second half (``steady``) leave out its compiling."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _timed_vec_env_class() -> type:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class TimedVecEnv(VecEnvWrapper):
        """Adds up the wall time spent in every call into the wrapped VecEnv."""

        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.elapsed = 0.0

        def reset(self) -> Any:
            t = time.perf_counter()
            out = self.venv.reset()
            self.elapsed += time.perf_counter() - t
            return out

        def step_async(self, actions: Any) -> None:
            t = time.perf_counter()
            self.venv.step_async(actions)
            self.elapsed += time.perf_counter() - t

        def step_wait(self) -> Any:
            t = time.perf_counter()
            out = self.venv.step_wait()
            self.elapsed += time.perf_counter() - t
            return out

        def env_method(self, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            out = self.venv.env_method(*args, **kwargs)
            self.elapsed += time.perf_counter() - t
            return out

        def has_attr(self, attr_name: str) -> bool:
            return self.venv.has_attr(attr_name)

    return TimedVecEnv


def isolated_step_us(scenario: str, steps: int = 5000) -> dict[str, float]:
    """Microseconds per learner step of the SB3 bridge alone and through ``DummyVecEnv``,
    with a uniformly random legal learner: the environment's cost without the training
    loop around it (inside training the same calls run slower, on caches PyTorch evicts)."""
    import numpy as np
    from stable_baselines3.common.vec_env import DummyVecEnv

    from traveller_env.integrations.sb3 import make_sb3_env

    rng = np.random.default_rng(0)
    bridge = make_sb3_env(scenario, learner="blue")()
    bridge.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(bridge.action_masks())
        _, _, terminated, truncated, _ = bridge.step(int(legal[rng.integers(len(legal))]))
        if terminated or truncated:
            bridge.reset()
    bridge_us = 1e6 * (time.perf_counter() - start) / steps
    venv = DummyVecEnv([make_sb3_env(scenario, learner="blue")])
    venv.seed(0)
    venv.reset()
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(venv.env_method("action_masks")[0])
        venv.step(np.array([legal[rng.integers(len(legal))]]))
    vec_us = 1e6 * (time.perf_counter() - start) / steps
    return {"bridge_us": bridge_us, "dummy_vec_env_us": vec_us}


def build_parser() -> argparse.ArgumentParser:
    """The script's options (it writes a file only when asked with ``--json``)."""
    parser = argparse.ArgumentParser(allow_abbrev=False,
                                     description="MaskablePPO training speed on duel")
    parser.add_argument("--timesteps", type=int, default=20_000,
                        help="timed training steps (default: %(default)s)")
    parser.add_argument("--scenario", default="duel", help="scenario (default: %(default)s)")
    parser.add_argument("--n-envs", type=int, default=1,
                        help="environments in the DummyVecEnv (default: %(default)s)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--ppo-scenarios", default="duel,squad",
                        help="scenarios of the train_ppo section, comma-separated ('' to skip "
                        "it; default: %(default)s)")
    parser.add_argument("--ppo-backends", default="auto",
                        help="vector backends of the train_ppo section, comma-separated "
                        "('auto': python, and core when it is built; default: %(default)s)")
    parser.add_argument("--ppo-decisions", type=int, default=32_768,
                        help="learner decisions per train_ppo measurement on the python "
                        "backend (default: %(default)s)")
    parser.add_argument("--ppo-fast-decisions", type=int, default=196_608,
                        help="learner decisions per train_ppo measurement on the core backend "
                        "and the free environment (default: %(default)s)")
    parser.add_argument("--ppo-num-envs", type=int, default=64,
                        help="train_ppo --num-envs on the python backend (default: "
                        "%(default)s)")
    parser.add_argument("--ppo-num-steps", type=int, default=64,
                        help="train_ppo --num-steps on the python backend (default: "
                        "%(default)s)")
    parser.add_argument("--ppo-fast-num-envs", type=int, default=1024,
                        help="train_ppo --num-envs on the core backend and the free "
                        "environment (default: %(default)s)")
    parser.add_argument("--ppo-fast-num-steps", type=int, default=32,
                        help="train_ppo --num-steps on the core backend and the free "
                        "environment (default: %(default)s)")
    parser.add_argument("--ppo-threads", default="1",
                        help="train_ppo --threads, torch threads, comma-separated (each with "
                        "each --ppo-env-threads on the core backend; default: %(default)s)")
    parser.add_argument("--ppo-update-threads", default="0",
                        help="train_ppo --update-threads, torch threads during the update, "
                        "comma-separated (each with each --ppo-threads and --ppo-env-threads on "
                        "the core backend; 0: the trainer's default; default: %(default)s)")
    parser.add_argument("--ppo-env-threads", default="0",
                        help="train_ppo --env-threads on the core backend, comma-separated "
                        "(0: the trainer's default; default: %(default)s)")
    parser.add_argument("--ppo-device", default="cpu",
                        help="train_ppo --device, comma-separated (cpu, cuda, auto; default: "
                        "%(default)s)")
    parser.add_argument("--ppo-opponents", default="red=random",
                        help="train_ppo --opponents (default: %(default)s)")
    parser.add_argument("--ppo-overlap", default="off",
                        help="train_ppo --overlap on the core backend: off, on, or off,on for "
                        "a row of each (default: %(default)s)")
    parser.add_argument("--ppo-repeats", type=int, default=1,
                        help="runs of every core row, in alternating rounds; the median is "
                        "reported (default: %(default)s)")
    parser.add_argument("--ppo-wait-quiet", type=float, default=0.0,
                        help="before each train_ppo run, wait up to this many seconds for a "
                        "2-second spell in which other processes use under 0.1 core (a "
                        "shared machine; 0: never wait; default: %(default)s)")
    parser.add_argument("--recipe", action="store_true",
                        help="instead of the rest: the research recipe (entity net, embed 64, "
                        "256x256, both views, pool) with the reference entity network and "
                        "with the package's, in alternating rounds, and their ratio")
    parser.add_argument("--recipe-decisions", type=int, default=65_536,
                        help="learner decisions per --recipe run (default: %(default)s)")
    parser.add_argument("--recipe-num-envs", type=int, default=256,
                        help="--num-envs of the --recipe runs (default: %(default)s)")
    parser.add_argument("--recipe-num-steps", type=int, default=64,
                        help="--num-steps of the --recipe runs (default: %(default)s)")
    parser.add_argument("--recipe-seeds", default="0-999",
                        help="--scenario-seeds of the --recipe runs (default: %(default)s)")
    parser.add_argument("--recipe-compile", action="store_true",
                        help="--recipe: also the package's path with train ppo's --compile")
    parser.add_argument("--recipe-repeats", type=int, default=1,
                        help="rounds of the --recipe pair; the medians are compared (default: "
                        "%(default)s)")
    parser.add_argument("--skip-maskable", action="store_true",
                        help="skip MaskablePPO (the train_ppo rows only, no ratio)")
    parser.add_argument("--skip-free", action="store_true",
                        help="skip the free environment's rows (the trainer's ceiling)")
    return parser


def overlap_modes(text: str) -> list[bool]:
    """The ``--ppo-overlap`` list: ``off`` -> False, ``on`` -> True (``SystemExit`` naming the
    flag otherwise)."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes or any(m not in ("off", "on") for m in modes):
        raise SystemExit(f"bench_train: error: --ppo-overlap: expected off, on or off,on, got "
                         f"{text!r}")
    return [m == "on" for m in modes]


def busy_seconds() -> float | None:
    """CPU seconds every process of the machine has run so far (``/proc/stat``: user, nice,
    system, irq, softirq, steal), or ``None`` where there is no ``/proc/stat``."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / ticks


def own_seconds() -> float:
    """CPU seconds this process (every thread) has run so far."""
    t = os.times()
    return t.user + t.system


def wait_quiet(limit: float, cores: float = 0.1, spell: float = 2.0) -> float:
    """Wait up to ``limit`` seconds for a ``spell`` of seconds in which the other processes
    use less than ``cores`` cores; returns the seconds waited (at once without
    ``/proc/stat``)."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        busy, own = busy_seconds(), own_seconds()
        if busy is None:
            break
        time.sleep(spell)
        if (busy_seconds() - busy) - (own_seconds() - own) < cores * spell:
            break
    return time.perf_counter() - start


def maskable_ppo(scenario: str, timesteps: int, n_envs: int) -> dict[str, float]:
    """MaskablePPO's steps per second on ``scenario`` (one learner side against ``random``)
    and the share of wall time inside the environment, after a 1,024-step warm-up."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from traveller_env.integrations.sb3 import make_sb3_env

    TimedVecEnv = _timed_vec_env_class()

    torch.set_num_threads(1)
    venv = TimedVecEnv(DummyVecEnv([make_sb3_env(scenario, learner="blue")] * n_envs))
    model = MaskablePPO("MlpPolicy", venv, n_steps=512, batch_size=256, seed=0, verbose=0)
    model.learn(1024)  # warm-up
    venv.elapsed = 0.0
    start = time.perf_counter()
    model.learn(timesteps, reset_num_timesteps=True)
    wall = time.perf_counter() - start
    return {"fps": timesteps / wall, "env_share": venv.elapsed / wall, "wall": wall,
            "env_us_per_step": 1e6 * venv.elapsed / timesteps}


class FreeVector:
    """A stand-in for ``traveller_env.vector`` with ``scenario``'s shapes and learner seats
    that costs (almost) nothing: fixed random observations and masks, the deciding seat cycling
    over the learners, every battle ending after ``length`` steps with +1 / -1. Training on it
    measures the trainer alone (the learner-only ceiling)."""

    def __init__(self, scenario: str, num_envs: int, length: int = 40) -> None:
        import numpy as np

        from traveller_env import vector

        real = vector.make(scenario, num_envs=1, relative_actions=True,
                           opponents={"red": "random"})
        for attr in ("possible_agents", "num_agents", "sides", "agent_sides", "obs_dim",
                     "observation_labels",
                     "n_actions", "action_labels", "scenario", "learners", "opponents"):
            setattr(self, attr, getattr(real, attr))
        self.num_envs, self.length, self.battles_skipped = num_envs, length, 0
        rng = np.random.default_rng(0)
        self.obs = rng.random((num_envs, self.obs_dim), dtype=np.float32)
        self.mask = rng.random((num_envs, self.n_actions)) < 0.3
        self.mask[:, 0] = True
        self.rewards = np.zeros((num_envs, self.num_agents), dtype=np.float32)
        self.terminated = np.zeros(num_envs, dtype=bool)
        self.truncated = np.zeros(num_envs, dtype=bool)
        self.seats = np.array([self.possible_agents.index(a) for a in self.learners])
        self.info = {"agent": np.full(num_envs, self.seats[0], dtype=np.int64),
                     "winner": np.full(num_envs, -1, dtype=np.int8)}
        self.t = 0
        self.win = np.where(self.agent_sides == 0, 1.0, -1.0).astype(np.float32)

    def reset(self, seed: int | None = None) -> tuple:
        return self.obs, self.mask, self.info

    def step(self, actions: Any) -> tuple:
        import numpy as np

        self.t += 1
        self.info["agent"][:] = self.seats[self.t % len(self.seats)]
        end = (np.arange(self.num_envs) + self.t) % self.length == 0
        self.terminated[:] = end
        self.info["winner"][:] = np.where(end, 0, -1)
        self.rewards[:] = 0.0
        self.rewards[end] = self.win
        return (self.obs, self.mask, self.rewards, self.terminated, self.truncated,
                self.info)


def train_ppo_figures(scenario: str, backend: str, decisions: int, num_envs: int,
                      num_steps: int, threads: int, env_threads: int = 1,
                      device: str = "cpu", opponents: str = "red=random",
                      overlap: bool = False, update_threads: int = 0) -> dict[str, Any]:
    """``traveller_rl/ppo/trainer.py`` for ``decisions`` learner decisions against
    ``opponents`` (no evaluation, run folder in a temporary directory): its own timers, and
    ``others_cpu``, the cores other processes used meanwhile (``None`` without
    ``/proc/stat``). Backend ``"free"`` trains on ``FreeVector`` instead (the learner-only
    ceiling). ``overlap``: the trainer's ``--overlap`` (core backend); ``update_threads``:
    its ``--update-threads`` (0: its default)."""
    import io
    import tempfile

    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.rows import Group
    from traveller_rl.ppo.rows import env_threads as env_threads_of
    from traveller_rl.ppo.trainer import train
    from traveller_rl.ppo.update import resolve_device
    from traveller_rl.ppo.update import update_threads as update_threads_of

    with tempfile.TemporaryDirectory() as tmp:
        args = Args(scenario=scenario, opponents=opponents, total_timesteps=decisions,
                    seed=0, out=tmp, backend="python" if backend == "free" else backend,
                    num_envs=num_envs, num_steps=num_steps, env_threads=env_threads,
                    device=device, threads=threads, eval_every=0, eval_battles=0,
                    final_eval_battles=0, progress=False, overlap=overlap,
                    update_threads=update_threads)
        prepared = None
        if backend == "free":
            prepared = ([Group(FreeVector(scenario, num_envs), 0, num_envs, "learn", 0,
                               "free", "free")], {})
        busy, own, start = busy_seconds(), own_seconds(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            train(args, prepared)
        wall = time.perf_counter() - start
        others = (None if busy is None else
                  max(0.0, (busy_seconds() - busy) - (own_seconds() - own)) / wall)
        result = json.loads((Path(tmp) / "evaluation.json").read_text())
    return {"scenario": scenario, "backend": backend, "num_envs": num_envs,
            "num_steps": num_steps, "threads": threads,
            "update_threads": update_threads_of(update_threads),
            "env_threads": env_threads_of(args) if backend == "core" else 1,
            "device": str(resolve_device(device)), "overlap": overlap,
            "others_cpu": others, "decisions": result["decisions"],
            "seconds": result["train_seconds"],
            "decisions_per_second": result["decisions_per_second"],
            "env_share": result["time_shares"]["env"],
            "inference_share": result["time_shares"]["inference"],
            "update_share": result["time_shares"]["update"],
            # the rollouts alone: decisions over the time spent in battles and inference
            "rollout_decisions_per_second": result["decisions"] / (
                result["train_seconds"] * (result["time_shares"]["env"]
                                           + result["time_shares"]["inference"]))}


# ------------------------------------------------------------------ the research recipe
#: The training flags of the distribution recipe (docs/generalisation.md, "A policy trained on
#: a distribution"), less its budget, evaluations and output.
RECIPE = dict(scenario="gen:squad", layout="6v6", pool=True, pool_every=10, pool_size=30,
              pool_scripted="rush,marksman,cover", pool_scripted_share=0.3,
              side_shares="blue=0.65,red=0.35", arch="entity", embed=64, hidden="256,256",
              move_view=True, attack_view=True, potential="clear_shots=1.0,exposed=-1.0",
              knockouts="enemies_out=0.25,allies_out=-0.25", lr=0.0002, env_threads=1,
              update_threads=1, seed=1)


def reference_encode(self: Any, obs: Any) -> tuple[Any, Any, Any]:
    """``EntityEncoder.encode`` as it was written first (the straightforward reading of its
    docstring: gather, concatenate, encode, pool), kept as the reference the package's
    restructured one must equal."""
    import torch

    b = obs.shape[0]
    slots_x = obs[:, self.slot_idx]
    present = slots_x[..., self.present_col] > 0.5
    enemy = self.slot_enemy.expand(b, -1, -1)
    slot_e = self.slot_enc(torch.cat([slots_x, enemy], -1))
    for block in (self.slot_attn if self.attention else ()):
        slot_e = block(slot_e, present)
    pieces = [obs[:, self.global_idx]]
    for group in (~self.is_enemy, self.is_enemy):
        m = (present & group).unsqueeze(-1).float()
        pieces.append((slot_e * m).sum(1) / m.sum(1).clamp(min=1.0))
    m_en = (present & self.is_enemy).unsqueeze(-1)
    best = torch.where(m_en, slot_e, torch.full_like(slot_e, -1.0)).amax(1)
    pieces.append(best * m_en.any(1).float())
    sq_e = None
    if self.square_enc is not None:
        geo = self.square_geo.expand(b, -1, -1)
        sq_e = self.square_enc(torch.cat([obs[:, self.square_idx], geo], -1))
        pieces += [sq_e.mean(1), sq_e.amax(1)]
    return self.trunk(torch.cat(pieces, -1)), slot_e, sq_e


def reference_actor_forward(self: Any, obs: Any) -> Any:
    """``EntityActor.forward`` as it was written first: each head on its own, the pointers
    by ``einsum`` (the reference of the package's fused heads)."""
    import torch

    from traveller_agents.entity_net import POINTER_KINDS

    b = obs.shape[0]
    h, slot_e, sq_e = reference_encode(self, obs)
    q = self.slot_query(h).reshape(b, len(POINTER_KINDS), -1)
    slot_logits = torch.einsum("bke,bse->bsk", q, slot_e) + self.slot_bias(slot_e)
    outs = [self.base_head(h), slot_logits.reshape(b, -1)]
    if sq_e is not None:
        sq_logits = torch.einsum("be,bqe->bq", self.square_query(h), sq_e)
        outs.append(sq_logits + self.square_bias(sq_e).squeeze(-1))
    return torch.cat(outs, -1).index_select(1, self.source)


@contextlib.contextmanager
def reference_path() -> Iterator[None]:
    """Inside the block, training runs today's code path as it was before the speed-up: the
    reference entity network, and the rollout's inference under ``no_grad``."""
    from unittest import mock

    import torch

    from traveller_agents.entity_net import EntityActor, EntityEncoder

    with mock.patch.object(EntityEncoder, "encode", reference_encode), \
            mock.patch.object(EntityActor, "forward", reference_actor_forward), \
            mock.patch.object(torch, "inference_mode", torch.no_grad):
        yield


def recipe_figures(decisions: int, num_envs: int, num_steps: int, seeds: str,
                   reference: bool, compiled: bool = False) -> dict[str, Any]:
    """One run of ``RECIPE`` (no evaluation; ``reference``: inside ``reference_path``): its
    decisions per second (the whole run's, and ``steady``: over its second half, after any
    compiling), time shares, and the cores other processes used meanwhile; ``compiled``: with
    ``--compile``."""
    import io
    import tempfile

    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.trainer import train

    with tempfile.TemporaryDirectory() as tmp:
        args = Args(**RECIPE, scenario_seeds=seeds, num_envs=num_envs, num_steps=num_steps,
                    total_timesteps=decisions, eval_every=0, eval_battles=0,
                    final_eval_battles=0, progress=False, out=tmp, compile=compiled)
        busy, own, start = busy_seconds(), own_seconds(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), \
                (reference_path() if reference else contextlib.nullcontext()):
            train(args)
        wall = time.perf_counter() - start
        result = json.loads((Path(tmp) / "evaluation.json").read_text())
        curve = [json.loads(line) for line in
                 (Path(tmp) / "training.jsonl").read_text().splitlines()]
    others = (None if busy is None else
              max(0.0, (busy_seconds() - busy) - (own_seconds() - own)) / wall)
    half, last = curve[(len(curve) - 1) // 2], curve[-1]
    steady = ((last["decisions"] - half["decisions"]) / (last["seconds"] - half["seconds"])
              if last["seconds"] > half["seconds"] else None)
    return {"reference": reference, "compiled": compiled, "decisions": result["decisions"],
            "decisions_per_second": result["decisions_per_second"],
            "steady_decisions_per_second": steady,
            "others_cpu": others, **{f"{k}_share": v for k, v in result["time_shares"].items()}}


def recipe_comparison(args: argparse.Namespace) -> dict[str, Any]:
    """``--recipe``: the reference path and the package's (and with ``--recipe-compile`` the
    package's with ``--compile``) in alternating rounds; prints each run and the ratios of the
    medians, over whole runs and over their second halves (``steady``, after compiling)."""
    variants = {"before": (True, False), "after": (False, False)}
    if args.recipe_compile:
        variants["compiled"] = (False, True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for _ in range(max(1, args.recipe_repeats)):
        for name, (reference, compiled) in variants.items():
            row = recipe_figures(args.recipe_decisions, args.recipe_num_envs,
                                 args.recipe_num_steps, args.recipe_seeds, reference, compiled)
            runs[name].append(row)
            steady = row["steady_decisions_per_second"] or float("nan")
            print(f"{name:<9}{row['decisions_per_second']:>10,.0f} decisions/s (steady "
                  f"{steady:,.0f})  env {row['env_share']:.0%}, inference "
                  f"{row['inference_share']:.0%}, update {row['update_share']:.0%}", flush=True)
    medians = {name: {key: statistics.median(r[key] or float("nan") for r in rows)
                      for key in ("decisions_per_second", "steady_decisions_per_second")}
               for name, rows in runs.items()}
    before, after = medians["before"]["decisions_per_second"], \
        medians["after"]["decisions_per_second"]
    print(f"the recipe: {before:,.0f} -> {after:,.0f} decisions/s, {after / before:.2f}x")
    out = {"before": before, "after": after, "ratio": after / before, "medians": medians,
           "runs": [r for rows in runs.values() for r in rows]}
    if args.recipe_compile:
        for key in ("decisions_per_second", "steady_decisions_per_second"):
            ratio = medians["compiled"][key] / medians["before"][key]
            out[f"compiled_ratio_{key}"] = ratio
            print(f"with --compile ({key}): {medians['before'][key]:,.0f} -> "
                  f"{medians['compiled'][key]:,.0f}, {ratio:.2f}x")
    return out


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median decisions per second (the lower middle one of an even count),
    with every run's figure (``rounds``) and other processes' cores (``rounds_others_cpu``)."""
    ordered = sorted(runs, key=lambda r: r["decisions_per_second"])
    row = dict(ordered[(len(ordered) - 1) // 2])
    row["rounds"] = [r["decisions_per_second"] for r in runs]
    row["rounds_others_cpu"] = [r["others_cpu"] for r in runs]
    row["median_decisions_per_second"] = statistics.median(row["rounds"])
    return row


def ppo_backends(text: str) -> list[str]:
    """The ``--ppo-backends`` list (``auto``: python, and core when it is built)."""
    from traveller_env import vector

    if text == "auto":
        return ["python"] + (["core"] if vector.BACKENDS.get("core") == "available" else [])
    names = [b.strip() for b in text.split(",") if b.strip()]
    for b in names:
        if vector.BACKENDS.get(b) != "available":
            raise SystemExit(f"bench_train: error: --ppo-backends: backend {b!r} is "
                             f"{vector.BACKENDS.get(b, 'unknown')} (backends: "
                             f"{', '.join(vector.BACKENDS)})")
    return names


def main(argv: list[str] | None = None) -> int:
    """Train briefly, print frames per second and the environment's share of wall time; then
    the train_ppo section."""
    args = build_parser().parse_args(argv)
    if args.recipe:
        figures = recipe_comparison(args)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"recipe": figures}, indent=2) + "\n")
        return 0
    backends = ppo_backends(args.ppo_backends)

    import torch

    env_threads = [int(k) for k in args.ppo_env_threads.split(",") if k.strip()]
    torch_threads = [int(k) for k in str(args.ppo_threads).split(",") if k.strip()]
    learner_threads = [int(k) for k in str(args.ppo_update_threads).split(",") if k.strip()]
    devices = [d.strip() for d in args.ppo_device.split(",") if d.strip()]
    overlaps = overlap_modes(args.ppo_overlap)
    if args.ppo_repeats < 1:
        raise SystemExit(f"bench_train: error: --ppo-repeats must be at least 1, got "
                         f"{args.ppo_repeats}")
    sb3: dict[str, float] = {"fps": float("nan"), "env_share": float("nan"),
                             "env_us_per_step": float("nan")}
    alone: dict[str, float] = {}
    if not args.skip_maskable:
        sb3 = maskable_ppo(args.scenario, args.timesteps, args.n_envs)
        print(f"MaskablePPO on {args.scenario} ({args.n_envs} env, torch threads 1): "
              f"{sb3['fps']:,.0f} steps/s over {args.timesteps} steps ({sb3['wall']:.1f} s)")
        print(f"time inside the environment: {sb3['env_share']:.1%} of wall time "
              f"({sb3['env_us_per_step']:.0f} us per step)")
        alone = isolated_step_us(args.scenario)
        print(f"the same steps outside training (random legal learner): bridge "
              f"{alone['bridge_us']:.0f} us, through DummyVecEnv "
              f"{alone['dummy_vec_env_us']:.0f} us per step")
    fps, share = sb3["fps"], sb3["env_share"]

    rows: list[dict[str, Any]] = []
    scenarios = [s.strip() for s in args.ppo_scenarios.split(",") if s.strip()]
    if scenarios:
        print(f"\ntrain_ppo end to end ({args.ppo_decisions:,} learner decisions on python, "
              f"{args.ppo_fast_decisions:,} on the others; --opponents {args.ppo_opponents}, "
              f"torch threads {args.ppo_threads}, N x T = --num-envs x --num-steps) beside "
              f"MaskablePPO ({args.timesteps} steps, learner blue vs random), same run:")
        print(f"{'scenario':<10}{'trainer':<34}{'N x T':>10}{'decisions/s':>13}"
              f"{'env share':>11}{'inference':>11}{'updates':>9}{'vs MaskablePPO':>16}")
    for scenario in scenarios:
        ref = sb3 if (args.skip_maskable or (scenario == args.scenario and args.n_envs == 1)) \
            else maskable_ppo(scenario, args.timesteps, 1)
        if not args.skip_maskable:
            print(f"{scenario:<10}{'MaskablePPO (1 env)':<34}{'':>10}{ref['fps']:>13,.0f}"
                  f"{ref['env_share']:>11.1%}{'':>11}{'':>9}{'1.0x':>16}")
        for backend in [*backends, *([] if args.skip_free else ["free"])]:
            n, t, d = ((args.ppo_num_envs, args.ppo_num_steps, args.ppo_decisions)
                       if backend == "python" else
                       (args.ppo_fast_num_envs, args.ppo_fast_num_steps,
                        args.ppo_fast_decisions))
            configs = [(k, th, u, device, ov) for u in learner_threads
                       for th in torch_threads for k in env_threads
                       for device in devices for ov in overlaps] if backend == "core" else \
                [(1, torch_threads[0], learner_threads[0], device, False) for device in devices]
            repeats = args.ppo_repeats if backend == "core" else 1
            runs: dict[tuple, list[dict[str, Any]]] = {c: [] for c in configs}
            for _ in range(repeats):  # alternating rounds: each configuration once per round
                for k, th, u, device, ov in configs:
                    wait_quiet(args.ppo_wait_quiet)
                    runs[(k, th, u, device, ov)].append(train_ppo_figures(
                        scenario, backend, d, n, t, th, env_threads=k,
                        device=device, opponents=args.ppo_opponents, overlap=ov,
                        update_threads=u))
            first = None
            for config in configs:
                row = median_run(runs[config])
                first = first or row["decisions_per_second"]
                row["ratio_to_first"] = row["decisions_per_second"] / first
                row["maskable_ppo_fps"] = ref["fps"]
                row["maskable_ppo_env_share"] = ref["env_share"]
                row["ratio_to_maskable_ppo"] = row["decisions_per_second"] / ref["fps"]
                rows.append(row)
                label = ("train_ppo (free env" if backend == "free"
                         else f"train_ppo ({backend}") + (
                    f", {row['env_threads']} env thr" if backend == "core" else "") + (
                    f", {row['threads']} torch thr" if len(torch_threads) > 1 else "") + (
                    f", {row['update_threads']} upd thr" if len(learner_threads) > 1 else "") + (
                    ", overlap" if row["overlap"] else "") + f", {row['device']})"
                print(f"{'':<10}{label:<34}{f'{n} x {t}':>10}"
                      f"{row['decisions_per_second']:>13,.0f}{row['env_share']:>11.1%}"
                      f"{row['inference_share']:>11.1%}{row['update_share']:>9.1%}"
                      f"{row['ratio_to_maskable_ppo']:>15.1f}x", flush=True)
                if repeats > 1:
                    print(f"{'':<12}{row['ratio_to_first']:.2f}x the first row (rollouts "
                          f"alone: {row['rollout_decisions_per_second']:,.0f}/s); rounds: "
                          + ", ".join(f"{x:,.0f}" for x in row["rounds"])
                          + ("; other processes' cores: "
                             + ", ".join(f"{c:.2f}" for c in row["rounds_others_cpu"])
                             if None not in row["rounds_others_cpu"] else ""), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "scenario": args.scenario, "timesteps": args.timesteps, "n_envs": args.n_envs,
            "fps": fps, "env_share": share,
            "env_us_per_step_in_training": sb3["env_us_per_step"],
            "isolated_us_per_step": alone, "python": platform.python_version(),
            "torch": torch.__version__, "train_ppo": rows}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
