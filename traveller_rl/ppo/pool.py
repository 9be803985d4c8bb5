"""The ``--pool`` opponents of a PPO run: ``FrozenPool``.

Frozen networks (the learner's own past copies, saved every ``--pool-every`` updates; the
``--pool-opponents`` checkpoints; the ``--pool-watch`` runs' checkpoints as they appear) play
the opponent seats of the pool rows. Which member each battle meets, and the learner's record
against each, are kept by ``traveller_rl.pool.OpponentPool`` (the project's one self-play pool
bookkeeping, also behind ``traveller_rl.pool.CheckpointPool``); this class adds what playing them
takes: the networks, the observation columns each reads, and per row the member playing and
whether it plays greedily.

At the start of each pool battle, the row draws the side the learner plays (uniformly, or by
``--side-shares``), then its opponent: on ``--pool-watch-share`` of the battles (once there
are any) one of the latest ``--pool-size`` watched checkpoints, else one of the
``--pool-opponents`` and the latest ``--pool-size`` own copies, uniformly or by PFSP
(``--pool-sampling``); with ``--pool-greedy-share``, whether it plays greedily. Every draw
comes from the run's NumPy generator, in that order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from traveller_rl.pool import OpponentPool
from traveller_rl.ppo.args import Args, names_list
from traveller_rl.ppo.checkpoints import checkpoint_columns, load_fitting
from traveller_rl.ppo.rollout import opponent_actions
from traveller_rl.ppo.rows import (
    draw_sides,
    observation_columns,
    parse_side_shares,
    trained_views,
)
from traveller_rl.ppo.stacked import StackedActors

__all__ = ["FrozenPool"]


class FrozenPool:
    """The frozen opponents of the pool rows ``rows`` (of ``n_rows``) of a run on ``venv``'s
    battles, whose learner reads the first ``learner_dim`` observation columns.

    ``rng`` (NumPy) draws the battles' sides and opponents, ``gen`` (torch) the opponents'
    sampled actions. ``member[r]`` is the pool member playing row ``r`` (-1: not a pool row),
    ``greedy[r]`` whether it plays its most probable legal action. With ``stack``, the
    learner's own drawable copies run in one batched pass (``StackedActors``).
    """

    def __init__(self, venv: Any, rows: range, n_rows: int, learner_dim: int,
                 rng: np.random.Generator, gen: torch.Generator, *, size: int = 20,
                 sampling: str = "uniform", side_shares: np.ndarray | None = None,
                 watch: list[str] | None = None, watch_share: float = 0.5,
                 greedy_share: float = 0.0, stack: bool = True) -> None:
        self.venv = venv
        self.rows = rows
        self.learner_dim = learner_dim
        self.rng, self.gen = rng, gen
        self.pool = OpponentPool(sampling, size)
        self.networks: list[Any] = []
        self.columns: list[slice | np.ndarray] = []  # the observation columns each reads
        self.side_shares = side_shares
        self.watch_folders = list(watch or [])
        self.watch_share = watch_share
        self.greedy_share = greedy_share
        self.stack = stack
        self.member = np.full(n_rows, -1, dtype=np.int64)
        self.greedy = np.zeros(n_rows, dtype=bool)
        self._watch_seen: set[str] = set()  # --pool-watch files looked at (loaded or too old)
        self._stacked_members: tuple[int, ...] = ()
        self._stacked: StackedActors | None = None
        self._stacked_at = np.full(0, -1)  # member index -> its place in the stack (-1: none)
        self._side_names = np.asarray(venv.sides)  # side index -> name (a by-side net asks it)

    @classmethod
    def from_args(cls, args: Args, venv: Any, rows: range, learner_dim: int,
                  rng: np.random.Generator, gen: torch.Generator) -> FrozenPool:
        """The pool of a run with ``args``, its ``--pool-opponents`` loaded (``prepare``
        checked that they fit)."""
        pool = cls(venv, rows, args.budget.num_envs, learner_dim, rng, gen, size=args.pool.size,
                   sampling=args.pool.sampling,
                   side_shares=parse_side_shares(args.battles.side_shares, venv.sides),
                   watch=names_list(args.pool.watch), watch_share=args.pool.watch_share,
                   greedy_share=args.pool.greedy_share, stack=args.pool.stack)
        for path in names_list(args.pool.opponents):
            pool.add(load_fitting(path), observation_columns(venv, dict(trained_views(path))),
                     "external", path)
        return pool

    # ---- members
    def add(self, network: Any, columns: slice | np.ndarray, kind: str, name: str) -> int:
        """A frozen network joins the pool (``kind``: ``external``, ``own`` or ``watched``);
        returns its member index."""
        self.networks.append(network)
        self.columns.append(columns)
        return self.pool.add(name, kind)

    def freeze(self, net: Any, update: int) -> str:
        """A frozen copy of the learner ``net`` joins the pool; returns the name of its
        checkpoint in the run folder (``pool/ppo_u<update>.pt``: the caller saves it)."""
        copy = net.twin().cpu()  # the pool plays on the CPU, whatever --device
        copy.eval()
        name = f"pool/ppo_u{update:06d}.pt"
        self.add(copy, slice(0, self.learner_dim), "own", name)
        return name

    def watch(self) -> None:
        """Load the ``--pool-watch`` runs' pool checkpoints saved since the last look (only the
        newest ``--pool-size`` of each: older ones would never be drawn)."""
        from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint

        for folder in self.watch_folders:
            found = sorted(str(p) for p in (Path(folder) / "pool").glob("ppo_u*.pt"))
            new = [p for p in found if p not in self._watch_seen]
            self._watch_seen.update(new)
            for path in new[-self.pool.size:] if self.pool.size else new:
                data = read_checkpoint(path)
                cols = checkpoint_columns("--pool-watch", path, data, self.venv)
                self.add(network_from_checkpoint(data), cols, "watched", path)

    # ---- resume
    def state(self) -> dict[str, Any]:
        """What a resume checkpoint keeps of the pool: its members (names: checkpoint paths,
        the own copies' relative to the run folder), their statistics, each row's member and
        greedy draw, and the watched files looked at. The draws' generators are the run's
        (saved with its other generators)."""
        return {"pool": self.pool.state(), "member": self.member.copy(),
                "greedy": self.greedy.copy(), "watch_seen": sorted(self._watch_seen)}

    def load_state(self, state: dict[str, Any], learner: Any, folder: Path) -> None:
        """Put the pool back as ``state`` recorded it: every member's network loaded again from
        its checkpoint (an own copy from ``folder``'s ``pool/``, as a CPU twin of ``learner``
        holding those weights), in the order they joined."""
        from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint

        self.pool.load_state(state["pool"])
        self.networks, self.columns = [], []
        for member in self.pool.members:
            if member.kind == "own":
                saved = network_from_checkpoint(read_checkpoint(Path(folder) / member.name))
                network = learner.twin().cpu()
                network.load_state_dict(saved.state_dict())
                network.eval()
                columns: slice | np.ndarray = slice(0, self.learner_dim)
            elif member.kind == "watched":
                data = read_checkpoint(member.name)
                network = network_from_checkpoint(data)
                columns = checkpoint_columns("--pool-watch", member.name, data, self.venv)
            else:
                network = load_fitting(member.name)
                columns = observation_columns(self.venv, dict(trained_views(member.name)))
            self.networks.append(network)
            self.columns.append(columns)
        self.member[...] = state["member"]
        self.greedy[...] = state["greedy"]
        self._watch_seen = set(state["watch_seen"])
        self._stacked_members, self._stacked = (), None
        self._stacked_at = np.full(0, -1)

    # ---- battles
    def start_battles(self, rows: np.ndarray, row_side: np.ndarray) -> None:
        """New battles in pool ``rows``: the learner's side (written into ``row_side``), its
        frozen opponent, and whether that plays greedily (drawn only with
        ``--pool-greedy-share``, so runs without it keep their draws)."""
        rng = self.rng
        row_side[rows] = draw_sides(rng, len(rows), len(self.venv.sides), self.side_shares)
        watched = self.pool.latest("watched")
        on_watched = rng.random(len(rows)) < self.watch_share if watched else \
            np.zeros(len(rows), dtype=bool)
        if on_watched.any():
            self.member[rows[on_watched]] = self.pool.draw(rng, watched, int(on_watched.sum()))
        if (~on_watched).any():
            candidates = [*self.pool.of_kind("external"), *self.pool.latest("own")]
            self.member[rows[~on_watched]] = self.pool.draw(rng, candidates,
                                                            int((~on_watched).sum()))
        if self.greedy_share:
            self.greedy[rows] = rng.random(len(rows)) < self.greedy_share

    def end_battles(self, done: np.ndarray, winner: np.ndarray, row_side: np.ndarray) -> None:
        """Battles ended in rows ``done`` (any rows; those of the pool count): record each
        pool battle's result against its member, then start the next battles there."""
        ended = done[(done >= self.rows.start) & (done < self.rows.stop)]
        for r in ended:
            self.pool.record(self.member[r], winner[r] == row_side[r])
        if len(ended):
            self.start_battles(ended, row_side)

    def summary(self) -> dict[str, list]:
        """The members and the learner's record against each (``evaluation.json``)."""
        return self.pool.summary()

    # ---- play
    def actions(self, rows: np.ndarray, obs: torch.Tensor, mask: torch.Tensor,
                seats: np.ndarray) -> np.ndarray:
        """The frozen opponents' actions in ``rows`` (each row's member on its own observation
        columns of ``obs``, sampled or greedy as ``greedy`` says; ``seats``: the seat deciding
        in each row of the batch): the learner's own drawable copies in one stacked pass
        (with ``stack``), then every other network in a pass of its own, drawing from ``gen``
        in that order."""
        from traveller_agents.nets import SideNet, actor_logits

        out = np.zeros(len(rows), dtype=np.int64)
        ks = self.member[rows]
        at = np.full(len(rows), -1)
        if self.stack:
            self._restack()
            known = ks < len(self._stacked_at)
            at[known] = self._stacked_at[ks[known]]
            batch = np.flatnonzero(at >= 0)
            if len(batch):
                sel = rows[batch]
                logits = self._stacked.logits(obs[sel, :self.learner_dim],
                                              torch.from_numpy(at[batch]))
                out[batch] = opponent_actions(logits, mask[sel], self.greedy[sel],
                                              self.gen).numpy()
        alone = np.flatnonzero(at < 0)
        for k in np.unique(ks[alone]):
            part = alone[ks[alone] == k]
            sel = rows[part]
            cols = self.columns[k]
            o_k = obs[sel, cols] if isinstance(cols, slice) else \
                obs[sel][:, torch.from_numpy(cols)]
            network = self.networks[k]
            # a by-side frozen checkpoint plays each seat's side's network
            seat_sides = self._side_names[self.venv.agent_sides[seats[sel]]] \
                if isinstance(network, SideNet) else None
            out[part] = opponent_actions(actor_logits(network, o_k, seat_sides), mask[sel],
                                         self.greedy[sel], self.gen).numpy()
        return out

    def _restack(self) -> None:
        """Stack the learner's own drawable copies again when the pool has moved on."""
        members = tuple(self.pool.latest("own"))
        if members != self._stacked_members:
            self._stacked_members = members
            self._stacked = StackedActors([self.networks[k].actor for k in members])
            self._stacked_at = np.full(len(self.networks), -1)
            self._stacked_at[list(members)] = np.arange(len(members))
