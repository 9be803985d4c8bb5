"""traveller_rl/ppo/stacked.py: the frozen pool's actors stacked into one forward pass, and the
trainer's --pool-stack flag."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import squad_labels

from traveller_agents.nets import ActorCritic
from traveller_rl.ppo.stacked import StackedActors


def _members(arch: str, n: int, **kw) -> tuple[list[torch.nn.Module], int]:
    """``n`` squad actors of one structure with different weights; and the observation size."""
    obs, actions = squad_labels(move_view=True, attack_view=True)
    out = []
    for seed in range(n):
        torch.manual_seed(seed)
        net = ActorCritic(len(obs), len(actions), [32], arch=arch, observation_labels=obs,
                          action_labels=actions, embed=16, **kw)
        net.eval()
        out.append(net.actor)
    return out, len(obs)


@pytest.mark.parametrize(("arch", "kw"), [("mlp", {}), ("entity", {}),
                                          ("entity", {"attention": 1})])
def test_each_row_gets_its_own_member_s_logits(arch, kw):
    members, obs_dim = _members(arch, 4, **kw)
    stack = StackedActors(members)
    gen = torch.Generator().manual_seed(0)
    obs = torch.rand(23, obs_dim, generator=gen)
    obs[:, ::7] = (obs[:, ::7] > 0.5).float()  # flags (e.g. "present") both on and off
    member = torch.tensor([0, 2, 2, 0, 3, 0, 2, 2, 0, 3, 3, 0, 0, 2, 0, 2, 3, 0, 0, 2, 2, 3, 0])
    # member 1 has no row: it is padding only
    with torch.no_grad():
        got = stack.logits(obs, member)
        for i in range(len(member)):
            want = members[int(member[i])](obs[i:i + 1])[0]
            torch.testing.assert_close(got[i], want, atol=1e-5, rtol=1e-5)
    assert not torch.equal(got[0], got[1])  # different members, different logits


def test_no_rows_and_bad_indices():
    members, obs_dim = _members("mlp", 2)
    stack = StackedActors(members)
    assert stack.logits(torch.zeros(0, obs_dim), torch.zeros(0, dtype=torch.long)).shape[0] == 0
    with pytest.raises(ValueError, match=r"member indices must lie in \[0, 2\)"):
        stack.logits(torch.zeros(1, obs_dim), torch.tensor([2]))
    with pytest.raises(ValueError, match="2 observations for 1 member indices"):
        stack.logits(torch.zeros(2, obs_dim), torch.tensor([0]))
    with pytest.raises(ValueError, match="at least one member"):
        StackedActors([])


def test_a_pool_run_with_and_without_the_stack(tmp_path):
    """--pool-stack (the default) and --no-pool-stack both train and record the choice; the
    stacked run is reproducible byte for byte."""
    from traveller_rl.ppo.trainer import build_parser, run

    base = ["--scenario", "duel", "--pool", "--pool-every", "1", "--pool-size", "3",
            "--total-timesteps", "1024", "--num-envs", "16", "--num-steps", "16", "--seed", "4",
            "--eval-vs", "", "--final-eval-battles", "0", "--backend", "python",
            "--no-progress"]
    for name, extra in (("stacked", []), ("again", []), ("alone", ["--no-pool-stack"])):
        assert run(build_parser().parse_args([*base, *extra, "--out", str(tmp_path / name)])) == 0
    weights = {n: (tmp_path / n / "ppo.pt").read_bytes() for n in ("stacked", "again")}
    assert weights["stacked"] == weights["again"]
    flags = {n: json.loads((tmp_path / n / "config.json").read_text())["args"]["pool_stack"]
             for n in ("stacked", "alone")}
    assert flags == {"stacked": True, "alone": False}
    assert len(list((tmp_path / "stacked" / "pool").glob("*.pt"))) >= 4  # the stack moved on
    # the unstacked run trained its whole budget too
    assert json.loads((tmp_path / "alone" / "evaluation.json").read_text())["decisions"] >= 1024


def test_bench_pool_times_both_ways_on_a_tiny_run(tmp_path, capsys):
    from experiments.bench_pool import main

    out = tmp_path / "b.json"
    assert main(["--updates", "3", "--full-from", "1", "--num-envs", "32", "--num-steps", "4",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert {r["pool_stack"] for r in data["runs"].values()} == {True, False}
    for r in data["runs"].values():
        assert r["updates"] == 3 and r["full_pool_decisions"] > 0
        assert r["full_pool_decisions_per_second"] > 0
    assert data["speedup"] > 0 and "stacked / one pass per copy" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--full-from must lie in"):
        main(["--updates", "3", "--full-from", "3"])
