"""Sweep rE17 (issue 41 section 1): CUDA's runtime errors, the CUDA libraries' status codes, the caching allocator's
out-of-memory and the DataLoader's errors, each read with its own meaning and first step whatever prints it.

Each line is written from its printer's format: PyTorch's C10_CUDA_CHECK (``CUDA error: <cudaGetErrorString>``,
c10/cuda/CUDAException.cpp) as RuntimeError or 2.8's torch.AcceleratorError under the ``[rankN]:`` prefix, THC's
check of PyTorch <= 1.10 (``THCudaCheck FAIL file=%s line=%i error=%i : %s``), NCCL's CUDACHECK (``Cuda failure
<code> '<string>'``), CuPy's CUDARuntimeError (``cudaErrorXxx: <string>``), PyTorch's library checks
(aten/src/ATen/cuda/Exceptions.h: TORCH_CUDABLAS_CHECK, AT_CUDNN_CHECK), the CUDA strings from the CUDA runtime API's
cudaError_t (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html). The sweep's table is
docs/data/sweep-rE17-2026-11-29.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.statements import told
from ncclcheck.render.json_out import analysis_json

_SETUP = ("node1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
          "node1:2001:2001 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
          "node1:2001:2050 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - "
          "Init COMPLETE")


def _verdict(tmp_path: Path, *lines: str) -> dict:
    path = tmp_path / "rank.log"
    path.write_text("\n".join(lines) + "\n")
    problems: list[str] = []
    sources = resolve([str(path)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


def _forms(string: str, code: int) -> list[str]:
    """One CUDA string as each printer words it."""
    return [f"RuntimeError: CUDA error: {string}",
            f"[rank1]: torch.AcceleratorError: CUDA error: {string}",
            f"THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=383 error={code} : {string}",
            f"node1:2001:2050 [0] enqueue.cc:802 NCCL WARN Cuda failure {code} '{string}'"]


# (cudaError_t's name without its prefix, code, string, the verdict's kind alone, words of the first step)
_ROWS = [
    ("InvalidValue", 1, "invalid argument", None, "CUDA_LAUNCH_BLOCKING=1"),
    ("InvalidConfiguration", 9, "invalid configuration argument", None, "CUDA_LAUNCH_BLOCKING=1"),
    ("InvalidDeviceFunction", 98, "invalid device function", "setup_failure", "get_arch_list()"),
    ("InvalidKernelImage", 200, "device kernel image is invalid", "setup_failure", "get_arch_list()"),
    ("DeviceAlreadyInUse", 216, "exclusive-thread device already in use by a different thread", "setup_failure",
     "nvidia-smi -q -d COMPUTE"),
    ("InvalidPtx", 218, "a PTX JIT compilation failed", "setup_failure", "nvidia-smi"),
    ("InvalidResourceHandle", 400, "invalid resource handle", None, "torch.cuda.set_device(local_rank)"),
    ("MpsMaxClientsReached", 808, "the hardware resources required to create MPS client have been exhausted",
     "setup_failure", "without MPS"),
]


@pytest.mark.parametrize(("name", "code", "string", "kind", "step"), _ROWS)
def test_each_cuda_string_has_its_row_in_every_printers_form(tmp_path, name, code, string, kind, step):
    for line in _forms(string, code):
        said = told(line) or told(f"CUDA error: {string}")
        # NCCL's own call refused as invalid has its own entry (statements.toml: cuda_invalid_value_in_nccl)
        mine = {"cuda_" + name} | ({"cuda_invalid_value_in_nccl"} if "NCCL WARN" in line and code == 1 else set())
        assert said is not None and said.id in mine, line
    v = _verdict(tmp_path, _forms(string, code)[0])
    assert v["stated"]["meaning"].startswith(f"CUDA's cudaError{name} ({code})")
    assert step in v["next_steps"][0] and (kind is None or v["kind"] == kind)
    after = _verdict(tmp_path, *_SETUP, _forms(string, code)[1])
    assert after["stated"]["meaning"].startswith(f"CUDA's cudaError{name} ({code})")


def test_cupy_words_a_cuda_error_after_its_name(tmp_path):
    v = _verdict(tmp_path, "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorNoKernelImageForDevice: no "
                           "kernel image is available for execution on the device")
    assert v["kind"] == "setup_failure" and "get_arch_list()" in v["next_steps"][0]


def test_ptx_of_a_newer_toolkit_is_the_hosts_old_driver(tmp_path):
    """cudaErrorUnsupportedPtxVersion (222) is cuda_driver_old's: the driver is older than the toolkit that made the
    PTX; the period CUDA's string ends with is left off as PyTorch's words are read."""
    for line in ("[rank0]: RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
                 "node1:2001:2050 [0] enqueue.cc:802 NCCL WARN Cuda failure 222 'the provided PTX was compiled with "
                 "an unsupported toolchain.'"):
        v = _verdict(tmp_path, line)
        assert (v["kind"], v["cause"]["kind"], v["culprit_ranks"]) == ("setup_failure", "cuda_driver_old", [])


def test_mps_clients_connect_is_no_store(tmp_path):
    """CUDA's MPS client that could not reach its daemon (cudaErrorMpsConnectionFailed) is the host's MPS set-up, not
    the rendezvous store that 'failed to connect' names elsewhere."""
    v = _verdict(tmp_path, "[rank0]: RuntimeError: CUDA error: MPS client failed to connect to the MPS control daemon "
                           "or the MPS server")
    assert v["kind"] == "setup_failure" and v["cause"]["kind"] != "store_unreachable"
    assert "nvidia-cuda-mps-control" in v["next_steps"][0]


def test_too_many_peers_is_the_peer_access_cause_with_its_meaning(tmp_path):
    v = _verdict(tmp_path, "RuntimeError: CUDA error: peer mapping resources exhausted")
    assert v["cause"]["kind"] == "p2p_unsupported"
    assert v["stated"]["meaning"].startswith("CUDA's cudaErrorTooManyPeers (711)")


@pytest.mark.parametrize("line", [
    "[rank0]: RuntimeError: CUDA error: operation not permitted when stream is capturing",
    "RuntimeError: CUDA error: operation failed due to a previous error during capture",
    "[rank2]: torch.AcceleratorError: CUDA error: capturing stream has unjoined work",
    "RuntimeError: CUDA error: operation would make the legacy stream depend on a capturing blocking stream",
    "node1:2001:2050 [0] enqueue.cc:802 NCCL WARN Cuda failure 900 'operation not permitted when stream is capturing'",
    "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorStreamCaptureUnsupported: operation not permitted "
    "when stream is capturing",
])
def test_a_call_that_breaks_a_graph_capture_is_read_as_capture_not_as_not_permitted(tmp_path, line):
    """cudaErrorStreamCapture* (900-908) begin with the words of cudaErrorNotPermitted (800): the capture's entry
    reads them first, and its step turns CUDA graphs off."""
    assert told(line).id == "cuda_stream_capture"
    v = _verdict(tmp_path, *_SETUP, line)
    assert "CUDA graphs off" in v["next_steps"][0] and "capture of a CUDA graph" in v["stated"]["meaning"]


@pytest.mark.parametrize("line", [
    "[rank2]: RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, opb, m, "
    "n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, "
    "CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    "[rank3]: RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH",
    "RuntimeError: HIP error: invalid device function",
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
])
def test_a_library_without_code_for_the_gpu_names_the_arch_list(tmp_path, line):
    """HIP's runtime's own line is of no form the readers know: quoted first, the arch list's step next to it."""
    v = _verdict(tmp_path, line)
    assert v["kind"] == "setup_failure"
    assert any("get_arch_list()" in s for s in v["next_steps"][:2])


@pytest.mark.parametrize("line", [
    # c10/cuda/CUDACachingAllocator.cpp in 1.x ((GPU N; T total capacity; A already allocated; F free; R reserved in
    # total by PyTorch)), 1.0's (... cached), 2.0-2.1's torch.cuda.OutOfMemoryError with its "capacty", 2.5's
    # torch.OutOfMemoryError with the processes on the GPU
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.35 GiB "
    "already allocated; 3.75 MiB free; 14.65 GiB reserved in total by PyTorch)",
    "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already "
    "allocated; 9.28 GiB free; 4.68 MiB cached)",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 570.00 MiB. GPU 0 has a total capacty of "
    "79.25 GiB of which 103.50 MiB is free. Including non-PyTorch memory, this process has 79.14 GiB memory in use.",
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
    "79.11 GiB of which 1.02 GiB is free. Process 1234 has 40.00 GiB memory in use.",
    # ROCm's builds name their device (the hipified allocator), 1.x's and 2.x's; XPU's allocator and IPEX's
    "RuntimeError: HIP out of memory. Tried to allocate 20.00 MiB (GPU 0; 31.98 GiB total capacity; 31.20 GiB already "
    "allocated; 0 bytes free; 31.40 GiB reserved in total by PyTorch)",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 191.98 GiB "
    "of which 1.02 GiB is free.",
    "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 64.00 GiB.",
    "RuntimeError: XPU out of memory, please use `empty_cache` to release all unoccupied cached memory.",
    # a CUDA call's own cudaErrorMemoryAllocation: C10_CUDA_CHECK, THC's check and THError, c10's driver check
    "[rank1]: RuntimeError: CUDA error: out of memory",
    "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=265 error=2 : out of memory",
    "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingAllocator.cpp:510",
    "RuntimeError: CUDA driver error: out of memory",
])
def test_every_releases_out_of_memory_is_cuda_oom(tmp_path, line):
    for lines in ((line,), (*_SETUP, line)):
        v = _verdict(tmp_path, *lines)
        assert (v["kind"], v["cause"]["kind"]) == ("rank_failed_first", "cuda_oom"), line
        assert "batch" in v["next_steps"][0]


@pytest.mark.parametrize("line", [
    "| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 2; 31.75 GiB "
    "total capacity; 28.20 GiB already allocated; 1.03 GiB free; 29.50 GiB reserved in total by PyTorch);",
    "2023-01-01 10:00:00 | WARNING | fairseq.trainer | OOM: Ran out of memory with exception: CUDA out of memory. "
    "Tried to allocate 1.50 GiB. GPU 2 has a total capacity of 31.75 GiB of which 1.03 GiB is free.",
])
def test_an_out_of_memory_a_framework_caught_and_skipped_puts_the_rank_out_of_step(tmp_path, line):
    """fairseq's trainer catches the allocator's error, prints it in its own warning and skips the batch: no
    exception, yet an out-of-memory (never no_failure), and the skip is why the others wait (fairseq#708)."""
    v = _verdict(tmp_path, *_SETUP, line, " Skipping batch")
    assert v["kind"] != "no_failure" and v["cause"]["kind"] == "cuda_oom"
    assert "falls out of step" in v["next_steps"][0] and "went on without that batch" in v["stated"]["meaning"]


def test_a_warning_that_only_names_out_of_memory_is_no_clue(tmp_path):
    """The allocator's own words are read, not every mention of memory: a hint about out-of-memory is no failure."""
    v = _verdict(tmp_path, "If you run out of memory, try a smaller batch size.")
    assert v["kind"] == "no_failure"


@pytest.mark.parametrize(("line", "entry", "step"), [
    ("[rank0]: RuntimeError: DataLoader worker (pid(s) 12345, 12346) exited unexpectedly", "dataloader_worker_exited",
     "num_workers=0"),
    ("[rank1]: RuntimeError: DataLoader worker (pid 23456) exited unexpectedly with exit code 1. Details are lost due "
     "to multiprocessing. Rerunning with num_workers=0 may give better error trace.", "dataloader_worker_exited",
     "num_workers=0"),
    ("[rank2]: RuntimeError: DataLoader timed out after 600 seconds", "dataloader_timed_out", "py-spy dump"),
    ("[rank3]: ValueError: Caught ValueError in DataLoader worker process 3.", "dataloader_worker_raised",
     "Original Traceback"),
    ("[rank4]: RuntimeError: Caught RuntimeError in pin memory thread for device 4.", "dataloader_worker_raised",
     "Original Traceback"),
    ("[rank5]: RuntimeError: received 0 items of ancdata", "open_files_limit", "ulimit -n"),
    ("[rank6]: RuntimeError: Too many open files. Communication with the workers is no longer possible. Please "
     "increase the limit using `ulimit -n` in the shell or change the sharing strategy by calling "
     "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code", "open_files_limit",
     "ulimit -n"),
])
def test_the_data_loaders_errors_say_what_failed_in_it(tmp_path, line, entry, step):
    assert told(line).id == entry
    for lines in ((line,), (*_SETUP, line)):
        v = _verdict(tmp_path, *lines)
        assert v["kind"] == "rank_failed_first" and step in v["next_steps"][0], lines


@pytest.mark.parametrize(("line", "cause"), [
    ("ERROR: Unexpected segmentation fault encountered in worker.", "native_crash"),
    ("ERROR: Unexpected floating-point exception encountered in worker.", "native_crash"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "shm_bus_error"),
    ("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed. ", "host_oom"),
])
def test_a_data_loader_worker_that_died_of_a_signal_is_never_no_failure(tmp_path, line, cause):
    """torch/csrc/DataLoader.cpp's handlers write their line before the worker dies of the signal."""
    v = _verdict(tmp_path, line)
    assert v["kind"] == "rank_failed_first" and v["cause"]["kind"] == cause


@pytest.mark.parametrize("frames", [
    # a project's dataset folder, the frame its assertion is in (the paste cut above it)
    ('  File "/repo/proj/yolox/data/datasets/mot.py", line 103, in pull_item', "    assert img is not None"),
    # torch.utils.data's fetcher indexing the dataset, whose __getitem__ raised
    ('  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch',
     "    data = [self.dataset[idx] for idx in possibly_batched_index]",
     '  File "/work/train.py", line 40, in __getitem__', "    assert img is not None"),
])
def test_an_exception_raised_reading_a_sample_names_the_data(tmp_path, frames):
    v = _verdict(tmp_path, "[rank1]: Traceback (most recent call last):", *(f"[rank1]: {f}" for f in frames),
                 "[rank1]: AssertionError")
    found = [f for f in v["findings"] if f["code"] == "data-loading"]
    assert found and "unreadable input file" in found[0]["fix"]


def test_an_exception_in_the_programs_own_code_is_no_data_loading(tmp_path):
    v = _verdict(tmp_path, "[rank1]: Traceback (most recent call last):",
                 '[rank1]:   File "/work/train.py", line 88, in train_step', "[rank1]:     assert loss > 0",
                 "[rank1]: AssertionError")
    assert not [f for f in v["findings"] if f["code"] == "data-loading"]


@pytest.mark.parametrize(("line", "entry", "step"), [
    ("[rank4]: RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
     "cuda_library_not_initialized", "nvidia-smi"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cuda_library_not_initialized", "nvidia-smi"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
     "&alpha, a, lda, b, ldb, &beta, c, ldc)`", "cuda_library_execution_failed", "CUDA_LAUNCH_BLOCKING=1"),
    ("[rank5]: RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "cuda_library_execution_failed",
     "CUDA_LAUNCH_BLOCKING=1"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR", "cuda_library_execution_failed", "CUDA_LAUNCH_BLOCKING=1"),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version "
     "(8, 5, 0).", "cudnn_version_mismatch", "libcudnn"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_VERSION_MISMATCH", "cudnn_version_mismatch", "libcudnn"),
])
def test_a_cuda_librarys_status_has_its_mechanism(tmp_path, line, entry, step):
    assert told(line).id == entry
    for lines in ((line,), (*_SETUP, line)):
        v = _verdict(tmp_path, *lines)
        assert step in v["next_steps"][0], lines


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "[rank7]: RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
])
def test_a_librarys_failed_allocation_is_out_of_memory(tmp_path, line):
    assert _verdict(tmp_path, line)["cause"]["kind"] == "cuda_oom"


def test_a_cuda_error_raised_in_c10d_names_pytorchs_release(tmp_path):
    """C10D_CUDA_CHECK's 'Error at: <c10d file>:<line>: <string>' (torch/lib/c10d/CUDAUtils.hpp, 2018): the place
    is PyTorch's own c10d; CUDA_LAUNCH_BLOCKING=1 tells c10d's fault (a newer PyTorch) from an earlier kernel's. The
    THC line before it says only CUDA's generic string: the c10d line's entry goes first."""
    v = _verdict(tmp_path,
                 "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorCopy.cu line=87 error=77 : an illegal memory "
                 "access was encountered",
                 "terminate called after throwing an instance of 'std::runtime_error'",
                 "  what():  Error at: /pytorch/torch/lib/c10d/CUDAUtils.cpp:22: an illegal memory access was "
                 "encountered")
    assert v["cause"]["kind"] == "illegal_access"
    assert "newer PyTorch release" in v["next_steps"][0] and "CUDA_LAUNCH_BLOCKING=1" in v["next_steps"][0]
    alone = _verdict(tmp_path, "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert "PyTorch release" not in alone["next_steps"][0]
