"""The ncclUniqueId store wait in a point-to-point op: no culprit the line can name, and the eager set-up that fixes it.

ProcessGroupNCCL (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, broadcastUniqueNCCLID) posts a new
communicator's ncclUniqueId in the store from the communicator's rank 0 and has the others wait for it; a wait that
gives up says "[R] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by
key 'K'". The `[0]` is a literal: the communicator's rank 0, the group's for a collective's communicator (K a
number, the group's n-th communicator) and the lower rank of the pair for a single send or recv's (K the pair's
key, `a:b`). For a collective the catalogue's nccl_id_wait names that rank (job/rules.py): every member comes to the
same communicator. For a send or recv it cannot: the ranks create their communicators lazily, at their first op on
each, and the rank waited for may be in another op that creates another communicator first, itself waiting. Where
the key is a pair's or the waiting rank's traceback runs through a point-to-point op (evidence/formats/p2pcall.py),
the verdict is a set-up failure with no culprit and the cause lazy_p2p_setup: set the device from the local rank
and pass device_id to init_process_group, so that the group's communicator is created eagerly on every rank.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.job.causes import Diagnosis, awaiting_ranks, cause, one_line
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

LAZY_P2P = cause("lazy_p2p_setup")
# How far above the wait's line its traceback's frames may stand (a traceback of its own, not an earlier one's).
_FRAMES = 80


def _pair(key: str) -> bool:
    """Whether the store's key is a pair's (``a:b``, getKeySendRecv), not a group's communicator's number."""
    a, colon, b = key.partition(":")
    return bool(colon) and a.isdecimal() and b.isdecimal()


def _p2p_op(job: Job, d: Diagnosis) -> str | None:
    """The point-to-point op the wait was in: the pair's key, or a p2p call in the waiting rank's traceback just
    above the wait's line (in the same input), or None."""
    key = d.store.key if d.store is not None else None  # the store's key, and the waiters, its line names
    if key is not None and _pair(key):
        return f"the pair {key}'s send or recv"
    waiters = {*d.ranks, *awaiting_ranks(d)}
    calls = [f for f in job.facts.p2p_calls if f.loc.file == d.loc.file
             and d.loc.line - _FRAMES <= f.loc.line <= d.loc.line + 2 and (f.who.rank is None or f.who.rank in waiters)]
    return f"a {calls[-1].value}" if calls else None


def lazy_p2p(job: Job, d: Decision) -> Decision:
    """The decision for a ncclUniqueId wait in a point-to-point op (the module's docstring), else ``d``."""
    if d.cause is None or d.cause.cause.kind != "nccl_id_wait" or (op := _p2p_op(job, d.cause)) is None:
        return d
    waiters = sorted({*d.cause.ranks, *awaiting_ranks(d.cause)})
    who = rank_phrase(waiters, job.world).capitalize() if waiters else "A rank"
    summary = (f"{who} waited in {op} for its communicator's NCCL id until the timeout: {one_line(d.cause.text)} "
               f"({d.cause.loc}). The `[0]` it names is that communicator's rank 0 (the group's rank 0, or for a "
               "single send or recv's own communicator the lower rank of the pair), not necessarily the job's, and "
               "in a point-to-point op that rank may itself have been setting up another "
               "communicator: the ranks created their communicators lazily and out of step, and no line names one "
               "that failed. Set the device from the local rank and pass device_id to init_process_group, so that "
               "every rank creates the group's communicator at once.")
    found = replace(d.cause, cause=LAZY_P2P, detail=f"{who.lower() if waiters else 'a rank'} waited in {op} for "
                    f"its communicator's NCCL id: {one_line(d.cause.text)}")
    return replace(d, kind=VerdictKind.SETUP_FAILURE, summary=summary, culprits=(), cause=found)
