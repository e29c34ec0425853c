# Two commands do all the set-up: `make demo` and `make test`. Each creates .venv if missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/reclaim simulate

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

test: lint
	$(BIN)/pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_forecast.py
	$(BIN)/python benchmarks/bench_placement.py
	$(BIN)/python benchmarks/bench_lifetime.py
	$(BIN)/python benchmarks/bench_pool_replay.py
	$(BIN)/python benchmarks/bench_corp_predict.py
	$(BIN)/python benchmarks/bench_corp_alloc.py
	$(BIN)/python benchmarks/bench_agent.py
	$(BIN)/python benchmarks/bench_pace.py --days 2

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
