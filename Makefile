# Every target creates .venv (with the Python 3.11 on PATH) and installs what it needs.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: demo test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/onrecord demo --output-dir demo-output

test: $(STAMP)
	bash scripts/install-system-deps.sh
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-output
