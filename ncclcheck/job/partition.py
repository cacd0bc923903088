"""Every rank accounted for: the verdict's four rank sets, which partition the world the job model knows.

A failure leaves each rank of the job in one role, and the report names all four so that no rank vanishes:

* **culprit**: the rank (or ranks) the verdict names as the cause;
* **waiting**: a rank that was inside a collective with the culprit when the job ended: it timed out, its dump shows
  it waiting, its NCCL or gloo transport reported the peer gone, or the watchdog aborted it (SIGABRT follows only a
  timeout or an NCCL error of its own, PyTorch's ProcessGroupNCCL watchdog);
* **stopped**: a rank that ended because the job was ended, not in a collective of its own: torchrun's agent sends
  SIGTERM to every worker still running once one has failed (torch/distributed/elastic/agent/server/api.py,
  ``_invoke_run``: a FAILED group is stopped with ``_stop_workers``, which closes the process context with SIGTERM,
  local_elastic_agent.py and multiprocessing/api.py ``close``), and srun and mpirun do the same; a rank that left
  its log without an ending is counted here too: it stopped, and nothing says it waited; so is a rank that failed at
  a set-up that no rank caused (the host's interfaces or driver, a launch that put every rank on one GPU): NCCL's
  set-up fails on each rank of the communicator by its own check (src/init.cc, src/bootstrap.cc), so its NCCL error
  says nothing of a peer it waited for;
* **unknown**: a rank of the world without input of its own; a stated world too large to list keeps those ranks as
  ranges (``Job.unlisted``), never one by one.

The world is every rank the model holds (stated, seen, or in a launcher's table) and every rank the verdict names.
Nothing failed (``no_failure``): no rank is a culprit, waited or was stopped; only ranks without input are listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ncclcheck.evidence.types import ErrorKind
from ncclcheck.job.model import EndKind, Job, RankState

# Endings of a rank that was in a collective when the job ended (see the module's docstring).
_IN_COLLECTIVE = {EndKind.TIMED_OUT, EndKind.WAITING, EndKind.NCCL_ERROR}
# A first error that says the rank's peer went away while it waited for it (gloo's and NCCL's).
_PEER_GONE = {ErrorKind.CONNECTION, ErrorKind.NCCL_ERROR, ErrorKind.NCCL_WARN}


@dataclass(frozen=True)
class Partition:
    """The verdict's rank sets: disjoint, and together every rank of the world the verdict knows."""

    culprits: tuple[int, ...]
    waiting: tuple[int, ...]
    stopped: tuple[int, ...]
    unknown: tuple[int, ...]


def waited(s: RankState) -> bool:
    """Was this rank inside a collective when the job ended?"""
    e = s.ending
    if s.stuck is not None or e.kind in _IN_COLLECTIVE:
        return True
    if e.kind is EndKind.ABORTED and e.signal == "SIGABRT":
        return True  # the watchdog's abort: after a timeout or an NCCL error of the rank's own
    return e.kind is EndKind.EXCEPTION and s.first_error is not None and s.first_error.kind in _PEER_GONE


def stopped(s: RankState) -> bool:
    """Did the launcher stop this rank, outside any collective (its SIGTERM, not the watchdog's SIGABRT)?"""
    return s.stuck is None and s.ending.kind is EndKind.ABORTED and s.ending.signal != "SIGABRT"


def partition(job: Job, found: bool, culprits: Iterable[int], waiting: Iterable[int],
              unblamed_setup: bool = False) -> Partition:
    """The decision's culprits and waiters, with every other rank of the world placed by its ending.

    ``found``: the verdict names a failure; without one only the ranks without input are listed.
    ``unblamed_setup``: the failure is a set-up that no rank caused: a rank that hit it stopped (unless it was stuck
    in a collective), it did not wait for a peer."""
    named = tuple(dict.fromkeys(culprits))
    said = set(waiting)
    if not found:
        return Partition((), (), (), tuple(s.rank for s in job.ranks if not s.present))
    blamed = set(named)
    ranks = sorted({s.rank for s in job.ranks} | said | blamed)
    roles: dict[str, list[int]] = {"waiting": [], "stopped": [], "unknown": []}
    for r in ranks:
        if r in blamed:
            continue
        s = job.rank(r)
        if unblamed_setup and s is not None and s.present and s.stuck is None:
            roles["stopped"].append(r)
        elif r in said or (s is not None and s.present and waited(s)):
            roles["waiting"].append(r)
        elif s is None or not s.present:
            roles["unknown"].append(r)
        else:
            roles["stopped"].append(r)
    return Partition(named, tuple(roles["waiting"]), tuple(roles["stopped"]), tuple(roles["unknown"]))
