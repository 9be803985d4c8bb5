"""How a process that joined a data-parallel run ends (``traveller_rl.commandline.
process_status``, ``traveller_rl.ppo.distributed.leave_process``): through ``os._exit`` with
its status and its output flushed, so that gloo's worker threads never meet a finalizing
interpreter; a process that joined nothing returns (or raises) as ever."""

from __future__ import annotations

import subprocess
import sys

import pytest

from traveller_rl import commandline
from traveller_rl.ppo import distributed


class Left(Exception):
    """What the stand-in ``leave_process`` raises: the status the process would end with."""


@pytest.fixture
def left(monkeypatch):
    def leave(status: int):
        raise Left(status)
    monkeypatch.setattr(distributed, "leave_process", leave)


def test_a_process_that_joined_nothing_returns_and_raises_as_ever(left):
    assert commandline.process_status(lambda: 3) == 3
    with pytest.raises(SystemExit) as exc:
        commandline.process_status(lambda: sys.exit(2))
    assert exc.value.code == 2


@pytest.mark.parametrize(("main", "status"), [
    (lambda: 0, 0), (lambda: 2, 2), (lambda: sys.exit(2), 2), (lambda: sys.exit(), 0)])
def test_a_joined_process_leaves_with_its_status(left, monkeypatch, main, status):
    monkeypatch.setattr(distributed, "JOINED", True)
    with pytest.raises(Left) as exc:
        commandline.process_status(main)
    assert exc.value.args == (status,)


def test_leave_process_exits_with_the_status_and_the_output_flushed():
    code = ("import sys; from traveller_rl.ppo.distributed import leave_process; "
            "print('out', end=''); print('err', end='', file=sys.stderr); leave_process(3)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out", "err")
