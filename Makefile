# The README's two commands: `make lessons` runs the course, `make test` runs every test and check.
# Both create .venv (from pyproject.toml) when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: lessons test lint typecheck pytest clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs,bench]'
	touch $@

lessons: $(BIN)/.installed
	$(BIN)/python -m lessons all

test: lint typecheck pytest

lint: $(BIN)/.installed
	$(BIN)/ruff check src lessons tests benchmarks
	$(BIN)/ruff format --check src lessons tests benchmarks

typecheck: $(BIN)/.installed
	$(BIN)/mypy

pytest: $(BIN)/.installed
	$(BIN)/pytest

clean:
	rm -rf $(VENV) build site .mypy_cache .ruff_cache .pytest_cache .hypothesis
