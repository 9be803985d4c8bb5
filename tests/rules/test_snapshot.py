"""Battle snapshots (``traveller_env.rules.snapshot``): save, restore, continue identically.

A battle is played with random legal actions; at several points it is snapshotted, the snapshot
restored into a fresh battle of the same scenario (other dice), and the rest of the actions
replayed there: the restored battle's event log must equal the uninterrupted battle's log from
the snapshot on, and its final state the uninterrupted final state. The same on the compiled
core, and across engines (the two engines write the same bytes, field for field). Corrupt or
foreign snapshots are refused naming what is wrong, and leave the battle unchanged.
"""

from __future__ import annotations

import random
import re
import struct
import zlib

import pytest

from traveller_env import core
from traveller_env.rules.dice import Dice, ScriptedDice
from traveller_env.rules.snapshot import MAGIC, SnapshotError
from traveller_env.scenario import build_battle, builtin_scenarios

needs_core = pytest.mark.skipif(not core.available(), reason=core.status())
SCENARIOS = ["duel", "melee", "squad", "leadership_l3", "ambush", "squad_commander"]


def _labels(name: str) -> list[str]:
    battle = build_battle(name, dice=Dice(0))
    return [a.label for a in battle.candidate_actions()]


def _play(name: str, seed: int) -> tuple[list[str], list[tuple[int, int, bytes]]]:
    """The actions of a random game and ``(step, events so far, snapshot)`` at some steps."""
    battle = build_battle(name, dice=Dice(seed))
    rng = random.Random(seed)
    actions, snaps = [], []
    while not battle.done:
        if rng.random() < 0.25:
            snaps.append((len(actions), len(battle.events), battle.snapshot()))
        action = rng.choice(battle.legal_actions()).label
        actions.append(action)
        battle.apply(action)
    return actions, snaps


def _state(snapshot: bytes) -> bytes:
    """The snapshot's state fields (without the log's length and the checksum)."""
    return snapshot[:-8]


class _Engine:
    """A battle of either engine, driven by action labels."""

    def __init__(self, engine: str, name: str, seed: int) -> None:
        self.engine = engine
        if engine == "python":
            self.battle = build_battle(name, dice=Dice(seed))
        else:
            from traveller_env.core.engine import CoreBattle

            self.battle = CoreBattle(name, seed)
            self.index = {label: i for i, label in enumerate(self.battle.labels)}

    def apply(self, label: str) -> None:
        if self.engine == "python":
            self.battle.apply(label)
        else:
            self.battle.step(self.index[label])

    def events(self) -> list[dict]:
        return list(self.battle.events) if self.engine == "python" else self.battle.events()

    def snapshot(self) -> bytes:
        return self.battle.snapshot()

    def restore(self, data: bytes) -> None:
        self.battle.restore(data)


ENGINE_PAIRS = [("python", "python"),
                pytest.param("core", "core", marks=needs_core),
                pytest.param("python", "core", marks=needs_core),
                pytest.param("core", "python", marks=needs_core)]


@pytest.mark.parametrize(("taken_on", "restored_on"), ENGINE_PAIRS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_restore_then_continue_equals_the_uninterrupted_battle(name, taken_on, restored_on):
    for seed in range(3):
        actions, _ = _play(name, seed)
        whole = _Engine(taken_on, name, seed)
        snaps = []
        rng = random.Random(100 + seed)
        # eight random points of the battle, each continued to its end on the other engine
        points = set(rng.sample(range(len(actions)), min(8, len(actions))))
        for step, label in enumerate(actions):
            if step in points:
                snaps.append((step, len(whole.events()), whole.snapshot()))
            whole.apply(label)
        final, log = whole.snapshot(), whole.events()
        for step, n_events, data in snaps:
            resumed = _Engine(restored_on, name, 10_000 + seed)  # other dice: restore sets them
            resumed.restore(data)
            assert _state(resumed.snapshot()) == _state(data)
            for label in actions[step:]:
                resumed.apply(label)
            assert resumed.events() == log[n_events:], (name, seed, step)
            assert _state(resumed.snapshot()) == _state(final)


@needs_core
@pytest.mark.parametrize("name", builtin_scenarios())
def test_both_engines_write_the_same_bytes(name):
    for seed in range(3):
        actions, _ = _play(name, seed)
        py, co = _Engine("python", name, seed), _Engine("core", name, seed)
        assert py.snapshot() == co.snapshot()
        for label in actions:
            py.apply(label)
            co.apply(label)
            assert py.snapshot() == co.snapshot(), (name, seed, label)


def test_a_restored_battle_is_independent_of_the_snapshot_source():
    actions, snaps = _play("squad", 4)
    step, _, data = snaps[len(snaps) // 2]
    a, b = build_battle("squad", dice=Dice(1)), build_battle("squad", dice=Dice(2))
    a.restore(data)
    b.restore(data)
    version = a.version
    a.apply(actions[step])
    assert _state(b.snapshot()) == _state(data)  # b shares nothing with a
    assert a.version > version and all(c.version >= 1 for c in a.combatants)


def _refit_crc(data: bytes) -> bytes:
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


def _corruptions(data: bytes) -> dict[str, tuple[bytes, str]]:
    flipped = bytearray(data)
    flipped[40] ^= 0xFF
    phase_at = 4 + 1 + 8 + 2 + 16 + 4  # magic, version, fingerprint, n, dice, round
    bad_phase = bytearray(data)
    bad_phase[phase_at] = 9
    return {
        "magic": (b"XXXX" + data[4:], "not a battle snapshot"),
        "version": (data[:4] + bytes([2]) + data[5:], "format version 2; this engine reads "
                                                      "version 1"),
        "checksum": (bytes(flipped), "checksum mismatch"),
        "truncated": (data[:-10], "checksum mismatch"),
        "trailing": (_refit_crc(data[:-4] + b"\0\0\0\0\0" + data[-4:]), "trailing bytes"),
        "phase": (_refit_crc(bytes(bad_phase)), "phase must be in [0, 4], got 9"),
        "empty": (b"", "not a battle snapshot"),
    }


@pytest.mark.parametrize("engine", ["python", pytest.param("core", marks=needs_core)])
def test_corrupt_and_foreign_snapshots_are_refused_naming_the_fault(engine):
    data = _Engine(engine, "squad", 3).snapshot()
    for what, (bad, words) in _corruptions(data).items():
        target = _Engine(engine, "squad", 5)
        before = target.snapshot()
        with pytest.raises(ValueError, match="battle snapshot: .*" + re.escape(words)):
            target.restore(bad)
        assert target.snapshot() == before, what  # unchanged
    foreign = _Engine(engine, "duel", 3)
    with pytest.raises(ValueError, match="taken from another scenario"):
        foreign.restore(data)
    assert data[:4] == MAGIC


def test_python_errors_are_snapshot_errors_and_non_bytes_a_type_error():
    battle = build_battle("duel", dice=Dice(0))
    with pytest.raises(SnapshotError):
        battle.restore(b"TBSN\x01")
    with pytest.raises(TypeError, match="bytes"):
        battle.restore("TBSN")  # type: ignore[arg-type]


def test_scripted_dice_cannot_be_snapshotted():
    battle = build_battle("duel", dice=ScriptedDice([(3, 3)] * 4))
    with pytest.raises(TypeError, match="PCG32"):
        battle.snapshot()


# ---------------------------------------------------------------- vector snapshots
def _vector_run(venv, seed: int, steps: int) -> list[tuple]:
    """``steps`` steps with random legal actions drawn from ``seed``; each step's outputs."""
    import numpy as np

    from traveller_env.vector import random_legal_actions

    rng = np.random.default_rng(seed)
    outs = []
    mask = venv._mask_out
    for _ in range(steps):
        obs, mask, rewards, term, trunc, info = venv.step(random_legal_actions(mask, rng))
        outs.append((obs.copy(), mask.copy(), rewards.copy(), term.copy(), trunc.copy(),
                     info["agent"].copy(), info["episode"].copy()))
    return outs


@pytest.mark.parametrize("backend", ["python", pytest.param("core", marks=needs_core)])
@pytest.mark.parametrize(("scenario", "opponents"), [
    ("duel", {"red": "random"}), ("squad", {"red": "tactician"}), ("squad", None)])
def test_a_restored_vector_continues_exactly(scenario, opponents, backend):
    import numpy as np

    from traveller_env import vector

    def make():
        return vector.make(scenario, num_envs=5, seed=7, backend=backend, opponents=opponents,
                           relative_actions=True)

    whole = make()
    whole.reset()
    _vector_run(whole, 1, 30)
    data = whole.snapshot()
    expected = _vector_run(whole, 2, 60)
    resumed = make()
    resumed.reset(seed=12345)  # other battles: restore replaces them
    resumed.restore(data)
    got = _vector_run(resumed, 2, 60)
    for a, b in zip(expected, got, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    assert resumed.battles_skipped == whole.battles_skipped


def test_vector_snapshots_are_checked():
    from traveller_env import vector

    venv = vector.make("duel", num_envs=2, seed=1, backend="python", opponents={"red": "rush"})
    with pytest.raises(RuntimeError, match="reset"):
        venv.snapshot()
    venv.reset()
    data = venv.snapshot()
    with pytest.raises(ValueError, match="checksum mismatch"):
        venv.restore(data[:-3])
    with pytest.raises(ValueError, match="not a vector snapshot"):
        venv.restore(b"TBSN" + data[4:])
    with pytest.raises(ValueError, match="format version 9"):
        venv.restore(data[:4] + bytes([9]) + data[5:])
    other = vector.make("duel", num_envs=3, seed=1, backend="python", opponents={"red": "rush"})
    other.reset()
    with pytest.raises(ValueError, match="num_envs"):
        other.restore(data)


@needs_core
def test_core_vector_snapshots_are_checked_and_a_bad_one_changes_nothing():
    """The core's row bytes are checked before any row changes: cut, foreign or from another
    vector, they are refused with a ``ValueError`` naming the fault; a snapshot of one backend
    is refused by the other."""
    from traveller_env import vector

    def make(n=2, backend="core"):
        venv = vector.make("squad", num_envs=n, seed=1, backend=backend,
                           opponents={"red": "tactician"})
        venv.reset()
        return venv

    venv = make()
    _vector_run(venv, 3, 20)
    data = venv.snapshot()
    rows = venv._backend.snapshot()["core_rows"]
    with pytest.raises(ValueError, match="cut short"):
        venv._backend.restore({"core_rows": rows[:-5]})
    with pytest.raises(ValueError, match="magic is not TVRS"):
        venv._backend.restore({"core_rows": b"XXXX" + rows[4:]})
    with pytest.raises(ValueError, match="bytes after its end"):
        venv._backend.restore({"core_rows": rows + b"\0"})
    assert venv.snapshot() == data  # nothing changed
    with pytest.raises(ValueError, match="num_envs"):
        make(3).restore(data)
    with pytest.raises(ValueError, match="backend"):
        make(backend="python").restore(data)
