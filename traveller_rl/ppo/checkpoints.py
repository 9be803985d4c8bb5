"""Checkpoints beside the PPO trainer's battles: whether ``--init``, ``--pool-opponents`` and
``--pool-watch`` checkpoints fit them (observation size over their own views, action labels,
the views ``--init`` was trained with), which observation columns each reads, and loading one
that fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from traveller_rl.ppo.args import Args, names_list
from traveller_rl.ppo.rows import learner_views, observation_columns, vector_views

__all__ = ["check_checkpoints", "checkpoint_columns", "load_fitting"]


def check_checkpoints(args: Args, venv: Any) -> None:
    """``--init``, ``--pool-opponents`` and ``--pool-watch`` checkpoints (the newest one a
    watched run holds already; later ones are checked as they are loaded) must fit the
    battles: the same observation size and action labels (``ValueError`` naming the flag and
    both layouts);
    ``--init`` must also have been trained with each view exactly when its flag is given
    (``--move-view``, ``--aim-view``, ``--attack-view``; a pool opponent may differ:
    it reads its own columns of the observation). The learner reads a prefix of the
    vector's observation: a learner's view beside a pool opponent that reads an earlier view
    the learner does not (``--aim-view`` without ``--move-view`` beside one with the move
    view) is refused."""
    from traveller_agents.checkpoint import arch_of, read_checkpoint
    from traveller_agents.views import VIEWS, views_of

    if not isinstance(observation_columns(venv, learner_views(args)), slice):
        mine, observed = learner_views(args), vector_views(args)
        last = max(i for i, v in enumerate(VIEWS) if mine[v])
        before = [v for v in VIEWS[:last] if observed[v] and not mine[v]]
        flags = " ".join("--" + v.replace("_", "-") for v in before)
        raise ValueError(f"--{VIEWS[last].replace('_', '-')}: a --pool-opponents checkpoint "
                         f"reads {', '.join(v.replace('_', ' ') for v in before)}, which "
                         f"comes before it in the observation; pass {flags} too")
    paths = [("--init", args.net.init)] if args.net.init else []
    paths += [("--pool-opponents", p) for p in names_list(args.pool.opponents)]
    for folder in names_list(args.pool.watch):  # the newest checkpoint there already, if any
        paths += [("--pool-watch", str(p))
                  for p in sorted((Path(folder) / "pool").glob("ppo_u*.pt"))[-1:]]
    for flag, path in paths:
        try:
            data = read_checkpoint(path)
        except Exception as exc:  # a corrupt file: say which flag and file
            raise ValueError(f"{flag}: {path}: not a readable train_ppo checkpoint "
                             f"({exc})") from None
        if flag == "--init" and arch_of(data) == "ensemble":
            raise ValueError(f"--init: {path} is an ensemble of checkpoints "
                             "(ensemble_checkpoints); training starts from one network: pass "
                             "one of its members")
        if flag == "--init" and arch_of(data) == "by_side":
            raise ValueError(f"--init: {path} is a by-side checkpoint (side_checkpoint: one "
                             "network per side); training starts from one network: pass one "
                             "of its sides' checkpoints")
        views = views_of(data)
        for view, mine in learner_views(args).items():
            if flag == "--init" and views[view] != mine:
                said = "with" if views[view] else "without"
                option = "--" + view.replace("_", "-")
                raise ValueError(f"{flag}: {path} was trained {said} the "
                                 f"{view.replace('_', ' ')}; pass "
                                 f"{option if views[view] else 'no ' + option} "
                                 "to train beside it")
        checkpoint_columns(flag, path, data, venv)


def checkpoint_columns(flag: str, path: str, data: dict, venv: Any) -> slice | np.ndarray:
    """The columns of ``venv``'s observations the checkpoint ``data`` (read from ``path``)
    reads, after checking that it fits the battles: the same observation size over its own
    views and the same action labels (``ValueError`` naming ``flag`` and both layouts)."""
    from traveller_agents.views import views_of

    cols = observation_columns(venv, views_of(data))
    want = cols.stop if isinstance(cols, slice) else len(cols)
    if int(data["obs_dim"]) != want or list(data["action_labels"]) != list(venv.action_labels):
        raise ValueError(f"{flag}: {path} was trained on {data.get('scenario')!r} "
                         f"(observation size {data['obs_dim']}, "
                         f"{len(data['action_labels'])} actions), which does not fit "
                         f"{venv.scenario.name!r} (observation size {want}, "
                         f"{venv.n_actions} actions)")
    return cols



def load_fitting(path: str) -> Any:
    """The network (``traveller_agents.ppo_policy.ActorCritic``, or a by-side ``SideNet``) of a
    checkpoint that ``check_checkpoints`` found to fit."""
    from traveller_agents.checkpoint import network_from_checkpoint, read_checkpoint

    return network_from_checkpoint(read_checkpoint(path))
