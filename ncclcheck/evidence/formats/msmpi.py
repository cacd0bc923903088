"""Microsoft MPI's mpiexec (Windows): its report of a job that ended with a failure, and the ranks it names.

When a process of the job fails, mpiexec prints one report (microsoft/Microsoft-MPI src/mpi/mpiexec/
mpiexec_handle_command.cpp, print_aborted_messages): ``job aborted:`` and ``[ranks] message``, then each run of ranks
that ended alike with how (``[0] terminated``: stopped by mpiexec; ``[1] process exited without calling finalize``;
``[2-3] fatal error``; an exit code) and the error message a rank sent, then between two ``---- error analysis -----``
lines the ranks that failed: ``[1] on HOST`` (``[0-1,3] on HOST`` for several, ranks of one host, program and exit
code) and on the next line why (``g_abort_reason_format``): ``<program> ended prematurely and may have crashed. exit
code N``, ``<program> ended before calling init and may have crashed. exit code N``, ``<program> aborted the job.
abort code N`` (MPI_Abort), ``mpi has detected a fatal error and aborted <program>`` or ``ctrl-c was hit. job aborted
by the user.``. An exit code in the NTSTATUS ranges is printed in hex (``get_exit_code_string``: ``%#x``,
0xc0000005 for an access violation), which is the fault that ended the process (signals.BY_NTSTATUS).

Each rank the analysis names is read as that worker's end, with its exit code and host: the failed ranks, in the
global ranks of MPI_COMM_WORLD, which mpiexec numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Loc, Said, WorkerEnd

ANALYSIS = "---- error analysis -----"
# "[1] on HOST", "[0-1,3] on HOST": the failed ranks of one host (print_analysis_tail)
ON_HOST = re.compile(r"^\[(?P<ranks>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\] on (?P<host>\S+)\s*$")
# the reason under it (g_abort_reason_format)
REASON = re.compile(r"(?:ended prematurely|ended before calling init) and may have crashed\. exit code "
                    r"(?P<code>0x[0-9a-fA-F]+|-?\d+)|aborted the job\. abort code (?P<abort>-?\d+)"
                    r"|(?P<ctrl>ctrl-c was hit\. job aborted by the user)")
_WORDS = (ANALYSIS, "] on ", "and may have crashed. exit code", "aborted the job. abort code", "ctrl-c was hit. job")


def _ranks(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


class Lines:
    """One input's mpiexec report: inside its error analysis, each host's failed ranks and the line under them."""

    def __init__(self) -> None:
        self._open = False  # between the two "---- error analysis -----" lines
        self._held: tuple[list[int], str] | None = None

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if ANALYSIS in text:
            self._open, self._held = not self._open, None
            return ()
        if not self._open:
            return ()
        if (m := ON_HOST.match(text.strip())) is not None:
            self._held = (_ranks(m["ranks"]), m["host"])
            return ()
        held, self._held = self._held, None
        if held is None or (r := REASON.search(text)) is None:
            return ()
        ranks, host = held
        quoted = text.strip()
        if r["ctrl"]:
            return tuple(WorkerEnd("MS-MPI", rank, quoted, loc, signal="SIGINT", host=host) for rank in ranks)
        code = r["code"] or r["abort"]
        number = int(code, 16) if code.startswith("0x") else int(code)
        sig = signals.BY_NTSTATUS.get(number)
        return tuple(WorkerEnd("MS-MPI", rank, quoted, loc, exitcode=number, signal=sig, host=host) for rank in ranks)


_CRASHED = r"C:\AI\cntk\cntk\cntk ended prematurely and may have crashed. exit code 1"
_AV = r"C:\jobs\train.exe ended prematurely and may have crashed. exit code 0xc0000005"
FORMAT = Format(
    name="MS-MPI",
    words=_WORDS,
    make=Lines,
    patterns=(ON_HOST, REASON),
    samples=(
        Sample(_CRASHED, "tests/data/public_threads/310-cntk-913-two-gpu-mpiexec-crash-after-first-epoch.log:12",
               (WorkerEnd("MS-MPI", 1, _CRASHED, AT, exitcode=1, host="DESKTOP-NPQAHQ4"),),
               before=(ANALYSIS, "[1] on DESKTOP-NPQAHQ4")),
        Sample(_AV, "microsoft/Microsoft-MPI mpiexec_handle_command.cpp: print_analysis_tail, exit code 0xc0000005 "
                    "(STATUS_ACCESS_VIOLATION) printed '%#x'",
               tuple(WorkerEnd("MS-MPI", r, _AV, AT, exitcode=0xC0000005, signal="SIGSEGV", host="node7")
                     for r in (0, 1, 3)),
               before=(ANALYSIS, "[0-1,3] on node7")),
    ),
)
