"""Benchmarks and the scripts that reproduce the figures the docs publish, run from a clone as
modules (``python -m experiments.bench_env``). Not installed: the product lives in the
``traveller_*`` packages."""
