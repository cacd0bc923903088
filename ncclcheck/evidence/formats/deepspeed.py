"""DeepSpeed's launcher (`deepspeed`, deepspeed.launcher.launch): its report of a worker that failed.

When a worker exits non-zero, the launcher kills the others and logs "[launch.py:259:sigkill_handler] [<command>]
exits with return code = <code>". The code is the failed worker's; the command is not: it is the last command the
launcher built when it started the workers (the loop variable of its spawn loop, launch.py), so its `--local_rank`
is always the highest local rank, whichever worker failed. The line says that a worker of this node failed and how,
never which. Recorded with tools/launchers/python_launchers.sh (tests/data/launchers/deepspeed/: rank 1 killed by
SIGKILL, the line names --local_rank=3).
"""

from __future__ import annotations

import re

from ncclcheck.evidence.formats.lines import LineFormat, TaskEnd, signal_name
from ncclcheck.evidence.linear import then


def _exit(m: re.Match[str]) -> TaskEnd:
    code = int(m[1])
    return TaskEnd(None, exitcode=code, signal=signal_name(-code) if code < 0 else None)


LINES = (
    LineFormat("DeepSpeed", "exits with return code",
               re.compile(then(r"sigkill_handler\]", r"exits with return code = (-?\d+)", lazy=False)),
               "[2026-11-25 15:28:08,874] [ERROR] [launch.py:259:sigkill_handler] ['python3', '-u', 'worker.py', "
               "'--local_rank=3', 'kill', '1'] exits with return code = -9", read=_exit, rankless=True),
)
