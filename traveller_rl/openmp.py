"""torch's OpenMP workers wait passively: set before torch loads (``traveller_rl`` does it
when imported), so the PPO update's threads survive a busy machine.

torch runs its CPU operators on an OpenMP team (GNU ``libgomp`` in the CPU wheels). By
default a worker that finishes its share spins at the barrier for about 300,000 iterations
before it sleeps, and ``libgomp`` throttles the spin only when the team has more threads than
the machine has cores. On a machine whose cores other processes keep busy, a worker that the
scheduler has taken off its core holds every barrier until it runs again, while the others
spin through their time slices: the update (thousands of small operators, each a parallel
region) ran 12-15 times slower on two threads than on one (docs/performance.md, "Under
contention"). Waiting passively (``OMP_WAIT_POLICY=PASSIVE``: sleep at once, woken by the
last thread in) removes the collapse; it changes no result (the work is shared out the same
way), only how the idle threads wait.

``libgomp`` reads the variable once, when it is loaded, so it must be in the environment
before ``import torch``: :func:`wait_passively` sets it unless the user set
``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` already, and :data:`PASSIVE` records whether it
was in time (torch not loaded yet, or the user's own setting).
"""

from __future__ import annotations

import os
import sys

__all__ = ["PASSIVE", "contention_note", "wait_passively"]

#: The variables ``libgomp`` reads to decide how its idle threads wait.
_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def wait_passively() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a wait policy; whether the
    process's OpenMP waits as the environment says (False: torch was loaded before)."""
    if any(name in os.environ for name in _WAIT_VARIABLES):
        return True  # the user's choice, whenever torch loads
    if "torch" in sys.modules:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


#: Whether torch's OpenMP team waits passively (or as the user set it) in this process.
PASSIVE = wait_passively()


def contention_note(threads: int) -> str | None:
    """A line to print before training on ``threads`` update threads when the passive wait
    was not in time (torch loaded before ``traveller_rl``), else ``None``."""
    if threads <= 1 or PASSIVE:
        return None
    return (f"note: torch was loaded before traveller_rl, so its {threads} update threads spin "
            "while they wait: on a busy machine the update can be many times slower than on "
            "one thread; set OMP_WAIT_POLICY=PASSIVE before starting Python, or pass "
            "--update-threads 1")
