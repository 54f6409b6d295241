# Two entry points do all set-up on a fresh machine:
#   make test   the whole CPU suite      make demo   tiny model → hybrid checkpoint → report
# Both create .venv (if missing) with the pinned stack from overlay/nf3_hybrid/versions.py
# (~6 min, ~9.5 GB the first time) and install this package with its .pth into it.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.nf3-stack
# side environment with b12x 1.1.0 (NF3 layout reference for tests; conflicts with vLLM 0.33)
SIDE   := .venv-b12x110
SIDE_STAMP := $(SIDE)/.nf3-side
PYTEST_ARGS ?=
# pytest-xdist workers: one per core, at most four (each holds vLLM and the tiny checkpoints)
TEST_WORKERS ?= auto

.PHONY: test demo install venv clean

$(STAMP): overlay/nf3_hybrid/versions.py scripts/stack.py
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --no-cache-dir --upgrade pip
	$(VPY) -m pip install --quiet --no-cache-dir $$($(PYTHON) scripts/stack.py)
	touch $@

$(SIDE_STAMP): overlay/nf3_hybrid/versions.py scripts/stack.py
	test -x $(SIDE)/bin/python || $(PYTHON) -m venv $(SIDE)
	$(SIDE)/bin/python -m pip install --quiet --no-cache-dir --no-deps $$($(PYTHON) scripts/stack.py --b12x-nf3-side)
	touch $@

venv: $(STAMP)

# reinstalled every time (a few seconds) with the same drop-in installer users and the
# Docker image run, then checked in a fresh interpreter and a spawned child: the tests run
# against the installed copy, .pth included
install: $(STAMP)
	bash scripts/install_overlay.sh --python $(VPY) --no-extras --check

test: install $(SIDE_STAMP)
	$(VPY) -m pytest -q -m "not gpu" -n $(TEST_WORKERS) --maxprocesses 4 --dist worksteal $(PYTEST_ARGS) tests

demo: install
	$(VENV)/bin/nf3-hybrid demo --build-dir build

clean:
	rm -rf build dist .pytest_cache
