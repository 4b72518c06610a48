# Every target sets up what it needs: `make test` works on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: test test-repeat lint build bindings check-bindings demo bench bench-smoke docs clean

$(VENV)/.test-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.test-installed

test: $(VENV)/.test-installed check-bindings
	$(PY) -m pytest

# The suite N times in a row (`make test-repeat N=5`), stopping at the first failing run: a
# test that fails now and then shows here before it shows in CI. Plain `=`: an N in the
# environment does not count, only one on the command line.
N = 5
test-repeat: $(VENV)/.test-installed check-bindings
	@case "$(N)" in ''|*[!0-9]*|0*) echo "N must be a positive whole number, not '$(N)'" >&2; exit 2;; esac; \
	i=1; while [ $$i -le $(N) ]; do \
		echo "== run $$i of $(N)"; \
		$(PY) -m pytest || { echo "run $$i of $(N) failed" >&2; exit 1; }; \
		i=$$((i + 1)); \
	done

# Typed bindings from a WSDL (read with lxml, formatted by the pinned ruff): by default the
# packaged ones from wsdl/; `make bindings WSDL=vendor/FaxWS.wsdl OUTPUT=vendor_bindings.py` for
# another FaxWS WSDL. Plain `=`, not `?=`: only the command line overrides, not the environment.
WSDL = wsdl/FaxWS.wsdl
OUTPUT = src/faxws/bindings.py
bindings: $(VENV)/.test-installed
	$(PY) -m faxws._codegen --wsdl '$(WSDL)' --output '$(OUTPUT)'

# Fails, showing the diff, when the committed bindings are not what wsdl/ generates (always the
# packaged pair, whatever WSDL and OUTPUT say).
check-bindings: $(VENV)/.test-installed
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PY) -m faxws._codegen --wsdl wsdl/FaxWS.wsdl --output "$$tmp/bindings.py" && \
	diff -u src/faxws/bindings.py "$$tmp/bindings.py" || \
	{ echo "src/faxws/bindings.py is out of date: run 'make bindings'" >&2; exit 1; }

# The main job end to end: simulator, `faxws send` and `faxws report`, what arrived.
demo: $(VENV)/.test-installed
	$(PY) scripts/demo.py

# Benchmarks against their floors (the same request prebuilt and sent with plain requests, a
# document streamed in the same chunks, `python -c pass`) and plain zeep as a peer, each ratio
# the median of three or more rounds. bench-smoke runs the same code with tiny sizes; the test
# suite runs it too.
bench: $(VENV)/.test-installed
	$(PY) benchmarks/bench.py

bench-smoke: $(VENV)/.test-installed
	$(PY) benchmarks/bench.py --smoke

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check src tests scripts benchmarks docs/_griffe
	$(PY) -m ruff format --check src tests scripts benchmarks docs/_griffe
	$(PY) -m mypy --strict src

# The documentation site from docs/ and mkdocs.yml (the API reference from the docstrings),
# into build/site/. --strict: a broken link or anchor, a page left out of the navigation or a
# docstring griffe cannot read fails the build. The site's own tests (offline, searchable,
# the reference built) run with the others in `make test`.
docs: $(VENV)/.test-installed
	$(PY) -m mkdocs build --strict

build: $(VENV)/.test-installed
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .

clean:
	rm -rf $(VENV) dist build .pytest_cache .mypy_cache .ruff_cache
