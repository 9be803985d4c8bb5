"""What a PPO run measures and logs: its clock (``Timers``), the training battles ended since
the last update (``BattleStats``), the periodic greedy evaluation (``evaluate_greedy``) with what
the policy did in it (``action_behaviour``) and the warnings when that is degenerate
(``behaviour_warnings``), the per-update line of ``training.jsonl`` with its TensorBoard
scalars (``log_update``), the progress bar (``ProgressBar``) and the run's two limits
(``limits_note``)."""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traveller_rl.ppo.update import UpdateStats

__all__ = ["AIMS_PER_ATTACK_LIMIT", "EVAL_SEED", "BattleStats", "NullWriter", "ProgressBar",
           "Timers", "action_behaviour", "behaviour_warnings", "evaluate_greedy", "limits_note",
           "log_update", "metrics_writer"]


class NullWriter:
    """Stands in for TensorBoard's ``SummaryWriter`` where tensorboard is not installed (the
    lean ``demo`` install): the same metrics still go to ``training.jsonl``."""

    def add_scalar(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to write."""

    def add_text(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to write."""

    def close(self) -> None:
        """Nothing to close."""


def metrics_writer(folder: Any) -> Any:
    """TensorBoard's ``SummaryWriter`` on ``folder`` when tensorboard is installed (the
    ``train`` extra), else a ``NullWriter``."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return NullWriter()
    return SummaryWriter(str(folder))

#: Seed of the held-out evaluation battles (vector seed ``derive_seed(EVAL_SEED, side)``).
EVAL_SEED = 20_000


@dataclass
class Timers:
    """Seconds spent in each part of a run since ``start``: stepping the battles (``env``),
    choosing actions (``inference``), updating (``update``) and evaluating, checkpointing and
    plotting (``eval``: not training)."""

    start: float = field(default_factory=time.perf_counter)
    env: float = 0.0
    inference: float = 0.0
    update: float = 0.0
    eval: float = 0.0

    def training(self) -> float:
        """Seconds of training so far (evaluations, checkpoints and curves not counted)."""
        return time.perf_counter() - self.start - self.eval

    def wall(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self.start


class BattleStats:
    """The training battles: each row's battle so far (its learner decisions, the learner
    side's return, the seats' rewards weighted to one per side), and the battles ended since
    the last ``clear``: how many, per group those with a learner side and their wins, their
    lengths and returns."""

    def __init__(self, n_rows: int, n_groups: int, agent_sides: np.ndarray,
                 n_sides: int) -> None:
        self.n_groups = n_groups
        self.length = np.zeros(n_rows, dtype=np.int64)
        self.side_weight = np.zeros((n_sides, len(agent_sides)), dtype=np.float32)
        for side in range(n_sides):
            on = agent_sides == side
            self.side_weight[side, on] = 1.0 / on.sum()
        self.ret = np.zeros(n_rows, dtype=np.float64)
        self.clear()

    def clear(self) -> None:
        """Forget the ended battles (the battles in progress go on)."""
        self.battles = 0
        self.decided = np.zeros(self.n_groups, dtype=np.int64)
        self.wins = np.zeros(self.n_groups, dtype=np.int64)
        self.lengths: list[int] = []
        self.returns: list[float] = []

    def decided_in(self, rows: np.ndarray) -> None:
        """One more learner decision in each of ``rows``' battles."""
        self.length[rows] += 1

    def rewarded(self, rewards: np.ndarray, row_side: np.ndarray,
                 rows: np.ndarray | None = None) -> None:
        """Add a step's rewards (``[rows, seats]``) to the learner side's return of each row
        with a learner side (``rows``: only those rows were stepped)."""
        if rows is not None:
            sided = rows[row_side[rows] >= 0]
            self.ret[sided] += (rewards[sided] * self.side_weight[row_side[sided]]).sum(axis=1)
            return
        has_side = row_side >= 0
        self.ret[has_side] += (rewards[has_side]
                               * self.side_weight[row_side[has_side]]).sum(axis=1)

    def ended(self, done: np.ndarray, winner: np.ndarray, row_side: np.ndarray,
              row_group: np.ndarray) -> None:
        """Battles ended in rows ``done``: count them, and start those rows afresh."""
        sided = done[row_side[done] >= 0]
        self.battles += len(done)
        np.add.at(self.decided, row_group[sided], 1)
        np.add.at(self.wins, row_group[sided], winner[sided] == row_side[sided])
        self.lengths.extend(self.length[done].tolist())
        self.returns.extend(self.ret[sided].tolist())
        self.length[done] = 0
        self.ret[done] = 0.0

    _STATE = ("length", "ret", "battles", "decided", "wins", "lengths", "returns")

    def state(self) -> dict[str, Any]:
        """The battles in progress and those ended since the last ``clear`` (a resume
        checkpoint's part)."""
        return {name: copy.deepcopy(getattr(self, name)) for name in self._STATE}

    def load_state(self, state: dict[str, Any]) -> None:
        """Put back what ``state`` recorded."""
        for name in self._STATE:
            setattr(self, name, copy.deepcopy(state[name]))

    def win_rate(self) -> float | None:
        """The learner's win rate in the ended battles with a learner side (None: none)."""
        decided = int(self.decided.sum())
        return int(self.wins.sum()) / decided if decided else None


def evaluate_greedy(net: Any, eval_vectors: dict[str, list[tuple[Any, int]]],
                    battles: int) -> dict[str, dict]:
    """The greedy ``net`` against each evaluation opponent (``make_eval_vectors``): per
    opponent, ``battles`` held-out battles shared out over the sides, with wins, draws,
    losses, the win rate and its Wilson 95% interval."""
    from traveller_env.rules.rng import derive_seed
    from traveller_rl.evaluation import wilson_interval
    from traveller_rl.ppo.rollout import vector_winrate

    out: dict[str, dict] = {}
    for name, vecs in eval_vectors.items():
        w = d = lo_ = 0
        chosen = np.zeros(len(vecs[0][0].action_labels), dtype=np.int64)
        for i, (venv, side) in enumerate(vecs):
            share = battles // len(vecs) + (i < battles % len(vecs))
            a, b, c = vector_winrate(net, venv, side, share, derive_seed(EVAL_SEED, side),
                                     chosen=chosen)
            w, d, lo_ = w + a, d + b, lo_ + c
        total = w + d + lo_
        lo, hi = wilson_interval(w, total)
        out[name] = {"battles": total, "wins": w, "draws": d, "losses": lo_,
                     "win_rate": w / total, "win_ci95": [lo, hi],
                     "behaviour": action_behaviour(vecs[0][0].action_labels, chosen, total)}
    return out


#: Aims per attack above which a policy is said to aim without firing.
AIMS_PER_ATTACK_LIMIT = 10.0


def action_behaviour(labels: list[str], chosen: np.ndarray,
                     battles: int) -> dict[str, float | None]:
    """What the greedy policy did in ``battles`` evaluation battles, from the actions it chose
    (``chosen``: a count per action label), with ``traveller_rl.behaviour.BehaviourTally``'s
    definitions: ``attacks_per_battle`` (attack actions, melee or ranged), ``aims_per_shot`` (aim
    actions per attack; ``None``, JSON's null, without an attack), ``moves_per_battle`` (move
    actions) and ``cover_per_battle`` (stance changes to crouched or prone: taking cover), plus the
    counts behind them. The evaluation's vectors keep no event logs, so these are counted from the
    actions; ``traveller behaviour`` replays whole logs for the full table."""
    from traveller_rl.behaviour import BehaviourTally

    kinds: dict[str, int] = {}
    for label, count in zip(labels, chosen.tolist(), strict=True):
        kind = label.split(":")[0]
        if label in ("stance:crouch", "stance:prone"):
            kind = "cover"
        kinds[kind] = kinds.get(kind, 0) + int(count)
    tally = BehaviourTally(battles=battles, attacks=kinds.get("attack", 0),
                           shots=kinds.get("attack", 0), aims=kinds.get("aim", 0),
                           moves=kinds.get("move", 0))
    described = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in tally.descriptors().items()}  # undefined: null in the JSON
    cover = kinds.get("cover", 0)
    return {"attacks_per_battle": described["shots_per_battle"],
            "aims_per_shot": described["aims_per_shot"],
            "moves_per_battle": tally.moves / battles if battles else None,
            "cover_per_battle": cover / battles if battles else None,
            "attacks": tally.attacks, "aims": tally.aims, "moves": tally.moves, "cover": cover,
            "decisions": int(chosen.sum())}


def behaviour_warnings(results: dict[str, dict]) -> list[str]:
    """Warnings about a degenerate greedy policy in an evaluation's ``results``
    (``evaluate_greedy``'s): it never attacks, it aims more than ``AIMS_PER_ATTACK_LIMIT``
    times per attack, or it never moves, against an opponent (each a one-line sentence)."""
    warnings = []
    for name, result in results.items():
        seen = result.get("behaviour")
        if not seen or not result["battles"]:
            continue
        battles = result["battles"]
        if seen["attacks"] == 0:
            warnings.append(f"vs {name}: the policy never attacks ({seen['aims']} aims, "
                            f"{seen['moves']} moves in {battles} battles)")
        elif seen["aims"] > AIMS_PER_ATTACK_LIMIT * seen["attacks"]:
            warnings.append(f"vs {name}: the policy aims {seen['aims_per_shot']:.0f} times "
                            f"per attack ({seen['attacks']} attacks in {battles} battles)")
        if seen["moves"] == 0:
            warnings.append(f"vs {name}: the policy never moves ({battles} battles)")
    return warnings


def limits_note(total_timesteps: int, max_train_seconds: float, decisions: int,
                seconds: float) -> str | None:
    """When ``--max-train-seconds`` is set: which limit ends the run, estimated from the rate
    so far (``decisions`` in ``seconds`` of training), as one line; ``None`` without it or
    before a rate is known."""
    if not max_train_seconds or seconds <= 0 or decisions <= 0:
        return None
    rate = decisions / seconds
    at_rate = rate * max_train_seconds
    if at_rate <= total_timesteps:
        return (f"limits: --max-train-seconds {max_train_seconds:g} binds first (at "
                f"{rate:,.0f} decisions/s it reaches about {at_rate:,.0f} of "
                f"--total-timesteps {total_timesteps:,})")
    return (f"warning: --total-timesteps {total_timesteps:,} ends the run after about "
            f"{total_timesteps / rate:,.0f} s of training, before --max-train-seconds "
            f"{max_train_seconds:g} (at {rate:,.0f} decisions/s); raise --total-timesteps "
            f"to train for the time")


def log_update(writer: Any, update: int, decisions: int, elapsed: float, lr: float,
               timers: Timers, carried: int, stats: BattleStats, losses: UpdateStats,
               group_labels: list[str]) -> dict[str, Any]:
    """Write an update's TensorBoard scalars; return its ``training.jsonl`` point (the
    training battles' win rate, per group when there are several)."""
    train_win = stats.win_rate()
    writer.add_scalar("charts/learning_rate", lr, decisions)
    writer.add_scalar("charts/decisions_per_second", decisions / elapsed, decisions)
    writer.add_scalar("charts/env_share", timers.env / elapsed, decisions)
    writer.add_scalar("charts/batch", losses.batch, decisions)
    writer.add_scalar("charts/carried", carried, decisions)
    if stats.lengths:
        writer.add_scalar("charts/battle_decisions", float(np.mean(stats.lengths)), decisions)
    if stats.returns:
        writer.add_scalar("charts/side_return", float(np.mean(stats.returns)), decisions)
    if train_win is not None:
        writer.add_scalar("charts/train_win_rate", train_win, decisions)
    point = {"update": update, "decisions": decisions, "seconds": round(elapsed, 2),
             "train_win_rate": train_win, "groups": {}}
    if len(group_labels) > 1:
        for label, won, of in zip(group_labels, stats.wins, stats.decided, strict=True):
            if of:
                writer.add_scalar(f"train_win_rate/{label.replace(' ', '_')}", won / of,
                                  decisions)
                point["groups"][label] = won / of
    writer.add_scalar("charts/battles", stats.battles, decisions)
    writer.add_scalar("losses/policy", losses.policy_loss, decisions)
    writer.add_scalar("losses/value", losses.value_loss, decisions)
    writer.add_scalar("losses/entropy", losses.entropy, decisions)
    writer.add_scalar("losses/approx_kl", losses.approx_kl, decisions)
    writer.add_scalar("losses/clipfrac", losses.clipfrac, decisions)
    return point


class ProgressBar:
    """The run's progress bar (``--progress``): decisions out of ``--total-timesteps``, or,
    for a run bounded by ``--max-train-seconds``, training seconds out of it. ``log`` prints a
    line above the bar (``print`` without one)."""

    def __init__(self, show: bool, total_timesteps: int, max_train_seconds: float,
                 decisions: int) -> None:
        self.bar = None
        self.by_time = bool(max_train_seconds)
        self.log: Any = print
        if not show:
            return
        from tqdm import tqdm

        by_time = self.by_time
        self.bar = tqdm(total=max_train_seconds if by_time else total_timesteps,
                        initial=0 if by_time else decisions, unit="s" if by_time else "dec",
                        smoothing=0.1, dynamic_ncols=True,
                        bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s [{elapsed}{postfix}]"
                        if by_time else None)
        self.log = self.bar.write

    def advance(self, update: int, decisions: int, made: int, elapsed: float,
                train_win: float | None) -> None:
        """Move the bar after an update that ``made`` decisions (``decisions`` in all)."""
        bar = self.bar
        if bar is None:
            return
        if self.by_time:
            bar.update(min(elapsed, bar.total) - bar.n)
        else:
            bar.total = max(bar.total, decisions)  # the last rollout may overshoot
            bar.update(made)
        bar.set_postfix_str(f"upd {update} {decisions:,} dec {decisions / elapsed:,.0f} dec/s"
                            + (f" train win {train_win:.2f}" if train_win is not None else ""))

    def close(self) -> None:
        """Close the bar (if shown)."""
        if self.bar is not None:
            self.bar.close()
