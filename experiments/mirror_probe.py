"""Does a squad checkpoint play one side better through the mirror of the other?

On `squad` the learners win more often as red than as blue against `tactician` (issue 13's
per-side columns). This probe plays a ``train_ppo`` checkpoint on ``--mirror`` sides through
a left-right mirror: the seat's observation is reflected (``self.x`` -> (W - 1) / W - x, every
slot's ``dx`` negated, the move and attack views' squares E <-> W, NE <-> NW, SE <-> SW) and
the network's move choice reflected back (``move:E:k`` <-> ``move:W:k``). Every label the
observation and the action space have is mapped by name, so nothing is restated about their
layout. The rules, the map and the battle are untouched: a mirrored seat sees its true
surroundings through the views, and only the frame of its position and directions is flipped.
The map itself is not mirror-symmetric (red's walls lie a square nearer its start), so this
asks whether what the network learned as one side carries over, not whether the sides are
alike.

The checkpoint plays ``--battles`` battles on the ``--mirror`` side against ``--vs`` (seeds
from ``--seed``, the AEC env on the compiled core) twice, on the same seeds: as trained, and
through the mirror.

    python -m experiments.mirror_probe runs/s31/lm1/pool/ppo_u000500.pt --vs tactician \\
        --mirror blue --battles 1000 --seed 300000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from traveller_env.rules.grid import DIRECTIONS

__all__ = ["MirroredPolicy", "build_parser", "main", "mirror_action_order",
           "mirror_label", "mirror_observation_order"]

# Each direction's reflection (dx -> -dx), read off the rules' own DIRECTIONS.
_SWAP = {name: next(m for m, step in DIRECTIONS.items() if step == (-dx, dy))
         for name, (dx, dy) in DIRECTIONS.items()}


def _mirror_direction(token: str) -> str:
    """``E:2`` -> ``W:2``; ``N:1`` and anything without a direction unchanged."""
    d, sep, rest = token.partition(":")
    return _SWAP.get(d, d) + sep + rest if sep else token


def mirror_label(label: str) -> str:
    """The label of the entry (observation) or action that ``label``'s reflection is:
    ``move.E:1.seen_by`` -> ``move.W:1.seen_by``, ``attack.NE:2.threat`` ->
    ``attack.NW:2.threat``, ``move:SE:3`` -> ``move:SW:3``; others unchanged."""
    if label.startswith("move:"):
        return "move:" + _mirror_direction(label.removeprefix("move:"))
    parts = label.split(".")
    if len(parts) == 3 and parts[0] in ("move", "attack"):
        return ".".join([parts[0], _mirror_direction(parts[1]), parts[2]])
    return label


def _order(labels: list[str], what: str) -> np.ndarray:
    index = {lab: i for i, lab in enumerate(labels)}
    try:
        return np.array([index[mirror_label(lab)] for lab in labels], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"{what}: {exc.args[0]!r}, the mirror of one of its labels, is not "
                         "among them") from None


def mirror_observation_order(labels: list[str]) -> np.ndarray:
    """``order[i]``: the entry of the observation whose reflection is entry ``i``."""
    return _order(labels, "observation labels")


def mirror_action_order(labels: list[str]) -> np.ndarray:
    """``order[i]``: the action whose reflection is action ``i`` (an involution)."""
    return _order(labels, "action labels")


class MirroredPolicy:
    """A ``PPOPolicy`` that plays the seats of ``sides`` through the left-right mirror (see
    the module docstring) and the others as it is."""

    needs_observation = True

    def __init__(self, inner: Any, sides: set[str]) -> None:
        self.inner = inner
        self.sides = set(sides)
        self.name = f"{inner.name} (mirrored as {','.join(sorted(self.sides))})"
        self.actions = mirror_action_order(inner.action_labels)
        self._obs: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the inner policy."""
        self.inner.reset(seed)

    def _observation_map(self, env: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        if self._obs is None:
            labels = env.observation_labels
            order = mirror_observation_order(labels)
            negate = np.array([lab.endswith(".dx") for lab in labels])
            x = labels.index("self.x")
            width = env.battle.grid.width
            self._obs = (order, negate, np.array([x]), (width - 1) / width)
        return self._obs

    def mirror(self, observation: np.ndarray, env: Any) -> np.ndarray:
        """``observation`` (of a seat in ``env``) reflected left-right."""
        order, negate, x, flip = self._observation_map(getattr(env, "unwrapped", env))
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (len(order),):
            raise ValueError(f"{self.name}: observation of shape {obs.shape}; play it in an "
                             "env with the checkpoint's views")
        mirrored = obs[order]
        mirrored[negate] = -mirrored[negate]
        mirrored[x] = flip - mirrored[x]
        return mirrored

    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str,
            env: Any) -> int:
        """The inner policy's action, through the mirror on ``sides``."""
        env = getattr(env, "unwrapped", env)
        if env.scenario.sides[env.side_of(agent)].name not in self.sides:
            return self.inner.act(observation, action_mask, agent, env)
        mirrored = self.mirror(observation, env)
        rel = env.relative_actions
        mask = np.asarray(rel.mask(agent, np.asarray(action_mask))).astype(bool)
        index = self.inner.choose(mirrored, mask[self.actions])
        return rel.to_absolute(agent, int(self.actions[index]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both passes (as trained, mirrored) on the ``--mirror`` side against ``--vs``: the same
    battle seeds, the checkpoint on that side in every battle."""
    import traveller_env
    from agents.evaluation import play_battle, wilson_interval
    from agents.ppo_policy import load_ppo_policy
    from agents.registry import make_policy

    inner = load_ppo_policy(args.checkpoint, "squad")
    views = {k: v for k, v in inner.views.items() if v}
    env = traveller_env.raw_env("squad", **views).unwrapped
    names = [s.name for s in env.scenario.sides]
    if args.mirror not in names:
        raise ValueError(f"--mirror: one side name of {', '.join(names)}, got {args.mirror!r}")
    side = names.index(args.mirror)
    opponent = make_policy(args.vs, scenario="squad")
    out: dict[str, Any] = {"checkpoint": str(args.checkpoint), "vs": args.vs,
                           "battles": args.battles, "seed": args.seed, "side": args.mirror}
    for key, policy in (("as_trained", inner), ("mirrored", MirroredPolicy(inner, {args.mirror}))):
        t = time.perf_counter()
        wins = draws = 0
        for i in range(args.battles):
            seats = {a: (policy if env.side_of(a) == side else opponent)
                     for a in env.possible_agents}
            b = play_battle(env, seats, args.seed + i)
            wins += b.winner == args.mirror
            draws += b.winner is None
        lo, hi = wilson_interval(wins, args.battles)
        out[key] = {"wins": wins, "draws": draws, "losses": args.battles - wins - draws,
                    "win_rate": wins / args.battles, "win_ci95": [lo, hi],
                    "seconds": round(time.perf_counter() - t, 1)}
        print(f"{key:10s} as {args.mirror}: {wins} / {draws} / {args.battles - wins - draws} "
              f"{wins / args.battles:.3f} ({lo:.3f}-{hi:.3f})", flush=True)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    p = argparse.ArgumentParser(prog="mirror_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path, help="a train_ppo checkpoint (.pt) for squad")
    p.add_argument("--vs", default="tactician", help="opponent (default: tactician)")
    p.add_argument("--mirror", default="blue",
                   help="the side the checkpoint plays, through the mirror in the second pass "
                        "(default: blue)")
    p.add_argument("--battles", type=int, default=400, help="battles per pass (default: 400)")
    p.add_argument("--seed", type=int, default=300_000,
                   help="first battle seed (default: 300000, selection seeds)")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the probe; print both passes (and write ``--json``)."""
    args = build_parser().parse_args(argv)
    if args.battles < 1:
        raise SystemExit(f"mirror_probe: --battles must be at least 1, got {args.battles}")
    out = run(args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
