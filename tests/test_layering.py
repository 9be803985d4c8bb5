"""Imports run one way: rules -> encoding/observations -> env -> bridges -> agents ->
experiments -> the ``traveller`` command line (``traveller_cli``).

Checked twice: statically (every ``import`` statement of each package's files, including the
late ones inside functions) and at run time (a fresh interpreter that uses the environment
must not have loaded ``agents``, ``experiments`` or ``traveller_cli``)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: For each package, the packages above it in the layering, which it must not import.
ABOVE = {
    "traveller_env": ("agents", "experiments", "traveller_cli"),
    "agents": ("experiments", "traveller_cli"),
    "experiments": ("traveller_cli",),
}

def imported_modules(path: Path) -> set[str]:
    """The absolute module names ``path`` imports anywhere (relative imports are resolved
    against its package)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                names.add(node.module)
    return names


def _files(package: str) -> list:
    params = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        params.append(pytest.param(package, path, id=rel))
    return params


@pytest.mark.parametrize(("package", "path"), [p for pkg in ABOVE for p in _files(pkg)])
def test_no_module_imports_a_package_above_its_own(package, path):
    above = ABOVE[package]
    wrong = sorted(m for m in imported_modules(path) if m.split(".")[0] in above)
    assert not wrong, f"{path.relative_to(ROOT)} imports {wrong}, above {package} in the layering"


def test_registry_and_trained_do_not_import_each_other_both_ways():
    """``registry`` -> ``trained`` -> ``scripted``: ``trained`` never imports ``registry``."""
    trained = imported_modules(ROOT / "agents" / "trained.py")
    assert "agents.registry" not in trained
    assert "agents.scripted" in trained
    assert "agents.trained" in imported_modules(ROOT / "agents" / "registry.py")
    assert "agents.registry" not in imported_modules(ROOT / "agents" / "scripted.py")


@pytest.mark.parametrize("folder", ["experiments", "tests", "traveller_env", "traveller_cli",
                                    "agents"])
def test_no_sys_path_edits(folder):
    """Experiments run as modules (``python -m experiments.X``) and tests import them as
    ``experiments.X``: nothing edits ``sys.path``."""
    edits = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in ("insert", "append", "extend")
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "path"
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "sys"):
                edits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not edits


_USE_ENV = """
    import traveller_env, traveller_env.env, traveller_env.sb3, traveller_env.cli
    env = traveller_env.env("duel")
    env.reset(seed=0)
    for agent in env.agent_iter(max_iter=40):
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(env.action_mask().nonzero()[0][0]))
    assert traveller_env.cli.main(["scenarios"]) == 0
"""

_USE_BRIDGE = """
    from traveller_env.sb3 import TravellerSB3Env
    bridge = TravellerSB3Env("duel", learner="blue")
    bridge.reset(seed=0)
"""

_USE_VECTOR = """
    import numpy as np
    from traveller_env import vector
    v = vector.make("duel", num_envs=2, seed=0, opponents={"red": "random"})
    obs, mask, info = v.reset()
    v.step(vector.random_legal_actions(mask, np.random.default_rng(0)))
"""


@pytest.mark.parametrize("code", [
    pytest.param(_USE_ENV, id="env"),
    pytest.param(_USE_BRIDGE, id="sb3-bridge"),
    pytest.param(_USE_VECTOR, id="vector"),
])
def test_using_the_environment_loads_no_agents_nor_experiments(code):
    """In a fresh interpreter, importing and using ``traveller_env`` loads no module of the
    packages above it."""
    check = textwrap.dedent(code) + textwrap.dedent("""
        import sys
        above = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("agents", "experiments", "traveller_cli"))
        print("LOADED:" + " ".join(above))
    """)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=120).stdout
    loaded = out.rsplit("LOADED:", 1)[1].split()
    assert loaded == [], f"using traveller_env loaded {loaded}"
