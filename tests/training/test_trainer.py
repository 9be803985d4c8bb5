"""The batched PPO trainer (traveller_rl/ppo/trainer.py), its helpers (traveller_rl/ppo/rollout.py)
and its checkpoints as NPC policies (traveller_agents/ppo_policy.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint
from traveller_agents.ppo_policy import PPOPolicy, load_ppo_policy
from traveller_agents.registry import make_policy
from traveller_cli import main as cli_main
from traveller_env import vector
from traveller_rl.evaluation import evaluate_matchup
from traveller_rl.ppo.rollout import SeatRollout, greedy_actions, opponent_actions, sample_masked

# A tiny run: 16 battles x 32 steps = 512 learner decisions per update, 4 updates.
TINY = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "2048",
        "--seed", "3", "--num-envs", "16", "--num-steps", "32", "--eval-every", "2",
        "--eval-vs", "rush", "--eval-battles", "4", "--eval-envs", "4",
        "--final-eval-battles", "2", "--backend", "python", "--threads", "1",
        "--no-progress"]


# ============================================================================ masked sampling
def test_masked_sampling_never_picks_an_illegal_action_even_with_huge_logits():
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    n, a = 20_000, 12
    mask = rng.random((n, a)) < 0.3
    mask[np.arange(n), rng.integers(a, size=n)] = True  # at least one legal action per row
    logits = torch.from_numpy(rng.normal(size=(n, a)).astype(np.float32) * 5)
    logits[torch.from_numpy(~mask)] = 1e6  # illegal actions are the most attractive
    actions, logp = sample_masked(logits, torch.from_numpy(mask), g)
    assert mask[np.arange(n), actions.numpy()].all()
    assert torch.isfinite(logp).all() and (logp <= 0).all()
    one = torch.zeros((5, a))
    only = torch.zeros((5, a), dtype=torch.bool)
    only[:, 7] = True
    assert (sample_masked(one, only, g)[0] == 7).all()


def test_masked_sampling_follows_the_masked_softmax():
    g = torch.Generator().manual_seed(1)
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]]).repeat(40_000, 1)
    mask = torch.tensor([[True, False, True, True]]).repeat(40_000, 1)
    actions, logp = sample_masked(logits, mask, g)
    freq = np.bincount(actions.numpy(), minlength=4) / len(actions)
    p = np.exp([0.0, -np.inf, 2.0, 3.0])
    p /= p.sum()
    assert freq[1] == 0
    assert np.allclose(freq, p, atol=0.01)
    assert np.allclose(logp.exp().numpy(), p[actions.numpy()], rtol=1e-5)
    assert (greedy_actions(logits[:1], mask[:1]) == 3).all()


def test_opponent_actions_play_greedily_on_flagged_rows_and_sample_the_rest():
    """--pool-greedy-share's frozen seats: a flagged row takes its most probable legal action,
    the others follow the masked softmax; with no row flagged it is sample_masked, draw for
    draw."""
    n = 40_000
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]]).repeat(n, 1)
    mask = torch.tensor([[True, True, True, False]]).repeat(n, 1)
    greedy = np.arange(n) % 2 == 0
    actions = opponent_actions(logits, mask, greedy, torch.Generator().manual_seed(2)).numpy()
    assert (actions[greedy] == 2).all()  # the best legal action (3 is masked off)
    freq = np.bincount(actions[~greedy], minlength=4) / (~greedy).sum()
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert freq[3] == 0 and np.allclose(freq[:3], p, atol=0.015)  # 4+ standard errors
    assert (opponent_actions(logits, mask, np.ones(n, dtype=bool), torch.Generator()) == 2).all()
    for none in (None, np.zeros(n, dtype=bool)):
        drawn = opponent_actions(logits, mask, none, torch.Generator().manual_seed(5))
        assert torch.equal(drawn, sample_masked(logits, mask, torch.Generator().manual_seed(5))[0])


# ============================================================================ GAE per seat
def test_gae_per_seat_matches_a_hand_computation():
    """One row, two seats, two battles; rewards credited to every seat at every step."""
    gamma, lam = 0.9, 0.8
    r = SeatRollout(num_rows=1, num_seats=2, obs_dim=1, n_actions=2, steps=6)
    plan = [  # (deciding seat, its value, rewards of the step [seat0, seat1], battle ended)
        (0, 0.5, [0.0, 0.2], False),   # T0; seat 1 has no decision yet: its 0.2 is unused
        (1, 0.3, [0.1, 0.0], False),   # T1
        (0, 0.4, [0.0, 0.5], False),   # T2
        (0, 0.6, [1.0, -1.0], True),   # T3; the battle ends: T1 and T3 are done
        (1, 0.2, [0.0, 0.7], False),   # T4 (next battle)
        (1, 0.25, [0.3, 0.05], False),  # T5: still pending at the rollout's end
    ]
    for seat, value, rewards, ended in plan:
        r.add(np.array([0]), np.array([seat]), np.zeros((1, 1)), np.ones((1, 2), bool),
              np.array([0]), np.array([0.0]), np.array([value]))
        r.credit(np.array([rewards], dtype=np.float32), np.array([ended]))
    idx, adv, ret = r.advantages(gamma, lam)
    a3 = 1.0 - 0.6
    a2 = 0.0 + gamma * 0.6 - 0.4 + gamma * lam * a3
    a1 = (0.0 + 0.5 - 1.0) - 0.3
    a0 = (0.0 + 0.1) + gamma * 0.4 - 0.5 + gamma * lam * a2
    a4 = 0.7 + gamma * 0.25 - 0.2  # its successor T5 is pending: bootstrap, no lambda term
    assert idx.tolist() == [0, 1, 2, 3, 4]
    assert np.allclose(adv, [a0, a1, a2, a3, a4], atol=1e-6)
    values = np.array([0.5, 0.3, 0.4, 0.6, 0.2])
    assert np.allclose(ret, np.array([a0, a1, a2, a3, a4]) + values, atol=1e-6)
    # The next rollout: T5 is carried to the front with its reward so far, then completes.
    assert r.carry() == 1
    assert r.size == 1 and r.value[0] == np.float32(0.25) and r.reward[0] == np.float32(0.05)
    r.add(np.array([0]), np.array([1]), np.zeros((1, 1)), np.ones((1, 2), bool),
          np.array([0]), np.array([0.0]), np.array([0.1]))
    r.credit(np.array([[0.0, 0.5]], dtype=np.float32), np.array([True]))
    idx, adv, _ = r.advantages(gamma, lam)
    a6 = 0.5 - 0.1
    a5 = 0.05 + gamma * 0.1 - 0.25 + gamma * lam * a6
    assert idx.tolist() == [0, 1]
    assert np.allclose(adv, [a5, a6], atol=1e-6)
    assert r.carry() == 0


def test_potential_shaping_telescopes_per_seat():
    """--potential: each transition of a seat gains gamma x the next decision's potential and
    loses its own; a battle's end has potential 0. Per seat, the shaped rewards discounted over
    a battle are the true ones minus the first potential (Ng et al. 1999), so no policy's
    ranking changes."""
    gamma = 0.9
    r = SeatRollout(num_rows=1, num_seats=2, obs_dim=1, n_actions=2, steps=8)
    plan = [  # (seat, potential at its decision, rewards of the step [seat0, seat1], ended)
        (0, 0.5, [0.0, 0.0], False), (1, -0.25, [0.1, 0.0], False), (0, 0.75, [0.0, 0.0], False),
        (1, 0.0, [0.0, 0.2], False), (0, -0.5, [1.0, -1.0], True), (1, 0.3, [0.0, 0.0], False),
    ]
    for seat, phi, rewards, ended in plan:
        r.add(np.array([0]), np.array([seat]), np.zeros((1, 1)), np.ones((1, 2), bool),
              np.array([0]), np.array([0.0]), np.array([0.0]),
              np.array([phi], dtype=np.float32), gamma)
        r.credit(np.array([rewards], dtype=np.float32), np.array([ended]))
    shaped = r.reward[:r.size].tolist()
    # seat 0: transitions 0, 2, 4 with potentials 0.5, 0.75, -0.5
    assert np.allclose(shaped[0], 0.1 + gamma * 0.75 - 0.5)
    assert np.allclose(shaped[2], 0.0 + gamma * -0.5 - 0.75)
    assert np.allclose(shaped[4], 1.0 + 0.5)  # the end: potential 0, nothing added
    true0 = [0.1, 0.0, 1.0]
    disc = [gamma ** k for k in range(3)]
    assert np.isclose(np.dot(disc, [shaped[0], shaped[2], shaped[4]]),
                      np.dot(disc, true0) - 0.5, atol=1e-6)
    # seat 1: transitions 1 and 3 (potentials -0.25, 0.0), closed by the battle's end; 5 is
    # the next battle's and still pending with its own -potential
    assert np.allclose([shaped[1], shaped[3]], [0.0 + gamma * 0.0 + 0.25, 0.2 - 1.0 - 0.0])
    assert np.isclose(shaped[5], -0.3)


def test_knockout_progress_pays_the_change_between_a_seats_decisions_and_nothing_back():
    """--knockouts: each transition of a seat gains the change of its progress value up to the
    seat's next decision; unlike a potential nothing is paid back at the battle's end, so a
    seat's gains over a battle sum to its last decision's value minus its first."""
    r = SeatRollout(num_rows=1, num_seats=2, obs_dim=1, n_actions=2, steps=8)
    plan = [  # (seat, progress at its decision, rewards of the step [seat0, seat1], ended)
        (0, 0.0, [0.0, 0.0], False), (1, 0.0, [0.1, 0.0], False), (0, 0.25, [0.0, 0.0], False),
        (1, 0.5, [0.0, 0.2], False), (0, 0.25, [1.0, -1.0], True), (1, 0.0, [0.0, 0.0], False),
    ]
    for seat, value, rewards, ended in plan:
        r.add(np.array([0]), np.array([seat]), np.zeros((1, 1)), np.ones((1, 2), bool),
              np.array([0]), np.array([0.0]), np.array([0.0]), progress=np.array(
                  [value], dtype=np.float32))
        r.credit(np.array([rewards], dtype=np.float32), np.array([ended]))
    got = r.reward[:r.size].tolist()
    # seat 0: transitions 0, 2, 4 at progress 0, 0.25, 0.25; the last keeps its true reward
    assert np.allclose([got[0], got[2], got[4]], [0.1 + 0.25, 0.0 + 0.0, 1.0])
    # seat 1: transitions 1 and 3 at 0 and 0.5; 5 starts the next battle with nothing owed
    assert np.allclose([got[1], got[3], got[5]], [0.0 + 0.5, 0.2 - 1.0, 0.0])
    # carried across a rollout boundary, a pending transition keeps its progress value
    r2 = SeatRollout(num_rows=1, num_seats=1, obs_dim=1, n_actions=2, steps=4)
    r2.add(np.array([0]), np.array([0]), np.zeros((1, 1)), np.ones((1, 2), bool),
           np.array([0]), np.array([0.0]), np.array([0.0]), progress=np.array([0.5], np.float32))
    assert r2.carry() == 1
    r2.add(np.array([0]), np.array([0]), np.zeros((1, 1)), np.ones((1, 2), bool),
           np.array([0]), np.array([0.0]), np.array([0.0]), progress=np.array([1.0], np.float32))
    assert np.isclose(r2.reward[0], 0.5)


def _random_rollout(device: str, seed: int = 0, rounds: int = 3) -> list[tuple]:
    """A rollout of 5 rows and 3 seats on ``device`` fed a seeded random plan (some rows decide
    at each step, shaping potentials, rewards for every seat, battles ending), with a carry
    between rounds: each round's ``(advantages(), reference)``, the reference the NumPy GAE
    the rollout computed on the host before its tensors moved to the device."""
    rng = np.random.default_rng(seed)
    rows, seats, steps = 5, 3, 12
    r = SeatRollout(rows, seats, obs_dim=2, n_actions=4, steps=steps, device=device)
    got = []
    for _ in range(rounds):
        for _ in range(steps):
            deciding = np.flatnonzero(rng.random(rows) < 0.7)
            k = len(deciding)
            r.add(deciding, rng.integers(seats, size=k), rng.random((k, 2), dtype=np.float32),
                  np.ones((k, 4), bool), rng.integers(4, size=k), np.zeros(k, np.float32),
                  rng.normal(size=k).astype(np.float32),
                  rng.normal(size=k).astype(np.float32), 0.97)
            r.credit(rng.normal(size=(rows, seats)).astype(np.float32), rng.random(rows) < 0.2)
        got.append((r.advantages(0.97, 0.9), _reference_gae(r, 0.97, 0.9)))
        r.carry()
    return got


def _reference_gae(r: SeatRollout, gamma: float, lam: float) -> tuple[np.ndarray, ...]:
    value = r.value.cpu().numpy()
    adv = np.zeros(r.size, dtype=np.float32)
    complete = np.zeros(r.size, dtype=bool)
    g, gl = np.float32(gamma), np.float32(gamma * lam)
    for start, end in reversed(r.blocks):
        nxt = r.next[start:end]
        has = nxt >= 0
        safe = np.where(has, nxt, 0)
        alive = ~r.done[start:end]
        next_value = np.where(has, value[safe], np.float32(0.0))
        next_adv = np.where(has & complete[safe], adv[safe], np.float32(0.0))
        adv[start:end] = (r.reward[start:end] + g * next_value * alive - value[start:end]
                          + gl * next_adv * alive)
        complete[start:end] = r.done[start:end] | has
    idx = np.flatnonzero(complete)
    return idx, adv[idx], adv[idx] + value[idx]


def test_gae_on_the_rollouts_tensors_is_the_numpy_arithmetic_bit_for_bit():
    """On the CPU the rollout's tensors give the very float32 values the host arrays gave
    (the same operations in the same order): the same run, the same ppo.pt."""
    for (idx, adv, ret), (ref_idx, ref_adv, ref_ret) in _random_rollout("cpu"):
        assert idx.device.type == adv.device.type == ret.device.type == "cpu"
        assert len(ref_idx) > 10
        np.testing.assert_array_equal(idx.numpy(), ref_idx)
        assert adv.numpy().tobytes() == ref_adv.tobytes()
        assert ret.numpy().tobytes() == ref_ret.tobytes()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no GPU")
def test_gae_on_cuda_matches_the_cpu():
    """A rollout on CUDA: its tensors there, its advantages computed there, equal to the
    CPU's (up to float rounding: identical results are not promised across devices)."""
    for ((idx, adv, ret), _), ((cidx, cadv, cret), _) in zip(
            _random_rollout("cuda"), _random_rollout("cpu"), strict=True):
        assert idx.device.type == adv.device.type == ret.device.type == "cuda"
        np.testing.assert_array_equal(idx.cpu().numpy(), cidx.numpy())
        np.testing.assert_allclose(adv.cpu().numpy(), cadv.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ret.cpu().numpy(), cret.numpy(), rtol=1e-5, atol=1e-6)


def test_rollout_state_is_host_data_that_loads_on_any_device():
    """``state()`` holds NumPy arrays whatever the device (a resume checkpoint's part), and
    ``load_state`` puts them back: the next GAE is the same."""
    r = SeatRollout(2, 2, obs_dim=3, n_actions=4, steps=4)
    for t in range(3):
        r.add(np.array([0, 1]), np.array([t % 2, 0]), np.full((2, 3), t, np.float32),
              np.ones((2, 4), bool), np.array([1, 2]), np.array([-0.5, -1.0], np.float32),
              np.array([0.1 * t, 0.2], np.float32))
        r.credit(np.full((2, 2), 0.25, np.float32), np.array([False, t == 2]))
    state = r.state()
    assert all(isinstance(v, np.ndarray) for k, v in state.items() if k not in ("size", "blocks"))
    back = SeatRollout(2, 2, obs_dim=3, n_actions=4, steps=4)
    back.load_state(state)
    for a, b in zip(r.advantages(0.9, 0.8), back.advantages(0.9, 0.8), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(back.obs[:r.size], r.obs[:r.size])


def test_knockout_reward_counts_slots_present_but_out_of_play():
    """enemies_out and allies_out count the observer's enemy and ally slots whose combatant is
    present but not in play (an empty slot, present 0, is no knock-out)."""
    from traveller_rl.ppo.shaping import KnockoutReward, parse_knockouts

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True)
    labels = venv.observation_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((3, len(labels)), dtype=np.float32)
    for k in range(4):
        obs[:, col[f"enemy{k}.present"]] = 1.0
        obs[:, col[f"enemy{k}.in_play"]] = 1.0
    for k in range(3):
        obs[:, col[f"ally{k}.present"]] = 1.0
        obs[:, col[f"ally{k}.in_play"]] = 1.0
    obs[1, col["enemy2.in_play"]] = 0.0
    obs[2, [col["enemy0.in_play"], col["enemy3.in_play"], col["ally1.in_play"]]] = 0.0
    ko = KnockoutReward(parse_knockouts("enemies_out=0.25,allies_out=-0.5"), labels)
    assert np.allclose(ko(obs), [0.0, 0.25, 0.5 - 0.5])


def test_knockout_reward_in_play_counts_knockouts_and_never_falls():
    """In random battles of squad, each seat's enemies_out starts at 0, never falls between its
    decisions of a battle, and rises in some (knocked-out combatants keep their slot, R8.2)."""
    from traveller_rl.ppo.shaping import KnockoutReward, parse_knockouts

    venv = vector.make("squad", num_envs=8, seed=0, backend="python", relative_actions=True)
    ko = KnockoutReward(parse_knockouts("enemies_out=1"), venv.observation_labels)
    rng = np.random.default_rng(0)
    obs, mask, info = venv.reset(seed=5)
    last: dict[tuple[int, int], float] = {}
    rises = 0
    for _ in range(3000):
        values = ko(obs)
        for row, agent in enumerate(info["agent"].tolist()):
            before = last.get((row, agent), 0.0)
            assert values[row] >= before
            rises += values[row] > before
            last[(row, agent)] = float(values[row])
        obs, mask, _, term, trunc, info = venv.step(vector.random_legal_actions(mask, rng))
        for row in np.flatnonzero(term | trunc):
            last = {k: v for k, v in last.items() if k[0] != row}
    assert rises > 0


def test_position_potential_reads_the_move_view_of_the_seats_own_square():
    """clear_shots and exposed come from move.here.* (observations.move_view, R8.1), and cover
    only counts when the seat is crouched or prone (R5.3)."""
    from traveller_rl.ppo.shaping import PositionPotential, parse_potential

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True,
                       move_view=True)
    labels = venv.observation_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((3, len(labels)), dtype=np.float32)
    obs[:, col["move.here.seen_by"]] = 0.75
    obs[:, col["move.here.covered_from"]] = 0.5
    obs[:, col["move.here.clear_shots"]] = 0.25
    obs[1, col["self.stance_prone"]] = 1.0
    obs[2, col["self.stance_crouch"]] = 1.0
    pot = PositionPotential(parse_potential("clear_shots=2,exposed=-1"), labels)
    assert np.allclose(pot(obs), [0.5 - 0.75, 0.5 - 0.25, 0.5 - 0.25])


def test_position_potential_reads_the_attack_view():
    """hit is the best attack.enemyK.hit (the seat's held aim is in it, so an aim pays when
    taken); threat is attack.here.threat (observations.ATTACK_VIEW_FIELDS)."""
    from traveller_rl.ppo.shaping import PositionPotential, parse_potential

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True,
                       attack_view=True)
    labels = venv.observation_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((2, len(labels)), dtype=np.float32)
    obs[0, col["attack.enemy1.hit"]] = 0.25
    obs[0, col["attack.enemy3.hit"]] = 0.5
    obs[0, col["attack.ally0.hit"]] = 1.0  # allies are not targets
    obs[0, col["attack.enemy2.hits_me"]] = 1.0
    obs[1, col["attack.here.threat"]] = 0.75
    pot = PositionPotential(parse_potential("hit=2,threat=-1"), labels)
    assert np.allclose(pot(obs), [2 * 0.5, -0.75])


# ============================================================================ a tiny run
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ppo") / "run"
    assert cli_main(["train", "ppo", *TINY, "--out", str(out)]) == 0
    return out


def test_a_tiny_run_writes_config_checkpoint_curve_and_tensorboard(tiny_run):
    config = json.loads((tiny_run / "config.json").read_text())
    assert config["args"]["opponents"] == "red=rush" and config["args"]["seed"] == 3
    assert config["groups"][0]["learners"] == ["blue_0"]
    assert config["groups"][0]["opponents"] == {"red_0": "rush"}
    assert (tiny_run / "learning_curve.png").stat().st_size > 10_000
    assert list((tiny_run / "tb").glob("events.out.tfevents.*"))
    progress = [json.loads(x) for x in (tiny_run / "progress.jsonl").read_text().splitlines()]
    assert [p["update"] for p in progress] == [0, 2, 4]
    assert all(p["eval"]["rush"]["battles"] == 4 for p in progress)
    curve = [json.loads(x) for x in (tiny_run / "training.jsonl").read_text().splitlines()]
    assert [p["update"] for p in curve] == [1, 2, 3, 4]  # one point per update
    assert [p["decisions"] for p in curve] == sorted(p["decisions"] for p in curve)
    assert curve[-1]["decisions"] == 2048
    assert all(p["train_win_rate"] is None or 0 <= p["train_win_rate"] <= 1 for p in curve)
    ev = json.loads((tiny_run / "evaluation.json").read_text())
    assert ev["decisions"] == 2048 and ev["updates"] == 4
    assert ev["final_evaluation"][0]["battles"] == 2
    data = read_checkpoint(tiny_run / "ppo.pt")
    assert data["scenario"] == "duel" and data["decisions"] == 2048 and data["update"] == 4
    assert data["action_labels"] == vector.make("duel", relative_actions=True).action_labels
    assert not list(tiny_run.glob(".*tmp"))  # atomic writes leave no temporary file


def test_a_checkpoint_names_its_run_for_the_result_files(tiny_run, tmp_path):
    """The result scripts' ``--checkpoint`` JSON records where the checkpoint came from: its
    own bookkeeping always, its run's flags and seconds while it sits in the run folder."""
    import shutil

    from traveller_rl.common import checkpoint_provenance

    info = checkpoint_provenance(tiny_run / "ppo.pt")
    assert (info["scenario"], info["update"], info["decisions"], info["seed"]) == \
        ("duel", 4, 2048, 3)
    assert info["hidden"] == [64, 64] and info["move_view"] is False
    curve = [json.loads(x) for x in (tiny_run / "training.jsonl").read_text().splitlines()]
    assert info["run"]["folder"] == str(tiny_run)
    assert info["run"]["args"]["opponents"] == "red=rush"
    assert info["run"]["seconds"] == curve[-1]["seconds"]
    copied = shutil.copy(tiny_run / "ppo.pt", tmp_path / "elsewhere.pt")
    assert checkpoint_provenance(copied)["run"] is None
    assert checkpoint_provenance(copied)["decisions"] == 2048


def test_the_same_seed_gives_the_same_checkpoint_bytes(tiny_run, tmp_path):
    from traveller_rl.ppo.trainer import build_parser, run

    again = tmp_path / "again"
    assert run(build_parser().parse_args([*TINY, "--out", str(again)])) == 0
    assert (again / "ppo.pt").read_bytes() == (tiny_run / "ppo.pt").read_bytes()
    # ... and training moved the weights away from the seeded initialisation.
    from traveller_agents.nets import ActorCritic

    torch.manual_seed(3)
    init = ActorCritic(59, 48, [64, 64])
    trained = network_from_checkpoint(read_checkpoint(tiny_run / "ppo.pt"))
    for a, b in zip(init.state_dict().values(), trained.state_dict().values(), strict=True):
        assert a.shape == b.shape and not torch.equal(a, b)


def test_the_checkpoint_loads_as_an_npc_policy_and_plays(tiny_run, capsys):
    path = str(tiny_run / "ppo.pt")
    policy = make_policy(path, scenario="duel")  # as the tournament and `traveller eval` do
    assert isinstance(policy, PPOPolicy)
    from traveller_env.policy import resolve_policy

    assert isinstance(resolve_policy(path, scenario="duel"), PPOPolicy)
    row = evaluate_matchup(policy, make_policy("random"), "duel", battles=2, seed=5)
    assert row["wins"] + row["draws"] + row["losses"] == 2
    # 2,048 decisions of training: it never beats rush, which wins from each side
    rushed = evaluate_matchup(policy, make_policy("rush"), "duel", battles=2, seed=5)
    assert {s: (c["wins"], c["losses"]) for s, c in rushed["by_side"].items()} == {
        "blue": (0, 1), "red": (0, 1)}
    assert cli_main(["eval", path, "--scenario", "duel", "--vs", "random", "--battles",
                     "2"]) == 0
    assert "random" in capsys.readouterr().out
    from traveller_rl.tournament import run_tournament

    results = run_tournament([path, "random"], ["duel"], battles=1, seed=3, workers=1,
                             progress=False)
    assert len(results) == 2


def test_the_npc_policy_chooses_what_the_trainer_would(tiny_run):
    """The loaded policy's NumPy forward pass and greedy choice equal the trainer's torch
    ones on observations and masks from the vector."""
    data = read_checkpoint(tiny_run / "ppo.pt")
    net = network_from_checkpoint(data)
    policy = load_ppo_policy(tiny_run / "ppo.pt", "duel")
    venv = vector.make("duel", num_envs=32, seed=9, relative_actions=True)
    obs, mask, _ = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        with torch.no_grad():
            want = greedy_actions(net.actor(torch.from_numpy(obs)), torch.from_numpy(mask))
            logits = net.actor(torch.from_numpy(obs)).numpy()
        for i in range(len(obs)):
            assert np.allclose(policy.logits(obs[i]), logits[i], atol=1e-5)
            assert policy.choose(obs[i], mask[i]) == int(want[i])
        obs, mask, *_ = venv.step(vector.random_legal_actions(mask, rng))


def test_a_checkpoint_refuses_a_scenario_it_does_not_fit(tiny_run, tmp_path):
    with pytest.raises(ValueError, match=r"ppo\.pt.*do not fit scenario 'squad'"):
        load_ppo_policy(tiny_run / "ppo.pt", "squad")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"bad\.pt: cannot be read as a train_ppo checkpoint"):
        make_policy(str(bad), scenario="duel")
    with pytest.raises(FileNotFoundError, match=r"missing\.pt"):
        make_policy(str(tmp_path / "missing.pt"), scenario="duel")


# ============================================================================ other modes
@pytest.mark.parametrize("mode", [
    pytest.param([], id="self-play"),
    pytest.param(["--pool", "--pool-every", "1", "--pool-scripted", "random",
                  "--pool-scripted-share", "0.5"], id="pool"),
])
def test_self_play_and_pool_runs_train_every_learner_seat(mode, tmp_path):
    from traveller_rl.ppo.trainer import build_parser, run

    out = tmp_path / "run"
    args = ["--scenario", "duel", "--total-timesteps", "256", "--num-envs", "8",
            "--num-steps", "16", "--eval-every", "0", "--eval-vs", "random", "--eval-battles",
            "2", "--eval-envs", "2", "--final-eval-battles", "0", "--backend", "python",
            "--no-progress", *mode, "--out", str(out)]
    assert run(build_parser().parse_args(args)) == 0
    config = json.loads((out / "config.json").read_text())
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["decisions"] >= 256
    if mode:
        groups = {g["label"]: g["rows"] for g in config["groups"]}
        assert groups == {"vs pool": 4, "vs random as blue": 2, "vs random as red": 2}
        pool = sorted(p.name for p in (out / "pool").glob("*.pt"))
        assert pool[0] == "ppo_u000000.pt" and len(pool) == ev["updates"] + 1
        load_ppo_policy(out / "pool" / pool[0], "duel")
    else:
        assert config["groups"][0]["learners"] == ["blue_0", "red_0"]
    first = (out / "ppo.pt").read_bytes()
    # --overwrite replaces the run (one TensorBoard file, not two); the same seed, same bytes.
    assert run(build_parser().parse_args([*args, "--overwrite"])) == 0
    assert len(list((out / "tb").glob("events.out.tfevents.*"))) == 1
    assert (out / "ppo.pt").read_bytes() == first


def test_pool_greedy_share_changes_the_frozen_play_and_stays_reproducible(tmp_path):
    """--pool-greedy-share 1: the frozen selves play greedily, so the same seed trains another
    network than with the default (sampling) frozen selves, and the same one twice."""
    from traveller_rl.ppo.trainer import build_parser, run

    base = ["--scenario", "duel", "--pool", "--pool-every", "1", "--total-timesteps", "512",
            "--num-envs", "16", "--num-steps", "16", "--seed", "9", "--eval-vs", "",
            "--final-eval-battles", "0", "--backend", "python", "--no-progress"]
    for name, extra in (("sampled", []), ("greedy", ["--pool-greedy-share", "1"]),
                        ("again", ["--pool-greedy-share", "1"])):
        assert run(build_parser().parse_args([*base, *extra, "--out", str(tmp_path / name)])) == 0
    weights = {name: (tmp_path / name / "ppo.pt").read_bytes()
               for name in ("sampled", "greedy", "again")}
    assert weights["greedy"] == weights["again"]
    assert weights["greedy"] != weights["sampled"]
    config = json.loads((tmp_path / "greedy" / "config.json").read_text())
    assert config["args"]["pool_greedy_share"] == 1.0


def test_side_shares_share_out_scripted_rows_and_pool_battles_by_side(tmp_path):
    """--side-shares blue=0.75,red=0.25: the scripted rows go 3:1 to the learner as blue, a
    side with share 0 gets none, and the pool's per-battle side draw follows the shares."""
    from traveller_rl.ppo.rows import draw_sides
    from traveller_rl.ppo.trainer import build_parser, run

    def groups_of(shares: str, out: str) -> list[dict]:
        """The training groups (label, rows) of a tiny pool run with these --side-shares."""
        args = ["--scenario", "duel", "--pool", "--pool-every", "1", "--pool-scripted",
                "random,rush", "--pool-scripted-share", "0.5", "--side-shares", shares,
                "--total-timesteps", "256", "--num-envs", "32", "--num-steps", "8",
                "--eval-vs", "", "--final-eval-battles", "0", "--backend", "python",
                "--no-progress", "--out", str(tmp_path / out)]
        assert run(build_parser().parse_args(args)) == 0
        return json.loads((tmp_path / out / "config.json").read_text())["groups"]

    groups = {g["label"]: g["rows"] for g in groups_of("blue=0.75,red=0.25", "run")}
    assert groups == {"vs pool": 16, "vs random as blue": 6, "vs random as red": 2,
                      "vs rush as blue": 6, "vs rush as red": 2}
    assert [g["label"] for g in groups_of("blue=1,red=0", "b")] == [
        "vs pool", "vs random as blue", "vs rush as blue"]
    # the pool's draw: exact shares within 4 standard errors over 40,000 battles
    n = 40_000
    drawn = draw_sides(np.random.default_rng(0), n, 2, np.array([0.65, 0.35]))
    assert abs((drawn == 0).mean() - 0.65) < 4 * np.sqrt(0.65 * 0.35 / n)
    assert set(draw_sides(np.random.default_rng(0), 100, 2, np.array([1.0, 0.0]))) == {0}
    uniform = draw_sides(np.random.default_rng(7), 50, 2, None)  # without the flag: as before
    assert (uniform == np.random.default_rng(7).integers(2, size=50)).all()


@pytest.mark.skipif(vector.BACKENDS.get("core") != "available",
                    reason="the compiled core is not built here")
def test_pool_scripted_rows_run_in_the_core_unless_a_policy_has_no_core_version(tmp_path, capsys):
    """``cover`` runs inside the core, so its scripted rows stay on the core backend; a policy
    without a core version (``always_lead``) is played on the python backend, with a note."""
    from traveller_rl.ppo.trainer import build_parser, run

    args = ["--scenario", "squad", "--pool", "--pool-every", "1", "--pool-scripted",
            "cover,always_lead", "--pool-scripted-share", "0.5", "--total-timesteps", "64",
            "--num-envs", "8", "--num-steps", "4", "--eval-vs", "", "--final-eval-battles", "0",
            "--no-progress", "--out", str(tmp_path / "run")]
    assert run(build_parser().parse_args(args)) == 0
    groups = json.loads((tmp_path / "run" / "config.json").read_text())["groups"]
    backends = {g["label"]: g["backend"] for g in groups}
    assert backends == {"vs pool": "core", "vs cover as blue": "core", "vs cover as red": "core",
                        "vs always_lead as blue": "python", "vs always_lead as red": "python"}
    err = capsys.readouterr().err
    assert "always_lead" in err and "these battles run on the python backend" in err
    assert "'cover'" not in err


# ============================================================================ bad flags
@pytest.mark.parametrize(("flags", "message"), [
    (["--opponents", "red=nobody"], "--opponents: opponents['red']: unknown policy 'nobody'"),
    (["--opponents", "green=rush"], "--opponents: opponents: 'green' is neither a side"),
    (["--opponents", "red"], "--opponents: 'red' is not SEAT=POLICY"),
    (["--total-timesteps", "-5"], "--total-timesteps must be at least 1, got -5"),
    (["--num-envs", "0"], "--num-envs must be at least 1"),
    (["--update-threads", "-1"], "--update-threads must be at least 0, got -1"),
    (["--update-threads", "300"],
     "--update-threads must be an int in [0, 256] (0: one per core, at most 8), got 300"),
    (["--hidden", "64,x"], "--hidden must be positive layer sizes"),
    (["--backend", "gpu"], "--backend must be one of"),
    (["--pool", "--opponents", "red=rush"], "--pool and --opponents exclude each other"),
    (["--pool-scripted", "rush"], "--pool-scripted needs --pool"),
    (["--pool", "--pool-scripted", "nobody"], "--pool-scripted: "),
    (["--gamma", "1.5"], "--gamma must lie in [0, 1]"),
    (["--side-shares", "blue=1,red=0"], "--side-shares needs --pool"),
    (["--pool", "--side-shares", "blue=1"], "--side-shares: no share for red; name every side"),
    (["--pool", "--side-shares", "blue=0.5,green=0.5"], "--side-shares: unknown term 'green'"),
    (["--pool", "--side-shares", "blue=0.7,red=0.7"], "the shares must sum to 1 (they sum to 1.4)"),
    (["--pool", "--side-shares", "blue=-1,red=2"], "'blue=-1,red=2': a share must be at least 0"),
    (["--pool", "--pool-scripted", "rush", "--num-envs", "4", "--pool-scripted-share", "0.5",
      "--side-shares", "blue=0.9,red=0.1"], "--side-shares blue=0.9,red=0.1: too few"),
    (["--pool-greedy-share", "0.5"], "--pool-greedy-share needs --pool"),
    (["--pool", "--pool-greedy-share", "1.5"], "--pool-greedy-share must be in [0, 1], got 1.5"),
    (["--scenario", "nowhere"], "nowhere"),
    (["--scenario", "duel,squad"], "--scenario: 'squad' has other seats than 'duel'"),
    (["--scenario", "duel,duel"], "--scenario: listed twice: duel"),
    (["--scenario", "range_short,range_long", "--pool"], "--pool trains on one --scenario"),
    (["--out", "EXISTING"], "holds a run already (config.json)"),
])
def test_bad_flags_give_clear_errors(flags, message, capsys, tmp_path):
    if flags == ["--out", "EXISTING"]:
        flags = ["--out", str(tmp_path)]
        (tmp_path / "config.json").write_text("{}")
    status = cli_main(["train", "ppo", "--backend", "python", "--out", str(tmp_path / "never"),
                       *flags])
    assert status == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "never").exists()


def test_unknown_flags_are_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["train", "ppo", "--no-such-flag"])
    assert exc.value.code == 2
    assert "--no-such-flag" in capsys.readouterr().err


def test_the_checkpoint_class_is_a_policy():
    from traveller_env.policy import Policy

    layers = [(np.zeros((3, 2)), np.zeros(3)), (np.zeros((2, 3)), np.array([0.0, 1.0]))]
    p = PPOPolicy(layers, ["a", "b"], "x")
    assert isinstance(p, Policy)
    assert p.choose(np.zeros(2), np.array([1, 1])) == 1
    assert p.choose(np.zeros(2), np.array([1, 0])) == 0
    with pytest.raises(ValueError, match="allows no action"):
        p.choose(np.zeros(2), np.array([0, 0]))


@pytest.mark.skipif(vector.BACKENDS.get("core") != "available",
                    reason="the compiled core is not built here")
def test_the_core_and_python_backends_give_the_same_checkpoint(tmp_path):
    """The backends play the same battles (same seeds, same in-core rush), so the same flags
    train the same network, byte for byte."""
    from traveller_rl.ppo.trainer import build_parser, run

    common = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "1024",
              "--seed", "4", "--num-envs", "16", "--num-steps", "16", "--eval-every", "0",
              "--eval-battles", "0", "--final-eval-battles", "0", "--no-progress"]
    for backend in ("python", "core"):
        assert run(build_parser().parse_args(
            [*common, "--backend", backend, "--out", str(tmp_path / backend)])) == 0
    assert (tmp_path / "core" / "ppo.pt").read_bytes() == \
        (tmp_path / "python" / "ppo.pt").read_bytes()


def test_move_view_runs_train_the_same_on_both_backends_and_say_so(tmp_path):
    """``--move-view``: both backends observe the move view alike (same checkpoint bytes); the
    checkpoint records it and its observation size includes it."""
    from traveller_agents.checkpoint import read_checkpoint
    from traveller_env.env import TravellerEnv
    from traveller_rl.ppo.trainer import build_parser, run

    common = ["--scenario", "duel", "--opponents", "red=rush", "--total-timesteps", "1024",
              "--seed", "4", "--num-envs", "16", "--num-steps", "16", "--eval-every", "0",
              "--eval-battles", "0", "--final-eval-battles", "0", "--no-progress",
              "--move-view"]
    for backend in ("python", "core"):
        assert run(build_parser().parse_args(
            [*common, "--backend", backend, "--out", str(tmp_path / backend)])) == 0
    data = (tmp_path / "core" / "ppo.pt").read_bytes()
    assert data == (tmp_path / "python" / "ppo.pt").read_bytes()
    ckpt = read_checkpoint(tmp_path / "core" / "ppo.pt")
    assert ckpt["move_view"] is True
    assert ckpt["obs_dim"] == len(TravellerEnv("duel", move_view=True).observation_labels)


# ============================================================================ several scenarios
def test_one_policy_trains_on_several_scenarios(tmp_path):
    """``--scenario a,b``: the rows are shared out over the scenarios (one vector each), the
    learner plays in all of them, evaluation runs per (policy, scenario), and the checkpoint
    plays either scenario as an NPC."""
    from traveller_rl.ppo.trainer import build_parser, prepare, run

    flags = ["--scenario", "range_short,range_long", "--opponents", "red=passive",
             "--total-timesteps", "600", "--seed", "2", "--num-envs", "5", "--num-steps", "20",
             "--eval-every", "1", "--eval-vs", "passive", "--eval-battles", "2",
             "--eval-envs", "2", "--final-eval-battles", "0", "--backend", "python",
             "--no-progress"]
    args = build_parser().parse_args([*flags, "--out", str(tmp_path / "probe")])
    from traveller_rl.ppo.args import Args

    groups, evals = prepare(Args(**vars(args)))
    assert [(g.start, g.stop, g.venv.scenario.name) for g in groups] == [
        (0, 3, "range_short"), (3, 5, "range_long")]
    assert sorted(evals) == ["passive@range_long", "passive@range_short"]
    out = tmp_path / "run"
    assert run(build_parser().parse_args([*flags, "--out", str(out)])) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["scenario"] == "range_short,range_long"
    assert [g["rows"] for g in config["groups"]] == [3, 2]
    first = json.loads((out / "progress.jsonl").read_text().splitlines()[0])
    assert set(first["eval"]) == {"passive@range_short", "passive@range_long"}
    curve = [json.loads(x) for x in (out / "training.jsonl").read_text().splitlines()]
    labels = {g["label"] for g in config["groups"]}
    assert curve and all(set(p["groups"]) <= labels for p in curve)  # per scenario
    assert any(p["groups"] for p in curve)
    for scenario in ("range_short", "range_long"):
        row = evaluate_matchup(make_policy(str(out / "ppo.pt"), scenario=scenario),
                               make_policy("passive"), scenario, battles=2)
        assert row["battles"] == 2


# ============================================================================ league features
def test_style_shaping_reads_the_deciding_seats_observation_and_action():
    """--style terms: distance to the nearest enemy in play, share of enemies in play with
    line of sight, crouched/prone, attacks, leadership."""
    from traveller_rl.ppo.shaping import StyleShaping, parse_style

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True)
    labels, actions = venv.observation_labels, venv.action_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((2, len(labels)), dtype=np.float32)
    for e, (play, dist, los) in enumerate([(1, 0.5, 1), (1, 0.2, 0), (0, 0.05, 1), (1, 0.9, 1)]):
        obs[:, col[f"enemy{e}.in_play"]] = play
        obs[:, col[f"enemy{e}.distance"]] = dist
        obs[:, col[f"enemy{e}.line_of_sight"]] = los
    obs[1, col["self.stance_prone"]] = 1.0
    act = np.array([actions.index("attack:enemy0"), actions.index("leadership")])
    shaping = StyleShaping(parse_style("distance=1,exposure=10,low_stance=100,shots=1000,"
                                       "lead=10000"), labels, actions)
    got = shaping(obs, act)
    # nearest enemy in play 0.2 (the 0.05 one is out of play); 2 of 3 in play are in sight
    assert np.allclose(got, [0.2 + 10 * 2 / 3 + 1000, 0.2 + 10 * 2 / 3 + 100 + 10000])


def test_style_shots_into_cover_reads_the_target_slots_cover_flag():
    """shots_into_cover: an attack on an enemy slot whose "in cover from me" flag is set (R5.3)
    scores the weight; an attack on an exposed enemy, or any other action, scores nothing."""
    from traveller_rl.ppo.shaping import StyleShaping, parse_style

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True)
    labels, actions = venv.observation_labels, venv.action_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((4, len(labels)), dtype=np.float32)
    obs[:, col["enemy1.in_cover"]] = 1.0
    act = np.array([actions.index(a) for a in
                    ("attack:enemy1", "attack:enemy0", "aim:enemy1", "end_turn")])
    shaping = StyleShaping(parse_style("shots_into_cover=-0.5"), labels, actions)
    assert np.allclose(shaping(obs, act), [-0.5, 0.0, 0.0, 0.0])


def test_style_reactions_score_a_dodge_or_a_parry():
    """reactions: react:dodge and react:parry score the weight (R3.6); react:none and other
    actions score nothing."""
    from traveller_rl.ppo.shaping import StyleShaping, parse_style

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True)
    labels, actions = venv.observation_labels, venv.action_labels
    obs = np.zeros((4, len(labels)), dtype=np.float32)
    act = np.array([actions.index(a) for a in
                    ("react:dodge", "react:parry", "react:none", "aim:enemy1")])
    shaping = StyleShaping(parse_style("reactions=-0.02"), labels, actions)
    assert np.allclose(shaping(obs, act), [-0.02, -0.02, 0.0, 0.0])


def test_style_distance_in_metres_uses_the_map_size():
    """distance_m: metres (R8.1, 1.5 m squares) to the nearest enemy in play, from the slot's
    offset (dx, dy over the map's width and height), whatever the seat's weapon."""
    from traveller_rl.ppo.shaping import StyleShaping, parse_style

    venv = vector.make("squad", num_envs=1, seed=0, backend="python", relative_actions=True)
    labels, actions = venv.observation_labels, venv.action_labels
    col = {lab: j for j, lab in enumerate(labels)}
    obs = np.zeros((1, len(labels)), dtype=np.float32)
    for e, (play, dx, dy) in enumerate([(1, 6, 8), (0, 1, 0), (1, 20, 0), (1, -3, -4)]):
        obs[0, col[f"enemy{e}.in_play"]] = play
        obs[0, col[f"enemy{e}.dx"]] = dx / 30
        obs[0, col[f"enemy{e}.dy"]] = dy / 16
    shaping = StyleShaping(parse_style("distance_m=-0.5"), labels, actions, (30, 16))
    # in play: 10, 20 and 5 squares away; nearest 5 squares = 7.5 m
    assert np.allclose(shaping(obs, np.zeros(1, dtype=np.int64)), [-0.5 * 7.5])


def test_pool_watch_plays_the_other_runs_checkpoints(tmp_path, capsys):
    """--pool-watch: another run's pool checkpoints join the pool; with --pool-watch-share 1
    (an exploiter) every pool battle meets one of them and none the run's own past."""
    from traveller_rl.ppo.trainer import build_parser, run

    common = ["--scenario", "duel", "--pool", "--pool-every", "1", "--num-envs", "8",
              "--num-steps", "32", "--eval-vs", "", "--final-eval-battles", "0",
              "--backend", "python", "--no-progress"]
    main = tmp_path / "main"
    assert run(build_parser().parse_args([*common, "--total-timesteps", "512", "--seed", "5",
                                          "--out", str(main)])) == 0
    watched = sorted(str(p) for p in (main / "pool").glob("ppo_u*.pt"))
    assert len(watched) >= 2
    exploiter = tmp_path / "exploiter"
    # 2,048 decisions: enough for several duels to end (512 ended one)
    assert run(build_parser().parse_args([*common, "--total-timesteps", "2048", "--seed", "6",
                                          "--pool-watch", str(main), "--pool-watch-share", "1",
                                          "--pool-size", "2", "--out", str(exploiter)])) == 0
    pool = json.loads((exploiter / "evaluation.json").read_text())["pool"]
    games = dict(zip(pool["opponents"], pool["training_battles"], strict=True))
    assert [name for name in games if name in watched] == watched[-2:]  # the newest --pool-size
    assert sum(games[name] for name in watched[-2:]) > 0
    assert all(n == 0 for name, n in games.items() if name not in watched)
    # a watched run whose checkpoints do not fit these battles is refused, naming the flag
    status = cli_main(["train", "ppo", "--scenario", "squad", "--pool", "--pool-watch", str(main),
                       "--total-timesteps", "8", "--num-envs", "2", "--num-steps", "4",
                       "--eval-vs", "", "--final-eval-battles", "0", "--backend", "python",
                       "--no-progress", "--out", str(tmp_path / "misfit")])
    assert status == 2
    assert "--pool-watch: " in capsys.readouterr().err


def test_max_train_seconds_ends_a_run_on_its_time_budget(tmp_path):
    """--max-train-seconds: the run stops after the first update that reaches the budget of
    training time, far short of --total-timesteps, and still writes its checkpoint."""
    out = tmp_path / "timed"
    status = cli_main(["train", "ppo", "--scenario", "duel", "--opponents", "red=rush",
                       "--num-envs", "4", "--num-steps", "8", "--total-timesteps", "100000000",
                       "--max-train-seconds", "1", "--eval-every", "0", "--final-eval-battles",
                       "0", "--seed", "2", "--no-progress", "--out", str(out)])
    assert status == 0
    rows = [json.loads(line) for line in (out / "training.jsonl").read_text().splitlines()]
    # the log rounds seconds to 0.01, so an update just short of the budget (0.996 s) is
    # logged as 1.0: the run stops at the first row at or past it, and no earlier
    assert rows[-1]["seconds"] >= 1.0
    assert all(row["seconds"] <= 1.0 for row in rows[:-1])
    assert rows[-1]["decisions"] < 100_000_000
    assert (out / "ppo.pt").is_file()


@pytest.mark.parametrize(("flags", "message"), [
    (["--style", "speed=1"], "--style: unknown term 'speed'"),
    (["--style", "distance=x"], "--style: 'distance=x' is not TERM=WEIGHT"),
    (["--potential", "cover=1"], "--potential: unknown term 'cover'"),
    (["--max-train-seconds", "-5"], "--max-train-seconds must be a number of seconds >= 0"),
    (["--max-train-seconds", "nan"], "--max-train-seconds must be a number of seconds >= 0"),
    (["--knockouts", "kills=1"], "--knockouts: unknown term 'kills'; allowed: enemies_out, "
                                 "allies_out"),
    (["--knockouts", "enemies_out=inf"], "--knockouts: 'enemies_out=inf' is not TERM=WEIGHT"),
    (["--pool-watch", "."], "--pool-watch needs --pool"),
    (["--pool", "--pool-watch", "no/such/run"], "--pool-watch: 'no/such/run' is not a folder"),
    (["--pool", "--pool-watch-share", "2"], "--pool-watch-share must be in [0, 1]"),
    (["--potential", "exposed=-1"], "--potential reads the move view"),
    (["--potential", "hit=1", "--move-view"], "--potential reads the attack view (hit): it "
                                               "needs --attack-view"),
    (["--pool-opponents", "a.pt"], "--pool-opponents needs --pool"),
    (["--pool", "--pool-opponents", "missing.pt"], "--pool-opponents: 'missing.pt' is not"),
    (["--pool", "--pool-sampling", "best"], "--pool-sampling must be one of uniform, pfsp"),
    (["--init", "nothing.zip"], "--init: 'nothing.zip' is not a train_ppo checkpoint"),
])
def test_league_flags_give_clear_errors(flags, message, capsys, tmp_path):
    status = cli_main(["train", "ppo", "--backend", "python", "--out", str(tmp_path / "never"),
                       *flags])
    assert status == 2
    assert message in capsys.readouterr().err


def test_init_pool_opponents_pfsp_and_style_run_together(tiny_run, tmp_path):
    """A league member's run: it starts from a checkpoint, keeps another policy in its pool
    for the whole run, draws opponents by PFSP and is shaped by a style."""
    from traveller_rl.ppo.trainer import build_parser, run

    seed_ckpt = str(tiny_run / "ppo.pt")
    out = tmp_path / "member"
    flags = ["--scenario", "duel", "--pool", "--pool-opponents", seed_ckpt, "--pool-sampling",
             "pfsp", "--init", seed_ckpt, "--style", "distance=0.05,shots=-0.01",
             "--total-timesteps", "1024", "--seed", "4", "--num-envs", "8", "--num-steps",
             "32", "--pool-every", "1", "--eval-vs", "", "--final-eval-battles", "0",
             "--backend", "python", "--no-progress", "--out", str(out)]
    assert run(build_parser().parse_args(flags)) == 0
    result = json.loads((out / "evaluation.json").read_text())
    pool = result["pool"]
    assert pool["opponents"][0] == seed_ckpt
    assert len(pool["training_battles"]) == len(pool["opponents"])
    assert sum(pool["training_battles"]) > 0
    assert sum(pool["learner_wins"]) <= sum(pool["training_battles"])
    bad = tmp_path / "bad"
    status = cli_main(["train", "ppo", "--scenario", "squad", "--init", seed_ckpt, "--backend",
                       "python", "--total-timesteps", "64", "--num-envs", "2", "--num-steps",
                       "4", "--eval-vs", "", "--no-progress", "--out", str(bad)])
    assert status == 2
    assert not (bad / "ppo.pt").exists()


def test_stop_after_updates_stops_there_and_saves(tmp_path):
    """--stop-after-updates 2 of TINY's 4 updates: the run ends and saves at update 2 (the
    learning rate still follows --total-timesteps, so it matches the full run's update-2
    checkpoint; the byte-identical-checkpoint test above covers the determinism)."""
    from traveller_rl.ppo.trainer import build_parser, run

    half = tmp_path / "half"
    assert run(build_parser().parse_args([*TINY, "--out", str(half),
                                          "--stop-after-updates", "2"])) == 0
    data = read_checkpoint(half / "ppo.pt")
    assert data["update"] == 2 and data["decisions"] < 2048


#: ``traveller train ppo --help``'s groups and flags before ``Args`` was nested by concern
#: (the ``--no-`` forms of the switches aside): the command line it must keep.
HELP_FLAGS = {
    "scenario and opponents": ["--scenario", "--layout", "--scenario-seeds", "--opponents",
                               "--side-shares"],
    "pool of past selves (--pool)": [
        "--pool", "--pool-every", "--pool-size", "--pool-scripted", "--pool-scripted-share",
        "--pool-opponents", "--pool-watch", "--pool-watch-share", "--pool-greedy-share",
        "--pool-stack", "--pool-sampling"],
    "reward shaping": ["--style", "--knockouts", "--potential"],
    "observation views": ["--move-view", "--aim-view", "--attack-view"],
    "budget": ["--total-timesteps", "--stop-after-updates", "--max-train-seconds", "--seed",
               "--backend", "--num-envs", "--num-steps", "--threads", "--update-threads",
               "--env-threads", "--overlap", "--device", "--compile"],
    "PPO hyperparameters": ["--lr", "--anneal-lr", "--epochs", "--minibatches", "--gamma",
                            "--gae-lambda", "--clip-coef", "--ent-coef", "--vf-coef",
                            "--max-grad-norm"],
    "network": ["--init", "--hidden", "--arch", "--embed", "--critic", "--attention"],
    "evaluation": ["--eval-every", "--eval-vs", "--eval-battles", "--eval-envs",
                   "--final-eval-battles"],
    "output": ["--out", "--overwrite", "--resume", "--checkpoint-every", "--progress"],
}
#: The switches (``--flag`` / ``--no-flag``).
SWITCHES = {"--pool", "--pool-stack", "--move-view", "--aim-view", "--attack-view",
            "--overlap", "--compile", "--anneal-lr", "--overwrite", "--progress"}


def test_the_help_lists_the_same_flags_in_the_same_groups():
    """The ``--help`` groups come from ``Args``'s groups: the same titles, flags and order as
    the flat ``Args`` had, every switch with its ``--no-`` form."""
    from traveller_rl.ppo.trainer import build_parser

    parser = build_parser()
    groups = {g.title: [s for a in g._group_actions for s in a.option_strings
                        if not s.startswith("--no-") and s not in ("-h", "--help")]
              for g in parser._action_groups}
    assert {t: f for t, f in groups.items() if f} == HELP_FLAGS
    negated = {s for a in parser._actions for s in a.option_strings if s.startswith("--no-")}
    assert negated == {"--no-" + s[2:] for s in SWITCHES}


def test_args_take_and_give_back_the_flags_by_name():
    """``Args(**flags)`` files each flag in its group (``--lr`` is ``ppo.learning_rate``,
    ``--pool-every`` is ``pool.every``); ``flags()`` gives them back by flag name, every flag
    of the parser, with the parser's defaults; a name that is no flag is refused."""
    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.trainer import build_parser

    args = Args(lr=1e-3, epochs=7, hidden="32,32", pool=True, pool_every=5, eval_vs="rush")
    assert (args.ppo.learning_rate, args.ppo.n_epochs, args.net.net_arch) == (1e-3, 7, "32,32")
    assert (args.pool.enabled, args.pool.every, args.eval.vs) == (True, 5, "rush")
    assert Args(**args.flags()) == args
    parsed = vars(build_parser().parse_args([]))
    assert Args().flags() == parsed
    assert list(Args.flag_names()) == list(parsed)
    with pytest.raises(TypeError, match="no such flag learning_rate"):
        Args(learning_rate=1e-3)


@pytest.mark.parametrize(("group", "values", "message"), [
    ("PoolArgs", {"scripted": "rush"}, "--pool-scripted needs --pool"),
    ("PoolArgs", {"enabled": True, "sampling": "best"}, "--pool-sampling must be one of"),
    ("PPOSettings", {"learning_rate": 0.0}, "--lr must be positive"),
    ("PPOSettings", {"n_epochs": 0}, "--epochs must be at least 1"),
    ("NetArgs", {"net_arch": "64,x"}, "--hidden must be positive layer sizes"),
    ("NetArgs", {"critic": "entity"}, "--critic entity and --attention need --arch entity"),
    ("EvalArgs", {"envs": 0}, "--eval-envs must be at least 1"),
    ("BudgetArgs", {"overlap": True, "backend": "python"}, "--overlap needs --backend core"),
    ("OutputArgs", {"resume": "r", "overwrite": True}, "--resume and --overwrite"),
])
def test_each_group_checks_its_own_flags_naming_them(group, values, message):
    """Every group of ``Args`` refuses its own bad values, naming the flag (not the field)."""
    from traveller_rl.ppo import args as args_module

    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(args_module, group)(**values).check()


# ============================================================================ behaviour warnings
def test_the_evaluations_report_behaviour_and_list_warnings(tiny_run):
    """Every evaluation record holds the greedy policy's behaviour (counted from the actions it
    chose in the evaluation battles) and a list of warnings, empty before training."""
    progress = [json.loads(x) for x in (tiny_run / "progress.jsonl").read_text().splitlines()]
    assert progress[0]["warnings"] == []
    for record in progress:
        seen = record["eval"]["rush"]["behaviour"]
        assert seen["decisions"] >= seen["attacks"] + seen["aims"] + seen["moves"] > 0
        assert isinstance(record["warnings"], list)


def test_a_policy_that_aims_and_never_fires_or_never_moves_is_warned_about():
    from traveller_rl.ppo.progress import action_behaviour, behaviour_warnings

    labels = ["end_turn", "move:N:1", "stance:prone", "aim:enemy0", "attack:enemy0"]
    aimer = action_behaviour(labels, np.array([5, 0, 3, 287, 1]), 10)
    assert aimer["aims_per_shot"] == 287 and aimer["attacks_per_battle"] == 0.1
    assert aimer["cover_per_battle"] == 0.3 and aimer["moves_per_battle"] == 0
    warned = behaviour_warnings({"random": {"battles": 10, "behaviour": aimer}})
    assert [w.split(":")[1].strip() for w in warned] == [
        "the policy aims 287 times per attack (1 attacks in 10 battles)",
        "the policy never moves (10 battles)"]
    idle = action_behaviour(labels, np.array([40, 6, 0, 0, 0]), 10)
    assert behaviour_warnings({"rush": {"battles": 10, "behaviour": idle}}) == [
        "vs rush: the policy never attacks (0 aims, 6 moves in 10 battles)"]
    fine = action_behaviour(labels, np.array([10, 6, 1, 4, 8]), 10)
    assert behaviour_warnings({"rush": {"battles": 10, "behaviour": fine}}) == []


def test_which_limit_ends_the_run_is_said_once_the_rate_is_known():
    from traveller_rl.ppo.progress import limits_note

    assert limits_note(300_000, 0.0, 5000, 1.0) is None
    cut = limits_note(300_000, 75.0, 10_000, 1.0)
    assert cut.startswith("warning: --total-timesteps 300,000 ends the run after about 30 s")
    assert "binds first" in limits_note(10**9, 75.0, 10_000, 1.0)


# ============================================================================ --compile
def test_a_compiled_network_computes_what_the_eager_one_does_and_twins_stay_apart():
    """``compile_modules`` (``--compile``): the same logits and values as the eager network,
    the same state dict; a twin (the pool's frozen copy, the checkpoint's) is eager and its
    own weights, not a view that would follow the learner's."""
    from traveller_agents.nets import ActorCritic

    torch.manual_seed(0)
    net = ActorCritic(12, 5, [16])
    obs, mask = torch.randn(7, 12), torch.ones(7, 5, dtype=torch.bool)
    eager = net.logits(obs, mask), net.value(obs)
    keys = list(net.state_dict())
    net.compile_modules()
    assert torch.allclose(net.logits(obs, mask), eager[0], atol=1e-6)
    assert torch.allclose(net.value(obs), eager[1], atol=1e-6)
    assert list(net.state_dict()) == keys
    twin = net.twin()
    assert twin._compiled is None and net._compiled is not None
    with torch.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    assert torch.allclose(net.logits(obs, mask), eager[0], atol=1e-6)
    assert not torch.allclose(twin.logits(obs, mask), eager[0], atol=1e-3)


def test_a_compiled_run_writes_an_ordinary_checkpoint(tmp_path, capsys):
    """``--compile`` trains and writes an ordinary checkpoint: an eager network loads from it
    and it plays as an NPC; the run's config records the flag."""
    out = tmp_path / "compiled"
    assert cli_main(["train", "ppo", *TINY, "--compile", "--out", str(out)]) == 0
    data = read_checkpoint(out / "ppo.pt")
    assert data["decisions"] == 2048
    assert network_from_checkpoint(data)._compiled is None
    policy = make_policy(str(out / "ppo.pt"), scenario="duel")
    row = evaluate_matchup(policy, make_policy("rush"), "duel", battles=2)
    assert row["battles"] == 2
    assert json.loads((out / "config.json").read_text())["args"]["compile"] is True


def test_compile_refuses_an_ensemble_init_before_the_run_starts(tmp_path, capsys):
    """``--compile`` runs one actor and critic through ``torch.compile``: an ``--init``
    ensemble is refused by the argument checks, naming both flags, before any run folder."""
    from traveller_agents.checkpoint import checkpoint_bytes, ensemble_bytes
    from traveller_agents.nets import ActorCritic

    env = vector.make("duel", num_envs=1, backend="python", relative_actions=True)
    members = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        net = ActorCritic(env.obs_dim, env.n_actions, [8])
        members.append(torch.load(__import__("io").BytesIO(checkpoint_bytes(
            net, "duel", list(env.action_labels))), weights_only=True))
    init = tmp_path / "ensemble.pt"
    init.write_bytes(ensemble_bytes(members, ["a.pt", "b.pt"]))
    out = tmp_path / "run"
    assert cli_main(["train", "ppo", *TINY, "--compile", "--init", str(init),
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--compile: the --init checkpoint" in err and "ensemble network" in err
    assert not out.exists()
