"""compute-sanitizer's (and cuda-memcheck's) memcheck report read as the kernel's bad access (evidence/formats/
sanitizer.py, the catalogue's illegal_access, job/statements.toml's sanitizer_nccl_kernel).

The report's forms are written from the Compute Sanitizer documentation (Memcheck Tool: the error types, the
memcheck_demo outputs) and cuda-memcheck's older form of the same report.
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.evidence import reader
from ncclcheck.evidence.scan import scan_source

_NCCL = ("========= Invalid __global__ write of size 16 bytes\n"
         "=========     at ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440\n"
         "=========     by thread (221,0,0) in block (0,0,0)\n"
         "=========     Address 0x1bc00031d0 is out of bounds\n"
         "=========     and is 34,357,653,969 bytes after the nearest allocation at 0x13c0000000 of size 2,097,152 "
         "bytes\n=========     Saved host backtrace up to driver entry point at kernel launch time\n")

FORMS = {
    # compute-sanitizer (CUDA 11 on): the size in bytes, the kernel and its offset
    "compute-sanitizer": ("========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
                          "=========     at unaligned_kernel()+0x160 in memcheck_demo.cu:6\n"
                          "=========     by thread (0,0,0) in block (0,0,0)\n"
                          "=========     Address 0x7f671ac00001 is misaligned\n", "unaligned_kernel"),
    # cuda-memcheck: no "bytes", the frame's address, file and line before a demangled kernel
    "cuda-memcheck": ("========= CUDA-MEMCHECK\n========= Invalid __global__ read of size 8\n"
                      "=========     at 0x000000c8 in /src/my_helper.cuh:75:void vector_projection<double>(double*, "
                      "int)\n=========     by thread (9,0,0) in block (0,0,0)\n"
                      "=========     Address 0x000370e8 is out of bounds\n", "vector_projection<double>"),
}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_a_bad_access_is_an_illegal_access_by_its_kernel(tmp_path, form):
    text, kernel = FORMS[form]
    v = run_text(text).verdict
    assert v.kind.value == "rank_failed_first" and v.cause is not None and v.cause.cause.kind == "illegal_access"
    assert v.stated is not None and v.stated.source == "sanitizer"
    path = tmp_path / "console.log"
    path.write_text(text)
    clues = scan_source(reader.Source(str(path), str(path))).clues
    assert [c.text.rsplit(", at ", 1)[-1] for c in clues if c.kind == "sanitizer"][-1] == kernel
    assert not any("cuMemSetAccess" in s for s in v.next_steps)  # not NCCL's kernel


@pytest.mark.parametrize("kernel", ["ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440",
                                    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)+0xfa0",
                                    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)+0x1b0"])
def test_a_bad_access_by_nccls_kernel_names_the_buffers_and_their_peer_access(kernel):
    """NCCL's kernels touch the call's buffers and the peers' mapped buffers only: the first step names the buffers'
    sizes, cuMemSetAccess for every peer of a VMM pool, and NCCL_P2P_DISABLE=1 to confirm."""
    text = _NCCL.replace("ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440", kernel)
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "illegal_access"
    assert "cuMemSetAccess" in v.next_steps[0] and "NCCL_P2P_DISABLE=1" in v.next_steps[0]


def test_an_api_error_the_sanitizer_reports_is_cudas_error():
    v = run_text('========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" '
                 "on CUDA API call to cudaDeviceSynchronize.\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "illegal_access"
    assert v.stated is not None and v.stated.source == "cuda"
    assert v.stated.text.startswith("CUDA error: unspecified launch failure (cudaDeviceSynchronize")


@pytest.mark.parametrize("line", ["========= ERROR SUMMARY: 0 errors", "=========     at main()+0x10",
                                  "=================================== 3 passed in 1.2s ===",
                                  "========= Invalid argument passed to the script"])
def test_lines_of_no_error_report_nothing(line):
    assert run_text(line + "\n").verdict.kind.value == "no_failure"


def test_a_hardware_exception_is_the_kernels_stated_failure():
    """A hardware exception the GPU reported (``Warp Illegal Address``) names the kernel as a memory error does; the
    catalogue's illegal_access reads memory access errors alone, so this one is quoted as the stated reason."""
    v = run_text("========= Warp Illegal Address\n=========     at add_kernel(float*)+0x70\n"
                 "=========     by thread (0,0,0) in block (0,0,0)\n").verdict
    assert v.kind.value == "rank_failed_first"
    assert v.stated is not None and v.stated.source == "sanitizer" and v.stated.text.startswith("Warp Illegal Address")
