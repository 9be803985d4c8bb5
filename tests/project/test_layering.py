"""Imports run one way: rules -> encoding/observations -> env -> bridges -> policies
(``traveller_agents``) -> the training layer (``traveller_rl``) -> the ``traveller`` command
line (``traveller_cli``);
``experiments/`` (benchmarks, not installed) sits above them all and nothing installed
imports it.

Checked twice: statically (every ``import`` statement of each package's files, including the
late ones inside functions) and at run time (a fresh interpreter that uses the environment
must not have loaded ``traveller_agents``, ``traveller_rl``, ``experiments`` or
``traveller_cli``)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Collection
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: For each package, the packages above it in the layering, which it must not import.
ABOVE = {
    "traveller_env": ("traveller_agents", "traveller_rl", "experiments", "traveller_cli"),
    "traveller_agents": ("traveller_rl", "experiments", "traveller_cli"),
    "traveller_rl": ("experiments", "traveller_cli"),
    "traveller_cli": ("experiments",),
}

def imported_modules(path: Path, *, modules: Collection[str] = ()) -> set[str]:
    """The absolute module names ``path`` imports anywhere, late imports inside functions and
    those under ``if TYPE_CHECKING:`` included (relative imports are resolved against its
    package). ``from pkg import name`` imports ``pkg``, or the module ``pkg.name`` when that
    is one of ``modules``."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        elif node.module:
            module = node.module
        else:
            continue
        for alias in node.names:
            sub = f"{module}.{alias.name}"
            found.add(sub if sub in modules else module)
    return found


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
    trained = imported_modules(ROOT / "traveller_agents" / "trained.py")
    assert "traveller_agents.registry" not in trained
    assert "traveller_agents.scripted" in trained
    agents = ROOT / "traveller_agents"
    assert "traveller_agents.trained" in imported_modules(agents / "registry.py")
    assert "traveller_agents.registry" not in imported_modules(agents / "scripted.py")


#: The installed packages, each of which must have no import cycle among its own modules
#: (``traveller_rl`` once it exists).
CYCLE_FREE = ("traveller_env", "traveller_agents", "traveller_cli", "traveller_rl")


def module_name(path: Path) -> str:
    """The dotted module name of a file under ``ROOT`` (a package's ``__init__.py`` is the
    package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports: every import statement, late
    ones inside functions and those under ``if TYPE_CHECKING:`` included (a type named both
    ways is a cycle of the design even if it never runs); ``from pkg import name`` imports
    the module ``pkg.name`` when that is one."""
    files = {module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}
    return {module: {m for m in imported_modules(path, modules=files)
                     if m in files and m != module}
            for module, path in files.items()}


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the strongly connected components of ``graph``, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_strongly_connected_components_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert sorted(strongly_connected_components(graph)) == [["a", "b", "c"], ["d"], ["e"]]


def test_the_import_graph_reads_late_imports_and_modules_imported_by_name():
    # This file imports ``traveller_env.scenario`` inside a test function only.
    assert "traveller_env.scenario" in imported_modules(Path(__file__).resolve())
    graph = import_graph("traveller_env")
    assert "traveller_env.rules.attack" in graph["traveller_env.rules.kinds"]  # from . import
    # ``sequencing`` imports ``combatant`` under ``if TYPE_CHECKING:`` only: it counts.
    assert "traveller_env.rules.combatant" in graph["traveller_env.rules.sequencing"]


@pytest.mark.parametrize("package", CYCLE_FREE)
def test_no_import_cycle_among_a_packages_modules(package):
    """No two modules of one package import each other, directly or through others (late
    imports count, and so do those under ``if TYPE_CHECKING:``: a type two modules name each
    other's way belongs in a module both import)."""
    if not (ROOT / package).is_dir():
        pytest.skip(f"{package}/ does not exist here")
    cycles = [c for c in strongly_connected_components(import_graph(package)) if len(c) > 1]
    assert not cycles, f"import cycles in {package}: {cycles}"


def test_the_rules_have_no_import_cycle_at_all():
    """The rules (``traveller_env.rules``) import one way: ``vocabulary`` <- ``kinds`` <-
    ``actions``, and ``battle`` imports the kinds, never the reverse."""
    graph = import_graph("traveller_env")
    rules = {m: {n for n in graph[m] if n.startswith("traveller_env.rules.")}
             for m in graph if m.startswith("traveller_env.rules.")}
    assert all(len(c) == 1 for c in strongly_connected_components(rules))
    assert "traveller_env.rules.actions" not in rules["traveller_env.rules.kinds"]
    assert "traveller_env.rules.battle" not in rules["traveller_env.rules.kinds"]


def _protocol_members(protocol: type) -> set[str]:
    """The attributes and methods a ``typing.Protocol`` class declares."""
    declared = set(getattr(protocol, "__annotations__", {}))
    declared |= {name for name in vars(protocol) if not name.startswith("_")}
    return declared


def test_the_kinds_use_only_the_public_battle_effects_interface():
    """``kinds`` reaches a battle through ``effects.BattleEffects`` only (no private
    ``battle._x``), and ``Battle`` implements every member of that interface."""
    from traveller_env.rules.battle import Battle
    from traveller_env.rules.effects import BattleEffects
    from traveller_env.scenario import build_battle

    tree = ast.parse((ROOT / "traveller_env" / "rules" / "kinds.py").read_text("utf-8"))
    private = sorted({ast.unparse(node) for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and not node.attr.startswith("__")
                      and not (isinstance(node.value, ast.Name) and node.value.id == "self")})
    assert not private, f"kinds.py uses private members of other objects: {private}"
    members = _protocol_members(BattleEffects)
    assert {"emit", "end_turn", "reach", "walk_refusal", "declare_attack"} <= members
    battle = build_battle("duel", seed=0)
    missing = sorted(m for m in members if not hasattr(battle, m))
    assert not missing, f"Battle lacks {missing} of BattleEffects"
    assert all(callable(getattr(Battle, m)) for m in members
               if callable(getattr(BattleEffects, m, None)))


@pytest.mark.parametrize("folder", ["experiments", "tests", "traveller_env", "traveller_cli",
                                    "traveller_rl", "traveller_agents"])
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
    import random
    import traveller_env, traveller_env.env, traveller_env.integrations.sb3, traveller_env.simulate
    env = traveller_env.env("duel")
    env.reset(seed=0)
    for agent in env.agent_iter(max_iter=40):
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(env.action_mask().nonzero()[0][0]))
    traveller_env.simulate.play_random(traveller_env.build_battle("duel", seed=0), random.Random(0))
"""

_USE_BRIDGE = """
    from traveller_env.integrations.sb3 import TravellerSB3Env
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
                       if m.split(".")[0] in ("traveller_agents", "traveller_rl", "experiments",
                                              "traveller_cli"))
        print("LOADED:" + " ".join(above))
    """)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=120).stdout
    loaded = out.rsplit("LOADED:", 1)[1].split()
    assert loaded == [], f"using traveller_env loaded {loaded}"
