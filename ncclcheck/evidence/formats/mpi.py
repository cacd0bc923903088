"""Open MPI's mpirun (4.x): its rank tags, per-rank output files, and its reports of a worker's end.

Recorded with tools/launchers/mpi.sh (tests/data/launchers/mpi/). mpirun numbers its processes with the job's
global rank (``OMPI_COMM_WORLD_RANK``), which is the rank PyTorch uses when the script reads it.
"""

from __future__ import annotations

import re

from ncclcheck import signals
from ncclcheck.evidence.formats.lines import LineFormat, TaskEnd

# `--tag-output`: "[1,3]<stderr>:" (job id, rank, stream) before each line of rank 3.
RANK_TAGS = (re.compile(r"\[\d+,(\d+)\]<std(?:out|err|diag)>:"),)
# `--output-filename DIR`: DIR/1/rank.3/stdout and stderr.
PATH_RANKS = (re.compile(r"(?:^|/)rank\.(\d+)/std(?:out|err|diag)$"),)


def _noticed(m: re.Match[str]) -> TaskEnd:
    return TaskEnd(int(m[1]), exitcode=-int(m[4]), signal=signals.name(int(m[4])),
                   pid=int(m[2]) or None, host=m[3])


LINES = (
    LineFormat("Open MPI", "mpirun noticed that process rank",
               re.compile(r"mpirun noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal "
                          r"(\d+)"),
               "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).",
               read=_noticed),
    # "mpirun detected that one or more processes exited with non-zero status … The first process to do so was:"
    LineFormat("Open MPI", "Process name: [[", re.compile(r"^\s*Process name: \[\[\d+,\d+\],(\d+)\]"),
               "  Process name: [[11946,1],2]", read=lambda m: TaskEnd(int(m[1]))),
    LineFormat("Open MPI", "Exit code:", re.compile(r"^\s*Exit code:\s+(-?\d+)\s*$"),
               "  Exit code:    1", read=lambda m: TaskEnd(None, exitcode=int(m[1]))),
    LineFormat("Open MPI", "time limit for job execution has been reached",
               re.compile(r"The user-provided time limit for job execution has been reached"),
               "The user-provided time limit for job execution has been reached:", stop=True),
)
