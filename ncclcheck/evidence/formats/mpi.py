"""Open MPI's mpirun (4.x; 5.x runs on PRTE): its rank tags, per-rank output files, and its reports of a worker's end.

Recorded with tools/launchers/mpi.sh (tests/data/launchers/mpi/). mpirun numbers its processes with the job's
global rank (``OMPI_COMM_WORLD_RANK``), which is the rank PyTorch uses when the script reads it.

The report of a worker's death by a signal is one help text in ORTE (Open MPI 4.x: "%s noticed that process rank %s
with PID %s on node %s exited on signal %d (%s).") and two lines in PRTE (openpmix/prrte
src/mca/schizo/prte/help-prun.txt, [prun:proc-aborted-strsignal]: "exited on" ends the first, "signal %d (%s)." is
the second); the tool's name leads it (mpirun, mpiexec, prterun, prun).
"""

from __future__ import annotations

import re

from ncclcheck import signals
from ncclcheck.evidence.formats.source import AT, Format, LauncherLines, LineFormat, Sample, ended
from ncclcheck.evidence.types import JobStop, WorkerEnd

# `--tag-output`: "[1,3]<stderr>:" (job id, rank, stream) before each line of rank 3.
RANK_TAG = re.compile(r"\[\d+,(?P<rank>\d+)\]<std(?:out|err|diag)>:")
# `--output-filename DIR`: DIR/1/rank.3/stdout and stderr.
PATH_RANK = re.compile(r"(?:^|/)rank\.(?P<rank>\d+)/std(?:out|err|diag)$")


def _noticed(m: re.Match[str]) -> WorkerEnd:
    return ended("Open MPI", int(m["rank"]), exitcode=-int(m["signal"]), signal=signals.name(int(m["signal"])),
                 pid=int(m["pid"]) or None, host=m["host"])


# The launcher's name before its words (prte_tool_basename: the name it was started by).
_TOOL = r"(?:(?:mpirun|mpiexec|orterun|prterun|prun|oshrun) )?"
LINES = (
    LineFormat("Open MPI", "noticed that process rank",
               re.compile(_TOOL + r"noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node "
                          r"(?P<host>\S+) exited on signal (?P<signal>\d+)"), read=_noticed),
    # PRTE's two-line form: the worker on the first line, its signal on the next.
    LineFormat("Open MPI", "noticed that process rank",
               re.compile(_TOOL + r"noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node "
                          r"(?P<host>\S+) exited on\s*$"),
               read=lambda m: ended("Open MPI", int(m["rank"]), pid=int(m["pid"]) or None, host=m["host"])),
    LineFormat("Open MPI", "signal ", re.compile(r"^\s*signal (?P<signal>\d+)(?: \([^)]*\))?\.\s*$"),
               read=lambda m: ended("Open MPI", None, exitcode=-int(m["signal"]),
                                    signal=signals.name(int(m["signal"])))),
    # "mpirun detected that one or more processes exited with non-zero status … The first process to do so was:"
    LineFormat("Open MPI", "Process name: [[", re.compile(r"^\s*Process name: \[\[\d+,\d+\],(?P<rank>\d+)\]"),
               read=lambda m: ended("Open MPI", int(m["rank"]))),
    LineFormat("Open MPI", "Exit code:", re.compile(r"^\s*Exit code:\s+(?P<code>-?\d+)\s*$"),
               read=lambda m: ended("Open MPI", None, exitcode=int(m["code"]))),
    LineFormat("Open MPI", "time limit for job execution has been reached",
               re.compile(r"The user-provided time limit for job execution has been reached"), stop=True),
)

_KILLED = "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
_PRTE = "prterun noticed that process rank 3 with PID 2812 on node gpu-b exited on"
_LIMIT = "The user-provided time limit for job execution has been reached:"
FORMAT = Format(
    name="Open MPI",
    words=tuple(f.word for f in LINES),
    make=lambda: LauncherLines(LINES),
    patterns=tuple(f.pattern for f in LINES),
    rank_tags=(RANK_TAG,),
    path_ranks=(PATH_RANK,),
    samples=(
        Sample(_KILLED, "tests/data/launchers/mpi/kill/console.log:44",
               (WorkerEnd("Open MPI", 1, _KILLED, AT, exitcode=-9, signal="SIGKILL", host="vm"),)),
        Sample("signal 9 (Killed).", "openpmix/prrte src/mca/schizo/prte/help-prun.txt [prun:proc-aborted-strsignal]",
               (WorkerEnd("Open MPI", 3, _PRTE, AT, exitcode=-9, signal="SIGKILL", pid=2812, host="gpu-b"),),
               before=(_PRTE,)),
        Sample("  Exit code:    1", "tests/data/launchers/mpi/raise/mpirun.log:65",
               (WorkerEnd("Open MPI", 2, "Process name: [[10664,1],2]", AT, exitcode=1),),
               before=("  Process name: [[10664,1],2]",)),
        Sample(_LIMIT, "tests/data/launchers/mpi/timelimit/console.log:2", (JobStop("Open MPI", _LIMIT, AT),)),
    ),
)
