"""The compiled battle core (C++17, sources in ``csrc/``), loaded on demand.

``import traveller_env`` never needs the core: the Python engine (``backend="python"``) runs
without it. Code that needs it (``backend="core"``) calls :func:`require`, which returns the
extension module ``traveller_env._core`` or raises :class:`CoreUnavailableError` (an
``ImportError``) saying why and how to build it; there is no silent fallback to Python.

In a source checkout the core must also match the sources: the build stamps a digest of
``csrc/`` into the module (``_core.SOURCE_DIGEST``), and a core built from other sources (C++
edited since the last build) is refused until it is rebuilt with ``make build``.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType

from ._sources import source_digest

__all__ = ["BUILD_HINT", "CoreUnavailableError", "available", "build_info", "require",
           "status"]

#: How to build the core; every "core missing" message ends with it.
BUILD_HINT = ("build it with `pip install -e .` (or `make build`) in the repository, which "
              "compiles csrc/ with CMake and a C++17 compiler; backend='python' works without it")

_CSRC = Path(__file__).resolve().parents[2] / "csrc"


class CoreUnavailableError(ImportError):
    """The compiled core is missing, failed to load, or was built from other sources."""


@functools.cache
def _load() -> tuple[ModuleType | None, str | None]:
    """The extension module, or ``None`` and why it cannot be used (cached per process)."""
    try:
        module = importlib.import_module("traveller_env._core")
    except ImportError as exc:
        return None, f"the compiled core traveller_env._core is not built here ({exc})"
    if _CSRC.is_dir():  # a source checkout: the core must be built from these sources
        built, current = getattr(module, "SOURCE_DIGEST", None), source_digest(_CSRC)
        if built != current:
            return None, (f"the compiled core {module.__file__} was built from other sources "
                          f"than {_CSRC} (digest {str(built)[:12]}, sources {current[:12]}): "
                          "the C++ changed since it was built")
    return module, None


def available() -> bool:
    """Whether the compiled core is built and usable here."""
    return _load()[0] is not None


def status() -> str:
    """One line: where the usable core is, or why there is none and how to build it."""
    module, reason = _load()
    if module is None:
        return f"{reason}; {BUILD_HINT}"
    return f"compiled core {module.__file__} ({module.build_info()['build_type']})"


def require() -> ModuleType:
    """The extension module ``traveller_env._core``; :class:`CoreUnavailableError` if unusable."""
    module, reason = _load()
    if module is None:
        raise CoreUnavailableError(f"{reason}; {BUILD_HINT}")
    return module


def build_info() -> dict[str, object]:
    """How the usable core was built (digest, build type, flags, sanitizers, compiler)."""
    return dict(require().build_info())
