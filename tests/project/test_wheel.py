"""The wheel installs and runs without a compiler, from outside the checkout.

The wheel is built once (``pip wheel . --no-build-isolation``, incremental in ``build/``), then
installed with its base dependencies into a fresh venv (no system site packages) with ``CC``
and ``CXX`` set to ``/bin/false`` so that nothing can compile, and three things run from a
temporary folder: ``traveller simulate``, ``traveller demo --help`` and README's AEC loop (its
first python block). Slow (a build and an install, minutes on a busy machine): marked
``wheel``; ``make test`` runs it with the rest, ``make wheel-test`` alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.wheel


def _readme_first_python_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its base dependencies; its ``bin`` folder."""
    where = tmp_path_factory.mktemp("wheel")
    dist = where / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", ".", "-w", str(dist)], cwd=ROOT, check=True,
                   timeout=1800)
    wheel = next(dist.glob("traveller_tactics-*.whl"))
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    no_compiler = {**os.environ, "CC": "/bin/false", "CXX": "/bin/false"}
    no_compiler.pop("PYTHONPATH", None)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", str(wheel)], env=no_compiler, check=True,
                   timeout=1800, cwd=where)
    return env_dir / "bin"


def _run(bin_dir: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_wheel_plays_a_battle_from_outside_the_checkout(installed, tmp_path):
    done = _run(installed, [str(installed / "traveller"), "simulate", "--scenario", "duel",
                            "--seed", "1", "--quiet"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "simulate --quiet printed no result line"


def test_the_wheel_imports_its_own_copy_not_the_checkout(installed, tmp_path):
    done = _run(installed, [str(installed / "python"), "-c",
                            "import traveller_env, traveller_env.scenario as s; "
                            "print(traveller_env.__file__); print(s.config_dir()); "
                            "print(s.shipped_path('results/league/understudy.onnx'))"],
                tmp_path)
    assert done.returncode == 0, done.stderr
    first, configs, league = done.stdout.splitlines()
    assert not first.startswith(str(ROOT)), first
    assert configs.endswith("_configs"), configs
    assert Path(league).is_file() and not league.startswith(str(ROOT)), league


def test_the_wheel_shows_the_demo_help(installed, tmp_path):
    done = _run(installed, [str(installed / "traveller"), "demo", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--squad-decisions" in done.stdout


def test_the_wheel_runs_readme_aec_loop(installed, tmp_path):
    done = _run(installed, [str(installed / "python"), "-c", _readme_first_python_block()],
                tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the loop printed no winner line"


def test_the_wheel_installs_only_packages_named_for_this_project(installed, tmp_path):
    """No generic top-level name (``agents`` would shadow, or be shadowed by, another
    distribution's): every package the wheel installs is ``traveller_*``, and ``import agents``
    fails in a venv with only this project installed."""
    files = _run(installed, [str(installed / "python"), "-c",
                             "import importlib.metadata as m; print('\\n'.join(sorted({"
                             "str(f).split('/')[0] for f in m.files('traveller-tactics') "
                             "if not str(f).split('/')[0].endswith(('.dist-info', '.data'))})))"],
                 tmp_path)
    assert files.returncode == 0, files.stderr
    tops = [t for t in files.stdout.split() if t != "bin" and not t.startswith("..")]
    assert tops and all(t.startswith("traveller_") for t in tops), tops
    gone = _run(installed, [str(installed / "python"), "-c", "import agents"], tmp_path)
    assert gone.returncode != 0 and "No module named 'agents'" in gone.stderr
