# The two commands of the README: `make demo` and `make test`.
# Both create .venv when it is missing and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned here, not in pyproject: it must be installed before anything that
# depends on it, so that the CPU wheel is used instead of a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[train,bench,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/traveller simulate --scenario squad --seed 1

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV)
