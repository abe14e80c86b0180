# Two entry points: `make demo` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint unit integration slow

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch first: a bare torch requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/memdedup demo

lint: $(BIN)/.installed
	$(BIN)/ruff check consumer schemas tests bench
	$(BIN)/ruff format --check consumer schemas tests bench
	$(BIN)/mypy consumer schemas

test: lint
	$(BIN)/pytest

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit

integration: $(BIN)/.installed
	$(BIN)/pytest -m integration
