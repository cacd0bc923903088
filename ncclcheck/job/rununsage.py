"""An NCCL ``invalid usage`` that a collective's own call returned, with no WARN line: the run's refusal, not the set-up's.

A binding of NCCL's C API (vLLM's pynccl, CuPy's, nccl4py; evidence/formats/ncclapi.py) makes its communicator by its
own call, ncclCommInitRank, before any collective: an error a frame of ncclAllReduce (or another collective, or
ncclGroupEnd) returned came from the collective, after the set-up had succeeded, so the set-up's duplicate-GPU check
(job/unsaiddup.py) is not its reason. What a collective's call refuses as invalid usage is its CUDA graph capture
(src/misc/strongstream.cc: NCCL built with a CUDA runtime before 11.3 or a driver before R465; streams of a group
captured by different graphs, src/enqueue.cc) and a few calls a single collective never makes (a send to self
without its receive, ncclGroupEnd outside a group, a NCCL_WORK_FIFO_DEPTH below its minimum). A binding's
collective is captured wherever an engine records CUDA graphs, so the capture is read, said as what the release
could not say without NCCL_DEBUG=WARN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ncclcheck.job.causedata import Cause
from ncclcheck.job.unsaiddup import said_why

if TYPE_CHECKING:  # the job model holds the catalogue's Diagnosis (job/causes.py): imported here for its type only
    from ncclcheck.job.model import Job

_GROUPED = ("ncclSend", "ncclRecv")  # point-to-point calls: a send to self without its receive is theirs


def run_usage(kind: str, job: Job, capture: Cause) -> tuple[Cause, str] | None:
    """The graph-capture cause and its detail where an ``invalid usage`` (``kind`` nccl_invalid_usage) came back from
    a collective's call of NCCL's C API and no line says why; None otherwise."""
    if kind != "nccl_invalid_usage" or said_why(job):
        return None
    calls = [f for f in job.facts.api_calls if f.value not in _GROUPED]
    if not calls:
        return None
    f = calls[-1]
    return capture, (f"NCCL's {f.value} itself returned invalid usage ({f.loc}), through a binding of NCCL's C API "
                     "whose communicator was already made, and no WARN line says why: a collective's call refuses "
                     "its capture in a CUDA graph (rerun with NCCL_DEBUG=WARN to confirm)")
