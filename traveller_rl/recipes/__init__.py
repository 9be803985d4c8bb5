"""One recipe per task (aiming, leadership, squad), each built on a trainer and evaluated
against its baselines."""
