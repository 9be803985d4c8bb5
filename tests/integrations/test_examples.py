"""The examples in ``examples/`` run: each at a tiny budget, checking what it printed and wrote."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from traveller_env import core

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not core.available(), reason="the compiled core is not built")
def test_cleanrl_ppo_trains_and_evaluates_at_a_tiny_budget(tmp_path):
    out = tmp_path / "summary.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "cleanrl_ppo.py"), "--total-timesteps", "2048",
         "--num-envs", "8", "--num-steps", "32", "--eval-battles", "12", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert re.search(r"^iteration 8/8 step 2048 battles \d+ train_win_rate ", run.stdout, re.M)
    line = re.search(r"^eval: (\d+)/12 battles won vs rush .*95% Wilson \[([\d.]+), ([\d.]+)\], "
                     r"seeds shared with training 0$", run.stdout, re.M)
    assert line, run.stdout
    summary = json.loads(out.read_text())
    assert summary["total_timesteps"] == 2048 and summary["battles"] == 12
    assert summary["wins"] == int(line.group(1))
    lo, hi = summary["wilson95"]
    assert 0.0 <= lo <= summary["win_rate"] <= hi <= 1.0
    assert summary["seeds_shared_with_training"] == 0
