"""Would a squad checkpoint win more if it led? Scripted Leadership laid over a learned policy.

Every entity-era `squad` learner of issue 13 collapsed Leadership to "never": one shared policy
plays every seat, the riflemen lead unskilled (DM -3, R1.4, R4.2), and the sergeant, whose
``self.leadership_dm`` says otherwise, inherits their "never". Before teaching a network to
lead, this probe asks whether leading would pay for it at all. It plays a ``train_ppo``
checkpoint against ``--vs`` on the same battle seeds in up to three passes:

* ``as_trained``: the checkpoint alone;
* ``free``: in its own turns, the free actions of R7.5 first, as ``leader`` takes them (bonuses
  its side holds to the ally whose best attack gains most, penalties it may impose on the
  enemy with the most dangerous attack), then the checkpoint;
* ``leader``: ``free``, and a Leadership check (R4.2) whenever ``leader``'s own rule says it
  pays (a positive Effect at least even odds, a receiver in reach, and an expected value from
  the R7 odds at least its best shot's); otherwise the checkpoint.

The decisions are ``LeaderPolicy``'s own (``free_action``, ``should_lead``), which ask the
rules; nothing is restated here. Only the checkpoint's seats are overlaid.

    python -m experiments.leadership_overlay runs/s32/g132/pool/ppo_u000610.pt --vs tactician \\
        --battles 1000 --seed 400000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from agents.common import Context, unwrap
from agents.leader import LeaderPolicy
from experiments.train_common import write_json

__all__ = ["MODES", "LeadershipOverlay", "build_parser", "main"]

#: The passes, in the order they are played.
MODES = ("as_trained", "free", "leader")


class LeadershipOverlay:
    """``inner`` (any policy) with ``leader``'s free actions (``mode`` ``free`` or
    ``leader``) and its Leadership rule (``leader``) taken first in the seat's own turns.
    ``counts`` tallies the overlaid choices: ``leadership``, ``direct`` and ``hamper``."""

    needs_observation = True

    def __init__(self, inner: Any, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode: one of {', '.join(MODES)}, got {mode!r}")
        self.inner = inner
        self.mode = mode
        self.name = getattr(inner, "name", "policy") + ("" if mode == "as_trained"
                                                        else f" + {mode}")
        self.rules = LeaderPolicy(seed=0)
        self.counts = {"leadership": 0, "direct": 0, "hamper": 0}
        self._env: Any = None
        self._index: dict[str, int] = {}

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the inner policy and the leader's fallback generator."""
        self.inner.reset(seed)
        self.rules.reset(seed)

    def overlaid(self, action_mask: np.ndarray, agent: str, env: Any) -> str | None:
        """The label the overlay takes for ``agent`` now, or ``None`` (the inner policy's
        turn)."""
        if self.mode == "as_trained" or env.view.phase in ("haste", "reaction"):
            return None
        if self._env is not env:
            self._env = env
            self._index = {label: i for i, label in enumerate(env.action_labels)}
        ctx = Context(env, agent, np.asarray(action_mask), env.action_labels, self._index)
        free = self.rules.free_action(ctx)
        if free is not None and ctx.legal(free):
            return free
        if self.mode == "leader" and self.rules.should_lead(ctx):
            return "leadership"
        return None

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The overlay's label when it has one, else the inner policy's action."""
        env = unwrap(env)
        label = self.overlaid(action_mask, agent, env)
        if label is None:
            return self.inner.act(observation, action_mask, agent, env)
        self.counts[label.split(":")[0]] += 1
        return self._index[label]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every ``--modes`` pass against ``--vs`` on the same seeds, sides alternating."""
    from agents.evaluation import evaluate_matchup
    from agents.ppo_policy import load_ppo_policy
    from agents.registry import make_policy

    out: dict[str, Any] = {"checkpoint": str(args.checkpoint), "vs": args.vs,
                           "battles": args.battles, "seed": args.seed, "passes": {}}
    inner = load_ppo_policy(args.checkpoint, "squad")  # greedy: the passes may share it
    for mode in args.modes:
        policy = LeadershipOverlay(inner, mode)
        t = time.perf_counter()
        row = evaluate_matchup(policy, make_policy(args.vs, seed=1), scenario="squad",
                               battles=args.battles, seed=args.seed)
        per_battle = {k: v / args.battles for k, v in policy.counts.items()}
        out["passes"][mode] = {
            **{k: row[k] for k in ("wins", "draws", "losses", "win_rate", "win_ci95")},
            "by_side": {s: r["win_rate"] for s, r in row["by_side"].items()},
            "per_battle": per_battle, "seconds": round(time.perf_counter() - t, 1)}
        lo, hi = row["win_ci95"]
        print(f"{mode:10s} {row['wins']} / {row['draws']} / {row['losses']} "
              f"{row['win_rate']:.3f} ({lo:.3f}-{hi:.3f}); a battle: "
              + ", ".join(f"{k} {v:.2f}" for k, v in per_battle.items()), flush=True)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(prog="leadership_overlay", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path, help="a train_ppo checkpoint (.pt) for squad")
    p.add_argument("--vs", default="tactician", help="opponent (default: tactician)")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"passes, comma-separated, of {', '.join(MODES)} (default: all)")
    p.add_argument("--battles", type=int, default=400, help="battles per pass (default: 400)")
    p.add_argument("--seed", type=int, default=400_000,
                   help="first battle seed (default: 400000, neither selection nor held out)")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the passes; print one line each (and write ``--json``)."""
    args = build_parser().parse_args(argv)
    if args.battles < 1:
        raise SystemExit(f"leadership_overlay: --battles must be at least 1, got {args.battles}")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in args.modes if m not in MODES]
    if bad or not args.modes:
        raise SystemExit(f"leadership_overlay: --modes takes {', '.join(MODES)}, got "
                         f"{', '.join(bad) or 'none'}")
    if not args.checkpoint.is_file():
        raise SystemExit(f"leadership_overlay: checkpoint {args.checkpoint} is not a file")
    out = run(args)
    if args.json:
        write_json(args.json, out, with_versions=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
