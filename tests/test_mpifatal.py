"""An MPI library's fatal error report and a GPU-aware MPI's CUDA IPC failure (evidence/formats/mpifatal.py) are the
process's own failure, with the rank the report names; written from the libraries' formats: MPICH's
MPIR_Handle_fatal_error and ch4's MPID_Abort, HPE Cray MPICH's prefix, Open MPI's predefined error handler and its
MPI_ERR_ strings, and a library's report of cuIpcOpenMemHandle with CUDA's error.
"""

from __future__ import annotations

import pytest
from conftest import run_text

_OMPI = ("[node1:04211] *** An error occurred in MPI_Bcast\n[node1:04211] *** reported by process [2813394945,2]\n"
         "[node1:04211] *** on communicator MPI_COMM_WORLD\n[node1:04211] *** MPI_ERR_COUNT: invalid count argument\n"
         "[node1:04211] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
         "[node1:04211] ***    and MPI will try to terminate your MPI job as well)\n")


@pytest.mark.parametrize(("text", "said", "culprits"), [
    ("Fatal error in PMPI_Allreduce: Invalid buffer pointer, error stack:\n"
     "PMPI_Allreduce(907)...........: MPI_Allreduce(sbuf=0x7ffd, rbuf=(nil), count=4, MPI_FLOAT, MPI_SUM) failed\n",
     "Fatal error in PMPI_Allreduce: Invalid buffer pointer", ()),
    ("Abort(1091215) on node 5 (rank 5 in comm 0): Fatal error in PMPI_Init: Other MPI error, error stack:\n",
     "Fatal error in PMPI_Init: Other MPI error", (5,)),
    ("MPICH ERROR [Rank 3] [job id 1234.0] [Mon Jan 09 10:00:00 2023] [nid000123] - Abort(403275522) (rank 3 in "
     "comm 0): Fatal error in PMPI_Bcast: Invalid count, error stack:\n",
     "Fatal error in PMPI_Bcast: Invalid count", (3,)),
    # a sub-communicator's rank is no world rank: the report names none
    ("Abort(403275522) (rank 1 in comm 496): Fatal error in PMPI_Bcast: Invalid count, error stack:\n",
     "Fatal error in PMPI_Bcast: Invalid count", ()),
    (_OMPI, "MPI_ERR_COUNT: invalid count argument", ()),
])
def test_an_mpi_fatal_error_is_the_ranks_failure_with_its_class(text, said, culprits):
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", culprits)
    assert v.stated is not None and v.stated.source == "mpi" and v.stated.text == said
    assert "MPI_ERRORS_ARE_FATAL" in v.stated.meaning and "error stack" in v.next_steps[0]


def test_a_cuda_ipc_failure_before_the_abort_is_the_reason_and_names_the_gpu_binding():
    """Cray MPICH's GPU transport layer's report comes before MPICH's abort: the IPC failure is quoted first."""
    text = ("(GTL DEBUG: 0) cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE, line no 272\n"
            "MPICH ERROR [Rank 0] [job id 77.0] [Mon Jan 09 10:00:00 2023] [nid000001] - Abort(806969346) (rank 0 in "
            "comm 0): Fatal error in PMPI_Allreduce: Invalid count, error stack:\n")
    v = run_text(text).verdict
    assert v.kind.value == "rank_failed_first"
    assert v.stated is not None and v.stated.source == "cuda_ipc"
    assert v.stated.text == "cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE"
    steps = v.next_steps[0]
    assert "--gpu-bind=none" in steps and "MPICH_GPU_IPC_ENABLED=0" in steps


def test_a_truncated_message_is_the_ranks_calls_disagreeing():
    """MPI's class for a receive smaller than what was sent (MPI_ERR_TRUNCATE) is the catalogue's calls_disagree."""
    v = run_text("Fatal error in PMPI_Allreduce: Message truncated, error stack:\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"


@pytest.mark.parametrize("line", [
    "see the MPICH FAQ: Fatal error in MPI_Init means the launcher and library differ",  # prose, no class: no ':'
    "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
    "cuIpcOpenMemHandle succeeded for peer 3",
])
def test_lines_that_report_no_mpi_error_are_no_failure(line):
    """Not MPI's report of an error: no rank failed first by it (a line with an error word alone, of no known form,
    is at most incomplete evidence: formats/unread.py)."""
    v = run_text(f"{line}\n").verdict
    assert v.kind.value in ("no_failure", "incomplete_evidence") and not v.culprit_ranks
    assert v.stated is None or v.stated.source == "unread"


def test_a_report_naming_no_rank_takes_its_prefixs():
    v = run_text("[1,4]<stderr>:Fatal error in PMPI_Bcast: Invalid root, error stack:\n").verdict
    assert v.culprit_ranks == (4,) and v.stated is not None and v.stated.source == "mpi"


_BLOCK = ("[node7:81234] *** Process received signal ***\n[node7:81234] Signal: Aborted (6)\n"
          "[node7:81234] Signal code:  (-6)\n[node7:81234] *** End of error message ***\n")


def test_open_mpis_abort_block_alone_is_a_process_that_aborted_itself():
    """opal/util/stacktrace.c's report of SIGABRT with no frames: a process failed, and its own earlier lines say why."""
    v = run_text(_BLOCK).verdict
    assert v.kind.value == "rank_failed_first"
    assert v.stated is not None and v.stated.source == "abort" and v.stated.text == "Signal: Aborted (6)"
    assert "Process received signal" in v.next_steps[0]


def test_the_check_before_the_abort_block_is_quoted_not_the_block():
    v = run_text("double free or corruption (out)\n" + _BLOCK).verdict
    assert v.stated is not None and v.stated.source == "glibc"


def test_mpiruns_tag_names_the_aborted_rank():
    v = run_text("".join(f"[1,2]<stderr>:{x}\n" for x in _BLOCK.splitlines())).verdict
    assert v.culprit_ranks == (2,) and v.stated is not None and v.stated.source == "abort"


# opal/util/stacktrace.c's banner, as every release from 1.2 to 5.x prints it (HOSTFORMAT "[%s:%05d] "), where the
# input stops before the line that names the signal (a paste cut there, a process killed while it wrote).
_BANNER = "[node7:81234] *** Process received signal ***\n"


@pytest.mark.parametrize("before", ["", "node7:81234:81290 [0] NCCL INFO Init COMPLETE\n",
                                    "[1,2]<stderr>:node7:81234:81290 [0] NCCL INFO comm 0x1 rank 2 nranks 4\n"])
def test_open_mpis_banner_cut_before_its_signal_is_a_native_crash(before):
    """The banner alone: a process died of a signal Open MPI's handler catches (opal_signal: SIGABRT, SIGBUS, SIGFPE,
    SIGSEGV), read as a native crash of that process (not a SIGKILL's host_kill), whatever came before it."""
    v = run_text(before + _BANNER).verdict
    assert v.kind.value == "rank_failed_first" and v.cause is not None and v.cause.cause.kind == "native_crash"
    assert "[node7:81234] *** Process received signal ***" in v.summary


def test_mpiruns_tag_on_the_banner_names_the_crashed_rank():
    v = run_text("[1,3]<stderr>:" + _BANNER).verdict
    assert v.culprit_ranks == (3,) and v.cause is not None and v.cause.cause.kind == "native_crash"


@pytest.mark.parametrize(("signal", "crash"), [("Aborted (6)", False), ("Segmentation fault (11)", True), ("11", False)])
def test_a_banner_whose_signal_line_follows_is_read_by_that_line(signal, crash):
    """The banner's own reading is for a cut input only: with its Signal line (an abort, a segfault, or a signal
    number strsignal could not name), that line decides; an abort is no native crash."""
    v = run_text(_BANNER + f"[node7:81234] Signal: {signal}\n[node7:81234] *** End of error message ***\n").verdict
    assert (v.cause is not None and v.cause.cause.kind == "native_crash") is crash
    assert "Process received signal ***" not in v.summary


def test_a_banner_of_another_process_is_not_answered_by_this_ones_signal():
    v = run_text(_BANNER + "[node8:10001] Signal: Aborted (6)\n").verdict
    assert v.cause is not None and v.cause.cause.kind == "native_crash"
