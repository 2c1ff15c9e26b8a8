# Two entry points, each creating (and reusing) the local virtual environment it needs:
#   make demo   audit the embedded sample reports, print rooflines, then serve the dashboard
#   make test   run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
PORT   ?= 8050

.PHONY: demo test venv clean benchmarks

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,bench,dashboard]'
	@rm -f $(VENV)/.installed-*; touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/profaudit demo --port $(PORT)

test: $(STAMP)
	@$(BIN)/python tests/ensure_browser.py || true
	@# two xdist workers, each with the thread pools of a 2-core machine: polars and pyarrow size
	@# theirs at import from the core count, and tests of memory and time must not depend on it
	POLARS_MAX_THREADS=2 OMP_NUM_THREADS=2 $(BIN)/python -m pytest -n 2 -q $(PYTEST_ARGS)

benchmarks: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[benchmarks]'
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
