"""Data-parallel training over several processes (PyTorch's ``torch.distributed``):
``torchrun --nproc-per-node N -m traveller_cli train ppo ...`` on one machine, or
``torchrun --nnodes M --node-rank K --master-addr HOST --master-port PORT ...`` on several.

Every process (a *rank*) steps its own battles in the core, with battle seeds of its own
(``rank_seed``: rank 0 plays the run seed's battles, so one process under torchrun is the plain
run; the others derive theirs from the run seed and their rank, so no two ranks play the same
battles), samples its own actions, computes its GAE, advantage normalisation and minibatches
on its own rollout, and before each optimizer step the gradients are averaged over the ranks
(``Cluster.average_grads``: one ``all_reduce`` of every gradient in one flat buffer, then a
division by the world size; a fixed reduction order, so the same seeds and world size give
the same bytes). Every rank then takes the same step and holds the same weights (checked at
every resume checkpoint and at the end, ``Cluster.check_same_weights``).

``--total-timesteps`` and the learning-rate schedule count every rank's decisions
(``Cluster.total``); the time limits and time-based checkpoints follow rank 0's clock
(``Cluster.writers``). Only rank 0 (the *writer*) writes: the run folder, ``ppo.pt``, the
pool's checkpoints, the logs, TensorBoard, the evaluations, ``resume.ckpt``; the other ranks
print nothing (their standard output is discarded; errors still reach standard error). The
logs' decisions and decisions/s are every rank's together, the training battles' win rate
every rank's battles.

The resume checkpoint is one file written by rank 0 (``RankState``): rank 0's state as a
single process writes it, ``world_size``, and under ``ranks`` each other rank's own part (its
vectors' snapshots, rows, rollout, generators, battle statistics, pool draws; the network and
the optimizer are rank 0's, the same on every rank). On resume rank 0 reads it and sends each
rank its part (``Cluster.resumed``); a checkpoint written with another world size is refused
naming both (``check_world``).

The processes talk over ``gloo`` on CPUs and ``nccl`` for the gradients when ``--device``
resolves to ``cuda`` (each process then uses GPU ``LOCAL_RANK``); the small agreements
(decision counts, flags, checkpoint parts) always go over a ``gloo`` group.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import numpy as np

from traveller_rl.ppo.args import Args
from traveller_rl.ppo.resume import REQUIRED, read_checkpoint, write_checkpoint
from traveller_rl.ppo.run_state import RunState

__all__ = ["ENV_VARS", "Cluster", "RankState", "agreed", "check_world", "from_environment",
           "join", "leave_process", "quiet", "rank_seed"]

T = TypeVar("T")

#: The environment variables torchrun sets that ``from_environment`` reads.
ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
#: The sub-stream of the run seed the other ranks' seeds come from.
RANK_STREAM = 0x52414E4B  # "RANK"
#: How long a rank waits for the others at a collective before it gives up.
TIMEOUT = timedelta(minutes=30)
#: Whether this process joined a process group (``join``): its entry point then ends it with
#: ``leave_process`` (``traveller_rl.commandline.process_status``).
JOINED = False
#: What a rank's part of the resume checkpoint leaves out: rank 0's, the same on every rank.
SHARED = ("args", "update", "decisions", "net", "optimizer", "history", "training_curve",
          "lines")


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank ``rank``'s battles, sampling and minibatches: the run seed on rank 0
    (so one process under torchrun plays the plain run), a sub-stream of it on the others."""
    from traveller_env.rules.rng import derive_seed

    return seed if rank == 0 else derive_seed(derive_seed(seed, RANK_STREAM), rank)


def check_world(saved: dict[str, Any], world: int) -> None:
    """``ValueError`` naming ``--resume`` when the checkpoint ``saved`` was written by a run on
    another number of processes than ``world`` (a checkpoint without the key: one)."""
    was = int(saved.get("world_size", 1))
    if was != world:
        raise ValueError(f"--resume: the run was trained on {was} process"
                         f"{'es' if was != 1 else ''} (torchrun's world size) and resumes on "
                         f"{world}; resume it with the same world size ({was}): each rank "
                         "continues its own battles")


@dataclass
class Cluster:
    """This process's place among the run's processes: its ``rank`` of ``world``. The default,
    ``Cluster()``, is a process training alone: every collective is then the identity and
    nothing is sent anywhere. ``join`` and ``from_environment`` make a joined one."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    grads_group: Any = None
    """the process group the gradients are averaged over (nccl on GPUs, gloo on CPUs)"""
    control: Any = None
    """a gloo group for the small agreements on the CPU (None: this process alone)"""
    _torch: Any = field(default=None, repr=False)

    @property
    def joined(self) -> bool:
        """Whether this process is one of a torch.distributed run (even of one process)."""
        return self.control is not None

    @property
    def writer(self) -> bool:
        """Whether this process writes the run's outputs (rank 0)."""
        return self.rank == 0

    # ---------------------------------------------------------------- seeds and arguments
    def seed(self, seed: int) -> int:
        """This rank's seed of the run seed ``seed`` (``rank_seed``)."""
        return rank_seed(seed, self.rank)

    def battle_args(self, args: Args) -> Args:
        """``args`` with this rank's seed, for building its training vectors (rank 0 and a
        process alone: ``args`` itself)."""
        if self.rank == 0:
            return args
        mine = copy.deepcopy(args)
        mine.budget.seed = self.seed(args.budget.seed)
        return mine

    @staticmethod
    def no_save(path: Path, update: int, decisions: int) -> None:
        """The policy saver of the ranks that write nothing (``PolicySaver``'s signature)."""

    # ---------------------------------------------------------------- agreements
    def total(self, count: int) -> int:
        """``count`` summed over the ranks (every rank's decisions)."""
        if not self.joined:
            return count
        t = self._torch.tensor([count], dtype=self._torch.int64)
        self._torch.distributed.all_reduce(t, group=self.control)
        return int(t.item())

    def most(self, count: int) -> int:
        """The largest of the ranks' ``count``."""
        if not self.joined:
            return count
        dist = self._torch.distributed
        t = self._torch.tensor([count], dtype=self._torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return int(t.item())

    def writers(self, value: T) -> T:
        """Rank 0's ``value`` on every rank (a picklable object: a flag, a path)."""
        if not self.joined:
            return value
        box = [value if self.writer else None]
        self._torch.distributed.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def writers_result(self, make: Callable[[], T]) -> T:
        """``make()`` called on rank 0 only, its result on every rank."""
        return self.writers(make() if self.writer else None)  # type: ignore[arg-type]

    def gathered(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order, on every rank."""
        if not self.joined:
            return [value]
        out: list[Any] = [None] * self.world
        self._torch.distributed.all_gather_object(out, value, group=self.control)
        return out

    # ---------------------------------------------------------------- the network
    def share_weights(self, net: Any) -> None:
        """Rank 0's weights copied into every rank's ``net`` (parameters and buffers)."""
        if not self.joined or self.world == 1:
            return
        for tensor in [*net.parameters(), *net.buffers()]:
            self._torch.distributed.broadcast(tensor.data, src=0, group=self.grads_group)

    @property
    def grads(self) -> Callable[[Any], None] | None:
        """``ppo_update``'s gradient hook: ``average_grads`` when joined, else ``None``."""
        return self.average_grads if self.joined else None

    def average_grads(self, net: Any) -> None:
        """Replace every rank's gradients of ``net`` by their mean over the ranks: one
        ``all_reduce`` (sum) of all of them in one flat buffer, divided by the world size. A
        parameter with no gradient on a rank counts as 0 there; one with no gradient on any
        rank keeps none (as a single process leaves it)."""
        torch = self._torch
        params = [p for p in net.parameters() if p.requires_grad]
        device = params[0].device
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                          for p in params]
                         + [torch.tensor([float(p.grad is not None) for p in params],
                                         device=device, dtype=params[0].dtype)])
        torch.distributed.all_reduce(flat, group=self.grads_group)
        flat /= self.world
        had = flat[-len(params):].cpu()
        start = 0
        for p, any_grad in zip(params, had.tolist(), strict=True):
            mean = flat[start:start + p.numel()].view_as(p)
            start += p.numel()
            if not any_grad:
                continue
            if p.grad is None:
                p.grad = mean.clone()
            else:
                p.grad.copy_(mean)

    def check_same_weights(self, net: Any) -> None:
        """``RuntimeError`` unless every rank holds the same weights, byte for byte."""
        if not self.joined or self.world == 1:
            return
        digest = hashlib.sha256()
        for name, tensor in net.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        digests = self.gathered(digest.hexdigest())
        if len(set(digests)) != 1:
            raise RuntimeError("distributed training: the ranks' weights differ (digests "
                               f"{digests}); every rank must take the same optimizer steps")

    # ---------------------------------------------------------------- statistics
    def merge_stats(self, stats: Any) -> None:
        """Every rank's ended training battles since the last update, summed into each rank's
        ``BattleStats`` (so the logged win rate is every rank's), in rank order."""
        if not self.joined or self.world == 1:
            return
        parts = self.gathered({"battles": stats.battles, "decided": stats.decided,
                               "wins": stats.wins, "lengths": stats.lengths,
                               "returns": stats.returns})
        stats.battles = sum(p["battles"] for p in parts)
        stats.decided = np.sum([p["decided"] for p in parts], axis=0).astype(np.int64)
        stats.wins = np.sum([p["wins"] for p in parts], axis=0).astype(np.int64)
        stats.lengths = [n for p in parts for n in p["lengths"]]
        stats.returns = [r for p in parts for r in p["returns"]]

    # ---------------------------------------------------------------- resume
    def resumed(self, folder: Path) -> dict[str, Any]:
        """The resume checkpoint in ``folder`` as this rank continues from it: rank 0 reads
        it (``ValueError`` when another world size wrote it) and sends every other rank its
        own part, completed with rank 0's network, optimizer and records."""
        if not self.joined:
            saved = read_checkpoint(folder, REQUIRED)
            check_world(saved, 1)
            return saved
        parts = None
        if self.writer:
            saved = read_checkpoint(folder, REQUIRED)
            check_world(saved, self.world)
            shared = {k: saved[k] for k in SHARED if k in saved}
            parts = [saved] + [{**part, **shared, "lines": {}} for part in saved["ranks"]]
        box: list[Any] = [None]
        self._torch.distributed.scatter_object_list(box, parts, src=0, group=self.control)
        return box[0]

    def run_state_type(self) -> Callable[..., RunState]:
        """The class of the run's state: ``RunState`` alone, ``RankState`` bound to this
        cluster when joined."""
        if not self.joined:
            return RunState

        def make(*args: Any, **kwargs: Any) -> RankState:
            return RankState(*args, cluster=self, **kwargs)
        return make

    def close(self, finished: bool = True) -> None:
        """Leave the process group (nothing alone; a second call does nothing).
        ``finished`` (every rank got to the end of training): wait for the others first, so
        that the ranks leave together; after an error, leave at once. The process itself
        ends through ``leave_process``."""
        if self.joined:
            if finished:
                self._torch.distributed.barrier(group=self.control)
            self._torch.distributed.destroy_process_group()
            self.control = self.grads_group = None


@dataclass
class RankState(RunState):
    """A ``RunState`` of one rank of a joined run: rank 0 writes the logs and the one resume
    checkpoint (with every rank's part); the others write nothing and evaluate nothing."""

    cluster: Cluster = field(default_factory=Cluster)

    def evaluate(self, eval_vectors: dict, writer: Any, train_win: float | None) -> dict:
        """Rank 0's evaluation; on the others an empty record (they play no evaluation)."""
        if self.cluster.writer:
            return super().evaluate(eval_vectors, writer, train_win)
        record = {"update": self.update, "decisions": self.decisions,
                  "train_win_rate": train_win, "eval": {}}
        self.history.append(record)
        return record

    def record_update(self, point: dict) -> None:
        """Rank 0 logs the update (``training.jsonl``); the others keep it only."""
        if self.cluster.writer:
            super().record_update(point)
        else:
            self.training_curve.append(point)

    def checkpoint(self) -> None:
        """Rank 0 gathers every rank's part and writes the one resume checkpoint; every rank
        first checks that the weights are the same everywhere."""
        self.cluster.check_same_weights(self.net)
        mine = self.state()
        part = None if self.cluster.writer else {k: v for k, v in mine.items()
                                                  if k not in SHARED}
        parts = self.cluster.gathered(part)
        if self.cluster.writer:
            write_checkpoint(self.out, {**mine, "world_size": self.cluster.world,
                                        "ranks": parts[1:]})


# ---------------------------------------------------------------------------- joining
def join(rank: int, world: int, init_method: str, device: str = "cpu",
         local_rank: int | None = None) -> Cluster:
    """Join a run of ``world`` processes as ``rank`` (``init_method``: ``env://`` under
    torchrun, ``tcp://HOST:PORT`` otherwise): gradients over ``nccl`` when ``device`` (the
    trainer's ``--device``) resolves to cuda, else ``gloo``; agreements over ``gloo``."""
    import torch
    import torch.distributed as dist

    from traveller_rl.ppo.update import resolve_device

    local = rank if local_rank is None else local_rank
    cuda = resolve_device(device).type == "cuda"
    if cuda:
        torch.cuda.set_device(local % torch.cuda.device_count())
    global JOINED
    JOINED = True
    dist.init_process_group("nccl" if cuda else "gloo", init_method=init_method, rank=rank,
                            world_size=world, timeout=TIMEOUT)
    control = dist.new_group(backend="gloo", timeout=TIMEOUT) if cuda else dist.group.WORLD
    return Cluster(rank, world, local, dist.group.WORLD, control, torch)


def leave_process(status: int) -> NoReturn:
    """End a process that joined a run with ``status``, its output flushed, without the
    interpreter's finalization (``os._exit``).

    Why: gloo runs each collective on a worker thread of its own, and the thread drops its
    reference to a finished collective after the caller has been told it is done. When that
    reference is the last one to a tensor Python has already let go of (an
    ``all_gather_object``'s can be), dropping it takes the GIL. A rank that ends right
    after its last collective can be finalizing the interpreter by then; the worker thread
    is then made to exit inside a C++ destructor and the process aborts
    (``terminate called without an active exception``, SIGABRT) after a run that succeeded:
    rare (about one of the tests' short launches in 30 on two cores), seen in a core file
    as ``ProcessGroupGloo::runLoop`` -> ``~AsyncWork`` -> ``decref_pyobject`` ->
    ``take_gil`` -> ``pthread_exit``. Nothing is left to finalize: the trainer has written
    and closed its files and left the process group."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def from_environment(device: str = "cpu") -> Cluster | None:
    """The cluster torchrun started this process in (its ``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``), joined; ``None`` outside torchrun."""
    env = os.environ
    if not all(name in env for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return None
    return join(int(env["RANK"]), int(env["WORLD_SIZE"]), "env://", device,
                int(env.get("LOCAL_RANK", env["RANK"])))


def agreed(cluster: Cluster | None, make: Callable[[], T]) -> T:
    """``make()`` on every rank; when it raises ``ValueError`` (or the like) on any rank,
    every rank stops: rank 0 raises that ``ValueError`` (the first rank's message, naming the
    rank when it is not 0's), the others exit with status 2 in silence."""
    if cluster is None or not cluster.joined:
        return make()
    error: BaseException | None = None
    result: Any = None
    try:
        result = make()
    except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as exc:
        error = exc
    errors = cluster.gathered(None if error is None else str(error))
    failed = [(rank, message) for rank, message in enumerate(errors) if message is not None]
    if not failed:
        return result
    if not cluster.writer:
        raise SystemExit(2)
    rank, message = failed[0]
    raise ValueError(message if rank == 0 else f"rank {rank}: {message}")


@contextlib.contextmanager
def quiet(cluster: Cluster | None) -> Iterator[None]:
    """Standard output discarded inside the block on every rank but 0 (standard error
    kept: a failing rank still says why)."""
    if cluster is None or cluster.writer:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield
