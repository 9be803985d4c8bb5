"""Data-parallel ``traveller train ppo`` under torchrun (``traveller_rl.ppo.distributed``):
two processes on loopback (``torchrun --standalone``, gloo) learn ``duel`` against ``rush``;
the same seeds and world size give the same ``ppo.pt``; one process under torchrun gives the
plain run's bytes; a run stopped after a resume checkpoint and resumed ends with the
uninterrupted run's bytes; a checkpoint resumed on another world size is refused.

Each launch starts torch in three processes (about 8 s of the two shared cores), so the module
is marked ``distributed``: ``make test-distributed`` runs it (``.ci/run`` does after
``make test``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.distributed

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():  # pragma: no cover - a torch built without it
    pytest.skip("torch.distributed is not available in this torch build",
                allow_module_level=True)

# Every launch: the core, one battle thread and one update thread per process (two processes
# share the two cores), no bar; --final-eval-battles 0 (rank 0's AEC evaluation is the plain
# run's, tested elsewhere).
COMMON = ["--scenario", "duel", "--opponents", "red=rush", "--env-threads", "1",
          "--update-threads", "1", "--threads", "1", "--final-eval-battles", "0",
          "--no-progress", "--backend", "core"]
# A tiny run: 2 ranks x 16 battles x 16 steps = 512 decisions per update, 8 updates.
SMALL = [*COMMON, "--seed", "5", "--num-envs", "16", "--num-steps", "16",
         "--total-timesteps", "4096", "--eval-every", "4", "--eval-vs", "rush",
         "--eval-battles", "4", "--eval-envs", "4"]


def _torchrun(nproc: int, flags: list[str], out) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc-per-node NPROC -m traveller_cli train ppo FLAGS``
    (a free loopback port of its own); the run must succeed."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           str(nproc), "-m", "traveller_cli", "train", "ppo", *flags, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def _assert_same_run(out, reference) -> None:
    """``out`` trained as ``reference`` did: the same training battles' results at every
    update (where they part, if they do), then the same ``ppo.pt``, byte for byte."""
    def points(folder):
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in (folder / "training.jsonl").read_text().splitlines()]

    assert points(out) == points(reference)
    assert (out / "ppo.pt").read_bytes() == (reference / "ppo.pt").read_bytes()


# ---------------------------------------------------------------------------- learning
@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """65,536 decisions of ``duel`` against ``rush`` over two processes (2 x 32 battles x 32
    steps per update: the single-process learning test's batch, test_learning.py),
    evaluated on 200 held-out duels before and after."""
    out = tmp_path_factory.mktemp("dist") / "learn"
    proc = _torchrun(2, [*COMMON, "--seed", "1", "--num-envs", "32", "--num-steps", "32",
                         "--total-timesteps", "65536", "--eval-every", "0", "--eval-vs", "rush",
                         "--eval-battles", "200"], out)
    return out, proc


def test_two_processes_learn_to_beat_rush(learned):
    """The held-out win rate against ``rush`` after training is clearly above the untrained
    policy's (their Wilson intervals apart), and the budget counts both ranks' decisions."""
    out, _ = learned
    results = json.loads((out / "evaluation.json").read_text())
    before, after = results["eval_before"]["rush"], results["eval_after"]["rush"]
    assert after["win_ci95"][0] > before["win_ci95"][1], (before, after)
    assert after["win_rate"] >= 0.3, after
    assert results["decisions"] == 65536 and results["updates"] == 32


def test_only_rank_0_writes_and_prints(learned):
    """One ``trained ...`` line (rank 0's), and every update's line in ``training.jsonl``
    with both ranks' decisions."""
    out, proc = learned
    assert proc.stdout.count("trained 65,536 decisions") == 1, proc.stdout
    points = [json.loads(line) for line in (out / "training.jsonl").read_text().splitlines()]
    assert [p["decisions"] for p in points] == [2048 * k for k in range(1, 33)]


# ---------------------------------------------------------------------------- determinism
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The tiny run over two processes."""
    out = tmp_path_factory.mktemp("dist") / "small"
    _torchrun(2, SMALL, out)
    return out


def test_the_same_seeds_and_world_size_give_the_same_bytes(small, tmp_path):
    _torchrun(2, SMALL, tmp_path / "again")
    _assert_same_run(tmp_path / "again", small)


def test_each_rank_plays_its_own_battles():
    """Rank 0 builds the run seed's vectors (the plain run's), rank 1 vectors of a seed of
    its own: stepped with the same actions, their battles part at once."""
    import numpy as np

    from traveller_rl.ppo.args import Args
    from traveller_rl.ppo.distributed import Cluster, rank_seed
    from traveller_rl.ppo.rows import build_groups

    args = Args(scenario="duel", opponents="red=rush", seed=5, num_envs=8, env_threads=1)
    assert rank_seed(5, 0) == 5 and len({rank_seed(5, r) for r in range(4)}) == 4
    assert Cluster(rank=0, world=2).battle_args(args) is args
    venvs = [build_groups(Cluster(rank=r, world=2).battle_args(args))[0].venv for r in (0, 1)]
    assert args.budget.seed == 5  # rank 1's seed is a copy's
    trail = [[], []]
    rng = np.random.default_rng(0)
    results = [v.reset() for v in venvs]
    for _ in range(30):
        mask = results[0][1]
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        for r, v in enumerate(venvs):  # where it is illegal in rank 1's battle, the first legal
            legal = results[r][1]
            results[r] = v.step(np.where(legal[np.arange(len(actions)), actions], actions,
                                         legal.argmax(1)))
            trail[r].append(results[r][0].copy())
    assert not np.array_equal(np.stack(trail[0]), np.stack(trail[1]))


def test_one_process_under_torchrun_is_the_plain_run(tmp_path):
    from traveller_rl.ppo.trainer import main

    _torchrun(1, SMALL, tmp_path / "torchrun")
    assert main([*SMALL, "--out", str(tmp_path / "plain")]) == 0
    _assert_same_run(tmp_path / "torchrun", tmp_path / "plain")


# ---------------------------------------------------------------------------- resume
def test_a_stopped_run_resumes_to_the_uninterrupted_bytes(small, tmp_path):
    """Stopped after update 5 (its last resume checkpoint at update 4), resumed with the same
    world size: the uninterrupted run's ``ppo.pt`` and log lines."""
    out = tmp_path / "stopped"
    _torchrun(2, [*SMALL, "--checkpoint-every", "2", "--stop-after-updates", "5"], out)
    _torchrun(2, [*SMALL, "--resume", str(out)], out)
    _assert_same_run(out, small)  # every update's line once, as the uninterrupted run's


def test_another_world_size_on_resume_is_refused(tmp_path, capsys):
    from traveller_rl.ppo.trainer import main

    out = tmp_path / "stopped"
    _torchrun(2, [*SMALL, "--checkpoint-every", "1", "--stop-after-updates", "2"], out)
    assert main([*SMALL, "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "2 processes" in err and "resumes on 1" in err, err


# ---------------------------------------------------------------------------- the update's hook
def test_steps_past_a_ranks_own_minibatches_add_no_gradient_of_its_own():
    """A rank whose decisions are used up before the others' still takes its part in their
    steps (``ppo_update`` asks the cluster how many): with no gradient from any rank (a
    stand-in cluster of one, whose mean is its own), those extra steps leave the weights as
    the update without them left them, and the gradients of the real steps are averaged."""
    import numpy as np

    from traveller_agents.nets import ActorCritic
    from traveller_rl.ppo.update import UpdateSettings, ppo_update

    class ThreeMore:  # the other rank has 3 more minibatches per epoch than this one
        def __init__(self):
            self.averaged = 0

        def most(self, steps):
            return steps + 3

        def average_grads(self, net):
            self.averaged += 1

    def update(cluster):
        torch.manual_seed(0)
        net = ActorCritic(4, 3, [8])
        rng = np.random.default_rng(0)
        obs = rng.normal(size=(16, 4)).astype(np.float32)
        mask = np.ones((16, 3), dtype=bool)
        with torch.no_grad():
            logits = net.logits(torch.from_numpy(obs), torch.from_numpy(mask))
            value = net.value(torch.from_numpy(obs)).numpy()
        action = rng.integers(3, size=16)
        logp = torch.log_softmax(logits, -1)[torch.arange(16), torch.from_numpy(action)]
        rollout = type("R", (), {"obs": obs, "mask": mask, "action": action,
                                 "logp": logp.numpy(), "value": value})
        ppo_update(net, torch.optim.Adam(net.parameters(), lr=1e-2), rollout, np.arange(16),
                   rng.normal(size=16).astype(np.float32), rng.normal(size=16).astype(np.float32),
                   np.random.default_rng(1), UpdateSettings(epochs=2, minibatches=4),
                   cluster)
        return net.state_dict()

    cluster = ThreeMore()
    alone, joined = update(None), update(cluster)
    assert cluster.averaged == 2 * (4 + 3)
    assert all(torch.equal(alone[k], joined[k]) for k in alone)
