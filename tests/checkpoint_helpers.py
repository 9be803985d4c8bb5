"""Checkpoints that tests build: an untrained ``train ppo`` checkpoint for a scenario (a shared
helper at the top of ``tests/``, importable from every test folder)."""

from __future__ import annotations

from pathlib import Path


def random_checkpoint(path: Path, scenario: str) -> Path:
    """An untrained train_ppo checkpoint for ``scenario`` (hidden layer 16, seed 0)."""
    import torch

    from traveller_agents.checkpoint import checkpoint_bytes
    from traveller_agents.nets import ActorCritic
    from traveller_env import vector

    venv = vector.make(scenario, num_envs=1, seed=0, backend="python", relative_actions=True)
    torch.manual_seed(0)
    net = ActorCritic(venv.obs_dim, venv.n_actions, [16])
    path.write_bytes(checkpoint_bytes(net, scenario, venv.action_labels))
    return path
