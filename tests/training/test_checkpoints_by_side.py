"""By-side checkpoints (traveller_rl/checkpoints/by_side.py, traveller_agents.nets.SideNet):
one train_ppo checkpoint per side played as one policy, each seat by its own side's network."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import member_checkpoint, plain_checkpoint

from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
from traveller_agents.nets import EnsembleNet, SideNet, actor_logits
from traveller_agents.ppo_policy import PPOPolicy, load_ppo_policy
from traveller_agents.registry import make_policy
from traveller_env import vector
from traveller_env.env import TravellerEnv
from traveller_rl.checkpoints import by_side as sides
from traveller_rl.checkpoints import ensemble as ens
from traveller_rl.common import checkpoint_provenance


@pytest.fixture
def members(tmp_path):
    """blue: an entity network; red: an ensemble of an MLP and another entity network."""
    blue = member_checkpoint(tmp_path / "blue.pt", "entity", 1)
    r1 = member_checkpoint(tmp_path / "r1.pt", "mlp", 2, imitation="tactician")
    r2 = member_checkpoint(tmp_path / "r2.pt", "entity", 3)
    ens.ensemble_checkpoints([tmp_path / "r1.pt", tmp_path / "r2.pt"], tmp_path / "red.pt")
    return tmp_path, blue, EnsembleNet([r1, r2])


def join(tmp, out="s.pt", **paths) -> list[str]:
    paths = paths or {"blue": tmp / "blue.pt", "red": tmp / "red.pt"}
    return [*(a for side, p in paths.items() for a in ("--side", f"{side}={p}")),
            "--out", str(tmp / out)]


def test_each_seat_plays_its_own_sides_network(members):
    tmp, blue, red = members
    assert sides.main(join(tmp)) == 0
    data = read_checkpoint(tmp / "s.pt")
    assert data["arch"] == "by_side" and data["hidden"] == [] and data["move_view"]
    assert list(data["sides"]) == ["blue", "red"]
    assert data["sides"]["blue"]["source"] == str(tmp / "blue.pt")
    assert data["sides"]["red"]["arch"] == "ensemble"
    assert [m["seed"] for m in data["sides"]["red"]["members"]] == [2, 3]
    assert data["imitation"] == "tactician"  # a member's imitation start stays on record
    assert data["decisions"] == 100 + 500  # blue's, and the red ensemble's sum
    net = network_from_checkpoint(data)
    assert isinstance(net, SideNet) and net.sides == ["blue", "red"]
    venv = vector.make("squad", num_envs=6, seed=3, relative_actions=True, move_view=True)
    obs, _, _ = venv.reset()
    x = torch.from_numpy(obs)
    row_sides = np.array(["blue", "red", "red", "blue", "red", "blue"])
    with torch.no_grad():
        want_blue, want_red = blue.actor(x), red.actor(x)
        assert torch.allclose(actor_logits(net, x, "blue"), want_blue, atol=1e-6)
        assert torch.allclose(actor_logits(net, x, "red"), want_red, atol=1e-6)
        mixed = actor_logits(net, x, row_sides)
        for i, side in enumerate(row_sides):
            want = want_blue if side == "blue" else want_red
            assert torch.allclose(mixed[i], want[i], atol=1e-6)
        # the side is not in the observation: playing without it is refused, not guessed
        with pytest.raises(ValueError, match="needs the side of each row"):
            actor_logits(net, x)
        with pytest.raises(ValueError, match="a different network for each side"):
            net.actor(x)
        with pytest.raises(ValueError, match="no network for side 'green'; it has blue, red"):
            net.for_side("green")
    # as an NPC: each seat takes its side's greedy action
    policy = load_ppo_policy(tmp / "s.pt", "squad")
    assert isinstance(policy, PPOPolicy)
    env = TravellerEnv("squad", move_view=True)
    seen = set()
    for seed in range(12):
        env.reset(seed=seed)
        agent = env.agent_selection
        o = env.observe(agent)
        side = env.scenario.sides[env.side_of(agent)].name
        seen.add(side)
        rel = env.relative_actions.mask(agent, o["action_mask"])
        with torch.no_grad():
            z = (blue if side == "blue" else red).actor(torch.from_numpy(o["observation"][None]))
        legal = np.flatnonzero(rel)
        want = env.relative_actions.to_absolute(agent, int(legal[np.argmax(z[0].numpy()[legal])]))
        assert policy.act(o["observation"], o["action_mask"], agent, env) == want
    assert seen == {"blue", "red"}  # both sides' networks were asked
    from traveller_rl.evaluation import evaluate_matchup

    row = evaluate_matchup(make_policy(str(tmp / "s.pt"), scenario="squad"), make_policy("rush"),
                           "squad", battles=2, seed=4)
    assert row["wins"] + row["draws"] + row["losses"] == 2
    # untrained, it never beats rush: rush wins the battle from each side (counted as losses
    # of the checkpoint, one a side)
    assert {s: (c["wins"], c["losses"]) for s, c in row["by_side"].items()} == {
        "blue": (0, 1), "red": (0, 1)}
    prov = checkpoint_provenance(tmp / "s.pt")
    assert prov["arch"] == "by_side" and prov["sides"]["blue"]["seed"] == 1


def test_select_checkpoint_ranks_it_from_one_side_or_both(members, capsys, tmp_path):
    from traveller_rl.checkpoints import select as select_checkpoint

    tmp, _, _ = members
    sides.main(join(tmp))
    both, red = tmp_path / "both.json", tmp_path / "red.json"
    assert select_checkpoint.main([str(tmp / "s.pt"), "--vs", "rush", "--battles", "4",
                                   "--envs", "2", "--json", str(both)]) == 0
    assert select_checkpoint.main([str(tmp / "s.pt"), "--vs", "rush", "--battles", "4",
                                   "--envs", "2", "--side", "red", "--json", str(red)]) == 0
    assert "all as red" in capsys.readouterr().out
    row_both = json.loads(both.read_text())["ranking"][0]
    row_red = json.loads(red.read_text())["ranking"][0]
    assert row_both["wins"] + row_both["draws"] + row_both["losses"] == 4
    assert row_red["wins"] + row_red["draws"] + row_red["losses"] == 4
    # --side red plays the two-sided protocol's red battles first, on the same seeds: its first
    # two battles are the two-sided ranking's two as red, win for win (measured: as blue the
    # untrained checkpoint loses both, as red it wins one)
    first_two = select_checkpoint.score(tmp / "s.pt", "squad", "rush", 2,
                                        select_checkpoint.SELECTION_SEED, 2, {}, side="red")
    assert first_two["wins"] == round(2 * row_both["win_rate_red"])
    assert (row_both["win_rate_blue"], row_both["win_rate_red"]) == (0.0, 0.5)
    assert row_both["wins"] == 1 and row_red["wins"] >= 1
    assert row_red["side"] == "red" and row_red["win_rate_blue"] is None
    assert row_red["win_rate"] == row_red["win_rate_red"]
    capsys.readouterr()
    assert select_checkpoint.main([str(tmp / "s.pt"), "--vs", "rush", "--side", "green"]) == 2
    assert ("--side 'green': not a side of scenario 'squad'"
            in capsys.readouterr().err)


def test_a_pool_plays_a_by_side_opponent_by_each_seats_side(members, tmp_path, monkeypatch):
    """As a --pool-opponents member, each frozen seat plays its own side's network."""
    import traveller_agents.nets as nets
    from traveller_rl.ppo.trainer import build_parser, run

    tmp, _, _ = members
    sides.main(join(tmp))
    asked: list[str] = []
    real = nets.actor_logits

    def spy(net, obs, seat_sides=None):
        if isinstance(net, SideNet):
            asked.extend(np.asarray(seat_sides).tolist())
        return real(net, obs, seat_sides)

    monkeypatch.setattr(nets, "actor_logits", spy)
    out = tmp_path / "run"
    flags = ["--scenario", "squad", "--move-view", "--pool", "--pool-opponents",
             str(tmp / "s.pt"), "--total-timesteps", "256", "--seed", "4", "--num-envs", "4",
             "--num-steps", "16", "--pool-every", "100", "--eval-vs", "",
             "--final-eval-battles", "0", "--no-progress", "--out", str(out)]
    assert run(build_parser().parse_args(flags)) == 0
    pool = json.loads((out / "evaluation.json").read_text())["pool"]
    assert pool["opponents"][0] == str(tmp / "s.pt")
    assert asked and set(asked) <= {"blue", "red"}  # the frozen seats' own sides


@pytest.mark.parametrize(("case", "message"), [
    ("one side", "scenario 'squad' has sides blue, red; got blue"),
    ("unknown side", "scenario 'squad' has sides blue, red; got blue, green"),
    ("twice", "side 'blue' is given twice"),
    ("malformed", "expected SIDE=CHECKPOINT"),
    ("views", "its observation size differ"),
    ("nested", "a by-side checkpoint already"),
    ("missing", "no such trained-policy file"),
])
def test_bad_sides_are_refused_naming_the_side_or_file(members, case, message, capsys):
    tmp, _, _ = members
    sides.main(join(tmp))
    plain_checkpoint(tmp / "plain.pt")
    b, r = tmp / "blue.pt", tmp / "red.pt"
    argv = {"one side": ["--side", f"blue={b}"],
            "unknown side": ["--side", f"blue={b}", "--side", f"green={r}"],
            "twice": ["--side", f"blue={b}", "--side", f"blue={r}"],
            "malformed": ["--side", str(b)],
            "views": ["--side", f"blue={b}", "--side", f"red={tmp / 'plain.pt'}"],
            "nested": ["--side", f"blue={b}", "--side", f"red={tmp / 's.pt'}"],
            "missing": ["--side", f"blue={b}", "--side", f"red={tmp / 'nope.pt'}"]}[case]
    capsys.readouterr()
    assert sides.main([*argv, "--out", str(tmp / "f.pt")]) == 2
    err = capsys.readouterr().err
    assert "python -m traveller_rl.checkpoints.by_side: error: " in err and message in err
    assert not (tmp / "f.pt").exists()


def test_an_ensemble_of_by_side_checkpoints_is_refused(members, capsys):
    tmp, _, _ = members
    sides.main(join(tmp))
    capsys.readouterr()
    assert ens.main([str(tmp / "blue.pt"), str(tmp / "s.pt"), "--out", str(tmp / "e.pt")]) == 2
    assert "s.pt: a by-side checkpoint already" in capsys.readouterr().err


def test_training_export_and_widening_refuse_it_by_name(members, capsys):
    from traveller_rl.checkpoints.widen import widen_checkpoint
    from traveller_rl.onnx_export import read_ppo_checkpoint
    from traveller_rl.ppo import trainer as train_ppo

    tmp, _, _ = members
    sides.main(join(tmp))
    status = train_ppo.main(["--scenario", "squad", "--move-view", "--init", str(tmp / "s.pt"),
                             "--total-timesteps", "64", "--num-envs", "2", "--num-steps", "4",
                             "--out", str(tmp / "run"), "--no-progress"])
    assert status == 2
    assert "is a by-side checkpoint" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"s\.pt: its actor is the 'by_side' architecture"):
        read_ppo_checkpoint(tmp / "s.pt")
    with pytest.raises(ValueError, match=r"s\.pt: its actor is the 'by_side' architecture"):
        widen_checkpoint(tmp / "s.pt", [32], tmp / "w.pt")


def test_loading_for_a_scenario_with_a_side_it_lacks_is_refused(members):
    from traveller_agents.checkpoint import by_side_bytes

    tmp, _, _ = members
    b, r = read_checkpoint(tmp / "blue.pt"), read_checkpoint(tmp / "red.pt")
    (tmp / "g.pt").write_bytes(by_side_bytes({"blue": b, "green": r},
                                             {"blue": "blue.pt", "green": "red.pt"}))
    with pytest.raises(ValueError, match=r"g\.pt: a by-side checkpoint for blue, green; "
                                         r"scenario 'squad' also has side red"):
        load_ppo_policy(tmp / "g.pt", "squad")
