"""Probe: does look-ahead on the core's battle copies improve a train_ppo checkpoint?

At each decision where the network is unsure (top probability below ``--confident``), the
``--candidates`` most probable legal actions are each played in ``--rollouts`` copies of the
battle with fresh dice (``CoreBattle.simulate``; rollout j of every candidate shares seed j).
Every seat then plays the network greedily (``--model NAME``: the enemies play that in-core
scripted policy instead) until the deciding seat's first decision ``--horizon`` rounds later
(99: to the battle's end). A candidate's value is the mean over its copies of what the
training reward paid the seat on the way (damage terms, ``--knockouts``, the battle's +-1) plus
the critic's value where the copy stopped and the ``--potential`` there (the critic learned
the shaped return, which is the true one minus the potential). The network's own choice is
kept unless another candidate's mean gain over it, paired by seed, exceeds ``--margin``
standard errors. ``--plain`` plays the checkpoint without search on the same seeds.

    python -m experiments.search_probe runs/s29/best_pair_ko.pt --battles 400 \
        --knockouts enemies_out=0.25,allies_out=-0.25 --json runs/s30/probe_a.json

Issue 13's results ("Look-ahead on battle copies") give what it measured in ``squad``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch

from agents.evaluation import evaluate_matchup, wilson_interval
from agents.ppo_policy import network_from_checkpoint, read_checkpoint, views_of
from agents.registry import make_policy
from agents.views import complete_observation
from experiments.train_ppo import KnockoutReward, PositionPotential


class SearchPolicy:
    """A checkpoint with look-ahead (see the module docstring)."""

    needs_observation = True

    def __init__(self, path: str, candidates: int = 4, rollouts: int = 8,
                 confident: float = 0.9, damage: float = 0.02,
                 potential: dict[str, float] | None = None,
                 knockouts: dict[str, float] | None = None, seed: int = 0,
                 horizon: int = 1, margin: float = 0.0, model: str | None = None) -> None:
        data = read_checkpoint(path)
        self.net = network_from_checkpoint(data)
        self.net.eval()
        self.views = views_of(data)
        self.labels = list(data["observation_labels"])
        self.candidates, self.rollouts, self.confident = candidates, rollouts, confident
        self.damage = damage
        self.potential = PositionPotential(potential, self.labels) if potential else None
        self.knockouts = KnockoutReward(knockouts, self.labels) if knockouts else None
        self.name = f"search({path})"
        self.seed = seed
        self.horizon = horizon
        self.margin = margin
        # the enemies in the copies: the network itself, or an in-core scripted policy
        self.model = None
        if model:
            from traveller_env.core import require

            self.model = require().Policy(model, 0)
        self.calls = 0
        self.searches = 0
        self.overrides = 0  # searched decisions where a candidate beat the network's choice

    def reset(self, seed: int | None = None) -> None:
        """Seed the copies' dice for the next battle (``None`` keeps the current seed)."""
        if seed is not None:
            self.seed = seed

    # ------------------------------------------------------------------ helpers
    def _greedy(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Each row's most probable legal (relative) action."""
        with torch.no_grad():
            z = self.net.logits(torch.as_tensor(obs), torch.as_tensor(masks.astype(bool)))
        return z.argmax(dim=1).numpy()

    # ------------------------------------------------------------------ the policy
    def act(self, observation: np.ndarray, action_mask: np.ndarray, agent: str, env: Any) -> int:
        """The network's choice, or a searched candidate that beat it (core AEC env only)."""
        env = getattr(env, "unwrapped", env)
        rel = env.relative_actions
        self.calls += 1
        obs = complete_observation(observation, env, agent, self.views).astype(np.float32)
        mask = rel.mask(agent, np.asarray(action_mask)).astype(bool)
        with torch.no_grad():
            z = self.net.actor(torch.as_tensor(obs[None]))[0].numpy().astype(np.float64)
        z = np.where(mask, z, -np.inf)
        p = np.exp(z - z.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")  # ties: the first, as the plain policy
        cands = [int(a) for a in order[:self.candidates] if mask[a] and p[a] > 0.02]
        if p[order[0]] >= self.confident or len(cands) < 2:
            return rel.to_absolute(agent, int(order[0]))
        self.searches += 1
        q = self._search(env, agent, [rel.to_absolute(agent, a) for a in cands])
        best = int(np.argmax(q))
        self.overrides += best != 0
        return rel.to_absolute(agent, cands[best])

    def _search(self, env: Any, agent: str, actions: list[int]) -> np.ndarray:
        core = getattr(env.battle, "core", None)
        if core is None:
            raise ValueError(f"{self.name}: look-ahead needs an env on the core "
                             "(backend='core'); this one has no core battle")
        ids = core.ids
        seat = ids.index(agent)
        side = env.side_of(agent)
        rel = env.relative_actions
        root_round = core.round
        dealt0, taken0, _ = core.handle.summary()
        base = (self.seed * 1_000_003 + self.calls * 7919) % (2**63)
        twins, owner = [], []
        for ci, a in enumerate(actions):
            for j in range(self.rollouts):
                t = core.simulate(base + j, move_view=self.views["move_view"],
                                  aim_view=self.views["aim_view"],
                                  attack_view=self.views["attack_view"])
                t.handle.step(a)
                twins.append(t)
                owner.append(ci)
        n = len(twins)
        value = np.zeros(n)
        live = list(range(n))
        size = twins[0].observation_size
        stop_obs = np.zeros((n, size), dtype=np.float32)
        at_horizon = np.zeros(n, dtype=bool)
        steps = 0
        while live:
            keep = []
            for i in live:
                b = twins[i].handle
                if b.done or b.out(seat):
                    continue
                if b.decider == seat and b.round >= root_round + self.horizon:
                    at_horizon[i] = True
                    continue
                keep.append(i)
            live = keep
            if not live or steps > 5000:
                break
            steps += 1
            absmask = np.zeros(core.n_actions, dtype=np.uint8)
            if self.model is not None:
                netted = []
                for i in live:
                    b = twins[i].handle
                    if env.side_of(ids[b.decider]) != side:
                        b.step(self.model.act(b, b.decider))
                    else:
                        netted.append(i)
                if not netted:
                    continue
            else:
                netted = live
            obs = np.zeros((len(netted), size), dtype=np.float32)
            masks = np.zeros((len(netted), rel.n), dtype=np.int8)
            deciders = []
            for r, i in enumerate(netted):
                b = twins[i].handle
                d = b.decider
                b.observe(d, obs[r])
                b.mask(absmask)
                masks[r] = rel.mask(ids[d], absmask.view(np.int8))
                deciders.append(d)
            choice = self._greedy(obs, masks)
            for r, i in enumerate(netted):
                twins[i].handle.step(rel.to_absolute(ids[deciders[r]], int(choice[r])))
        # what each copy paid the seat, read where it stopped (knock-outs and potential of the
        # root are the same for every candidate, so they are left out)
        for i, t in enumerate(twins):
            b = t.handle
            b.observe(seat, stop_obs[i])
            dealt, taken, _ = b.summary()
            value[i] += self.damage * ((dealt[seat] - dealt0[seat]) - (taken[seat] - taken0[seat]))
            if b.done and not b.out(seat) and b.winner >= 0:
                value[i] += 1.0 if b.winner == side else -1.0
        if self.knockouts is not None:
            value += self.knockouts(stop_obs)
        if at_horizon.any():
            idx = np.flatnonzero(at_horizon)
            with torch.no_grad():
                v = self.net.value(torch.as_tensor(stop_obs[idx])).numpy().astype(np.float64)
            value[idx] += v
            if self.potential is not None:
                value[idx] += self.potential(stop_obs[idx])
        v = value.reshape(len(actions), self.rollouts)
        diff = v - v[0]  # paired with the policy's own choice (common dice seeds)
        gain = diff.mean(axis=1)
        se = diff.std(axis=1, ddof=1) / np.sqrt(self.rollouts)
        q = np.where(gain > self.margin * se, gain, 0.0)
        q[0] = 1e-12  # the policy's choice unless another is clearly better
        return q


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("checkpoint")
    ap.add_argument("--vs", default="tactician")
    ap.add_argument("--battles", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20_000)
    ap.add_argument("--candidates", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--confident", type=float, default=0.9)
    ap.add_argument("--potential", default="clear_shots=1.0,exposed=-1.0")
    ap.add_argument("--knockouts", default="")
    ap.add_argument("--horizon", type=int, default=1, help="rounds ahead (99: to the end)")
    ap.add_argument("--margin", type=float, default=0.0,
                    help="override the policy only by this many standard errors")
    ap.add_argument("--model", default=None, help="in-core policy for the enemies in the copies")
    ap.add_argument("--plain", action="store_true", help="no search (the checkpoint as is)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    for flag, value, low in (("--battles", args.battles, 1), ("--candidates", args.candidates, 2),
                             ("--rollouts", args.rollouts, 2), ("--horizon", args.horizon, 0)):
        if value < low:
            ap.error(f"{flag} must be at least {low}, got {value}")
    if not 0.0 < args.confident <= 1.0 or args.margin < 0:
        ap.error("--confident must be in (0, 1] and --margin >= 0")
    torch.set_num_threads(1)
    from experiments.train_ppo import parse_knockouts, parse_potential

    if args.plain:
        pol = make_policy(args.checkpoint, scenario="squad")
    else:
        pol = SearchPolicy(args.checkpoint, args.candidates, args.rollouts, args.confident,
                           potential=parse_potential(args.potential) if args.potential else None,
                           knockouts=parse_knockouts(args.knockouts) if args.knockouts else None,
                           horizon=args.horizon, margin=args.margin, model=args.model)
    t = time.time()
    row = evaluate_matchup(pol, make_policy(args.vs, scenario="squad"), "squad",
                           battles=args.battles, seed=args.seed)
    lo, hi = wilson_interval(row["wins"], row["battles"])
    row.update(win_ci95=[lo, hi], seconds=time.time() - t,
               searches=getattr(pol, "searches", 0), calls=getattr(pol, "calls", 0),
               overrides=getattr(pol, "overrides", 0),
               args=vars(args))
    print(json.dumps({k: row[k] for k in ("wins", "draws", "losses", "win_ci95", "seconds",
                                          "searches", "calls", "overrides")}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
