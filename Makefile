# Two entry points do all set-up on a fresh machine:
#   make test   the whole CPU suite      make demo   tiny model → hybrid checkpoint → report
# Both create .venv (if missing) with the pinned stack from overlay/nf3_hybrid/versions.py
# (~6 min, ~9.5 GB the first time) and install this package with its .pth into it.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.nf3-stack
PYTEST_ARGS ?=

.PHONY: test demo install venv clean

$(STAMP): overlay/nf3_hybrid/versions.py scripts/stack.py
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet $$($(PYTHON) scripts/stack.py)
	touch $@

venv: $(STAMP)

# reinstalled every time (a few seconds): the tests run against the installed wheel,
# .pth included, exactly as users get it
install: $(STAMP)
	$(VPY) -m pip install --quiet --no-deps --force-reinstall .

test: install
	$(VPY) -m pytest -q -m "not gpu" $(PYTEST_ARGS) tests

demo: install
	$(VENV)/bin/nf3-hybrid demo --build-dir build

clean:
	rm -rf build dist .pytest_cache
