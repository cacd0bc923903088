"""Microsoft MPI's mpiexec report and Windows' native faults (issue 41: 310).

The report is written from mpiexec's format strings (microsoft/Microsoft-MPI src/mpi/mpiexec/
mpiexec_handle_command.cpp: print_aborted_messages, print_analysis_tail's ``[%d`` ``-%d`` ``,%d`` ``] on %s``,
g_abort_reason_format, get_exit_code_string's ``%#x`` for NTSTATUS codes); the faults from Windows' NTSTATUS codes
([MS-ERREF] 2.3.1) as CPython's faulthandler (Python/faulthandler.c: "Windows fatal exception: %s") and a program's
handler print them.
"""

from __future__ import annotations

import pytest
from conftest import run_text, thread_log

from ncclcheck.evidence.formats import errors, msmpi
from ncclcheck.evidence.types import Loc
from ncclcheck.job.model import VerdictKind

AT = Loc("t", 1)


def _report(ranks: str, reason: str, stopped: str = "[0] terminated") -> str:
    return "\n".join(("", "job aborted:", "[ranks] message", "", stopped, "", "[1] process exited without calling finalize",
                      "", "---- error analysis -----", "", f"[{ranks}] on NODE-7", reason, "",
                      "---- error analysis -----", "")) + "\n"


def _ends(text: str):
    reader = msmpi.FORMAT.reader()
    return [e for i, line in enumerate(text.splitlines()) for e in reader.feed(line, Loc("t", i + 1))]


@pytest.mark.parametrize(("ranks", "expect"), [("1", [1]), ("2-4", [2, 3, 4]), ("0-1,3", [0, 1, 3]), ("1,3,5-6", [1, 3, 5, 6])])
def test_the_analysis_names_each_failed_rank_with_its_host(ranks, expect):
    ends = _ends(_report(ranks, r"C:\jobs\train.exe ended prematurely and may have crashed. exit code 1"))
    assert [e.rank for e in ends] == expect
    assert {(e.exitcode, e.signal, e.host) for e in ends} == {(1, None, "NODE-7")}


@pytest.mark.parametrize(("reason", "code", "signal"), [
    (r"C:\jobs\train.exe ended prematurely and may have crashed. exit code 0xc0000005", 0xC0000005, "SIGSEGV"),
    (r"C:\jobs\train.exe ended before calling init and may have crashed. exit code 0xc000001d", 0xC000001D, "SIGILL"),
    (r"C:\jobs\train.exe aborted the job. abort code 3", 3, None),
    ("ctrl-c was hit. job aborted by the user.", None, "SIGINT"),
])
def test_every_reason_mpiexec_prints(reason, code, signal):
    (end,) = _ends(_report("1", reason))
    assert (end.rank, end.exitcode, end.signal) == (1, code, signal)


def test_lines_outside_the_analysis_are_not_read():
    assert _ends("[1] on NODE-7\nC:\\x.exe ended prematurely and may have crashed. exit code 1\n") == []


def test_a_crash_under_mpiexec_is_that_ranks_failure():
    v = run_text("epoch 1 done\n" + _report("1", r"C:\jobs\train.exe ended prematurely and may have crashed. exit code "
                                                 "0xc0000005")).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST and v.culprit_ranks == (1,)
    assert v.cause is not None and v.cause.cause.kind == "native_crash"


@pytest.mark.parametrize(("line", "signal"), [
    ("Windows fatal exception: access violation", "SIGSEGV"),
    ("Windows fatal exception: stack overflow", "SIGSEGV"),
    ("Windows fatal exception: int divide by zero", "SIGFPE"),
    ("CNTK: Caught Win32 exception 0xc0000005: Access violation.", "SIGSEGV"),
    ("Unhandled exception at 0x00007FF6A1B2C3D4 in train.exe: 0xC0000005: Access violation reading location "
     "0x0000000000000000.", "SIGSEGV"),
    ("Exception code: 0xc000001d", "SIGILL"),
])
def test_windows_faults_are_fatal_signals(line, signal):
    assert errors.fatal_signal(line) == signal


def test_other_hex_codes_and_words_are_none():
    assert errors.fatal_signal("exception 0xc0000409") is None  # a fast-fail, no fault
    assert errors.fatal_signal("Access violation in the config: key is read-only") is None


def test_the_public_thread():
    """310: CNTK's handler's access violation, then mpiexec's analysis naming rank 1 (exit code 1, CNTK's own)."""
    v = run_text(thread_log("310").read_text()).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, (1,))
    assert v.cause is not None and v.cause.cause.kind == "native_crash"
