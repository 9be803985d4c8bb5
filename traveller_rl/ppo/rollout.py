"""Helpers of ``traveller_rl/ppo/trainer.py``: masked sampling, the per-seat rollout with its GAE
(its tensors on the learner's device, and the step's upload there), greedy evaluation on
batched vectors, and the learning curve.

Kept out of the trainer so that it reads top to bottom as the algorithm (CleanRL style) and so
that the tests can check each piece on hand-made data.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["SeatRollout", "StepUpload", "device_of", "greedy_actions", "opponent_actions",
           "plot_curve", "sample_masked", "vector_winrate", "without_forbidden"]


# ============================================================================ masked sampling
def sample_masked(logits: torch.Tensor, mask: torch.Tensor,
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One action per row from the masked softmax of ``logits`` ``[B, A]`` (``mask`` bool
    ``[B, A]``, at least one True per row), drawn with ``generator``; returns ``(actions int64
    [B], log-probabilities [B])``.

    Inverse-CDF sampling over probabilities that are exactly 0 off the mask: the first index
    whose cumulative probability exceeds ``u * total`` always has a positive probability, so an
    illegal action can never be drawn, whatever the logits (the rare ``u * total == total``
    rounding picks the last legal action).
    """
    masked = torch.where(mask, logits, torch.full_like(logits, -1e9))
    logp_all = torch.log_softmax(masked, -1)
    # softmax rather than logp_all.exp(): the exp of huge negative values is slow on CPU.
    probs = torch.softmax(masked, -1) * mask
    cdf = probs.cumsum(-1)
    u = torch.rand((logits.shape[0], 1), generator=generator, dtype=cdf.dtype,
                   device=cdf.device) * cdf[:, -1:]
    actions = (cdf <= u).sum(-1)
    n = mask.shape[1]
    last_legal = n - 1 - torch.argmax(mask.flip(-1).to(torch.int8), dim=-1)
    actions = torch.minimum(actions, last_legal)
    return actions, logp_all.gather(1, actions[:, None]).squeeze(1)


def greedy_actions(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The most probable legal action of each row (``PPOPolicy``'s deterministic choice)."""
    return torch.where(mask, logits, torch.full_like(logits, -torch.inf)).argmax(-1)


def opponent_actions(logits: torch.Tensor, mask: torch.Tensor, greedy: np.ndarray | None,
                     generator: torch.Generator) -> torch.Tensor:
    """A frozen opponent's actions ``int64 [B]``: the rows flagged in ``greedy`` (bool ``[B]``)
    take their most probable legal action, the others are drawn as ``sample_masked`` draws
    them. With no row flagged (or ``greedy`` None) this is ``sample_masked`` exactly, drawing
    from ``generator`` as it does."""
    if greedy is None or not greedy.any():
        return sample_masked(logits, mask, generator)[0]
    actions = greedy_actions(logits, mask)
    sampled = torch.from_numpy(~greedy)
    if sampled.any():
        actions[sampled] = sample_masked(logits[sampled], mask[sampled], generator)[0]
    return actions


# ============================================================================ per-seat rollout
class SeatRollout:
    """A rollout of turn-based, many-seat battles, kept per (row, seat).

    Each learner decision is one transition of the seat that made it. Its reward is what that
    seat gains from the step that applies the decision up to (not including) the seat's next
    decision in the same battle, or to the battle's end: the vector credits every seat at every
    step (``rewards[N, num_agents]``), and ``credit`` adds each column to the seat's *pending*
    transition. The next decision of the same seat links to it (``next``), which gives GAE its
    successor; the battle's end closes it (``done``). Rewards a seat receives before its first
    decision of a battle belong to no decision of it and are not used (the vector returns the
    rewards opponents earn before a battle's first learner decision with that battle's first
    step, so they go to the first decision's seat if it is theirs).

    At the end of a rollout, the transitions still pending (their seat has not decided again
    and their battle has not ended) have no successor yet: their predecessors bootstrap from
    their value (as CleanRL bootstraps from the next observation's value at the rollout's end),
    and ``carry`` moves them to the front of the next rollout, where they complete and are
    trained on (their log-probability is that of the policy that chose them, one update older:
    PPO's ratio corrects for it, and clipping bounds it).

    **Where it lives.** What the network reads and writes, ``obs``, ``mask``, ``action``,
    ``logp`` and ``value``, are torch tensors on ``device`` (the learner's ``--device``): a
    step's decisions are written there from the tensors the network ran on, and GAE
    (``advantages``) and the update read them there. The bookkeeping the vectors' results
    drive on the host, ``reward``, ``progress``, ``done``, ``next`` and ``pending``, are NumPy
    arrays; ``advantages`` takes the rollout's rewards, ends and links to the device in one
    copy each per update.

    Storage is allocated once: ``rows * (steps + seats)`` transitions.
    """

    #: The tensors on the rollout's device, and the host arrays (in ``state``'s order).
    DEVICE_ARRAYS = ("obs", "mask", "action", "logp", "value")
    HOST_ARRAYS = ("reward", "progress", "done", "next")

    def __init__(self, num_rows: int, num_seats: int, obs_dim: int, n_actions: int,
                 steps: int, device: torch.device | str = "cpu") -> None:
        cap = num_rows * (steps + num_seats)
        self.device = torch.device(device)
        on = {"device": self.device}
        self.obs = torch.zeros((cap, obs_dim), dtype=torch.float32, **on)
        self.mask = torch.zeros((cap, n_actions), dtype=torch.bool, **on)
        self.action = torch.zeros(cap, dtype=torch.int64, **on)
        self.logp = torch.zeros(cap, dtype=torch.float32, **on)
        self.value = torch.zeros(cap, dtype=torch.float32, **on)
        self.reward = np.zeros(cap, dtype=np.float32)
        self.progress = np.zeros(cap, dtype=np.float32)  # each decision's progress value
        self.done = np.zeros(cap, dtype=bool)
        self.next = np.full(cap, -1, dtype=np.int64)
        self.pending = np.full((num_rows, num_seats), -1, dtype=np.int64)
        self.size = 0
        self.blocks: list[tuple[int, int]] = []  # [start, end) of each add(), in time order

    def add(self, rows: np.ndarray, seats: np.ndarray, obs: Any, mask: Any, actions: Any,
            logp: Any, values: Any, potential: np.ndarray | None = None, gamma: float = 1.0,
            progress: np.ndarray | None = None) -> np.ndarray:
        """Record one step's learner decisions (one per row in ``rows``, at most one per row):
        returns their transition indices. ``obs``, ``mask``, ``actions``, ``logp`` and
        ``values`` are tensors (best on the rollout's device: no copy but the write) or arrays.
        With ``potential`` (each decision's shaping potential), the seat's previous transition
        gains ``gamma x potential`` and the new one starts at ``-potential``: potential-based
        shaping, whose gains over a battle sum to minus its first potential (a battle's end
        has potential 0). With ``progress`` (each decision's progress value), the seat's
        previous transition gains the change since it was made; nothing is paid back at the
        battle's end, so a battle's gains sum to the change from the seat's first decision to
        its last."""
        n = len(rows)
        start = self.size
        if start + n > len(self.next):
            raise RuntimeError(f"SeatRollout full ({len(self.next)} transitions): more steps "
                               "than it was sized for")
        idx = np.arange(start, start + n)
        for name, data in (("obs", obs), ("mask", mask), ("action", actions), ("logp", logp),
                           ("value", values)):
            getattr(self, name)[start:start + n] = torch.as_tensor(data)
        self.reward[start:start + n] = 0.0
        self.done[start:start + n] = False
        self.next[start:start + n] = -1
        prev = self.pending[rows, seats]
        has = prev >= 0
        self.next[prev[has]] = idx[has]
        if potential is not None:
            self.reward[prev[has]] += np.float32(gamma) * potential[has]
            self.reward[start:start + n] = -potential
        if progress is not None:
            self.reward[prev[has]] += progress[has] - self.progress[prev[has]]
            self.progress[start:start + n] = progress
        self.pending[rows, seats] = idx
        self.blocks.append((start, start + n))
        self.size = start + n
        return idx

    def credit(self, rewards: np.ndarray, ended: np.ndarray,
               rows: np.ndarray | None = None) -> None:
        """After a step: add ``rewards`` ``[rows, seats]`` to each seat's pending transition,
        and close every pending transition of the rows whose battle ended (``ended`` ``[rows]``).
        ``rows`` (indices): only those rows were stepped; the others are left as they are."""
        if rows is not None:
            pending = self.pending[rows]
            live = pending >= 0
            self.reward[pending[live]] += rewards[rows][live]
            closed = rows[ended[rows]]
            if len(closed):
                closing = self.pending[closed]
                self.done[closing[closing >= 0]] = True
                self.pending[closed] = -1
            return
        live = self.pending >= 0
        # (row, seat) pairs are distinct, so are their pending transitions: a plain += is exact.
        self.reward[self.pending[live]] += rewards[live]
        if ended.any():
            closing = self.pending[ended]
            self.done[closing[closing >= 0]] = True
            self.pending[ended] = -1

    def advantages(self, gamma: float,
                   lam: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """GAE per seat over the complete transitions: ``(indices, advantages, returns)``,
        tensors on the rollout's device.

        ``delta = r + gamma * V(next) * (1 - done) - V``; ``A = delta + gamma * lam * A(next) *
        (1 - done)``, with ``A(next) = 0`` when the successor is still pending (bootstrap).
        ``delta`` is computed at once; ``A`` block by block backwards (a successor is always
        in a later block). Every value is the float32 arithmetic of the same operations in
        the same order, on any device.
        """
        size, device = self.size, self.device
        nxt = self.next[:size]
        has = nxt >= 0
        safe = np.where(has, nxt, 0)
        done = self.done[:size]
        complete = done | has
        # the host's bookkeeping, to the device: one copy each
        safe_t = torch.from_numpy(safe).to(device)
        has_t = torch.from_numpy(has).to(device)
        alive_t = torch.from_numpy(~done).to(device)
        chained_t = torch.from_numpy(has & complete[safe]).to(device)  # A(next) exists
        reward_t = torch.from_numpy(self.reward[:size]).to(device)
        g = torch.tensor(gamma, dtype=torch.float32, device=device)
        gl = torch.tensor(gamma * lam, dtype=torch.float32, device=device)
        zero = torch.zeros((), dtype=torch.float32, device=device)
        value = self.value[:size]
        next_value = torch.where(has_t, value[safe_t], zero)
        delta = reward_t + g * next_value * alive_t - value
        adv = torch.zeros(size, dtype=torch.float32, device=device)
        for start, end in reversed(self.blocks):
            next_adv = torch.where(chained_t[start:end], adv[safe_t[start:end]], zero)
            adv[start:end] = delta[start:end] + gl * next_adv * alive_t[start:end]
        idx = torch.from_numpy(np.flatnonzero(complete)).to(device)
        return idx, adv[idx], adv[idx] + value[idx]

    def carry(self) -> int:
        """Start the next rollout: keep only the pending transitions, moved to the front (in
        their order); returns how many."""
        live = self.pending >= 0
        src = np.sort(self.pending[live])
        m = len(src)
        src_t = torch.from_numpy(src).to(self.device)
        for name in self.DEVICE_ARRAYS:
            tensor = getattr(self, name)
            tensor[:m] = tensor[src_t]
        for arr in (self.reward, self.progress):
            arr[:m] = arr[src]
        self.done[:m] = False
        self.next[:m] = -1
        self.pending[live] = np.searchsorted(src, self.pending[live])
        self.size = m
        self.blocks = [(0, m)] if m else []
        return m

    _ARRAYS = DEVICE_ARRAYS + HOST_ARRAYS

    def state(self) -> dict[str, Any]:
        """The transitions held (NumPy arrays up to ``size``, whatever the device: a resume
        checkpoint continues on either), ``pending`` and ``blocks``: what ``load_state`` needs
        to continue exactly (a resume checkpoint's part)."""
        held: dict[str, Any] = {name: getattr(self, name)[:self.size].cpu().numpy().copy()
                                for name in self.DEVICE_ARRAYS}
        held.update({name: getattr(self, name)[:self.size].copy() for name in self.HOST_ARRAYS})
        return {"size": self.size, "blocks": list(self.blocks),
                "pending": self.pending.copy(), **{name: held[name] for name in self._ARRAYS}}

    def load_state(self, state: dict[str, Any]) -> None:
        """Put back what ``state`` recorded (a rollout of the same shape, on any device)."""
        if state["pending"].shape != self.pending.shape:
            raise ValueError(f"rollout state of {state['pending'].shape} (rows, seats), this "
                             f"rollout has {self.pending.shape}")
        size = int(state["size"])
        for name in self.DEVICE_ARRAYS:
            getattr(self, name)[:size] = torch.as_tensor(state[name]).to(self.device)
        for name in self.HOST_ARRAYS:
            getattr(self, name)[:size] = state[name]
        self.pending[:] = state["pending"]
        self.size = size
        self.blocks = [tuple(b) for b in state["blocks"]]


class StepUpload:
    """A step's learner observations and masks on the learner's device, in one host-to-device
    copy each. On the CPU the tensors are views of (or, for some rows, gathered from) the host
    arrays, as the network always read them. On CUDA the rows are gathered straight into
    page-locked (pinned) staging buffers, ``rows x obs_dim`` and ``rows x n_actions``
    allocated once, and copied without blocking; the next call waits for that copy before
    it reuses the buffers."""

    def __init__(self, num_rows: int, obs_dim: int, n_actions: int,
                 device: torch.device | str) -> None:
        self.device = torch.device(device)
        self._staged: tuple[np.ndarray, np.ndarray, torch.Tensor, torch.Tensor] | None = None
        self._copied: Any = None  # the CUDA event after the last copy
        if self.device.type == "cuda":
            obs = torch.empty((num_rows, obs_dim), dtype=torch.float32, pin_memory=True)
            mask = torch.empty((num_rows, n_actions), dtype=torch.bool, pin_memory=True)
            self._staged = (obs.numpy(), mask.numpy(), obs, mask)

    def __call__(self, obs: np.ndarray, mask: np.ndarray,
                 rows: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(obs, mask)`` of ``rows`` (``None``: every row) as tensors on the device."""
        if self._staged is None:
            obs_t, mask_t = torch.from_numpy(obs), torch.from_numpy(mask)
            if rows is not None:
                obs_t, mask_t = obs_t[rows], mask_t[rows]
            return obs_t.to(self.device), mask_t.to(self.device)
        obs_np, mask_np, obs_pin, mask_pin = self._staged
        if self._copied is not None:
            self._copied.synchronize()  # the last copy out of the buffers is done
        k = len(obs) if rows is None else len(rows)
        if rows is None:
            np.copyto(obs_np[:k], obs)
            np.copyto(mask_np[:k], mask)
        else:
            np.take(obs, rows, axis=0, out=obs_np[:k], mode="clip")
            np.take(mask, rows, axis=0, out=mask_np[:k], mode="clip")
        out = (obs_pin[:k].to(self.device, non_blocking=True),
               mask_pin[:k].to(self.device, non_blocking=True))
        self._copied = torch.cuda.Event()
        self._copied.record()
        return out


# ============================================================================ evaluation
def without_forbidden(mask: np.ndarray, forbid: np.ndarray) -> np.ndarray:
    """``mask`` (rows of legal actions) with the ``forbid`` columns cleared in every row where
    another action stays legal; a row whose only legal actions are forbidden keeps them."""
    others = (mask & ~forbid).any(axis=1)
    out = mask.copy()
    out[np.ix_(others, forbid)] = False
    return out


def vector_winrate(net: Any, venv: Any, learner_side: int, battles: int,
                   seed: int, forbid: np.ndarray | None = None,
                   chosen: np.ndarray | None = None) -> tuple[int, int, int]:
    """``(wins, draws, losses)`` of ``net`` playing greedily (``greedy_actions``) every
    learner seat of ``venv`` (a ``traveller_env.vector`` vector whose opponents play the other
    sides) in its first ``battles`` battles from ``reset(seed=seed)``: row ``r`` counts its
    first ``battles // N`` battles (one more for the first ``battles % N`` rows), so the same
    battles are played at every call. ``forbid`` (a boolean per action): those actions are
    taken from its choices wherever another is legal (``without_forbidden``), an ablation.
    A by-side network (``traveller_agents.ppo_policy.SideNet``) plays its ``learner_side``
    network. The network runs where its parameters are (``--device``). ``chosen`` (an int
    array, one entry per action): each action the network took in the counted battles is
    added to it (what it does: ``traveller_rl.ppo.progress.action_behaviour``)."""
    from traveller_agents.nets import actor_logits

    device = device_of(net)
    n = venv.num_envs
    quota = np.full(n, battles // n, dtype=np.int64)
    quota[: battles % n] += 1
    done = np.zeros(n, dtype=np.int64)
    wins = draws = losses = 0
    obs, mask, _ = venv.reset(seed=seed)
    with torch.no_grad():
        while (done < quota).any():
            # the network's prefix of the observation (the vector may add the move view)
            if forbid is not None:
                mask = without_forbidden(mask, forbid)
            logits = actor_logits(net, torch.from_numpy(obs[:, :net.obs_dim]).to(device),
                                  venv.sides[learner_side])
            a = greedy_actions(logits, torch.from_numpy(mask).to(device))
            taken = a.cpu().numpy()
            if chosen is not None:  # the decisions of the battles being counted
                np.add.at(chosen, taken[done < quota], 1)
            obs, mask, _, term, trunc, info = venv.step(taken)
            ended = (term | trunc) & (done < quota)
            if ended.any():
                w = info["winner"][ended]
                wins += int((w == learner_side).sum())
                draws += int((w < 0).sum())
                losses += int(((w >= 0) & (w != learner_side)).sum())
                done += ended
    return wins, draws, losses


def device_of(net: Any) -> torch.device:
    """Where ``net``'s parameters are (the CPU for an object without parameters)."""
    parameters = getattr(net, "parameters", None)
    first = next(iter(parameters()), None) if callable(parameters) else None
    return first.device if first is not None else torch.device("cpu")


# ============================================================================ the curve
#: The most lines a panel of the learning curve draws (more are grouped: ``plot_curve``).
MAX_LINES = 4


def plot_curve(history: Sequence[dict], png: Path, title: str,
               training: Sequence[dict] = ()) -> None:
    """Win rate (with its 95% interval) against each evaluation opponent, over learner
    decisions (left) and wall-clock seconds (right), with the training battles' win rate
    dotted (``training``: one point per update, ``decisions``, ``seconds``,
    ``train_win_rate`` and, with several training groups, ``groups``: label -> win rate: the
    curve of a run without periodic evaluations); with several training groups, a second
    row of panels draws them. No panel draws more than ``MAX_LINES`` lines: beyond that,
    the first few and one line for the mean of the rest (their range shaded). Each row's
    legend stands to the right of its panels; written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(k for h in history for k in h.get("eval", {})))
    groups = list(dict.fromkeys(g for h in training for g in h.get("groups", {})))
    rows = 2 if len(groups) > 1 else 1
    fig, axes = plt.subplots(rows, 2, figsize=(13, 4 * rows), sharey=True, squeeze=False)
    evals = [(f"vs {name}", [(h, h["eval"][name]) for h in history if name in h.get("eval", {})])
             for name in names]
    for ax, key, xlabel in ((axes[0][0], "decisions", "learner decisions"),
                            (axes[0][1], "seconds",
                             "wall-clock seconds of training (evaluations excluded)")):
        # the opponents and the training line fit in MAX_LINES, or the last are grouped
        fit = len(evals) + 1 <= MAX_LINES
        shown, rest = (evals, []) if fit else (evals[:MAX_LINES - 2], evals[MAX_LINES - 2:])
        for label, pts in shown:
            x = [h[key] for h, _ in pts]
            line, = ax.plot(x, [r["win_rate"] for _, r in pts], marker="o", ms=3, label=label)
            ax.fill_between(x, [r["win_ci95"][0] for _, r in pts],
                            [r["win_ci95"][1] for _, r in pts], alpha=0.2,
                            color=line.get_color())
        if rest:
            _mean_line(ax, [[(h[key], r["win_rate"]) for h, r in pts] for _, pts in rest],
                       f"vs {len(rest)} others (mean, range)")
        train = [h for h in (training or history) if h.get("train_win_rate") is not None]
        if train:
            ax.plot([h[key] for h in train], [h["train_win_rate"] for h in train], ":",
                    color="grey", label="training battles")
        ax.set_xlabel(xlabel)
    if rows == 2:
        shorts = [g.rsplit(" on ", 1)[-1] for g in groups]  # "vs ... on <scenario>"
        if len(set(shorts)) < len(shorts):  # one scenario: the groups' own labels
            shorts = list(groups)
        series = [(short, [h for h in training if g in h.get("groups", {})], g)
                  for short, g in zip(shorts, groups, strict=True)]
        for ax, key in ((axes[1][0], "decisions"), (axes[1][1], "seconds")):
            shown = series if len(series) <= MAX_LINES else series[:MAX_LINES - 1]
            for short, pts, g in shown:
                ax.plot([h[key] for h in pts], [h["groups"][g] for h in pts], ":", lw=1.2,
                        label=f"training {short}")
            if len(series) > MAX_LINES:
                rest = series[MAX_LINES - 1:]
                _mean_line(ax, [[(h[key], h["groups"][g]) for h in pts]
                                for _, pts, g in rest],
                           f"training, {len(rest)} other groups (mean, range)")
            ax.set_xlabel(axes[0][0 if key == "decisions" else 1].get_xlabel())
        axes[1][0].set_ylabel("training battles' win rate")
    for row in axes:
        for ax in row:
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
        handles, labels = row[1].get_legend_handles_labels()
        if handles:
            row[1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                          fontsize=8, borderaxespad=0.0)
    axes[0][0].set_ylabel("win rate (greedy, 95% CI)")
    fig.suptitle(title)
    fig.tight_layout()
    png = Path(png)
    tmp = png.with_name(f".{png.stem}.tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, png)


def _mean_line(ax: Any, curves: list[list[tuple[float, float]]], label: str) -> None:
    """One line for several curves on ``ax``: at each x of the first, the mean of every
    curve's latest point up to there, the range between their least and greatest shaded."""
    xs = sorted({x for curve in curves for x, _ in curve})
    means, lows, highs, kept = [], [], [], []
    for x in xs:
        latest = [next((y for cx, y in reversed(curve) if cx <= x), None) for curve in curves]
        values = [y for y in latest if y is not None]
        if values:
            kept.append(x)
            means.append(float(np.mean(values)))
            lows.append(min(values))
            highs.append(max(values))
    line, = ax.plot(kept, means, "--", color="black", lw=1.2, label=label)
    ax.fill_between(kept, lows, highs, alpha=0.12, color=line.get_color())
