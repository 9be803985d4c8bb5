"""The byte format of ``VectorEnv.snapshot()``.

::

    magic    4 bytes  b"TVSN"
    version  u8       1
    crc32    u32      zlib.crc32 of the payload
    payload  pickle   {"backend", "num_envs", "seed", "action_labels", "set" (``None`` for
                      one scenario; over a scenario set its "size", "layout" name and
                      "names_sha256", a hash of its scenarios' names in order; absent in
                      snapshots from before sets), "buffers" (NumPy copies of the vector's
                      output arrays), "rows" (the backend's state: python: each row's
                      scenario (an index into the set, 0 for one scenario; absent before
                      sets), battle as ``traveller_env.rules.snapshot`` bytes, episode
                      counters, seed, pending rewards, reward ledger and pickled opponents by
                      column; core: {"core_rows": the bytes of ``VecBattles.snapshot``, the
                      same per row with the in-core opponents' generators and plans})}

The payload is a pickle (the opponents are arbitrary policy objects): restore only snapshots
you wrote. A wrong magic, another version or a checksum mismatch is refused with a
``ValueError`` naming it, before anything is unpickled; ``VectorEnv.restore`` then refuses a
snapshot of another backend, ``num_envs``, action labels or scenario set (one scenario
against a set, another set) naming the difference.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from typing import Any

__all__ = ["MAGIC", "VERSION", "decode", "encode"]

MAGIC = b"TVSN"
VERSION = 1
_HEADER = struct.Struct("<4sBI")


def encode(state: dict[str, Any]) -> bytes:
    """The snapshot bytes of ``state``."""
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(MAGIC, VERSION, zlib.crc32(payload)) + payload


def decode(data: bytes) -> dict[str, Any]:
    """The state in ``data``, checked (``ValueError`` naming what is wrong)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"a vector snapshot is bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise ValueError(f"vector snapshot: not a vector snapshot (magic does not read {MAGIC!r})")
    _, version, crc = _HEADER.unpack_from(data)
    if version != VERSION:
        raise ValueError(f"vector snapshot: format version {version}; this version reads "
                         f"version {VERSION}")
    payload = data[_HEADER.size:]
    if zlib.crc32(payload) != crc:
        raise ValueError("vector snapshot: checksum mismatch: the bytes are corrupt or cut short")
    return pickle.loads(payload)
