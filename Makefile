# ncclcheck developer tasks. Each target installs what it needs into .venv.
PYTHON ?= python3
# Where pip finds torch for the benchmark's tests. Empty: pip's own configuration decides (here, a local CPU
# wheel). From plain PyPI, torch==2.13.0 is the CUDA build (several GB with its CUDA libraries); to get the CPU
# build instead: make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.torch

.PHONY: demo test lint bench bench-hostile bench-explain clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,lint]'
	touch $(STAMP)

# The benchmark's tests need torch; explain's tables from a model need transformers too (the [hf] extra), pinned
# to the release the ground truth in tests/data/explain/truth was recorded with.
$(TORCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install -q transformers==5.23.0
	touch $(TORCH_STAMP)

## Run analyze-log on the bundled 8-rank incident (exit 1 means "a failure was found", as designed).
demo: $(STAMP)
	$(BIN)/ncclcheck analyze-log examples/incident-8rank; test $$? -le 1

## Run the test suite (conformance set from ../shared/conformance when present).
test: $(STAMP) $(TORCH_STAMP)
	NCCLCHECK_REQUIRE_TORCH=1 $(BIN)/python -m pytest -q $(if $(TESTS),-x -k "$(TESTS)")

lint: $(STAMP)
	$(BIN)/ruff check ncclcheck tests tools

## Benchmarks: start-up (ncclcheck --help vs a minimal Typer app), analyze-log vs grep -c -F WorkNCCL on ~1 GiB
## of generated logs, then jobs of 1,000 to 100,000 ranks and their per-node evidence files merged.
bench: $(STAMP)
	$(BIN)/python tools/bench_startup.py
	$(BIN)/python tools/bench_analyze.py --mib $(or $(MIB),1024)
	$(BIN)/python tools/bench_scale.py --sizes $(or $(SCALE),1000,4000,16000,64000,100000)
	$(BIN)/python tools/bench_hostile.py

## Hostile inputs (issue 34): claimed worlds, 1 MiB lines, gzip bombs, midnight, bare failure lines at offsets;
## each answered in < 5 s and < 300 MB, or the target fails.
bench-hostile: $(STAMP)
	$(BIN)/python tools/bench_hostile.py

## How often explain names the tensor each recorded collective carried (tables built by transformers).
bench-explain: $(STAMP) $(TORCH_STAMP)
	$(BIN)/python tools/bench_explain.py

clean:
	rm -rf $(VENV) .bench .pytest_cache .hypothesis
