"""The watchdog's tear-down alone: "Some NCCL operations have failed or timed out ... we are taking the entire process
down" is a failure, never nothing.

ProcessGroupNCCL's watchdog prints it (ProcessGroupNCCL.cpp, with TORCH_NCCL_ASYNC_ERROR_HANDLING's tear-down, the
default) once a work of its rank has failed (an NCCL error) or timed out, then aborts the process. Beside the timeout
or the error it follows, it is that failure's echo; where the inputs keep nothing else (a paste of the last lines),
it still says an NCCL operation of that rank failed or timed out and the process was taken down: an NCCL error whose
reason and collective the inputs do not hold.
"""

from __future__ import annotations

from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.ranks import rank_phrase


def teardown_verdict(job: Job) -> tuple[VerdictKind, list[int], list[int], str] | None:
    """An NCCL failure from the watchdog's tear-down lines, where no rule found a failure of its own."""
    lines = job.facts.teardowns
    if not lines:
        return None
    ranks = sorted({f.who.rank for f in lines if f.who.rank is not None})
    who = f"{rank_phrase(ranks).capitalize()}'s" if ranks else "A process's"
    unnamed = "" if ranks else " The line names no rank: a [rankN]: prefix or the per-rank logs would."
    return (VerdictKind.NCCL_ERROR, ranks, [],
            f"{who} NCCL watchdog took the process down ({lines[0].loc}) after one of "
            f"{'its' if len(ranks) <= 1 else 'their'} NCCL operations failed or timed out; these inputs hold neither "
            f"the error nor the timeout, so not which collective or why.{unnamed} The lines before it in that "
            "process's own log (its NCCL WARN line or its timeout line) say which.")
