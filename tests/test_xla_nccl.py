"""XLA's status for an NCCL call that failed (JAX's and TensorFlow's GPU collectives), every release's form, read as
an NCCL error with ncclGetErrorString's reason the way NCCL's own are read; XLA's stub's reason where libnccl could not
be loaded is a set-up failure of the host's libraries whose fix names the NCCL wheel and LD_LIBRARY_PATH
(job/statements.toml `xla_nccl_not_loaded`). Written from the formats: tests/data/stated_formats/xla_nccl.log (README
there); the public thread: tests/data/public_threads/328."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.evidence.formats import nccl
from ncclcheck.evidence.types import ErrorKind, Loc

WRITTEN = (Path(__file__).parent / "data" / "stated_formats" / "xla_nccl.log").read_text().splitlines()


@pytest.mark.parametrize(("line", "kind", "message"), list(zip(WRITTEN, [
    ErrorKind.NCCL_ERROR, ErrorKind.NCCL_ERROR, ErrorKind.CONNECTION, ErrorKind.NCCL_ERROR, ErrorKind.NCCL_ERROR], [
    "NCCL error: unhandled cuda error",
    "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "NCCL error: remote process exited or there was a network error",
    "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
    "NCCL operation ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work.",
], strict=True)))
def test_each_release_form_is_an_nccl_error_with_its_reason(line, kind, message):
    """The reason is ncclGetErrorString's, up to the last warning XLA says may be unrelated; NCCL's result words
    make it an NCCL error as PyTorch words one, the stub's sentence keeps the line's own words (no NCCL ran)."""
    e = nccl.error(nccl.Who(), line, Loc("x", 1))
    assert e is not None and (e.kind, e.message) == (kind, message)


def test_the_result_decides_the_verdict_as_nccls_own():
    """XLA's ncclSystemError is NCCL's system error (the catalogue's nccl_system_error), as under PyTorch; where the
    last warning it quotes names the call that failed, the catalogue reads that call (here ibv_reg_mr: ib_setup)."""
    bare = ("external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) "
            "failed: unhandled system error")
    for line, cause in ((bare, "nccl_system_error"), (WRITTEN[1], "ib_setup")):
        v = run_text(line + "\n").verdict
        assert v.cause is not None and v.cause.cause.kind == cause


@pytest.mark.parametrize("lines", [
    [WRITTEN[4]],
    # JAX 0.4's message split over two lines, as a paste wraps it, with its tracing scope after the status
    ["jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: "
     "custom call 'xla.gpu.all_reduce' failed:",
     "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: Unable to load "
     "NCCL library. Multi-GPU collectives will not work.; current tracing scope: all-reduce-start"],
])
def test_nccl_not_loaded_is_the_hosts_setup_with_the_wheel_and_path(lines):
    """XLA's stub's sentence is a set-up failure of the host's libraries (no culprit) whose steps name the NCCL wheel
    and LD_LIBRARY_PATH, never NCCL failing without saying why."""
    v = run_text("\n".join(lines) + "\n").verdict
    steps = " ".join(v.next_steps)
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
    assert v.cause is not None and v.cause.cause.kind == "stated_reason"
    assert "nvidia-nccl-cu12" in steps and "LD_LIBRARY_PATH" in steps


def test_xlas_words_without_a_failure_are_not_an_error():
    """An operation's name in other words (no `failed:`) is no status."""
    assert nccl.error(nccl.Who(), "NCCL operation ncclAllReduce started on stream 0x5", Loc("x", 1)) is None
