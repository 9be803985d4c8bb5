"""The AEC environment on the compiled core, at its old import path (kept for callers).

``CoreTravellerEnv`` now lives in ``traveller_env.env`` (one env class over an engine adapter)
and the core's adapter (``CoreBattleState``, ``CoreEngine``) in ``traveller_env.core.aec_engine``;
this module re-exports them. Nothing in ``traveller_env`` imports it.
"""

from __future__ import annotations

from ..env import CoreTravellerEnv
from .aec_engine import CoreBattleState, CoreEngine

__all__ = ["CoreBattleState", "CoreEngine", "CoreTravellerEnv"]
