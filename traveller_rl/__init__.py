"""The training layer of Traveller Tactics: everything a user runs through ``traveller`` to
train, evaluate and rank policies.

* ``traveller_rl.ppo``: the batched masked-PPO trainer on the compiled core (``traveller train
  ppo``): arguments, reward shaping, rollout, the self-play pool, the update.
* ``traveller_rl.recipes``: one recipe per task (aiming, leadership, squad) built on a trainer.
* ``traveller_rl.clone``: behaviour cloning of a scripted policy (``traveller train clone``).
* ``traveller_rl.rllib``: PPO on Ray RLlib (``traveller train rllib``).
* ``traveller_rl.tournament``, ``traveller_rl.league``, ``traveller_rl.ladder``: round-robin
  tournaments, leagues of trained opponents, difficulty ladders.
* ``traveller_rl.checkpoints``: choosing, combining and widening checkpoints.
* ``traveller_rl.common``, ``traveller_rl.stats``: run folders, atomic writes, provenance;
  Wilson intervals, Elo and OpenSkill ratings.

It sits above ``traveller_env`` and ``agents`` in the layering and below ``traveller_cli``.
"""

# torch's OpenMP workers wait passively, set before torch loads (traveller_rl.openmp)
from traveller_rl import openmp as _openmp  # noqa: F401
