"""The one reading of an action the bridges take from other libraries' learners: one integer
in ``Discrete(n)``, given as a Python or NumPy int or a one-element array (as SB3's and
RLlib's samplers hand it)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["discrete_action"]


def discrete_action(action: Any, n: int) -> int | None:
    """``action`` as an int in ``[0, n)``, or ``None`` when it is not one (a bool, a float, an
    array of several values, out of range): the caller names its space in the error."""
    value = action
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        return None
    return int(value) if 0 <= int(value) < n else None
