"""Benchmarks and the scripts that reproduce the figures the docs publish (run from a clone:
``python -m experiments.bench_env``). Not installed: the product lives in ``traveller_rl``.

The training modules that used to live here moved into the installed training layer; their old
names still import (and run with ``python -m``) as aliases of the new modules, listed in
``MOVED``, so that scripts written against them keep working.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import CodeType, ModuleType

#: Old module (under ``experiments.``) -> its home in the training layer.
MOVED = {
    "aiming_optimum": "traveller_rl.recipes.optimum",
    "aiming_ppo": "traveller_rl.recipes.aiming",
    "clone_scripted": "traveller_rl.clone",
    "ensemble_checkpoints": "traveller_rl.checkpoints.ensemble",
    "frozen_pool": "traveller_rl.ppo.stacked",
    "ladder": "traveller_rl.ladder",
    "leadership_ppo": "traveller_rl.recipes.leadership",
    "league": "traveller_rl.league",
    "ppo_common": "traveller_rl.ppo.rollout",
    "select_checkpoint": "traveller_rl.checkpoints.select",
    "side_checkpoint": "traveller_rl.checkpoints.by_side",
    "squad_ppo": "traveller_rl.recipes.squad",
    "stats": "traveller_rl.stats",
    "tournament": "traveller_rl.tournament",
    "train_aiming": "traveller_rl.recipes.aiming",
    "train_common": "traveller_rl.common",
    "train_leadership": "traveller_rl.recipes.leadership",
    "train_ppo": "traveller_rl.ppo.trainer",
    "train_rllib": "traveller_rl.rllib",
    "widen_checkpoint": "traveller_rl.checkpoints.widen",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``experiments.<old>`` as the module it moved to (the same module object), and
    gives ``python -m experiments.<old>`` that module's code."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        head, _, tail = fullname.partition(".")
        if head != __name__ or tail not in MOVED:
            return None
        origin = importlib.util.find_spec(MOVED[tail]).origin  # runpy's sys.argv[0]
        return importlib.util.spec_from_loader(fullname, self, origin=origin)

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name.partition(".")[2]])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: ``create_module`` returned the imported new module."""

    def get_code(self, fullname: str) -> CodeType | None:
        new = MOVED[fullname.partition(".")[2]]
        return importlib.util.find_spec(new).loader.get_code(new)


if not any(isinstance(f, _Alias) for f in sys.meta_path):
    sys.meta_path.append(_Alias())
