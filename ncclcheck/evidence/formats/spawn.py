"""torch.multiprocessing.spawn (``mp.spawn``, the launcher of scripts that start their own workers): its report of a
worker that died of a signal.

The parent joins its children and raises, for the first that ended badly, "process %d terminated with signal %s"
(torch/multiprocessing/spawn.py, ProcessContext.join: ``ProcessExitedException`` since 1.6, a plain ``Exception``
before), with the signal's name. The number is the child's index in the spawn, which the script usually takes as its
rank on the node; it is no global rank, so the report names no rank. A worker that raised prints its traceback
("-- Process N terminated with the following error:") instead, read as its own error.
"""

from __future__ import annotations

import re
import signal

from ncclcheck.evidence.formats.source import AT, Format, LauncherLines, LineFormat, Sample, ended
from ncclcheck.evidence.types import WorkerEnd

NAME = "torch.multiprocessing.spawn"


def _signalled(m: re.Match[str]) -> WorkerEnd:
    number = signal.Signals.__members__.get(m["signal"])
    return ended(NAME, None, exitcode=-int(number) if number is not None else None, signal=m["signal"])


LINES = (
    LineFormat(NAME, "terminated with signal",
               re.compile(r"process \d+ terminated with signal (?P<signal>SIG[A-Z]+)"), read=_signalled, rankless=True),
)

_KILLED = "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL"
FORMAT = Format(
    name=NAME,
    words=tuple(f.word for f in LINES),
    make=lambda: LauncherLines(LINES),
    patterns=tuple(f.pattern for f in LINES),
    samples=(
        Sample(_KILLED, "torch/multiprocessing/spawn.py (ProcessContext.join: 'process %d terminated with signal %s')",
               (WorkerEnd(NAME, None, _KILLED[_KILLED.index("process 1"):], AT, exitcode=-9, signal="SIGKILL"),)),
    ),
)
