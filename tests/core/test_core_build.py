"""The compiled core is optional at import, never a silent fallback, and never stale."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import traveller_env
from traveller_env import core
from traveller_env.core._sources import source_digest
from traveller_env.scenario import config_dir

REPO = Path(__file__).resolve().parents[2]

WITHOUT_CORE = """
import sys, warnings
sys.modules["traveller_env._core"] = None  # as if the extension had not been built
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import traveller_env
assert [w.category.__name__ for w in caught] == ["CoreMissingWarning"], caught
assert "make build" in str(caught[0].message), caught[0].message
from traveller_env import core, vector
assert traveller_env.core_available() is False
assert vector.BACKENDS["core"] == "not built"
try:
    core.require()
except core.CoreUnavailableError as exc:
    assert isinstance(exc, ImportError)
    print(exc)
else:
    raise SystemExit("require() returned without a core")
for make in (lambda: traveller_env.env(scenario="duel"),  # the default backend is the core
             lambda: vector.make("duel", num_envs=2)):
    try:
        make()
    except core.CoreUnavailableError as exc:
        assert "make build" in str(exc), exc
    else:
        raise SystemExit("the core backend ran without a core")
env = traveller_env.env(scenario="duel", backend="python")
env.reset(seed=1)
for _ in range(5):
    agent = env.agent_selection
    mask = env.observe(agent)["action_mask"]
    env.step(None if env.terminations[agent] or env.truncations[agent] else int(mask.argmax()))
print("python backend ok")
"""


def test_without_the_core_importing_warns_asking_for_it_says_how_to_build(tmp_path):
    done = subprocess.run([sys.executable, "-c", WITHOUT_CORE], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    message, ok = done.stdout.strip().splitlines()
    assert "traveller_env._core is not built" in message
    assert "pip install -e ." in message and "make build" in message
    assert "backend='python' works without it" in message
    assert ok == "python backend ok"


def test_a_core_built_from_other_sources_is_refused(tmp_path, monkeypatch):
    if not traveller_env.core_available():
        pytest.fail(core.status())
    edited = tmp_path / "csrc"
    shutil.copytree(REPO / "csrc", edited, ignore=shutil.ignore_patterns("build*"))
    rng_hpp = edited / "include" / "traveller" / "rng.hpp"
    rng_hpp.write_text(rng_hpp.read_text() + "\n// an edit that was not rebuilt\n")
    monkeypatch.setattr(core, "_CSRC", edited)
    core._load.cache_clear()
    try:
        assert not core.available()
        with pytest.raises(core.CoreUnavailableError, match="built from other sources") as err:
            core.require()
        assert "make build" in str(err.value)
        assert "the C++ changed since it was built" in core.status()
    finally:
        monkeypatch.undo()
        core._load.cache_clear()
    assert core.available()


def test_the_core_was_built_from_this_checkout():
    assert source_digest(REPO / "csrc") == core.require().SOURCE_DIGEST, core.status()


def test_the_digest_covers_every_source_and_nothing_else(tmp_path):
    csrc = tmp_path / "csrc"
    for rel in ("CMakeLists.txt", "include/traveller/a.hpp", "src/b.cpp", "src/c.h"):
        (csrc / rel).parent.mkdir(parents=True, exist_ok=True)
        (csrc / rel).write_text(rel)
    base = source_digest(csrc)
    (csrc / "src" / "notes.txt").write_text("not a source")
    (csrc / "build").mkdir()
    (csrc / "build" / "x.cpp").write_text("build output")
    assert source_digest(csrc) == base
    (csrc / "src" / "b.cpp").write_text("changed")
    assert source_digest(csrc) != base


def test_the_makefile_installs_the_build_requirements_of_pyproject():
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    line = re.search(r"^BUILD_DEPS\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert line, "Makefile has no BUILD_DEPS line"
    assert re.findall(r'"([^"]+)"', line.group(1)) == requires


def test_configs_are_found_in_a_checkout_and_in_a_wheel():
    where = config_dir()
    assert (where / "equipment.yaml").is_file()
    assert where.name in {"configs", "_configs"}
