"""The batched masked-PPO trainer on the compiled core (``traveller train ppo``).

Its modules, each one responsibility (each imports only modules listed above it):

* ``shaping``: the ``--style``, ``--knockouts`` and ``--potential`` reward terms.
* ``args``: ``Args``, the trainer's flags, and their checks.
* ``rows``: which vector fills which rows of the batch, the sides, the scenarios, the views and
  observation columns each network reads, the training and evaluation vectors.
* ``checkpoints``: whether ``--init`` and the pool's checkpoints fit the battles; loading them.
* ``rollout``: masked sampling, the per-seat rollout and its GAE, greedy evaluation, the curve.
* ``stacked``: the learner's frozen copies run in one batched forward pass.
* ``pool``: ``FrozenPool``, the ``--pool`` opponents (on ``traveller_rl.pool.OpponentPool``).
* ``update``: the PPO update.
* ``progress``: timers, training-battle statistics, evaluation and per-update logs.
* ``trainer``: ``train()``'s loop, the final evaluation and the command line.
"""
