"""One recipe per task (aiming, leadership, squad), each built on a trainer and evaluated
against its baselines; aiming and leadership train with either trainer (``--trainer ppo`` or
``sb3``, ``trainer_options``)."""
