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

The payload is read by a restricted unpickler (``SafeUnpickler``): plain data (dicts, lists,
strings, numbers, bytes) and NumPy arrays of plain dtypes, nothing else; a payload naming any
other global (a function or class: what a crafted pickle runs code with) is refused with a
``ValueError`` before it is called. The opponents' pickles inside a Python backend's rows are
read by ``traveller_env.vector_python``, which allows only the classes its own opponents are
made of. A wrong magic, another version or a checksum mismatch is refused with a
``ValueError`` naming it, before anything is unpickled; ``VectorEnv.restore`` then refuses a
snapshot of another backend, ``num_envs``, action labels or scenario set (one scenario
against a set, another set) naming the difference.
"""

from __future__ import annotations

import io
import pickle
import struct
import zlib
from collections.abc import Collection
from typing import Any

__all__ = ["ARRAY_GLOBALS", "MAGIC", "VERSION", "SafeUnpickler", "decode", "encode", "safe_loads"]

MAGIC = b"TVSN"
VERSION = 1
_HEADER = struct.Struct("<4sBI")

#: The globals a pickle of NumPy arrays and scalars of plain dtypes names (NumPy 1 and 2).
ARRAY_GLOBALS = frozenset(
    {("numpy", "dtype"), ("numpy", "ndarray")}
    | {(f"numpy.{core}.{module}", name)
       for core in ("core", "_core")
       for module, name in (("numeric", "_frombuffer"), ("multiarray", "_reconstruct"),
                            ("multiarray", "scalar"))})


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that finds only the globals in ``allowed`` (``(module, name)`` pairs;
    NumPy's array globals by default): any other is refused with a ``ValueError`` naming it,
    before it is imported or called."""

    def __init__(self, data: bytes, allowed: Collection[tuple[str, str]] = ARRAY_GLOBALS,
                 what: str = "vector snapshot") -> None:
        super().__init__(io.BytesIO(data))
        self.allowed = allowed
        self.what = what

    def find_class(self, module: str, name: str) -> Any:
        """The global ``module.name`` if allowed (``ValueError`` otherwise)."""
        if (module, name) not in self.allowed:
            raise ValueError(f"{self.what}: refers to {module}.{name}, which a snapshot of this "
                             "vector never holds: a crafted or damaged file; refused")
        return super().find_class(module, name)


def safe_loads(data: bytes, allowed: Collection[tuple[str, str]] = ARRAY_GLOBALS,
               what: str = "vector snapshot") -> Any:
    """``pickle.loads`` through ``SafeUnpickler`` (``ValueError`` on a refused global or
    bytes that do not unpickle)."""
    try:
        return SafeUnpickler(data, allowed, what).load()
    except ValueError:
        raise
    except Exception as exc:  # a damaged pickle: any of pickle's many errors
        raise ValueError(f"{what}: does not unpickle ({type(exc).__name__}: {exc})") from None


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
    state = safe_loads(payload)
    if not isinstance(state, dict):
        raise ValueError(f"vector snapshot: holds a {type(state).__name__}, not a snapshot")
    return state
