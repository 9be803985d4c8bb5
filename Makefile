# The two commands of the README: `make demo` and `make test`.
# Both create .venv when it is missing and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo battle test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned here, not in pyproject: it must be installed before anything that
# depends on it, so that the CPU wheel is used instead of a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[train,bench,dev,rllib]"
	touch $(STAMP)

# The main job: a short MaskablePPO training of the aiming policy (a few minutes on 2 cores),
# evaluated against the exact optimum and the scripted NPCs; prints the tables and the plot.
demo: $(STAMP)
	$(BIN)/traveller train aiming --exp-name demo --total-timesteps 600000 --eval-battles 200

# A narrated battle with random legal actions (the engine's own demo).
battle: $(STAMP)
	$(BIN)/traveller simulate --scenario squad --seed 1

test: $(STAMP)
	$(BIN)/python -m pytest

# Benchmarks (experiments/, never timed assertions in tests).
bench: $(STAMP)
	$(BIN)/python experiments/bench_env.py --json results/bench_env.json
	$(BIN)/python experiments/bench_train.py --json results/bench_train.json

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV)
