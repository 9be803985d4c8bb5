"""Checkpoint tools: selection on fixed battles, ensembles, per-side pairs, widening."""
