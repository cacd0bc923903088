# ncclcheck developer tasks. Each target installs what it needs into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.torch

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,lint]'
	touch $(STAMP)

# The benchmark's tests need torch. Pin the CPU build that installs from a local wheel here: a bare
# "torch" would pull a multi-GB CUDA build, which CI must never download.
$(TORCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q torch==2.13.0
	touch $(TORCH_STAMP)

## Run analyze-log on the bundled 8-rank incident (exit 1 means "a failure was found", as designed).
demo: $(STAMP)
	$(BIN)/ncclcheck analyze-log examples/incident-8rank; test $$? -le 1

## Run the test suite (conformance set from ../shared/conformance when present).
test: $(STAMP) $(TORCH_STAMP)
	NCCLCHECK_REQUIRE_TORCH=1 $(BIN)/python -m pytest -q $(if $(TESTS),-x -k "$(TESTS)")

lint: $(STAMP)
	$(BIN)/ruff check ncclcheck tests tools

## Speed benchmark: analyze-log vs grep -c -F WorkNCCL on ~1 GiB of generated logs.
bench: $(STAMP)
	$(BIN)/python tools/bench_analyze.py --mib $(or $(MIB),1024)

clean:
	rm -rf $(VENV) .bench .pytest_cache .hypothesis
