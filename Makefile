# Every target creates .venv (with the Python 3.11 on PATH) and installs what it needs.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: demo test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv (from PyPI, into the venv) installs and byte-compiles the project and its test extras
# in ~30 s where pip took ~75 s of CI's 15 minutes; pip is the fallback if uv fails.
# Byte-compiled: where PYTHONDONTWRITEBYTECODE is set, nothing would compile them later.
$(STAMP): $(BIN)/python pyproject.toml
	( $(BIN)/pip install --quiet uv \
	  && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test]' ) \
	|| ( $(BIN)/pip install --quiet --upgrade pip && $(BIN)/pip install --quiet -e '.[test]' )
	touch $(STAMP)

# Bytecode of the editable install's sources (and of the tests, whose modules worker and
# CLI processes import). Where PYTHONDONTWRITEBYTECODE is set (CI images set it), Python
# never caches it, and every `onrecord` process and pool worker compiled onrecord again:
# ~40 ms a command, a quarter of the CLI tests' time. Incremental: a no-op when current.
COMPILE := $(BIN)/python -m compileall -q -j 0

demo: $(STAMP)
	$(COMPILE) src
	$(BIN)/onrecord demo --output-dir demo-output

test: $(STAMP)
	bash scripts/install-system-deps.sh
	$(COMPILE) src tests
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup

bench: $(STAMP)
	$(COMPILE) src benchmarks
	$(BIN)/python -m benchmarks $(BENCH)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-output
