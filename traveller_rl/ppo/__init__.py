"""The batched masked-PPO trainer on the compiled core (``traveller train ppo``).

Its modules, each one responsibility (each imports only modules listed above it):

* ``shaping``: the ``--style``, ``--knockouts`` and ``--potential`` reward terms.
* ``args``: ``Args``, the trainer's flags nested by concern (one ``--help`` group each), and
  each group's checks.
* ``rows``: which vector fills which rows of the batch, the sides, the scenarios, the views and
  observation columns each network reads, the training and evaluation vectors.
* ``checkpoints``: whether ``--init`` and the pool's checkpoints fit the battles; loading them.
* ``rollout``: masked sampling, the per-seat rollout and its GAE, greedy evaluation, the curve.
* ``stacked``: the learner's frozen copies run in one batched forward pass.
* ``pool``: ``FrozenPool``, the ``--pool`` opponents (on ``traveller_rl.pool.OpponentPool``).
* ``update``: the PPO update.
* ``progress``: timers, training-battle statistics, evaluation, per-update logs, the bar.
* ``collect``: ``Collector``, a rollout's steps (choosing, stepping, taking in the rewards).
* ``run_state``: ``RunState``, everything a run depends on, saved in and restored from the
  resume checkpoint.
* ``distributed``: data-parallel runs under torchrun (the ranks' seeds, the gradients averaged
  over them, rank 0 the one that writes, their resume checkpoint).
* ``trainer``: ``train()``, its setup then CleanRL's loop; the final evaluation and the
  command line.
"""
