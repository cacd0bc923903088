"""CUDA's documented errors (ncclcheck/job/cuda_errors.toml) as stated lines, whatever prints them; the libraries
under the framework (an NCCL symbol the loaded libnccl lacks, NCCL's kernels too big for the GPU) and DDP's reducer
errors (job/statements.toml). The lines are written from the printers' own formats: PyTorch's C10_CUDA_CHECK
(``CUDA error: <string>``), NCCL's CUDACHECK (``Cuda failure <code> '<string>'``, src/include/checks.h), nccl-tests'
(``Test CUDA failure common.cu:<line> '<string>'``, src/common.h), glibc's loader (``undefined symbol: <name>``),
NCCL's ncclInitKernelsForDevice (src/enqueue.cc) and PyTorch's reducer.cpp.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.statements import CUDA_TABLE, STATEMENTS, StatementTableError, read_table, told
from ncclcheck.render.json_out import analysis_json

_HEAD = "node7:4242:4301 [3] "


def _verdict(tmp_path: Path, *lines: str) -> dict:
    path = tmp_path / "rank.log"
    path.write_text("\n".join(lines) + "\n")
    problems: list[str] = []
    sources = resolve([str(path)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


def _fix(v: dict) -> str:
    return " ".join(s if isinstance(s, str) else str(s) for s in v["next_steps"]) + " " + str(v)


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: system not yet initialized",
    f"{_HEAD}NCCL WARN Cuda failure 802 'system not yet initialized'",
    "node7: Test CUDA failure common.cu:1012 'system not yet initialized'",
])
def test_system_not_ready_is_the_fabric_manager_whatever_prints_it(line):
    s = told(line)
    assert s is not None and s.id == "cuda_SystemNotReady" and s.host and s.kind == "setup_failure"
    assert "nvidia-fabricmanager" in s.fix[0]


@pytest.mark.parametrize(("line", "entry", "host"), [
    ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version", "InsufficientDriver",
     True),
    ("Cuda failure 'system has unsupported display driver / cuda driver combination'", "SystemDriverMismatch", True),
    ("RuntimeError: CUDA error: no CUDA-capable device is detected", "NoDevice", True),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "DevicesUnavailable", False),
    ("RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable", "DevicesUnavailable", False),
    ("node4:4242:4301 [4] NCCL WARN Cuda failure 'all CUDA-capable devices are busy or unavailable'",
     "DevicesUnavailable", False),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "ECCUncorrectable", False),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "IllegalAddress", False),
])
def test_each_documented_string_has_its_meaning_and_whose_fault(line, entry, host):
    s = told(line)
    assert s is not None and s.id == "cuda_" + entry and s.host is host
    assert "cudaError" + entry in s.source and "docs.nvidia.com/cuda/cuda-runtime-api" in s.source


def test_the_tables_own_entries_for_a_cuda_string_come_first():
    """statements.toml words `unknown error` and `initialization error` itself: the CUDA table does not repeat them."""
    assert told("RuntimeError: CUDA error: unknown error").id == "cuda_unknown_error"
    assert told("Cuda failure 'initialization error'").id == "cuda_init_failed"
    strings = [s.pattern.pattern for s in STATEMENTS if s.id.startswith("cuda_") and s.id[5].isupper()]
    assert len(strings) >= 20 and not any("unknown error" in p or "initialization error" in p for p in strings)


def test_a_bad_cuda_row_stops_the_import_naming_it(tmp_path):
    bad = tmp_path / "cuda.toml"
    bad.write_text(CUDA_TABLE.read_text().replace('host = true', 'host = "yes"', 1))
    with pytest.raises(StatementTableError, match=r"cuda\.toml: entry \d+ \(cudaError\w+\)"):
        read_table(cuda=bad)


def test_a_host_cuda_error_alone_is_a_setup_failure_of_no_rank(tmp_path):
    v = _verdict(tmp_path, "[rank3]: RuntimeError: CUDA error: system not yet initialized")
    assert v["kind"] == "setup_failure" and v["culprit_ranks"] == []
    assert "nvidia-fabricmanager" in _fix(v)


def test_a_program_cuda_fault_stays_its_ranks(tmp_path):
    v = _verdict(tmp_path, "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered")
    assert v["kind"] == "rank_failed_first" and v["culprit_ranks"] == [3]
    assert "CUDA_LAUNCH_BLOCKING=1" in _fix(v)


def test_an_undefined_nccl_symbol_is_an_older_libnccl_loaded(tmp_path):
    lazy = "python: symbol lookup error: /usr/lib/libtorch_cuda.so: undefined symbol: ncclCommInitRankConfig"
    assert told(lazy).id == "nccl_symbol_undefined"  # the lazy binder's words (read as a stated line: not yet)
    v = _verdict(tmp_path, "ImportError: /opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: "
                           "undefined symbol: ncclCommSplit")
    assert v["kind"] == "setup_failure" and v["culprit_ranks"] == []
    assert "torch.cuda.nccl.version()" in _fix(v) and "nvidia-nccl" in _fix(v)


def test_an_undefined_symbol_of_another_library_is_not_nccls():
    assert told("ImportError: libfoo.so: undefined symbol: cudnnCreate") is None
    assert told("ImportError: libfoo.so: undefined symbol: _ZN3c104cuda9nccl_fooEv") is None


@pytest.mark.parametrize(("line", "entry", "word"), [
    ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.",
     "ddp_unused_parameters", "find_unused_parameters=True"),
    ("RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following reasons",
     "ddp_ready_twice", "use_reentrant=False"),
    ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
     "indicates that your training graph has changed in this iteration",
     "ddp_static_graph_changed", "static_graph=True"),
])
def test_ddp_reducer_errors_carry_their_own_fix(tmp_path, line, entry, word):
    assert told(line).id == entry
    v = _verdict(tmp_path, "[rank1]: " + line)
    assert v["culprit_ranks"] == [1] and word in _fix(v)


@pytest.mark.parametrize("level", ["INFO", "WARN"])
def test_kernels_too_big_for_the_gpu_name_a_newer_nccl(tmp_path, level):
    v = _verdict(tmp_path, f"{_HEAD}NCCL INFO NCCL version 2.25.1+cuda12.8",
                 f"{_HEAD}NCCL {level} cudaArch 1200 ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856"
                 if level == "WARN" else f"{_HEAD}NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856")
    assert v["kind"] == "setup_failure" and v["culprit_ranks"] == []
    assert "newer NCCL release" in _fix(v)


def test_a_programs_cuda_error_inside_a_layer_is_that_layers_first():
    """NCCL's WARN from a transport file: the layer says where; CUDA's string alone only what the call returned. A
    host's set-up error (the Fabric Manager) says more than the layer and stays."""
    from ncclcheck.job.statements import placed_told

    oom = "n1:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 2 'out of memory'"
    assert told(oom).id == "cuda_MemoryAllocation" and placed_told(oom, "transport/p2p.cc") is None
    fm = "n1:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 802 'system not yet initialized'"
    assert placed_told(fm, "transport/p2p.cc").id == "cuda_SystemNotReady"


def test_a_row_a_cause_reads_defers_to_its_fix(tmp_path):
    """Derived, not duplicated: where the catalogue's cause reads the same string (a device-side assert), its own
    fix stands alone; each row's `cause` is a cause of the catalogue."""
    from ncclcheck.job.causes import ALL_CAUSES

    kinds = {c.kind for c in ALL_CAUSES}
    assert all(s.defers <= kinds for s in STATEMENTS) and any(s.defers for s in STATEMENTS)
    v = _verdict(tmp_path, "[rank1]: RuntimeError: CUDA error: device-side assert triggered")
    assert v["cause"]["kind"] == "device_assert"
    assert not any("(or on the CPU) to get the assert's message" in str(s) for s in v["next_steps"])


_NEVER_ARRIVES = "Raising the timeout will not help: the failed rank will never arrive."


def test_a_failed_rank_alone_gets_no_step_about_a_timeout_nobody_waited_in(tmp_path):
    """The timeout step answers the ranks that waited for the failed one; a log of the failed process alone has none."""
    alone = _verdict(tmp_path, "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered")
    assert alone["kind"] == "rank_failed_first" and _NEVER_ARRIVES not in alone["next_steps"]
    waited = _verdict(tmp_path, "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
                      "[rank0]:[E ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for "
                      "600015 milliseconds before timing out.")
    assert waited["kind"] == "rank_failed_first" and _NEVER_ARRIVES in waited["next_steps"]


@pytest.mark.parametrize(("line", "said"), [
    # rccl-tests' HIPCHECK (src/common.h 2019-2024: "%s: Test HIP failure %s:%d '%s'"): hipGetErrorString gave the
    # enumerator's name before ROCm 5, CUDA's words for it since
    ("Test HIP failure common.cu:1129 'hipErrorInvalidDevice'", "HIP error: invalid device ordinal"),
    ("node3: Test HIP failure common.cu:760 'invalid device ordinal'", "HIP error: invalid device ordinal"),
    # nccl-tests' CUDACHECK (src/common.h: "%s: Test CUDA failure %s:%d '%s'")
    ("node3: Test CUDA failure common.cu:891 'invalid device ordinal'", "CUDA error: invalid device ordinal"),
])
def test_a_test_harness_device_error_at_its_first_call_names_the_containers_devices(tmp_path, line, said):
    v = _verdict(tmp_path, line)
    assert v["cause"]["kind"] == "invalid_device" and v["stated"]["text"] == said
    fix = " ".join(v["cause"]["fix"])
    assert "/dev/kfd --device /dev/dri" in fix and "`-g` GPUs per thread" in fix


def test_a_hip_name_no_table_words_is_quoted_as_it_stands(tmp_path):
    v = _verdict(tmp_path, "Test HIP failure common.cu:1129 'hipErrorContextIsDestroyed'")
    assert v["kind"] == "rank_failed_first" and v["stated"]["text"] == "HIP error: hipErrorContextIsDestroyed"
