"""The optional observation views a trained policy reads, and how it gets them in any env.

``TravellerEnv`` appends three optional views to the observation vector, in this order: the
move view (``move_view=True``: what the map offers at each square a move could end on), the aim
view (``aim_view=True``: who holds an aim on the observer) and the attack view
(``attack_view=True``: exact hit chances now and from each move's end square). A policy
trained with a view records it (a checkpoint's ``move_view``/``aim_view``/``attack_view`` keys,
an ONNX file's metadata); playing in an env whose observation lacks a view it reads (or has one
it does not), ``complete_observation`` rebuilds the vector it was trained on, asking the env for
the missing view (``env.move_view_vector``, ``env.aim_view_vector``,
``env.attack_view_vector``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from traveller_env.observations import VIEWS as OBSERVATION_VIEWS

__all__ = ["VIEWS", "complete_observation", "reads_layout", "view_sizes", "views_of"]

#: The views, in the order the observation vector appends them; each is an env keyword.
VIEWS = OBSERVATION_VIEWS
_PREFIX = {"move_view": "move.", "aim_view": "aim.", "attack_view": "attack."}


def views_of(data: Mapping[str, Any]) -> dict[str, bool]:
    """``{view: bool}`` from a checkpoint dict or decoded ONNX metadata (absent: ``False``)."""
    return {v: bool(data.get(v, False)) for v in VIEWS}


def reads_layout(env: Any, layout: Any, views: Mapping[str, bool]) -> bool:
    """Whether a policy trained on ``layout`` (``None``: none) with ``views`` must read
    ``env`` through that layout (``env.layout_observation``, ``env.layout_actions``): the env
    is not of that layout with those views, so its own observation and actions differ."""
    return layout is not None and not (
        getattr(env, "layout", None) == layout
        and all(bool(getattr(env, v, False)) == on for v, on in views.items()))


def view_sizes(labels: Sequence[str]) -> dict[str, int]:
    """Entries of each view among observation ``labels`` (0 for a view they lack)."""
    return {v: sum(1 for lab in labels if lab.startswith(_PREFIX[v])) for v in VIEWS}


def complete_observation(observation: np.ndarray, env: Any, agent: str,
                         views: Mapping[str, bool]) -> np.ndarray:
    """``agent``'s ``observation`` from ``env`` laid out for a policy that reads ``views``.

    Returned as is when the env observes exactly those views; otherwise the plain part is kept,
    each view the policy reads is taken from the env's vector when it has it and asked of the
    env when not, and views the policy does not read are dropped.
    """
    env = getattr(env, "unwrapped", env)
    have = {v: bool(getattr(env, v, False)) for v in VIEWS}
    if all(have[v] == bool(views.get(v, False)) for v in VIEWS):
        return observation
    sizes = view_sizes(env.observation_labels if any(have.values()) else [])
    offset = len(observation) - sum(sizes.values())
    parts = [np.asarray(observation[:offset], dtype=np.float32)]
    for v in VIEWS:
        own = observation[offset:offset + sizes[v]]
        offset += sizes[v]
        if views.get(v, False):
            parts.append(np.asarray(own, dtype=np.float32) if have[v]
                         else getattr(env, f"{v}_vector")(agent))
    return np.concatenate(parts)
