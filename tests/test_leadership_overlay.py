"""experiments/leadership_overlay.py: `leader`'s Leadership (R4.2, R7) laid over another policy."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import view_checkpoint

from agents.common import Context
from agents.leader import LeaderPolicy
from experiments.leadership_overlay import LeadershipOverlay, main
from traveller_env.env import TravellerEnv


class _Inner:
    """An inner policy: ``leadership`` when ``lead`` and it is legal, else ``end_turn``,
    ``haste:no`` or ``react:none``; it records the phase of every decision it is asked."""

    name = "inner"

    def __init__(self, lead: bool = False) -> None:
        self.lead = lead
        self.phases: list[str] = []

    def reset(self, seed=None) -> None:
        pass

    def act(self, observation, action_mask, agent, env) -> int:
        self.phases.append(env.view.phase)
        wanted = (["leadership"] if self.lead else []) + ["end_turn", "haste:no", "react:none"]
        for label in wanted:
            i = env.action_index(label)
            if action_mask[i]:
                return i
        return int(np.flatnonzero(action_mask)[0])


def _play(env: TravellerEnv, overlay: LeadershipOverlay, seeds, check=None) -> int:
    """Play ``overlay`` on blue, ``_Inner()`` on red; ``check(agent, mask)`` before each of the
    overlay's decisions. Returns the overlay's decisions."""
    red = _Inner()
    n = 0
    for seed in seeds:
        env.reset(seed=seed)
        for agent in env.agent_iter(max_iter=20_000):
            _, _, term, trunc, _ = env.last(observe=False)
            if term or trunc:
                env.step(None)
                continue
            mask = env.action_mask(agent)
            if env.side_of(agent) == 0:
                if check is not None:
                    check(agent, mask)
                n += 1
                env.step(overlay.act(env.observe(agent)["observation"], mask, agent, env))
            else:
                env.step(red.act(None, mask, agent, env))
    return n


def test_as_trained_leaves_every_decision_to_the_inner_policy():
    env = TravellerEnv("squad_commander")
    inner = _Inner(lead=True)
    overlay = LeadershipOverlay(inner, "as_trained")
    n = _play(env, overlay, range(2))
    assert n > 0 and len(inner.phases) == n
    assert overlay.counts == {"leadership": 0, "direct": 0, "hamper": 0}


def test_leader_mode_leads_exactly_when_leader_s_rule_says_it_pays():
    """R4.2/R7: in its own turns the overlay takes leader's free action, else Leadership where
    ``LeaderPolicy.should_lead`` holds, else defers; on squad_commander (Leadership 3) it leads
    and hands the bonuses out."""
    env = TravellerEnv("squad_commander")
    inner = _Inner()
    overlay = LeadershipOverlay(inner, "leader")
    rules = LeaderPolicy(seed=0)
    index = {label: i for i, label in enumerate(env.action_labels)}
    seen = {"lead": 0, "defer": 0}

    def check(agent, mask):
        if env.view.phase in ("haste", "reaction"):
            assert overlay.overlaid(mask, agent, env) is None
            return
        ctx = Context(env, agent, np.asarray(mask), env.action_labels, index)
        free = rules.free_action(ctx)
        want = free if free is not None and ctx.legal(free) else (
            "leadership" if rules.should_lead(ctx) else None)
        assert overlay.overlaid(mask, agent, env) == want
        seen["lead" if want == "leadership" else "defer"] += 1

    _play(env, overlay, range(3), check)
    assert seen["lead"] > 0 and seen["defer"] > 0
    assert overlay.counts["leadership"] == seen["lead"]
    assert overlay.counts["direct"] > 0  # the bonuses of a positive Effect are handed out


def test_free_mode_hands_out_the_inner_policy_s_bonuses_but_never_leads():
    env = TravellerEnv("squad_commander")
    overlay = LeadershipOverlay(_Inner(lead=True), "free")
    _play(env, overlay, range(3))
    assert overlay.counts["leadership"] == 0
    assert overlay.counts["direct"] > 0


def test_haste_and_reactions_are_the_inner_policy_s():
    env = TravellerEnv("squad")  # hastening and reactions on
    inner = _Inner()
    overlay = LeadershipOverlay(inner, "leader")
    _play(env, overlay, range(2))
    assert "haste" in inner.phases


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="mode: one of as_trained, free, leader, got 'lead'"):
        LeadershipOverlay(_Inner(), "lead")


def test_bad_arguments_exit_with_the_flag_named(tmp_path):
    ckpt = tmp_path / "c.pt"
    with pytest.raises(SystemExit, match="is not a file"):
        main([str(ckpt)])
    view_checkpoint(ckpt)
    with pytest.raises(SystemExit, match="--battles must be at least 1"):
        main([str(ckpt), "--battles", "0"])
    with pytest.raises(SystemExit, match="--modes takes as_trained, free, leader, got always"):
        main([str(ckpt), "--modes", "leader,always"])


def test_every_pass_plays_the_same_seeds_and_is_written(tmp_path, capsys):
    ckpt = tmp_path / "c.pt"
    view_checkpoint(ckpt)
    out = tmp_path / "o.json"
    assert main([str(ckpt), "--vs", "rush", "--battles", "2", "--seed", "5",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert list(data["passes"]) == ["as_trained", "free", "leader"]
    for row in data["passes"].values():
        assert row["wins"] + row["draws"] + row["losses"] == 2
        assert set(row["per_battle"]) == {"leadership", "direct", "hamper"}
    assert data["passes"]["as_trained"]["per_battle"]["leadership"] == 0
    assert "as_trained" in capsys.readouterr().out
