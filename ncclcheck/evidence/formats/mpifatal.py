"""An MPI library's own report of the error that ends the job, and a CUDA IPC call's failure under a GPU-aware MPI.

MPI's default error handler, MPI_ERRORS_ARE_FATAL, aborts the job on the first error a call returns, after a report
in the library's words:

* MPICH and the libraries built on it (Intel MPI, Cray MPICH, MVAPICH): ``Fatal error in <function>: <error
  class>, error stack:`` then the stack's lines (src/mpi/errhan/errutil.c, MPIR_Handle_fatal_error), which the ch4
  device (MPICH 3.4 on) prints through MPID_Abort as ``Abort(<code>) on node <world rank> (rank <r> in comm
  <context id>): Fatal error in ...`` (src/mpid/ch4/src/ch4_globals.c; context id 0 is MPI_COMM_WORLD); HPE's Cray
  MPICH puts ``MPICH ERROR [Rank <world rank>] [job id <id>] [<date>] [<node>] - `` before the ``Abort(...)``.
* Open MPI's handler (ompi/errhandler/errhandler_predefined.c, backend_abort): ``*** An error occurred in
  <function>``, ``*** on communicator <name>``, ``*** <error string>`` (ompi/errhandler/errcode.c: ``MPI_ERR_COUNT:
  invalid count argument``) and ``*** MPI_ERRORS_ARE_FATAL ...``, each behind ``[host:pid] ``; its error string
  is the reason.

A GPU-aware MPI moves a GPU buffer between two processes of a node by CUDA IPC: the sender exports its memory, the
receiver maps it with the driver's ``cuIpcOpenMemHandle`` (the runtime's ``cudaIpcOpenMemHandle``). A library that
reports that call failing names it with CUDA's error, by its name (CUresult's ``CUDA_ERROR_INVALID_VALUE``,
cudaError_t's) or after ``failed`` (Cray MPICH's GPU transport layer, libmpi_gtl_cuda: ``cuIpcOpenMemHandle: <string>,
<CUresult's name>, line no <n>``): read here as a ``cuda_ipc`` clue, the call and the error as the line prints them.

Open MPI's own signal handler (opal/util/stacktrace.c, installed for the signals opal_signal lists, SIGABRT among
them) reports a process's death as ``[host:pid] *** Process received signal ***`` then ``[host:pid] Signal: <strsignal>
(<number>)`` and the frames it could print; ``Signal: Aborted (6)`` is the process aborting itself: after a check of
its own failed (glibc's heap check or assert(), a library's fatal check, a C++ exception nobody caught) or PyTorch's
watchdog's abort after a collective failed. It is an ``abort`` clue of the line's process, the lowest of the stated
lines: quoted where nothing else says why (job/reasons.py).

Each is a :class:`Clue` (``mpi``, ``cuda_ipc`` or ``abort``) of the rank its own words name, else of the line's
process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# MPICH's report, with the ch4 device's Abort() head and Cray's prefix where they are printed (bounded: linear).
MPICH = re.compile(r"(?:\[Rank (?P<cray>\d{1,7})\][^\n]{0,300}?)?"
                   r"(?:Abort\(-?\d{1,12}\)(?: on node (?P<node>\d{1,7}))?(?: \(rank (?P<rank>\d{1,7}) in comm "
                   r"(?P<comm>\d{1,10})\))?: )?(?P<said>Fatal error in \w{1,80}: [^,\n]{1,200}?)(?:, error stack:|$)")
# Open MPI's error string in its handler's report (every MPI_ERR_ class has one: ompi/errhandler/errcode.c).
OMPI = re.compile(r"\*\*\* (?P<said>MPI_ERR_[A-Z_]{2,30}: .{1,200})$")
# A library's report of CUDA IPC's open failing, with CUDA's error: its name (CUresult, cudaError_t) or "failed".
IPC = re.compile(r"\b(?P<said>(?:cu|cuda)IpcOpenMemHandle\b[^\n]{0,300}?(?:CUDA_ERROR_[A-Z_]{3,40}|cudaError[A-Za-z]"
                 r"{3,40}|\bfailed\b[^\n]{0,120}))")
# opal/util/stacktrace.c: HOSTFORMAT "[%s:%05d] " then "Signal: %s (%d)", strsignal(SIGABRT) being "Aborted".
OPAL_ABORT = re.compile(r"\[[^\]\s:]{1,200}:\d{1,10}\] (?P<said>Signal: Aborted \(6\))\s*$")
# The same handler's banner (HOSTFORMAT "*** Process received signal ***", the same from 1.2 to 5.x), and its next
# line that names the signal (HOSTFORMAT "Signal: %s (%d)", or "Signal: %d"), written with it in one write().
BANNER = re.compile(r"\[(?P<at>[^\]\s:]{1,200}:\d{1,10})\] \*\*\* Process received signal \*\*\*")
NAMED = re.compile(r"\[(?P<at>[^\]\s:]{1,200}:\d{1,10})\] Signal: ")
# The program's own MPI_Abort, as the library reports it: Open MPI's help text (ompi/mpi/help-mpi-api.txt
# [mpi-abort], 1.x to 5.x: "MPI_ABORT was invoked on rank %d in communicator %s", its error code on the next line),
# MPICH's (src/mpi/init/init_impl.c: "application called MPI_Abort(%s, %d) - process %d", the process's rank in
# that communicator, behind ch4's "Abort(%d) on node <world rank> (rank %d in comm %d): ").
ABORT_OMPI = re.compile(r"(?P<said>MPI_ABORT was invoked on rank (?P<rank>\d{1,7}) in communicator (?P<comm>\S{1,64}))")
ABORT_MPICH = re.compile(r"(?:Abort\(-?\d{1,12}\) on node (?P<node>\d{1,7})[^:\n]{0,60}: )?"
                         r"(?P<said>application called MPI_Abort\((?P<comm>[^,()\n]{1,64}), -?\d{1,12}\) - process "
                         r"(?P<rank>\d{1,7}))")
WORDS = ("Fatal error in ", "*** MPI_ERR_", "IpcOpenMemHandle", "Signal: Aborted (6)", "Process received signal",
         "] Signal: ", "MPI_ABORT was invoked", "called MPI_Abort(")


def _rank(m: re.Match[str]) -> int | None:
    """The world rank the report names: Cray's prefix, the ch4 device's node (its world rank), or its rank in
    MPI_COMM_WORLD (context id 0)."""
    for said in (m["cray"], m["node"], m["rank"] if m["comm"] == "0" else None):
        if said is not None:
            return int(said)
    return None


def _aborted(m: re.Match[str]) -> int | None:
    """The world rank that called MPI_Abort: ch4's node (its world rank), else its rank where the communicator is
    MPI_COMM_WORLD (a rank in another communicator is not the world's)."""
    if m.groupdict().get("node") is not None:
        return int(m["node"])
    return int(m["rank"]) if m["comm"] == "MPI_COMM_WORLD" else None


class Lines:
    """One input's MPI error reports and CUDA IPC failures, each read on its own; Open MPI's signal banners whose
    ``Signal:`` line is not in the input (a paste cut after the banner), kept for the assembler (:meth:`unanswered`)."""

    def __init__(self) -> None:
        self._banners: dict[str, tuple[str, Loc]] = {}  # each [host:pid] banner not yet followed by its Signal line

    def unanswered(self) -> list[tuple[str, Loc]]:
        """The banners (their lines, where they stand) no ``Signal:`` line of the same process followed: a process
        that died of a signal the handler catches (opal_signal: SIGABRT, SIGBUS, SIGFPE, SIGSEGV) that the input does
        not name (evidence/parse.py reads each as the process's death by a fatal signal)."""
        return list(self._banners.values())

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "Process received signal" in text and (b := BANNER.search(text)):
            self._banners[b["at"]] = (text, loc)
            return ()
        if "] Signal: " in text and (n := NAMED.search(text)):
            self._banners.pop(n["at"], None)
        if "Fatal error in " in text and (m := MPICH.search(text)):
            return (Clue(Who(global_rank=_rank(m)), "mpi", m["said"].strip(), loc),)
        if "*** MPI_ERR_" in text and (o := OMPI.search(text.rstrip())):
            return (Clue(Who(), "mpi", o["said"].strip(), loc),)
        if ("MPI_Abort" in text or "MPI_ABORT" in text) and (m := ABORT_OMPI.search(text) or ABORT_MPICH.search(text)):
            return (Clue(Who(global_rank=_aborted(m)), "mpi", m["said"], loc),)
        if "Signal: Aborted (6)" in text and (a := OPAL_ABORT.search(text)):
            return (Clue(Who(), "abort", a["said"], loc),)
        if "IpcOpenMemHandle" in text and (i := IPC.search(text)):
            return (Clue(Who(), "cuda_ipc", i["said"].strip(), loc),)
        return ()


_CRAY = ("MPICH ERROR [Rank 3] [job id 1234.0] [Mon Jan 09 10:00:00 2023] [nid000123] - Abort(403275522) (rank 3 in "
         "comm 0): Fatal error in PMPI_Bcast: Invalid count, error stack:")
_CH4 = ("Abort(1091215) on node 5 (rank 5 in comm 0): Fatal error in PMPI_Init: Other MPI error, error stack:")
FORMAT = Format(
    name="MPI errors",
    words=WORDS,
    make=Lines,
    patterns=(MPICH, OMPI, IPC, OPAL_ABORT, ABORT_OMPI, ABORT_MPICH),
    # the signal handler's banner and the line that names its signal, behind their words (they read nothing alone)
    behind=(Behind(("Process received signal",), (BANNER,)), Behind(("] Signal: ",), (NAMED,))),
    samples=(
        Sample("Fatal error in PMPI_Allreduce: Message truncated, error stack:",
               "MPICH src/mpi/errhan/errutil.c, MPIR_Handle_fatal_error (\"Fatal error in %s: \" and the class)",
               (Clue(Who(), "mpi", "Fatal error in PMPI_Allreduce: Message truncated", AT),)),
        Sample(_CH4, "MPICH 3.4+ src/mpid/ch4/src/ch4_globals.c, MPID_Abort (\"Abort(%d)%s%s: %s%s\")",
               (Clue(Who(global_rank=5), "mpi", "Fatal error in PMPI_Init: Other MPI error", AT),)),
        Sample(_CRAY, "HPE Cray MPICH's prefix before MPICH's MPID_Abort line",
               (Clue(Who(global_rank=3), "mpi", "Fatal error in PMPI_Bcast: Invalid count", AT),)),
        Sample("[node1:04211] *** MPI_ERR_TRUNCATE: message truncated",
               "Open MPI ompi/errhandler/errhandler_predefined.c (\"*** %s\") with ompi/errhandler/errcode.c's string",
               (Clue(Who(), "mpi", "MPI_ERR_TRUNCATE: message truncated", AT),)),
        Sample("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD",
               "tests/data/launchers/mpi_abort/console.log:7 (Open MPI 4.1.4, ompi/mpi/help-mpi-api.txt [mpi-abort])",
               (Clue(Who(global_rank=1), "mpi", "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD", AT),)),
        Sample("Abort(3) on node 2 (rank 0 in comm 480): application called MPI_Abort(comm=0x84000002, 3) - process 0",
               "MPICH 3.4+ src/mpid/ch4/src/ch4_globals.c (\"Abort(%d)%s%s: %s%s\") and src/mpi/init/init_impl.c "
               "(\"application called MPI_Abort(%s, %d) - process %d\")",
               (Clue(Who(global_rank=2), "mpi", "application called MPI_Abort(comm=0x84000002, 3) - process 0", AT),)),
        Sample("[node7:81234] Signal: Aborted (6)", "Open MPI opal/util/stacktrace.c (HOSTFORMAT \"Signal: %s (%d)\")",
               (Clue(Who(), "abort", "Signal: Aborted (6)", AT),)),
        Sample("(GTL DEBUG: 0) cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE, line no 272",
               "Cray MPICH's GPU transport layer (libmpi_gtl_cuda) reporting the driver API call and its CUresult",
               (Clue(Who(), "cuda_ipc", "cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE", AT),)),
    ),
)
