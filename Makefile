# Every target bootstraps .venv itself, so a fresh clone needs only `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TIKTOKEN_CACHE_DIR ?= $(abspath ../shared/data/tiktoken)

.PHONY: test lint typecheck pytest demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

pytest: $(STAMP)
	$(BIN)/pytest --cov --cov-report=term --cov-fail-under=95

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/python examples/quickstart.py

bench: $(STAMP)
	$(BIN)/python bench/turn_cost.py
	$(BIN)/python bench/facts.py
	$(BIN)/python bench/loop_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
