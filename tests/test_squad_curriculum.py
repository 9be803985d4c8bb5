"""experiments/squad_curriculum.sh: bad stage specs fail at the boundary, naming the stage."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "squad_curriculum.sh"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def test_too_few_arguments_print_the_usage() -> None:
    out = run("name", "1")
    assert out.returncode == 2
    assert "usage:" in out.stderr and "SECONDS|POOL_SCRIPTED|SHARE" in out.stderr


def test_a_stage_missing_a_field_is_named() -> None:
    out = run("bad_stage_probe", "1", "600||0.9")
    assert out.returncode == 2
    assert "stage '600||0.9' is not SECONDS|POOL_SCRIPTED|SHARE" in out.stderr
    assert not (SCRIPT.parents[1] / "runs" / "curriculum" / "bad_stage_probe").exists()
