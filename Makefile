# Every target sets up what it needs: `make test` works on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: test lint build bindings check-bindings clean

$(VENV)/.test-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.test-installed

test: $(VENV)/.test-installed
	$(PY) -m pytest

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check src tests
	$(PY) -m ruff format --check src tests
	$(PY) -m mypy --strict src

build: $(VENV)/.test-installed
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

clean:
	rm -rf $(VENV) dist build .pytest_cache .mypy_cache .ruff_cache
