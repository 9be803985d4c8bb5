"""Resumable training runs: the pieces a ``--resume DIR`` is built from.

A resume checkpoint (``DIR/resume.ckpt``) holds everything a run's future depends on, written
atomically (a temporary file flushed to disk, then ``os.replace``): a kill at any moment, even in
the middle of writing one, leaves the previous complete checkpoint in place. This module has the
parts that do not depend on the trainer's loop:

- :func:`parse_checkpoint_every`: ``--checkpoint-every`` as updates (``10``) or time (``90s``,
  ``5m``, ``2h``); :class:`CheckpointSchedule` says when one is due.
- :func:`generator_states` / :func:`restore_generators`: every random generator a run draws
  from (a NumPy ``Generator``, torch's global CPU generator and any ``torch.Generator``,
  Python's ``random``), saved and put back exactly.
- :func:`check_resumable_config`: the configuration of a resumed run against the checkpoint's;
  a changed flag is refused naming it, unless it is one of ``MAY_CHANGE``.
- :func:`write_checkpoint` / :func:`read_checkpoint`: the file itself (magic, format version,
  payload); a full disk stops with :class:`CheckpointWriteError` saying the last good
  checkpoint is intact; a checkpoint of another format version is refused naming both. The
  payload holds tensors and plain data only (NumPy arrays as their dtype, shape and bytes:
  :func:`to_plain`), read with torch's restricted unpickler (``weights_only=True``): a crafted
  file cannot run code; one that does not load or lacks a part is refused with a
  ``ValueError`` in one line (the vector snapshots inside are bytes, which
  ``traveller_env.vector_snapshot`` reads with its own restricted unpickler).
- :func:`count_lines` / :func:`truncate_lines`: ``progress.jsonl`` and ``training.jsonl`` cut
  back to the line counts a checkpoint recorded, so a resumed run neither loses nor doubles a
  line.
- :func:`check_writable`: an ``--out`` that cannot be written fails before any work.
"""

from __future__ import annotations

import errno
import io
import os
import random
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.common import atomic_write_bytes

__all__ = ["CHECKPOINT_FORMAT", "MAGIC", "MAY_CHANGE", "REQUIRED", "RESUME_FILE",
           "CheckpointSchedule", "CheckpointWriteError", "check_resumable_config",
           "check_writable", "count_lines", "from_plain", "generator_states",
           "parse_checkpoint_every", "read_checkpoint", "restore_generators", "to_plain",
           "truncate_lines", "write_checkpoint"]

#: The resume checkpoint's file name in a run folder.
RESUME_FILE = "resume.ckpt"
MAGIC = b"TRRC"
#: The format version this code writes and reads (1: a full pickle, no longer read).
CHECKPOINT_FORMAT = 2
#: The parts the trainer's ``read_checkpoint`` checks are there (``RunState.state`` writes
#: more).
REQUIRED = ("args", "update", "decisions", "net", "optimizer")
_ARRAY = "__ndarray__"
_HEADER = struct.Struct("<4sH")
#: ``Args`` fields a resumed run may change: budgets, and how much it prints or evaluates.
MAY_CHANGE = frozenset({"total_timesteps", "max_train_seconds", "stop_after_updates",
                        "progress", "final_eval_battles", "resume", "checkpoint_every",
                        "overwrite",
                        # the battles are the same on any number of threads
                        "env_threads"})
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_checkpoint_every(text: str) -> tuple[int | None, float | None]:
    """``--checkpoint-every``: ``(updates, None)`` for ``"10"``, ``(None, seconds)`` for
    ``"90s"``, ``"5m"`` or ``"2h"``; ``"0"`` or ``""`` is ``(None, None)`` (never)."""
    value = str(text).strip().lower()
    if value in ("", "0"):
        return None, None
    match = re.fullmatch(r"(\d+)|(\d+(?:\.\d+)?)\s*([smh])", value)
    if not match:
        raise ValueError(f"--checkpoint-every must be a number of updates (10) or a time "
                         f"(90s, 5m, 2h), got {text!r}")
    if match.group(1):
        return int(match.group(1)), None
    seconds = float(match.group(2)) * _UNITS[match.group(3)]
    if seconds <= 0:
        raise ValueError(f"--checkpoint-every: a time must be positive, got {text!r}")
    return None, seconds


@dataclass
class CheckpointSchedule:
    """When a resume checkpoint is due: every ``updates`` updates or ``seconds`` seconds since
    the last one (``None``: never)."""

    updates: int | None = None
    seconds: float | None = None
    last_update: int = 0
    last_time: float = 0.0

    @classmethod
    def parse(cls, text: str, now: float, update: int = 0) -> CheckpointSchedule:
        """The schedule of ``--checkpoint-every text``, counting from ``update`` at ``now``."""
        updates, seconds = parse_checkpoint_every(text)
        return cls(updates, seconds, update, now)

    def due(self, update: int, now: float) -> bool:
        """True when a checkpoint is due after ``update`` at ``now``."""
        if self.updates is not None and update - self.last_update >= self.updates:
            return True
        return self.seconds is not None and now - self.last_time >= self.seconds

    def written(self, update: int, now: float) -> None:
        """Record a checkpoint written after ``update`` at ``now``."""
        self.last_update, self.last_time = update, now


# ------------------------------------------------------------------ generators
def generator_states(rng: np.random.Generator | None = None,
                     torch_generators: Sequence[Any] = ()) -> dict[str, Any]:
    """Every generator's state: ``rng``'s bit generator, torch's global CPU generator, each of
    ``torch_generators`` and Python's ``random`` (plain data: dicts, bytes, tuples)."""
    import torch

    return {"numpy": None if rng is None else rng.bit_generator.state,
            "torch": torch.get_rng_state().numpy().tobytes(),
            "torch_generators": [g.get_state().numpy().tobytes() for g in torch_generators],
            "python": random.getstate()}


def restore_generators(states: Mapping[str, Any], rng: np.random.Generator | None = None,
                       torch_generators: Sequence[Any] = ()) -> None:
    """Put ``generator_states``' states back into the same generators (``ValueError`` when
    their number differs)."""
    import torch

    saved = states["torch_generators"]
    if len(saved) != len(torch_generators):
        raise ValueError(f"the checkpoint holds {len(saved)} torch generators, this run has "
                         f"{len(torch_generators)}")
    if rng is not None:
        rng.bit_generator.state = states["numpy"]
    torch.set_rng_state(torch.from_numpy(np.frombuffer(states["torch"], dtype=np.uint8).copy()))
    for g, state in zip(torch_generators, saved, strict=True):
        g.set_state(torch.from_numpy(np.frombuffer(state, dtype=np.uint8).copy()))
    random.setstate(states["python"])


# ------------------------------------------------------------------ configuration
def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_resumable_config(saved: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Refuse a resumed run whose arguments differ from the checkpoint's in a flag outside
    ``MAY_CHANGE`` (``ValueError`` naming every such flag with both values)."""
    changed = [f"{_flag(k)} (checkpoint: {saved.get(k)!r}, now: {now.get(k)!r})"
               for k in sorted(set(saved) | set(now))
               if k not in MAY_CHANGE and saved.get(k) != now.get(k)]
    if changed:
        raise ValueError("--resume: the run was started with other arguments; these may not "
                         "change on resume: " + "; ".join(changed))


# ------------------------------------------------------------------ the file
class CheckpointWriteError(OSError):
    """A resume checkpoint could not be written; the previous one is intact."""


def to_plain(value: Any) -> Any:
    """``value`` with every NumPy array as ``{"__ndarray__": [dtype, shape, bytes]}`` and every
    NumPy scalar as its Python number: what torch's restricted unpickler reads (tensors,
    dicts, lists, tuples, strings, numbers, bytes, ``None``); ``TypeError`` on anything
    else (an object array, an arbitrary object)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("a resume checkpoint holds no object arrays")
        return {_ARRAY: [value.dtype.str, list(value.shape),
                         np.ascontiguousarray(value).tobytes()]}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_plain(v) for v in value)
    if value is None or isinstance(value, str | bytes | bool | int | float):
        return value
    import torch

    if isinstance(value, torch.Tensor):
        return value
    raise TypeError(f"a resume checkpoint holds plain data and tensors, not "
                    f"{type(value).__name__}")


def from_plain(value: Any) -> Any:
    """``to_plain``'s inverse (``ValueError`` on an array record that does not fit)."""
    if isinstance(value, dict):
        if set(value) == {_ARRAY}:
            dtype, shape, data = value[_ARRAY]
            try:
                kind = np.dtype(dtype)
                if kind.hasobject:
                    raise ValueError("object dtype")
                return np.frombuffer(data, dtype=kind).reshape(shape).copy()
            except (TypeError, ValueError) as exc:
                raise ValueError(f"an array record does not fit ({exc})") from None
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(from_plain(v) for v in value)
    return value


def write_checkpoint(folder: Path, state: Mapping[str, Any]) -> Path:
    """Write ``state`` (``torch.save``-able) to ``folder/RESUME_FILE`` atomically; on an
    ``OSError`` (a full disk) raise ``CheckpointWriteError`` saying the last good checkpoint is
    intact (or that there is none yet)."""
    import torch

    path = Path(folder) / RESUME_FILE
    buffer = io.BytesIO()
    buffer.write(_HEADER.pack(MAGIC, CHECKPOINT_FORMAT))
    torch.save(to_plain(dict(state)), buffer)
    try:
        atomic_write_bytes(path, buffer.getvalue())
    except OSError as exc:
        why = errno.errorcode.get(exc.errno or 0, "error")
        kept = (f"the last good checkpoint, {path}, is intact" if path.exists()
                else "no earlier checkpoint exists")
        raise CheckpointWriteError(exc.errno, f"resume checkpoint not written ({why}: "
                                              f"{exc.strerror or exc}); {kept}") from exc
    return path


def read_checkpoint(folder: Path, required: Sequence[str] = ()) -> dict[str, Any]:
    """The state in ``folder/RESUME_FILE`` (``ValueError`` naming what is wrong: no
    checkpoint, not a checkpoint, another format version, a payload that does not load with
    torch's restricted unpickler, a part of ``required`` missing: the trainer asks for
    ``REQUIRED``)."""
    import torch

    path = Path(folder) / RESUME_FILE
    if not path.is_file():
        raise ValueError(f"--resume {folder}: no resume checkpoint ({RESUME_FILE}) in it")
    data = path.read_bytes()
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise ValueError(f"--resume {folder}: {RESUME_FILE} is not a resume checkpoint")
    _, version = _HEADER.unpack_from(data)
    if version != CHECKPOINT_FORMAT:
        raise ValueError(f"--resume {folder}: checkpoint format version {version}; this "
                         f"version of traveller reads version {CHECKPOINT_FORMAT}")
    # on the CPU whatever device wrote it (a run on a GPU resumes on any machine; the
    # trainer moves the weights and the optimizer's state to its own --device); torch's
    # restricted unpickler: tensors and plain data, no code
    try:
        state = from_plain(torch.load(io.BytesIO(data[_HEADER.size:]), map_location="cpu",
                                      weights_only=True))
    except Exception as exc:  # a crafted or damaged payload: any of the unpickler's errors
        why = " ".join(str(exc).split())[:200]
        raise ValueError(f"--resume {folder}: {RESUME_FILE} does not verify (not a checkpoint "
                         f"this trainer wrote, or damaged): {type(exc).__name__}: {why}") from None
    if not isinstance(state, dict):
        raise ValueError(f"--resume {folder}: {RESUME_FILE} does not verify: it holds a "
                         f"{type(state).__name__}")
    missing = [part for part in required if part not in state]
    if missing or ("args" in required and not isinstance(state["args"], dict)):
        raise ValueError(f"--resume {folder}: {RESUME_FILE} does not verify: it lacks "
                         f"{', '.join(missing) or 'the run arguments'}")
    return state


# ------------------------------------------------------------------ logs and folders
def count_lines(path: Path) -> int:
    """Complete lines in ``path`` (0 when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return 0
    return path.read_bytes().count(b"\n")


def truncate_lines(path: Path, lines: int) -> None:
    """Keep the first ``lines`` complete lines of ``path`` (a partial last line goes too);
    written atomically."""
    path = Path(path)
    if not path.exists():
        if lines:
            raise ValueError(f"{path}: the checkpoint recorded {lines} lines, the file is gone")
        return
    data = path.read_bytes()
    complete = data.count(b"\n")
    if complete < lines:
        raise ValueError(f"{path}: the checkpoint recorded {lines} lines, the file holds "
                         f"{complete}")
    kept = data.split(b"\n")[:lines]
    atomic_write_bytes(path, b"".join(line + b"\n" for line in kept))


def check_writable(folder: Path, flag: str = "--out") -> None:
    """``ValueError`` naming ``flag`` when ``folder`` cannot be created or written."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{flag} {folder}: cannot be written ({exc.strerror or exc})") from exc
