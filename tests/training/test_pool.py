"""The self-play pool bookkeeping (traveller_rl/pool.py: OpponentPool) and the SB3 checkpoint pool
drawn through it (traveller_rl.pool.CheckpointPool)."""

from __future__ import annotations

import numpy as np
import pytest

from traveller_rl.pool import SAMPLING, OpponentPool


def test_members_by_kind_and_the_latest_of_each():
    pool = OpponentPool(size=2)
    assert pool.add("ext.pt", "external") == 0
    for k in range(4):
        pool.add(f"pool/ppo_u{k:06d}.pt", "own")
    assert len(pool) == 5
    assert pool.of_kind("own") == [1, 2, 3, 4]
    assert pool.latest("own") == [3, 4]
    assert pool.latest("external") == [0]
    assert pool.latest("watched") == []
    assert pool.index("pool/ppo_u000001.pt") == 2
    assert pool.index("missing.pt") is None
    assert OpponentPool(size=0).latest("own") == []


def test_uniform_draws_are_one_integers_call():
    pool = OpponentPool("uniform")
    for k in range(5):
        pool.add(str(k))
    candidates = np.array([1, 3, 4])
    got = pool.draw(np.random.default_rng(7), candidates, 50)
    want = candidates[np.random.default_rng(7).integers(3, size=50)]
    assert np.array_equal(got, want)
    one = pool.draw_one(np.random.default_rng(3), [2, 4])
    assert one == [2, 4][int(np.random.default_rng(3).integers(2))]


def test_pfsp_weighs_the_members_the_learner_beats_least():
    pool = OpponentPool("pfsp")
    pool.add("easy")
    pool.add("hard")
    for _ in range(8):
        pool.record(0, True)
        pool.record(1, False)
    p = pool.weights(np.array([0, 1]))
    assert p is not None and p.sum() == pytest.approx(1.0)
    assert p[1] > 0.9
    draws = pool.draw(np.random.default_rng(0), [0, 1], 400)
    assert (draws == 1).mean() > 0.9
    assert pool.summary() == {"opponents": ["easy", "hard"], "training_battles": [8, 8],
                              "learner_wins": [8, 0]}


def test_bad_settings_are_refused():
    assert SAMPLING == ("uniform", "pfsp")
    with pytest.raises(ValueError, match="sampling"):
        OpponentPool("latest-only")
    with pytest.raises(ValueError, match="size"):
        OpponentPool(size=-1)


def test_checkpoint_pool_picks_uniformly_among_the_folder_now(tmp_path, monkeypatch):
    """CheckpointPool: the fallback while the folder is empty, then a uniform pick over the
    sorted checkpoints there at each reset, as one integers draw of its seeded generator."""
    import traveller_rl.pool as pool_module

    class Stub:
        def __init__(self, path):
            self.path = path

        def reset(self, seed=None):
            pass

    monkeypatch.setattr(pool_module, "load_policy",
                        lambda path, scenario, deterministic=False: Stub(path))
    pool = pool_module.CheckpointPool(tmp_path, "duel", seed=5)
    rng = np.random.default_rng(5)
    pool.reset()
    assert pool.current is pool.fallback
    names = ["m_0300.zip", "m_0100.zip", "a.zip"]
    for step in range(30):
        if step % 10 == 0:
            (tmp_path / names.pop()).write_bytes(b"")
        if step == 25:
            (tmp_path / "m_0100.zip").unlink()
        seed = 100 + step if step % 7 == 0 else None
        pool.reset(seed)
        if seed is not None:
            rng = np.random.default_rng(seed)
        found = sorted(tmp_path.glob("*.zip"))
        assert pool.current.path == found[int(rng.integers(len(found)))]


def test_a_pool_state_round_trips_and_draws_on_alike():
    """``state()`` / ``load_state()``: the members, their kinds and records, and so the draws
    (PFSP weights) of a restored pool are the original's."""
    pool = OpponentPool("pfsp", size=2)
    for name, kind in (("a", "own"), ("x", "external"), ("b", "own"), ("c", "own")):
        pool.add(name, kind)
    for member, won in ((0, True), (1, False), (2, True), (2, False), (3, True)):
        pool.record(member, won)
    copy = OpponentPool()
    copy.load_state(pool.state())
    assert copy.state() == pool.state()
    assert copy.latest("own") == pool.latest("own") and copy.index("x") == 1
    candidates = [*pool.of_kind("external"), *pool.latest("own")]
    draws = [p.draw(np.random.default_rng(4), candidates, 20) for p in (pool, copy)]
    assert (draws[0] == draws[1]).all()
