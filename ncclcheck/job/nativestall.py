"""A hung process's native stacks (gdb, pstack) that show a thread inside an NCCL call, where nothing failed.

NCCL's set-up calls (ncclCommInitRank and its kin) return once every member has joined and connected; its collectives
return once the call is enqueued on the stream, except where the launch itself waits (a group's end, the first call's
connections since 2.22, CUDA_LAUNCH_BLOCKING), and the process then waits for the GPU in a CUDA synchronisation. A
thread still inside such a call when the stack is taken, with no error printed, is a stall in that call
(evidence/formats/nativestack.py reads the frames). As issue 41 §3 says of a first collective that never completes
with no error: no straggler explains it by itself; it points at the set-up (did every rank complete
ncclCommInitRank, an ``Init COMPLETE`` line each) or at the transport or peer-to-peer path, and the isolating runs
decide. The stacks name no rank, so the verdict is ``incomplete_evidence`` with the cause ``blocked_in_nccl``.
The fatal signal gdb stops on is read elsewhere (formats/errors.py): an error's verdict is never replaced here.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.formats.nativestack import HOSTPATH, SETUP, TEARDOWN
from ncclcheck.evidence.types import Fact
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision

BLOCKED = cause("blocked_in_nccl")
_OPEN_CAUSES = ("stopped_after_setup",)


def native_stall(job: Job, d: Decision) -> Decision:
    """The decision for stacks that show threads inside NCCL calls where nothing else was found, else ``d``."""
    if d.kind not in (VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE) or \
            d.cause is not None and d.cause.cause.kind not in _OPEN_CAUSES:
        return d
    frames = job.facts.nccl_frames
    if not frames or job.facts.errors:
        return d
    calls: dict[str, list[Fact]] = {}
    for f in frames:
        calls.setdefault(f.value.partition("|")[0], []).append(f)
    threads = len({(f.loc.file, f.value.partition("|")[2]) for f in frames})  # no header: one `bt`, one thread
    named = ", ".join(f"{fn} ({fs[0].loc})" for fn, fs in calls.items())
    setup = [fn for fn in calls if fn.removeprefix("nccl") in SETUP]
    ending = [fn for fn in calls if fn.removeprefix("nccl") in TEARDOWN]
    hostpath = [fn for fn in calls if fn.removeprefix("nccl") in HOSTPATH]
    if hostpath:
        where = ("NCCL's own host path between the collective's call and its kernel's launch (ncclEnqueueCheck, "
                 "its proxy operations: ncclProxySaveOp, ncclLocalOpAppend waiting for a free slot in the proxy's "
                 "op pool): the kernel was never launched, so the peers wait for this rank; a thread that stays "
                 "there is a hang inside NCCL itself, not the network: check the NCCL release, upgrade to its newest "
                 "and report the stacks to NVIDIA/nccl if it persists")
    elif setup:
        where = ("the communicator's set-up, which returns only once every member has called it and connected: a "
                 "member that never called it (or called it with another unique id or rank count), or a bootstrap "
                 "connection that never completes, holds every other member there")
    elif ending:
        where = ("the communicator's tear-down, which waits for its collectives still running: one of them never "
                 "completed on this rank")
    else:
        where = ("a collective call, which waits there only while its launch waits (a group's end, the first call's "
                 "connections, blocking launches): if this is the first collective after the set-up and it never "
                 "completes on any rank, no straggler explains it; either a rank had not completed its set-up "
                 "(ncclCommInitRank: an Init COMPLETE line on every rank), or the transport or GPU peer-to-peer path "
                 "under it carries nothing")
    summary = (f"The native stacks show {threads} thread{'s' if threads != 1 else ''} inside NCCL's {named}, with no "
               f"error printed: a stall in {where}. The stacks name no rank, so whether every rank waits there is "
               "not shown.")
    locs = tuple(fs[0].loc for fs in calls.values())
    detail = f"native stacks inside {', '.join(calls)} with no error"
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary,
                   cause=Diagnosis(BLOCKED, (), detail, locs[0], locs, detail))
