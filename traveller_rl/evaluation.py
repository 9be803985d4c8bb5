"""Evaluation helpers for learned and scripted policies.

* ``play_turns``: the one battle loop (a policy per agent, to the end of the battle);
* ``play_battle``: one seeded battle with a policy per agent, returning the finished battle;
* ``evaluate_range``: rounds to incapacitate and aims before the first shot in ``range_*``
  scenarios, with 95% intervals, beside the exact optimum of ``traveller_agents.aiming``;
* ``evaluate_matchup``: wins, draws and losses of a policy against an opponent, sides swapped
  half of the time, with Wilson 95% intervals;
* ``wilson_interval`` and ``mean_interval``: the interval arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import traveller_env
from traveller_env.policy import PassivePolicy, Policy, RandomPolicy, policy_action
from traveller_env.rules.battle import Battle

__all__ = ["evaluate_matchup", "evaluate_range", "format_matchups", "matchup_counts",
           "mean_interval", "play_battle", "play_turns", "random_decisions", "wilson_interval"]

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (95% by default).

    Returns ``(low, high)`` within [0, 1]; ``(0.0, 1.0)`` when ``n == 0``. The interval always
    contains the point estimate. ``successes`` may be fractional (draws counted as halves).
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n], got {successes} of {n}")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """``(mean, low, high)``: normal-approximation 95% interval of the mean."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(arr.mean())
    if arr.size == 1:
        return mean, mean, mean
    half = z * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return mean, mean - half, mean + half


def play_turns(env: Any, policies: Mapping[str, Policy],
               illegal: Callable[[str, int], Exception] | None = None) -> int:
    """Play a reset ``env`` (a ``TravellerEnv``) to the end of its battle, each live agent
    acting with ``policies[agent]``; return the number of decisions taken. With ``illegal``,
    an action the mask forbids raises ``illegal(agent, action)`` instead of reaching the env.
    The one battle loop: evaluations, behaviour statistics and tournaments all play here."""
    env = getattr(env, "unwrapped", env)
    decisions = 0
    for agent in env.agent_iter():
        _, _, term, trunc, _ = env.last(observe=False)
        if term or trunc:
            env.step(None)
            continue
        action = policy_action(policies[agent], env, agent)
        if illegal is not None:
            mask = env.action_mask(agent)
            if not (0 <= action < len(mask)) or not mask[action]:
                raise illegal(agent, action)
        env.step(action)
        decisions += 1
    return decisions


def random_decisions(env: Any, n: int, seed: int = 0,
                     on_battle: Callable[[int], None] | None = None
                     ) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """The first ``n`` decisions of random legal battles on ``env`` (a ``TravellerEnv``):
    battle ``b`` is seeded ``seed + b`` and every move is a ``RandomPolicy(seed)``'s. Yields
    ``(agent, observation, action mask)`` before each move, for callers that ask other
    policies what they would do there; ``on_battle(battle_seed)`` runs after each reset."""
    mover = RandomPolicy(seed=seed)
    taken = battle = 0
    while taken < n:
        env.reset(seed=seed + battle)
        if on_battle is not None:
            on_battle(seed + battle)
        battle += 1
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            if taken == n:
                break
            o, m = obs["observation"], obs["action_mask"]
            yield agent, o, m
            taken += 1
            env.step(mover.act(o, m, agent, env))


def play_battle(env: Any, policies: Mapping[str, Policy], seed: int) -> Battle:
    """Play one battle on ``env`` (a ``TravellerEnv``) with ``policies[agent]`` per agent: each
    distinct policy is reset with ``seed * 7919 + i`` (``i`` its order of first appearance),
    the env with ``seed``."""
    env = getattr(env, "unwrapped", env)
    for i, p in enumerate({id(p): p for p in policies.values()}.values()):
        p.reset(seed * 7919 + i)
    env.reset(seed=seed)
    play_turns(env, policies)
    return env.battle


def aims_before_first_shot(events: Sequence[dict], shooter: str) -> int | None:
    """Aim actions the shooter took before its first attack (None: it never attacked)."""
    aims = 0
    for ev in events:
        if ev.get("actor") != shooter:
            continue
        if ev["type"] == "aim":
            aims += 1
        elif ev["type"] == "attack":
            return aims
    return None


def evaluate_range(policy: Policy, battles: int = 200, seed: int = 10_000,
                   bands: Sequence[str] = ("short", "medium", "long", "extreme"),
                   optimum: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict]:
    """The policy as ``blue_0`` in each ``range_<band>`` scenario against a passive target.

    Per band: mean rounds to incapacitate (battles that never incapacitate count as the
    scenario's ``max_rounds``, a conservative floor), its 95% interval, the share
    incapacitated, the mean and most common number of aims before the first shot, and,
    when ``optimum`` (from ``traveller_rl/recipes/optimum.py``) is given, the ratio to it.
    """
    rows = []
    for band in bands:
        scenario = f"range_{band}"
        env = traveller_env.raw_env(scenario)
        policies = {"blue_0": policy, "red_0": PassivePolicy()}
        rounds, aims, downs = [], [], 0
        for i in range(battles):
            b = play_battle(env, policies, seed + i)
            won = b.winner == "blue"
            downs += won
            rounds.append(b.round if won else b.options.max_rounds)
            a = aims_before_first_shot(b.events, "blue_0")
            if a is not None:
                aims.append(a)
        mean, lo, hi = mean_interval(rounds)
        values, counts = np.unique(aims, return_counts=True) if aims else ([], [])
        row = {"scenario": scenario, "battles": battles, "mean_rounds": mean,
               "ci95": [lo, hi], "incapacitated": downs / battles,
               "mean_aims_before_first_shot": float(np.mean(aims)) if aims else math.nan,
               "modal_aims_before_first_shot": int(values[np.argmax(counts)]) if aims else None}
        if optimum and scenario in optimum:
            opt = optimum[scenario]
            row["optimal_rounds"] = opt["expected_rounds"]
            row["optimal_aims"] = opt["optimal_aims_before_first_shot"]
            row["ratio_to_optimum"] = mean / opt["expected_rounds"]
        rows.append(row)
    return rows


def evaluate_matchup(policy: Policy, opponent: Policy, scenario: str = "duel",
                     battles: int = 200, seed: int = 20_000,
                     make_env: Callable[[str], Any] | None = None,
                     on_battle: Callable[[int, Any, int], None] | None = None) -> dict:
    """Wins/draws/losses of ``policy`` against ``opponent``; sides alternate by battle
    (battle ``i`` has seed ``seed + i``, the policy on side ``i % 2``). ``on_battle(i,
    battle, side)``, when given, sees each finished battle and the side the policy played
    (``traveller_rl.behaviour`` reads the event logs that way). ``by_side`` splits the counts by
    the side the policy played (scenario side name -> battles, wins, draws, losses)."""
    env = (make_env or traveller_env.raw_env)(scenario)
    env = getattr(env, "unwrapped", env)
    names = [s.name for s in env.scenario.sides]
    by_side = {n: {"battles": 0, "wins": 0, "draws": 0, "losses": 0} for n in names}
    rounds = []
    for i in range(battles):
        mine = i % 2  # side index the evaluated policy plays
        policies = {a: (policy if env.side_of(a) == mine else opponent)
                    for a in env.possible_agents}
        b = play_battle(env, policies, seed + i)
        if on_battle is not None:
            on_battle(i, b, mine)
        rounds.append(b.round)
        counts = by_side[names[mine]]
        counts["battles"] += 1
        outcome = ("draws" if b.winner is None else
                   "wins" if b.winner == names[mine] else "losses")
        counts[outcome] += 1
    row = {"scenario": scenario, "opponent": getattr(opponent, "name", "?"),
           **matchup_counts(by_side.values()), "mean_rounds": float(np.mean(rounds))}
    row["by_side"] = {n: matchup_counts([c]) for n, c in by_side.items()}
    return row


def matchup_counts(parts: Iterable[Mapping[str, int]]) -> dict:
    """Battles, wins, draws and losses summed over ``parts`` (dicts with those four counts),
    with the win rate and its Wilson 95% interval (``nan`` rate for no battles)."""
    parts = list(parts)
    n, w, d, lost = (sum(p[k] for p in parts) for k in ("battles", "wins", "draws", "losses"))
    lo, hi = wilson_interval(w, n)
    return {"battles": n, "wins": w, "draws": d, "losses": lost,
            "win_rate": w / n if n else math.nan, "win_ci95": [lo, hi]}


def format_matchups(rows: Sequence[dict]) -> str:
    """``evaluate_matchup`` rows as a text table (W/D/L and the Wilson 95% interval, then the
    win rate on each side when the row has ``by_side``)."""
    width = max([len("scenario"), *(len(r["scenario"]) for r in rows)]) + 2
    lines = [f"{'scenario':<{width}}{'opponent':<12}{'W':>5}{'D':>5}{'L':>5}"
             f"{'win rate (95% CI)':>26}"]
    for r in rows:
        lo, hi = r["win_ci95"]
        lines.append(f"{r['scenario']:<{width}}{r['opponent']:<12}{r['wins']:>5}"
                     f"{r['draws']:>5}{r['losses']:>5}{r['win_rate']:>10.3f} "
                     f"[{lo:.3f}, {hi:.3f}]"
                     + "".join(f"  as {side} {c['win_rate']:.3f}"
                               for side, c in r.get("by_side", {}).items() if c["battles"]))
    return "\n".join(lines)
