"""The state of a batched PPO run: ``RunState`` holds everything the rest of a run depends on
(the network and its optimizer, the generators, the vectors, the rows, the rollout, the
statistics, the pool, the records so far, the timers, the update and decision counts), saves
it in the run's resume checkpoint and puts it back from one (``traveller_rl.ppo.resume``: a
resumed run continues to the same bytes as one never stopped). It also evaluates the greedy
policy; ``PolicySaver`` writes the policy's checkpoints (``save_checkpoint``)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.scenario_set import is_set_source
from traveller_rl.common import atomic_write_bytes
from traveller_rl.ppo.args import Args
from traveller_rl.ppo.progress import Timers, behaviour_warnings, evaluate_greedy
from traveller_rl.ppo.resume import (
    count_lines,
    generator_states,
    restore_generators,
    truncate_lines,
    write_checkpoint,
)
from traveller_rl.ppo.rows import learner_views, scenario_list

__all__ = ["BATCH_ARRAYS", "RESUMED_LOGS", "PolicySaver", "RunState", "save_checkpoint"]

#: The logs a resumed run cuts back to the line counts its checkpoint recorded.
RESUMED_LOGS = ("progress.jsonl", "training.jsonl")
#: The ``RowBatch`` arrays a resume checkpoint holds (the next step reads them).
BATCH_ARRAYS = ("obs", "mask", "agent", "rewards", "ended", "winner", "side", "group")
#: The timers a resume checkpoint holds besides the wall-clock time.
TIMED_PARTS = ("env", "inference", "update", "eval")


def save_checkpoint(path: Path, net: Any, args: Args, scenario: str, action_labels: list[str],
                    inherited: dict[str, str], update: int, decisions: int) -> None:
    """Write ``net``'s checkpoint (``traveller_agents.ppo_policy``'s format) to ``path``
    atomically."""
    from traveller_agents.checkpoint import checkpoint_bytes

    if any(p.device.type != "cpu" for p in net.parameters()):
        net = net.twin().cpu()  # checkpoints hold CPU tensors: they load on any machine
    layout = {}
    if args.battles.layout or is_set_source(scenario_list(args)[0]):
        from traveller_env.layout import LAYOUTS, resolve_layout
        from traveller_env.vector import DEFAULT_SET_LAYOUT

        chosen = args.battles.layout or LAYOUTS[DEFAULT_SET_LAYOUT]
        layout = {"layout": resolve_layout(chosen).to_dict()}
    atomic_write_bytes(path, checkpoint_bytes(net, scenario, action_labels,
                                              decisions=int(decisions), update=int(update),
                                              seed=int(args.budget.seed), **inherited, **layout,
                                              **{v: True for v, on
                                                 in learner_views(args).items() if on}))


@dataclass
class PolicySaver:
    """Writes the learner's checkpoints (``ppo.pt``, the pool's members):
    ``saver(path, update, decisions)`` (``save_checkpoint``)."""

    net: Any
    args: Args
    scenario: str
    action_labels: list[str]
    inherited: dict[str, str]

    def __call__(self, path: Path, update: int, decisions: int) -> None:
        save_checkpoint(path, self.net, self.args, self.scenario, self.action_labels,
                        self.inherited, update, decisions)


@dataclass
class RunState:
    """Everything the rest of a run depends on; ``checkpoint`` and ``restore`` round-trip it
    through ``DIR/resume.ckpt``."""

    args: Args
    out: Path
    net: Any
    optimizer: Any
    rng: np.random.Generator
    torch_gens: list[Any]
    groups: list[Any]
    batch: Any
    rollout: Any
    stats: Any
    pool: Any
    timers: Timers
    save_policy: PolicySaver
    update: int = 0
    decisions: int = 0
    history: list[dict] = field(default_factory=list)
    """one record per evaluation (``progress.jsonl``'s lines)"""
    training_curve: list[dict] = field(default_factory=list)
    """one point per update: the training battles' win rate (``training.jsonl``'s lines)"""

    def state(self) -> dict[str, Any]:
        """The resume checkpoint's contents."""
        timers = self.timers
        return {"args": self.args.flags(), "update": self.update, "decisions": self.decisions,
                "net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generators": generator_states(self.rng, self.torch_gens),
                "vectors": [g.venv.snapshot() for g in self.groups],
                "batch": {name: getattr(self.batch, name).copy() for name in BATCH_ARRAYS},
                "rollout": self.rollout.state(), "stats": self.stats.state(),
                "pool": self.pool.state() if self.pool is not None else None,
                "history": self.history, "training_curve": self.training_curve,
                "timers": {"wall": timers.wall(),
                           **{part: getattr(timers, part) for part in TIMED_PARTS}},
                "lines": {name: count_lines(self.out / name) for name in RESUMED_LOGS}}

    def checkpoint(self) -> None:
        """Write the resume checkpoint (``DIR/resume.ckpt``, atomically)."""
        write_checkpoint(self.out, self.state())

    def restore(self, saved: dict[str, Any]) -> None:
        """Put the run back where the checkpoint ``saved`` left it (its pool is restored when
        the pool is built: ``FrozenPool.load_state``)."""
        for name, lines in saved["lines"].items():
            truncate_lines(self.out / name, lines)
        self.update, self.decisions = saved["update"], saved["decisions"]
        self.net.load_state_dict(saved["net"])
        self.optimizer.load_state_dict(saved["optimizer"])
        for g, snapshot in zip(self.groups, saved["vectors"], strict=True):
            g.venv.restore(snapshot)
        for name in BATCH_ARRAYS:
            getattr(self.batch, name)[...] = saved["batch"][name]
        self.rollout.load_state(saved["rollout"])
        self.stats.load_state(saved["stats"])
        self.history[:] = saved["history"]
        self.training_curve[:] = saved["training_curve"]
        self.timers.start = time.perf_counter() - saved["timers"]["wall"]
        for part in TIMED_PARTS:
            setattr(self.timers, part, saved["timers"][part])
        restore_generators(saved["generators"], self.rng, self.torch_gens)
        print(f"resumed {self.out} at update {self.update} ({self.decisions:,} decisions)")

    def evaluate(self, eval_vectors: dict, writer: Any, train_win: float | None) -> dict:
        """Play the greedy policy's periodic evaluation (``--eval-battles`` against each
        ``--eval-vs``), log it to TensorBoard and ``progress.jsonl``; return its record (its
        ``warnings``: ``behaviour_warnings``, after the first update)."""
        t = time.perf_counter()
        results = evaluate_greedy(self.net, eval_vectors, self.args.eval.battles)
        for name, result in results.items():
            writer.add_scalar(f"eval/win_rate_vs_{name}", result["win_rate"], self.decisions)
        self.timers.eval += time.perf_counter() - t
        record = {"update": self.update, "decisions": self.decisions,
                  "train_win_rate": train_win, "eval": results,
                  "seconds": round(self.timers.training(), 2),
                  "wall_seconds": round(self.timers.wall(), 2),
                  # a degenerate policy (never attacks, aims without firing, never moves),
                  # once it has trained: the starting network's greedy play proves nothing
                  "warnings": behaviour_warnings(results) if self.update else []}
        self.history.append(record)
        with (self.out / "progress.jsonl").open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        return record

    def record_update(self, point: dict) -> None:
        """Keep an update's ``log_update`` point and append it to ``training.jsonl``."""
        self.training_curve.append(point)
        with (self.out / "training.jsonl").open("a") as fh:
            fh.write(json.dumps(point) + "\n")

    def finished(self) -> bool:
        """Whether the run is at its end: ``--total-timesteps`` decisions made or
        ``--stop-after-updates`` updates done (``--max-train-seconds`` is the loop's)."""
        budget = self.args.budget
        stop = budget.stop_after_updates
        return self.decisions >= budget.total_timesteps or bool(stop and self.update >= stop)

