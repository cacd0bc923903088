"""A watchdog stuck after the job's own end: the process groups' tear-down hung, no rank's work did.

PyTorch's heartbeat monitor (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) watches the NCCL watchdog thread: when
the thread has not gone round its loop for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC it prints ``ProcessGroupNCCL's watchdog
got stuck for N seconds`` (2.3+; ``Heartbeat monitor timed out!`` in 2.3-2.4) and aborts the process. During the
work that is a CUDA call or the GIL blocked in that process (job/rules.py). After the program's own end (a test
framework's end, the program's "finished", NCCL's ``Destroy COMPLETE``: formats/testends.py, formats/world.py,
formats/ncclsetup.py) the work was done and the groups were being torn down: a communicator's destroy or abort waits
for its other ranks, and ranks that destroy their groups in different orders (or leave them to the interpreter's exit,
whose order differs between processes) wait in different communicators for each other. NVIDIA's Fuser met it with
NCCL 2.23.4 and fixed it by destroying the groups in the same order on every rank (NVIDIA/Fuser#3074). No rank is
the culprit. ProcessGroupNCCL's own warning that destroy_process_group() was not called before exit is read by
job/rules.py; this reads the other ends.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import Fact
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

TEARDOWN = cause("teardown_order")


def _ended(job: Job) -> tuple[Fact, Fact] | None:
    """The first heartbeat failure that comes after a line of its input saying the work ended (a test framework's
    end, the program's word, a communicator destroyed: ``JobFacts.program_ends``), with that line."""
    ends = job.facts.program_ends
    for h in sorted(job.facts.heartbeats, key=lambda h: (h.loc.file, h.loc.line)):
        before = [f for f in ends if f.loc.file == h.loc.file and f.loc.line < h.loc.line]
        if before:
            end = max(before, key=lambda f: f.loc.line)
            return end, Fact(h.who, "heartbeat", h.kind, h.loc)
    return None


def stuck_after_end(job: Job, d: Decision) -> Decision:
    """The decision for a heartbeat failure after the job's own end (the module's docstring), else ``d``."""
    if d.kind is not VerdictKind.WATCHDOG_STUCK or d.cause is not None or job.facts.exit_teardown:
        return d
    found = _ended(job)
    if found is None:
        return d
    end, beat = found
    what = "the watchdog got stuck" if beat.value == "watchdog_stuck" else "the heartbeat monitor timed out"
    summary = (f"The heartbeat monitor fired ({what}, {beat.loc}) after the program's own end: \"{end.value}\" "
               f"({end.loc}) came before it. The work was done; the process groups were being torn down, and a "
               "communicator's tear-down hung: it waits for the communicator's other ranks, and ranks that destroy "
               "their groups in different orders (or leave them to the interpreter's exit) wait in different "
               "communicators for each other. No rank is the culprit.")
    detail = f"{what} after \"{end.value}\""
    diag = Diagnosis(TEARDOWN, (), detail, beat.loc, (beat.loc, end.loc), detail)
    return replace(d, summary=summary, culprits=(), waiting=(), cause=diag, killed=False)
