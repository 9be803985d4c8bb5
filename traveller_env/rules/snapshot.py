"""Battle snapshots: the complete state of a battle, dice included, as bytes.

``Battle.snapshot()`` writes one, ``Battle.restore(data)`` puts it back into a battle of the same
scenario; the compiled core's battle (``traveller_env.core.engine.CoreBattle``) reads and writes
the same format, field for field (``csrc/src/snapshot.cpp``, ``Battle::snapshot``), so a
snapshot taken on one engine continues identically on the other.

What is saved is the *state*: everything a battle's future depends on. The event log is a record
of the past, not state: a snapshot keeps its length (``events_before``) but not its entries, and
a restored battle's log holds only what happens after the restore. ``Battle.version`` is a cache
key, not state: a restore bumps it (and stamps every combatant) so caches keyed on it never see
an old number with new contents.

The format (version 1, little-endian, no padding)::

    magic        4 bytes  b"TBSN"
    version      u8       1
    fingerprint  u64      FNV-1a 64 of the scenario's fixed data (``fingerprint_text``)
    n            u16      combatants
    dice         u64 u64  PCG32 (state, inc), inc odd
    round        i32
    phase        u8       0 start, 1 haste, 2 turn, 3 reaction, 4 over
    done         u8       0/1
    truncated    u8       0/1
    winner       i8       side index, -1 none
    turn_actor   i16      combatant index, -1 none
    decider      i16      combatant index, -1 none (always -1 once done)
    haste_queue  u16 count, then i16 each   (declarations still to come, in order)
    group        u16 count, then i16 each   (the acting tied group, R2.5)
    group_queue  u16 count, then i16 each   (its members still to begin)
    pools        u16 count, then (i16 leader, u8 kind 0 bonus / 1 penalty, i32 count) each
    pending      u8 active; i16 attacker, i16 target, u8 melee, f64 range_m,
                 u8 dm count, then (u8 name, i32 value) each (``DM_NAMES`` order)
    summary      i32 damage_dealt x n, i32 damage_taken x n, i32 dropouts
    combatants   n x: i32 STR DEX END INT EDU SOC, i32 x, i32 y, u8 stance (0 stand,
                 1 crouch, 2 prone), u8 drawn, i32 ammo, i32 spares, i32 initiative,
                 i32 init_mod_now, i32 init_mod_next, u8 hasty, u8 turn_begun, i32 minors,
                 u8 significant, i16 aim_target (-1 none), i32 aim_dm, u8 ready_kind (0 none,
                 1 draw, 2 reload), i32 ready_count, u8 bonus, u8 penalty, u8 down, u8 dead,
                 u8 out
    events_before u32     the log's length when the snapshot was taken
    crc32        u32      zlib.crc32 of every byte before it

A snapshot that is cut short, has trailing bytes, a wrong magic, another version, a bad
checksum, another scenario's fingerprint or a value out of range is refused with
``SnapshotError`` (a ``ValueError``) naming what is wrong; the core raises ``ValueError`` with
the same words.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DM_NAMES", "MAGIC", "PHASES", "SNAPSHOT_VERSION", "BattleState", "CombatantState",
           "SnapshotError", "decode", "encode", "fingerprint", "fingerprint_text"]

MAGIC = b"TBSN"
SNAPSHOT_VERSION = 1
PHASES = ("start", "haste", "turn", "reaction", "over")
STANCES = ("stand", "crouch", "prone")
READY_KINDS = (None, "draw", "reload")
POOL_KINDS = ("bonus", "penalty")
#: The DM names in the core's ``DmName`` order (csrc/include/traveller/checks.hpp).
DM_NAMES = ("skill", "STR", "DEX", "END", "INT", "EDU", "SOC", "range", "aim", "cover", "prone",
            "haste", "dodge", "parry", "leadership_bonus", "leadership_penalty")
CHARACTERISTICS = ("STR", "DEX", "END", "INT", "EDU", "SOC")
_COMBATANT = struct.Struct("<6i2iBB5iBBiBhiBi5B")


class SnapshotError(ValueError):
    """A snapshot that cannot be restored; the message names what is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(f"battle snapshot: {message}")


@dataclass(slots=True)
class CombatantState:
    """One combatant's mutable state, in the format's encoding (indices, codes)."""

    chars: tuple[int, ...]
    x: int
    y: int
    stance: int
    drawn: bool
    ammo: int
    spares: int
    initiative: int
    init_mod_now: int
    init_mod_next: int
    hasty: bool
    turn_begun: bool
    minors: int
    significant: bool
    aim_target: int
    aim_dm: int
    ready_kind: int
    ready_count: int
    bonus: bool
    penalty: bool
    down: bool
    dead: bool
    out: bool


@dataclass(slots=True)
class BattleState:
    """A battle's mutable state in the format's encoding: what ``encode`` writes."""

    fingerprint: int
    dice: tuple[int, int]
    round: int
    phase: int
    done: bool
    truncated: bool
    winner: int
    turn_actor: int
    decider: int
    haste_queue: list[int]
    group: list[int]
    group_queue: list[int]
    pools: list[tuple[int, int, int]]
    pending: tuple[int, int, bool, float, list[tuple[int, int]]] | None
    damage_dealt: list[int]
    damage_taken: list[int]
    dropouts: int
    combatants: list[CombatantState] = field(default_factory=list)
    events_before: int = 0


def fingerprint_text(ids: Sequence[str], side_names: Sequence[str], width: int, height: int,
                     max_move_squares: int, weapons: Sequence[str],
                     damage_dice: Sequence[str]) -> str:
    """The scenario's fixed data a snapshot is checked against, as one string (unit separators
    between the fields): ids, side names, map size, move reach, weapons and damage dice."""
    parts = [*ids, "|", *side_names, "|", f"{width}x{height}", str(max_move_squares), "|",
             *weapons, "|", *damage_dice]
    return "\x1f".join(parts)


def fingerprint(text: str) -> int:
    """FNV-1a 64 of ``text``'s UTF-8 bytes."""
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def encode(state: BattleState) -> bytes:
    """The snapshot bytes of ``state`` (the module docstring's format)."""
    n = len(state.combatants)
    out = bytearray(MAGIC)
    out += struct.pack("<BQH", SNAPSHOT_VERSION, state.fingerprint, n)
    out += struct.pack("<QQiBBBbhh", state.dice[0], state.dice[1], state.round, state.phase,
                       state.done, state.truncated, state.winner, state.turn_actor,
                       state.decider)
    for queue in (state.haste_queue, state.group, state.group_queue):
        out += struct.pack(f"<H{len(queue)}h", len(queue), *queue)
    out += struct.pack("<H", len(state.pools))
    for leader, kind, count in state.pools:
        out += struct.pack("<hBi", leader, kind, count)
    if state.pending is None:
        out += struct.pack("<B", 0)
    else:
        attacker, target, melee, range_m, dms = state.pending
        out += struct.pack("<BhhBdB", 1, attacker, target, melee, range_m, len(dms))
        for name, value in dms:
            out += struct.pack("<Bi", name, value)
    out += struct.pack(f"<{n}i{n}ii", *state.damage_dealt, *state.damage_taken,
                       state.dropouts)
    for c in state.combatants:
        out += _COMBATANT.pack(
            *c.chars, c.x, c.y, c.stance, c.drawn, c.ammo, c.spares, c.initiative,
            c.init_mod_now, c.init_mod_next, c.hasty, c.turn_begun, c.minors, c.significant,
            c.aim_target, c.aim_dm, c.ready_kind, c.ready_count, c.bonus, c.penalty, c.down,
            c.dead, c.out)
    out += struct.pack("<I", state.events_before)
    out += struct.pack("<I", zlib.crc32(out))
    return bytes(out)


class _Reader:
    """Reads the format's fields in order, naming the field that runs past the end."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str, what: str) -> tuple[Any, ...]:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise SnapshotError(f"truncated: {len(self.data)} bytes end inside {what}")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SnapshotError(message)


def _index(value: int, n: int, what: str, *, none: bool = True) -> int:
    lo = -1 if none else 0
    _check(lo <= value < n, f"{what} must be a combatant index in [{lo}, {n - 1}], got {value}")
    return value


def decode(data: bytes, expected_fingerprint: int, n_expected: int) -> BattleState:
    """The state in ``data``, checked: ``SnapshotError`` naming the first thing wrong."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"a battle snapshot is bytes, got {type(data).__name__}")
    data = bytes(data)
    _check(len(data) >= 4 and data[:4] == MAGIC,
           f"not a battle snapshot (magic does not read {MAGIC!r})")
    r = _Reader(data)
    r.take("4s", "the magic")
    (version,) = r.take("B", "the version")
    _check(version == SNAPSHOT_VERSION,
           f"format version {version}; this engine reads version {SNAPSHOT_VERSION}")
    _check(len(data) >= 9, "truncated: it ends inside the header")
    (stored_crc,) = struct.unpack_from("<I", data, len(data) - 4) if len(data) >= 13 else (None,)
    _check(stored_crc is not None and zlib.crc32(data[:-4]) == stored_crc,
           "checksum mismatch: the bytes are corrupt or cut short")
    fp, n = r.take("QH", "the header")
    _check(fp == expected_fingerprint,
           f"taken from another scenario (fingerprint {fp:#018x}, this battle's is "
           f"{expected_fingerprint:#018x})")
    _check(n == n_expected, f"holds {n} combatants, this battle has {n_expected}")
    s_, inc, rnd, phase, done, trunc, winner, turn_actor, decider = r.take(
        "QQiBBBbhh", "the battle's fields")
    _check(inc & 1 == 1, f"dice increment must be odd, got {inc}")
    _check(0 <= phase < len(PHASES), f"phase must be in [0, {len(PHASES) - 1}], got {phase}")
    _check(done in (0, 1) and trunc in (0, 1), "done and truncated must be 0 or 1")
    _check(-1 <= winner <= 1, f"winner must be -1, 0 or 1, got {winner}")
    _check(rnd >= 0, f"round must be >= 0, got {rnd}")
    _index(turn_actor, n, "turn_actor")
    _index(decider, n, "decider")
    queues = []
    for what in ("haste_queue", "group", "group_queue"):
        (count,) = r.take("H", what)
        _check(count <= n, f"{what} holds {count} entries, more than the {n} combatants")
        queue = list(r.take(f"{count}h", what))
        for i, v in enumerate(queue):
            _index(v, n, f"{what}[{i}]", none=False)
        queues.append(queue)
    (n_pools,) = r.take("H", "pools")
    _check(n_pools <= 2 * n, f"pools holds {n_pools} entries, more than 2 per combatant")
    pools = []
    for i in range(n_pools):
        leader, kind, count = r.take("hBi", f"pools[{i}]")
        _index(leader, n, f"pools[{i}].leader", none=False)
        _check(kind in (0, 1), f"pools[{i}].kind must be 0 (bonus) or 1 (penalty), got {kind}")
        _check(count > 0, f"pools[{i}].count must be positive, got {count}")
        pools.append((leader, kind, count))
    (active,) = r.take("B", "pending")
    _check(active in (0, 1), f"pending.active must be 0 or 1, got {active}")
    pending = None
    if active:
        attacker, target, melee, range_m, n_dms = r.take("hhBdB", "pending")
        _index(attacker, n, "pending.attacker", none=False)
        _index(target, n, "pending.target", none=False)
        _check(n_dms <= len(DM_NAMES), f"pending holds {n_dms} DMs, at most {len(DM_NAMES)}")
        dms = []
        for i in range(n_dms):
            name, value = r.take("Bi", f"pending.dms[{i}]")
            _check(name < len(DM_NAMES), f"pending.dms[{i}] names DM {name}, there are "
                                         f"{len(DM_NAMES)}")
            dms.append((name, value))
        pending = (attacker, target, bool(melee), range_m, dms)
    summary = r.take(f"{n}i{n}ii", "summary")
    combatants = []
    for i in range(n):
        v = r.take(_COMBATANT.format[1:], f"combatants[{i}]")
        c = CombatantState(tuple(v[0:6]), v[6], v[7], v[8], bool(v[9]), v[10], v[11], v[12],
                           v[13], v[14], bool(v[15]), bool(v[16]), v[17], bool(v[18]), v[19],
                           v[20], v[21], v[22], *(bool(x) for x in v[23:28]))
        _check(c.stance < len(STANCES), f"combatants[{i}].stance must be 0, 1 or 2, got "
                                        f"{c.stance}")
        _check(c.ready_kind < len(READY_KINDS), f"combatants[{i}].ready_kind must be 0, 1 or "
                                                f"2, got {c.ready_kind}")
        _index(c.aim_target, n, f"combatants[{i}].aim_target")
        combatants.append(c)
    (events_before,) = r.take("I", "events_before")
    r.take("I", "the checksum")
    _check(r.pos == len(data), f"{len(data) - r.pos} trailing bytes after the checksum")
    return BattleState(fp, (s_, inc), rnd, phase, bool(done), bool(trunc), winner, turn_actor,
                       decider, *queues, pools, pending, list(summary[:n]),
                       list(summary[n:2 * n]), summary[2 * n], combatants, events_before)
