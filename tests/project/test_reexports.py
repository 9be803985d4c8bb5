"""One home for each name: no module re-exports names it does not define (a package's
``__init__`` is its face and may), and nothing imports a name from a module of the project
that merely imports it from elsewhere: every caller imports from the real home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("traveller_env", "traveller_agents", "traveller_rl", "traveller_cli", "experiments")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, those inside top-level ``if``/``try`` blocks included."""
    found, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)
    return found


def _defined(path: Path) -> set[str]:
    """The names a module defines itself (functions, classes, assignments; with a module
    ``__getattr__``, the keys of the dict it answers from, ``_KIND_SETS`` style)."""
    names: set[str] = set()
    nodes = _top_level(ast.parse(path.read_text(encoding="utf-8")))
    if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in nodes):
        names.update(k.value for n in nodes if isinstance(n, ast.Assign)
                     and isinstance(n.value, ast.Dict)
                     for k in n.value.keys if isinstance(k, ast.Constant))
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _all(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


@pytest.mark.parametrize("module", [m for m, p in MODULES.items() if p.name != "__init__.py"])
def test_a_modules_all_lists_only_what_it_defines(module):
    path = MODULES[module]
    foreign = sorted(set(_all(path)) - _defined(path) - {
        n.rsplit(".", 1)[1] for n in MODULES if n.startswith(module + ".")})
    assert not foreign, f"{module} re-exports {foreign}: import them from their homes"


def _imports_through_a_reexport(path: Path) -> list[str]:
    module = _module_name(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        target = MODULES.get(source)
        if target is None or target.name == "__init__.py":
            continue  # not ours, or a package's face
        defined = _defined(target)
        for alias in node.names:
            if alias.name not in defined and f"{source}.{alias.name}" not in MODULES:
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} "
                             f"from {source}, which does not define it")
    return wrong


def test_every_caller_imports_from_the_real_home():
    files = [*MODULES.values(), *sorted((ROOT / "tests").rglob("*.py")),
             *sorted((ROOT / "examples").rglob("*.py"))]
    wrong = [w for path in files for w in _imports_through_a_reexport(path)]
    assert not wrong, "\n".join(wrong)
