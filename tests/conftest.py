"""Shared helpers for tests: small scenarios built from dicts, and scripted battles."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from traveller_env.rules.dice import ScriptedDice
from traveller_env.scenario import build_battle

AVERAGE = {"STR": 7, "DEX": 7, "END": 7, "INT": 7, "EDU": 7, "SOC": 7}


def fighter(position, weapon="autorifle", skills=None, drawn=True, **overrides) -> dict[str, Any]:
    """A combatant dict with average characteristics (all DMs 0)."""
    c = {"name": "fighter", "characteristics": dict(AVERAGE),
         "skills": {"gun_combat.slug": 1} if skills is None else skills,
         "weapon": weapon, "armour": "none", "position": list(position), "drawn": drawn}
    chars = overrides.pop("chars", None)
    if chars:
        c["characteristics"].update(chars)
    c.update(overrides)
    return c


def scenario(blue: list[dict], red: list[dict], width: int = 20, height: int = 10,
             terrain: list[str] | None = None, max_rounds: int = 20, **options) -> dict:
    """A two-side scenario dict (sides ``blue`` and ``red``); options default to no hastening
    and no reactions so that scripted rolls stay short, unless asked for."""
    opts = {"hastening": False, "reactions": False, "comms_range_m": 30}
    opts.update(options)
    sc = {"name": "test", "map": {"width": width, "height": height}, "max_rounds": max_rounds,
          "options": opts,
          "sides": [{"name": "blue", "combatants": copy.deepcopy(blue)},
                    {"name": "red", "combatants": copy.deepcopy(red)}]}
    if terrain is not None:
        sc["map"]["terrain"] = terrain
    return sc


def scripted(sc: dict, rolls) -> tuple[Any, ScriptedDice]:
    """Build a battle whose dice are exactly ``rolls`` (a list of tuples, one per roll)."""
    dice = ScriptedDice(rolls)
    return build_battle(sc, dice=dice), dice



#: Timing fields of a run's progress.jsonl / training.jsonl (everything else reproducible).
RUN_LOG_TIMING = ("seconds", "wall_seconds")


def run_log_lines(path) -> list[dict]:
    """A run's ``progress.jsonl`` or ``training.jsonl``, one dict per line, without the
    timing fields: what two runs of the same flags and seed must share."""
    import json
    from pathlib import Path

    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    for row in rows:
        for key in RUN_LOG_TIMING:
            row.pop(key, None)
    return rows


def squad_labels(**views: bool) -> tuple[list[str], list[str]]:
    """``squad``'s observation labels and slot-relative action labels, with ``views``."""
    from traveller_env.env import TravellerEnv

    env = TravellerEnv("squad", **views)
    return list(env.observation_labels), list(env.relative_actions.labels)

def member_checkpoint(path, arch: str, seed: int, **extra):
    """Write a small ``squad`` checkpoint with the move view (an ``arch`` actor: ``"mlp"`` or
    ``"entity"``; decisions ``100 * seed``), for the composite checkpoints' tests (ensembles,
    by-side); return its network."""
    torch = pytest.importorskip("torch")
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic

    obs, actions = squad_labels(move_view=True)
    torch.manual_seed(seed)
    net = ActorCritic(len(obs), len(actions), [32, 16] if arch == "mlp" else [32], arch=arch,
                      observation_labels=obs, action_labels=actions, embed=16)
    path.write_bytes(checkpoint_bytes(net, "squad", actions, decisions=100 * seed,
                                      update=seed, seed=seed, move_view=True, **extra))
    return net


def plain_checkpoint(path) -> None:
    """Write a tiny ``squad`` MLP checkpoint without any view (an observation that does not
    fit ``member_checkpoint``'s)."""
    pytest.importorskip("torch")
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic

    obs, actions = squad_labels()
    net = ActorCritic(len(obs), len(actions), [8], arch="mlp")
    path.write_bytes(checkpoint_bytes(net, "squad", actions, decisions=0, update=0, seed=0))


def view_checkpoint(path, seed: int = 0, **views: bool):
    """Write a ``train_ppo`` checkpoint for ``squad`` (random weights, spread logits) trained
    "with" the observation ``views`` that are on (``move_view=True``, ...); return its network."""
    torch = pytest.importorskip("torch")
    import traveller_env
    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic

    env = traveller_env.raw_env("squad", **views)
    torch.manual_seed(seed)
    net = ActorCritic(len(env.observation_labels), env.relative_actions.n, [32])
    with torch.no_grad():
        net.actor[-1].weight.mul_(100.0)
    path.write_bytes(checkpoint_bytes(net, "squad", env.relative_actions.labels, decisions=0,
                                      update=0, seed=seed, **{k: True for k, on in views.items()
                                                              if on}))
    return net


def play_like_the_network(net, full, envs, policies, seeds, choose, max_iter: int = 100_000
                          ) -> int:
    """Play ``full`` and every env of ``envs`` in lockstep (the same seeds and actions); at each
    decision each of ``policies`` (``Policy.act``), given each env's own observation, must pick
    what ``net``'s actor picks on ``full``'s observation (greedy over the relative mask).
    ``choose(agent, observation, mask)`` gives the action played. Returns the decisions
    checked."""
    torch = pytest.importorskip("torch")
    from traveller_agents.nets import masked_logits

    checked = 0
    for seed in seeds:
        for env in envs:
            env.reset(seed=seed)
        for agent in full.agent_iter(max_iter=max_iter):
            obs, _, term, trunc, _ = full.last()
            if term or trunc:
                for env in envs:
                    env.step(None)
                continue
            m = obs["action_mask"]
            rel = full.relative_actions.mask(agent, m).astype(bool)
            with torch.no_grad():
                z = masked_logits(net.actor(torch.as_tensor(obs["observation"])),
                                  torch.as_tensor(rel))
            want = full.relative_actions.to_absolute(agent, int(z.argmax()))
            for env in envs:
                o = env.observe(agent)["observation"]
                for policy in policies:
                    assert policy.act(o, m, agent, env) == want
            checked += 1
            action = choose(agent, obs["observation"], m)
            for env in envs:
                env.step(action)
    return checked


@pytest.fixture
def make_scenario():
    return scenario
