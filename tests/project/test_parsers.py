"""Every command-line parser of the project refuses abbreviated options (``--htm`` is not
``--html``): each ``argparse.ArgumentParser(...)`` call in the project's code passes
``allow_abbrev=False`` (``traveller``'s own parsers are ``CommandParser``s, which do; the
modules run alone with ``python -m`` build plain ones)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("traveller_env", "traveller_agents", "traveller_rl", "traveller_cli", "experiments",
           "examples", "tests")


def test_every_argument_parser_refuses_abbreviations():
    wrong = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "ArgumentParser"):
                    continue
                keywords = {k.arg: k.value for k in node.keywords}
                value = keywords.get("allow_abbrev")
                if not (isinstance(value, ast.Constant) and value.value is False):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not wrong, f"parsers that take abbreviated options: {wrong}"
