"""Golden playthroughs: seeded battles whose full event logs are checked into ``tests/golden/``.

Each playthrough plays one built-in scenario through the AEC environment with a fixed seed:
random legal actions from a seeded generator, or scripted NPCs on each side. Two files per
playthrough: ``<name>.jsonl``, the battle's event log (one JSON event per line, exactly as
``simulate --json`` writes it), and ``<name>.trace``, one line per step with a digest of what
the acting agent saw (observation, mask) and the rewards every agent received, so that a change
to the observation, the mask or the rewards shows up too.

``tests/rules/test_golden.py`` compares both byte for byte. When a rule is *meant* to change,
regenerate them on purpose and commit the diff with the rule change::

    .venv/bin/python tests/golden_playthroughs.py --write     # or: make golden
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

import traveller_env

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

#: (file name, scenario, seed, policy per side or None for random legal actions).
PLAYTHROUGHS: list[tuple[str, str, int, tuple[str, str] | None]] = [
    *[(f"{sc}_random_{seed}", sc, seed, None)
      for sc in traveller_env.builtin_scenarios() for seed in (1, 2)],
    ("duel_marksman_vs_rush_3", "duel", 3, ("marksman", "rush")),
    ("squad_tactician_vs_cover_4", "squad", 4, ("tactician", "cover")),
    ("squad_commander_leader_vs_marksman_5", "squad_commander", 5, ("leader", "marksman")),
    ("ambush_cover_vs_tactician_6", "ambush", 6, ("cover", "tactician")),
    ("melee_rush_vs_random_7", "melee", 7, ("rush", "random")),
    ("range_long_optimal_aim_vs_passive_8", "range_long", 8, ("optimal_aim", "passive")),
]


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def play(scenario: str, seed: int, policies: tuple[str, str] | None) -> tuple[str, str]:
    """Play one playthrough; return ``(event log as JSON lines, step trace)``."""
    env = traveller_env.raw_env(scenario)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    chosen = None
    if policies is not None:
        from traveller_agents.registry import make_policy

        by_side = [make_policy(name, seed=seed * 10 + i) for i, name in enumerate(policies)]
        chosen = {a: by_side[env.side_of(a)] for a in env.possible_agents}
    trace: list[str] = []
    for agent in env.agent_iter(max_iter=100_000):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            action = None
        else:
            mask = obs["action_mask"]
            if chosen is None:
                legal = np.flatnonzero(mask)
                action = int(legal[rng.integers(len(legal))])
            else:
                action = int(chosen[agent].act(obs["observation"], mask, agent, env))
            trace.append(f"{agent} {action} {_digest(obs['observation'], mask)}")
            env.step(action)
        rewards = " ".join(f"{env.rewards[a]:.6g}" for a in env.possible_agents
                           if a in env.rewards)
        if trace and rewards.strip("0 "):
            trace[-1] += f" | {rewards}"
    events = "".join(json.dumps(e) + "\n" for e in env.battle.events)
    return events, "\n".join(trace) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--write`` regenerates every golden file; without it, report which differ."""
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="(re)write tests/golden/")
    args = parser.parse_args(argv)
    GOLDEN_DIR.mkdir(exist_ok=True)
    differ = 0
    for name, scenario, seed, policies in PLAYTHROUGHS:
        events, trace = play(scenario, seed, policies)
        for suffix, text in ((".jsonl", events), (".trace", trace)):
            path = GOLDEN_DIR / (name + suffix)
            old = path.read_text() if path.exists() else None
            if old != text:
                differ += 1
                print(f"{'wrote' if args.write else 'differs'}: {path.name}")
                if args.write:
                    path.write_text(text)
    print(f"{len(PLAYTHROUGHS)} playthroughs, {differ} file(s) "
          f"{'rewritten' if args.write else 'differ'}")
    return 0 if args.write or not differ else 1


if __name__ == "__main__":
    sys.exit(main())
