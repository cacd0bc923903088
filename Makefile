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

.PHONY: demo test lint bench bench-hostile bench-explain bench-truth explain-registry test-launchers clean

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

## Run analyze-log on the bundled 8-rank incident (exit 1 means "a failure was found", as designed), then say the
## next step: what the hung all_reduce's 467,019,003 elements are, for the model the example's numbers are from
## (Qwen2-7B, examples/qwen2-7b/config.json; the built-in layouts answer without transformers).
DEMO_NEXT := ncclcheck explain --numel 467019003 --config examples/qwen2-7b/config.json --batch 8 --seq 2048
demo: $(STAMP)
	$(BIN)/ncclcheck analyze-log examples/incident-8rank; test $$? -le 1
	@echo "next: what tensor the hung all_reduce carried:"
	@echo "  $(BIN)/$(DEMO_NEXT)"

## Run the test suite (conformance set from ../shared/conformance when present), one worker a core (pytest-xdist;
## worksteal: each worker runs a contiguous half, so the tests of one module share its fixtures and caches, and an
## idle worker takes over the end of the busy one's queue).
test: $(STAMP) $(TORCH_STAMP)
	NCCLCHECK_REQUIRE_TORCH=1 $(BIN)/python -m pytest -q -n auto --dist worksteal $(if $(TESTS),-x -k "$(TESTS)")

## Ruff on the sources, tests and tools; mypy on the package (settings in pyproject.toml; needs no torch).
lint: $(STAMP)
	$(BIN)/ruff check ncclcheck tests tools
	$(BIN)/mypy

## Record small failing jobs under each launcher that is installed (tools/launchers/, docs/launchers.md) into a
## temporary folder, then run the launcher fixtures' tests (make test runs those too).
test-launchers: $(STAMP) $(TORCH_STAMP)
	@out=$$(mktemp -d); \
	if command -v srun >/dev/null && [ "$$(id -u)" = 0 ]; then tools/launchers/slurm.sh $$out/slurm; else echo "skip Slurm: apt-get install slurm-wlm munge (as root)"; fi; \
	if command -v mpirun >/dev/null; then tools/launchers/mpi.sh $$out/mpi; else echo "skip Open MPI: apt-get install openmpi-bin"; fi; \
	if command -v pdsh >/dev/null; then tools/launchers/pdsh.sh $$out/pdsh; else echo "skip pdsh: apt-get install pdsh"; fi; \
	if [ -x .venv-launchers/bin/python ]; then tools/launchers/python_launchers.sh $$out; else echo "skip Accelerate, Lightning, DeepSpeed, Ray: see docs/launchers.md"; fi; \
	echo "recorded under $$out"
	$(BIN)/python -m pytest -q tests/test_launchers.py

## Benchmarks: start-up (ncclcheck --help vs a minimal Typer app), analyze-log vs grep -c -F WorkNCCL on ~1 GiB
## of generated logs, then jobs of 1,000 to 100,000 ranks and their per-node evidence files merged, then the cost a
## rank from 8,192 to 131,072 ranks (one file per rank and node logs, with its fitted exponent) and 262,144 ranks.
bench: $(STAMP)
	$(BIN)/python tools/bench_startup.py
	$(BIN)/python tools/bench_analyze.py --mib $(or $(MIB),1024)
	$(BIN)/python tools/bench_scale.py --sizes $(or $(SCALE),1000,4000,16000,64000,100000)
	$(BIN)/python tools/bench_files.py --ranks $(or $(FILES),100000)
	$(BIN)/python tools/bench_ranks.py --sizes $(or $(RANKS),8192,16384,32768,65536,131072)
	$(BIN)/python tools/bench_hostile.py

## Hostile inputs (issue 34): claimed worlds, 1 MiB lines, gzip bombs, midnight, bare failure lines at offsets;
## each answered in < 5 s and < 300 MB, or the target fails.
bench-hostile: $(STAMP)
	$(BIN)/python tools/bench_hostile.py

## explain --config cold and warm (time, memory) beside a bare import of torch and transformers; then how often
## explain names the tensor each recorded collective carried (tables built by transformers).
bench-explain: $(STAMP) $(TORCH_STAMP)
	$(BIN)/python tools/bench_explain_speed.py
	$(BIN)/python tools/bench_explain.py

## Every model type of the installed transformers' registry built small by explain and asked under every --strategy
## (issue 43; one to two hours on 2 cores; make test runs a model type of each shape): one line a type, then the counts
## that docs/explain.md records; exit 1 where one fails. FROM=TYPE resumes at a type.
explain-registry: $(STAMP) $(TORCH_STAMP)
	mkdir -p .bench
	$(BIN)/python tools/explain_registry.py --json .bench/explain-registry.json $(if $(FROM),--from $(FROM))

## How often analyze-log gives the verdict, cause, culprits and fix a public thread confirmed (tests/data/public_threads).
bench-truth: $(STAMP)
	$(BIN)/python tools/bench_truth.py

clean:
	rm -rf $(VENV) .bench .pytest_cache .hypothesis .mypy_cache
