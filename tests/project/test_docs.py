"""The documentation is tested: every ```python block of README.md and docs/*.md runs, every
``traveller`` command line in a ```bash block names a real command and real options, so does
every ``python -m`` command of the project's own modules (in a block or inline), every
relative link resolves, README.md stays short, every file in results/ is quoted by the docs,
and the docs and results carry no diary words.

A python block runs in a fresh namespace with a temporary directory as its working directory.
Its fence's info string may add words after ``python``: ``repo`` runs it from the repository's
root (it reads committed files), ``no-run`` skips it (it needs Ray or minutes).
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RESULTS = ROOT / "results"
README_LIMIT = 20_480
#: Diary words: the word for a working sitting (singular or plural) and "issue <number>".
FORBIDDEN = re.compile(rb"\bsess" rb"ions?\b|\biss" rb"ue \d+", re.IGNORECASE)
FENCE = re.compile(r"^(`{3,})\s*(\S*)\s*(.*)$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    flags: frozenset[str]
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` (``` or longer fences, closed by the same fence)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, language, rest = m.group(1), m.group(2).lower(), m.group(3)
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        blocks.append(Block(path, start, language, frozenset(rest.split()), "\n".join(body)))
        i += 1
    return blocks


def all_blocks(language: str) -> list[Block]:
    """Every block of the docs in ``language``."""
    return [b for doc in DOCS for b in fenced_blocks(doc) if b.language == language]


def docs_text() -> str:
    """README.md and every docs page, concatenated."""
    return "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)


PYTHON = all_blocks("python")


def test_the_docs_have_python_examples():
    assert len(PYTHON) >= 10
    assert {b.path.name for b in PYTHON} >= {"README.md", "vector.md", "training.md"}


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block_runs(block: Block, tmp_path, monkeypatch):
    if "no-run" in block.flags:
        pytest.skip("marked no-run (needs Ray or minutes)")
    monkeypatch.chdir(ROOT if "repo" in block.flags else tmp_path)
    code = compile(block.text, block.id, "exec")
    exec(code, {"__name__": "__docs__"})  # the docs' own examples


def command_lines(block: Block) -> list[list[str]]:
    """The ``traveller ...`` command lines of a shell block, as tokens after ``traveller``
    (continuation lines joined, comments dropped, leading ``VAR=value`` words skipped)."""
    joined = block.text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
            words = words[1:]
        if words and words[0] == "traveller":
            found.append(words[1:])
    return found


COMMANDS = [(b, words) for b in all_blocks("bash") for words in command_lines(b)]


def test_the_docs_name_commands():
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("block,words", COMMANDS,
                         ids=[f"{b.id}:{' '.join(w[:2])}" for b, w in COMMANDS])
def test_bash_block_names_a_real_command(block: Block, words: list[str]):
    from traveller_cli import build_parser

    _, parsers = build_parser(words)
    named = [key for key in parsers if words[:len(key.split())] == key.split()]
    assert named, f"{block.id}: 'traveller {' '.join(words)}' is not a traveller command"
    key = max(named, key=lambda key: len(key.split()))
    parser = parsers[key]
    rest = words[len(key.split()):]
    while True:  # a command's own actions (``league train``)
        choices = [a.choices for a in parser._actions
                   if isinstance(a, argparse._SubParsersAction)]
        if not choices:
            break
        assert rest and rest[0] in choices[0], \
            f"{block.id}: 'traveller {' '.join(words)}' names none of {sorted(choices[0])}"
        parser, rest = choices[0][rest[0]], rest[1:]
    known = parser._option_string_actions  # the options argparse knows for this command
    for word in words:
        if word.startswith("--"):
            option = word.split("=", 1)[0]
            assert option in known, f"{block.id}: 'traveller {' '.join(words[:2])}' has no {option}"


INLINE_CODE = re.compile(r"`([^`\n]+)`")
#: The project's runnable modules the docs name (``python -m experiments.bench_vector ...``).
OWN_MODULES = ("experiments.", "traveller_rl.", "traveller_env.", "traveller_cli.", "agents.")


def module_commands() -> dict[str, dict[str, set[str]]]:
    """``{module: {option: {where}}}`` for every ``python -m <module>`` command line of the
    project's modules in the docs' bash blocks and inline code."""
    found: dict[str, dict[str, set[str]]] = {}

    def take(where: str, line: str) -> None:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # an unbalanced quote in prose: not a command line
            return
        for i in range(len(words) - 2):
            if words[i].endswith("python") and words[i + 1] == "-m" \
                    and words[i + 2].startswith(OWN_MODULES):
                options = found.setdefault(words[i + 2], {})
                for word in words[i + 3:]:
                    if word in ("|", "&&", ";", ">", "2>&1"):
                        break
                    if word.startswith("--"):
                        options.setdefault(word.split("=", 1)[0], set()).add(where)

    for block in all_blocks("bash"):
        for line in block.text.replace("\\\n", " ").splitlines():
            take(block.id, line)
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for span in INLINE_CODE.findall(line):
                take(f"{doc.relative_to(ROOT).as_posix()}:{n}", span)
    return found


MODULES = module_commands()


def test_the_docs_name_module_commands():
    assert len(MODULES) >= 10 and "experiments.generalisation" in MODULES


@pytest.mark.parametrize("module", sorted(MODULES))
def test_python_m_command_names_a_real_module_and_real_options(module: str, capsys):
    """The module runs its ``main(argv)`` with ``--help``; every option the docs give it must
    be in that help."""
    import importlib

    mod = importlib.import_module(module)
    assert callable(getattr(mod, "main", None)), f"python -m {module}: the module has no main"
    with pytest.raises(SystemExit) as done:
        mod.main(["--help"])
    assert done.value.code in (0, None)
    text = capsys.readouterr().out
    known = set(re.findall(r"--[\w-]+", text))
    commands = re.search(r"\{([\w,-]+)\}", text)  # a script with subcommands: theirs too
    for sub in commands.group(1).split(",") if commands else ():
        with pytest.raises(SystemExit):
            mod.main([sub, "--help"])
        known |= set(re.findall(r"--[\w-]+", capsys.readouterr().out))
    for option, where in MODULES[module].items():
        assert option in known, f"{sorted(where)}: 'python -m {module}' has no {option}"


def test_readme_is_short():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes, over {README_LIMIT}"


def github_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``path``, plus explicit ``id``/``name``s."""
    text = path.read_text(encoding="utf-8")
    in_code, seen, anchors = False, {}, set()
    for line in text.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    anchors.update(re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", text))
    return anchors


LINKS = [(doc, target) for doc in DOCS for target in LINK.findall(doc.read_text(encoding="utf-8"))
         if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("doc,target", LINKS,
                         ids=[f"{d.relative_to(ROOT).as_posix()}->{t}" for d, t in LINKS])
def test_relative_link_resolves(doc: Path, target: str):
    file, _, anchor = target.partition("#")
    path = (doc.parent / file).resolve() if file else doc
    assert path.exists(), f"{doc.name}: link to {target} finds no file"
    if anchor and path.suffix == ".md":
        assert anchor in github_anchors(path), f"{doc.name}: {target} names no heading"


def test_every_results_file_is_quoted_by_the_docs():
    text = docs_text()
    unquoted = []
    for path in sorted(p for p in RESULTS.rglob("*") if p.is_file()):
        rel = path.relative_to(ROOT)
        folders = [rel.parents[i].as_posix() for i in range(len(rel.parents) - 2)]
        if rel.as_posix() in text or any(f"{folder}/" in text for folder in folders):
            continue
        unquoted.append(rel.as_posix())
    assert not unquoted, f"results files no doc quotes: {unquoted}"


def test_no_diary_words_in_docs_or_results():
    files = [*DOCS, *(p for p in RESULTS.rglob("*") if p.is_file())]
    found = [f"{p.relative_to(ROOT)}: {m.group().decode(errors='replace')}"
             for p in files for m in [FORBIDDEN.search(p.read_bytes())] if m]
    assert not found, found
