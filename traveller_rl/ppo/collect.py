"""The rollout step of the batched trainer: ``Collector`` chooses the rows' actions (the
learner's seats sample from the policy, the pool's seats play frozen), records the learner's
decisions in the rollout and takes in each step's rewards and ended battles. ``collect`` runs
``--num-steps`` such steps, on all rows at once or, with ``--overlap``, on two halves that take
turns (``traveller_rl.ppo.overlap.Pipeline``)."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Chosen", "Collector"]


class Chosen(NamedTuple):
    """One step's choice for some rows: ``actions`` (one per row of the batch; those of the
    rows not chosen for are 0), the learner's ``rows``, and with ``--style`` each of those
    rows' deciding seat and style reward (added once the step is done)."""

    actions: np.ndarray
    rows: np.ndarray
    style_seat: np.ndarray | None = None
    style_reward: np.ndarray | None = None


class Collector:
    """Steps the ``n_rows`` rows of ``batch`` and fills ``rollout`` with the learner's
    decisions.

    ``net`` samples the learner's actions with the generator ``gen`` from the rows'
    observations, uploaded to its device by ``upload`` (``traveller_rl.ppo.rollout.StepUpload``);
    ``pool`` (``FrozenPool`` or ``None``) plays the other seats of its rows; ``shaping``
    (``RewardShaping``) adds its potentials, knock-out progress and style rewards; ``stats``
    (``BattleStats``) counts decisions, rewards and ended battles; ``pipeline`` (``--overlap``)
    steps one half of the rows while the other half's actions are chosen."""

    def __init__(self, n_rows: int, net: Any, batch: Any, pool: Any, rollout: Any,
                 upload: Any, shaping: Any, stats: Any, gen: Any, gamma: float,
                 agent_sides: np.ndarray, pipeline: Any = None) -> None:
        # looked up now, not on import: the tests swap sample_masked for a spy
        from traveller_rl.ppo.rollout import sample_masked

        self.net, self.batch, self.pool, self.rollout = net, batch, pool, rollout
        self.upload, self.shaping, self.stats, self.gen = upload, shaping, stats, gen
        self.gamma, self.agent_sides, self.pipeline = gamma, agent_sides, pipeline
        self.sample_masked = sample_masked
        self.n = n_rows
        self.made = 0  # learner decisions recorded by the rollout under way

    def collect(self, steps: int, timers: Any) -> int:
        """``steps`` steps of every row (``timers``: ``inference`` gains the time choosing,
        ``env`` the time stepping); returns the learner decisions they recorded."""
        self.made = 0
        if self.pipeline is not None:  # one half's battles step while the other's are chosen
            self.pipeline.rollout(steps, self.decide, self.absorb, timers)
            return self.made
        for _ in range(steps):
            t = time.perf_counter()
            chosen = self.decide(None)
            t2 = time.perf_counter()
            timers.inference += t2 - t
            self.batch.step(chosen.actions)
            timers.env += time.perf_counter() - t2
            self.absorb(None, chosen)
        return self.made

    def decide(self, part: np.ndarray | None) -> Chosen:
        """Choose the actions of the rows in ``part`` (``None``: every row) and record the
        learner's decisions: the learner's seats sample from the policy, the pool's play
        frozen."""
        import torch

        batch, pool, shaping = self.batch, self.pool, self.shaping
        every = np.arange(self.n) if part is None else part
        whole = part is None and pool is None  # every row is a learner's: no gathering copy
        if pool is None:
            rows, others = every, every[:0]
        else:
            learner = ((pool.member[every] < 0)
                       | (self.agent_sides[batch.agent[every]] == batch.side[every]))
            rows, others = every[learner], every[~learner]
        actions = np.zeros(self.n, dtype=np.int64)
        # the learner's rows on the device: one copy each, read by the network and the rollout
        o, m = self.upload(batch.learner_obs, batch.mask, None if whole else rows)
        # inference mode, not no_grad: no autograd bookkeeping at all (the rollout copies
        # these tensors into its own buffers, so none is ever saved for a backward pass)
        with torch.inference_mode():
            a, logp = self.sample_masked(self.net.actor(o), m, self.gen)
            value = self.net.value(o)
            actions[rows] = a.cpu().numpy()  # the step's one copy back: the vectors' actions
            if len(others):
                actions[others] = pool.actions(others, torch.from_numpy(batch.obs),
                                               torch.from_numpy(batch.mask), batch.agent)
        seen = batch.obs if whole else batch.obs[rows]
        phi = None if shaping.potential is None else shaping.potential(seen)
        prog = None if shaping.knockout is None else shaping.knockout(seen)
        self.rollout.add(rows, batch.agent if whole else batch.agent[rows], o, m, a, logp,
                         value, phi, self.gamma, prog)
        self.made += len(rows)
        self.stats.decided_in(rows)
        if shaping.style is None:
            return Chosen(actions, rows)
        # read before the step overwrites the observations
        return Chosen(actions, rows, batch.agent[rows].copy(),
                      shaping.style(batch.obs[rows], actions[rows]))

    def absorb(self, part: np.ndarray | None, chosen: Chosen) -> None:
        """Take in the step of the rows in ``part`` (``None``: every row) that applied
        ``chosen``: rewards, ended battles, the pool's next opponents."""
        batch = self.batch
        if chosen.style_reward is not None:
            batch.rewards[chosen.rows, chosen.style_seat] += chosen.style_reward
        self.rollout.credit(batch.rewards, batch.ended, part)
        self.stats.rewarded(batch.rewards, batch.side, part)
        ended = batch.ended if part is None else batch.ended[part]
        if ended.any():
            done_rows = np.flatnonzero(ended) if part is None else part[ended]
            self.stats.ended(done_rows, batch.winner, batch.side, batch.group)
            if self.pool is not None:
                self.pool.end_battles(done_rows, batch.winner, batch.side)
