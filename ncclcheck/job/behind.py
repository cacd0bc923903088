"""Ranks behind a timeout that no line places, read from their own counters.

ProcessGroupNCCL counts each group's collectives on each rank: the sequence number of the last work it enqueued and
of the last the watchdog saw complete (``pgStatus_``'s lastEnqueuedSeq and lastCompletedSeq), and prints the two in
its status lines (``last enqueued NCCL work: E, last completed NCCL work: C``: the dump signal's line from 2.3, the
watchdog's periodic update; evidence/formats/pgnccl.py). A rank that timed out in work S had S enqueued and not
completed. So, against a timeout in S of that group:

* a rank whose last enqueued is below S never issued S: it is behind, the rank the others wait for;
* a rank whose every enqueued work completed (E = C) waits in no collective of the group: it is not the one that timed
  out, and had it issued the collective the others waited in, that collective would be pending on it or done on every
  rank. It is behind too, where S is not printed (a paste that elides it).

The timeout line may name no rank (the watchdog's ``[Rank N]`` lost in a paste): job/graph.py, which reads the same
counters against a waiter it can place, has no waiter there, so this module decides for job/stated.py's timeout of
no placed rank. A rank with work pending and S unknown may be the one that timed out: nothing is decided of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclcheck.evidence.types import PG, Loc
from ncclcheck.job.model import GroupId, Job, Position, Record


@dataclass(frozen=True)
class Behind:
    """A rank whose counters show it had not issued the timed-out collective."""

    rank: int
    enqueued: int
    completed: int | None
    loc: Loc | None

    def words(self, seq: int | None) -> str:
        done = f", last completed {self.completed:,}" if self.completed is not None else ""
        at = f" ({self.loc})" if self.loc is not None else ""
        if seq is not None and self.enqueued < seq:
            return f"rank {self.rank}'s last enqueued was #{self.enqueued:,}{done}{at}: it never issued #{seq:,}"
        return (f"rank {self.rank} had completed every collective it enqueued there (last enqueued {self.enqueued:,}"
                f"{done}){at}: it waited in none of them")


def _in_group(pg: PG | None, g: GroupId) -> bool:
    """Whether a position's group is the timed-out line's: one named alike, or neither named."""
    if pg is None or (pg.id is None and pg.guid is None):
        return g.id is None and g.guid is None
    return (pg.guid is not None and pg.guid == g.guid) or (pg.guid is None and pg.id == g.id)


def _behind(p: Position, seq: int | None) -> bool:
    if p.last_enqueued is None or p.stuck is not None:
        return False
    if seq is not None:
        return p.last_enqueued < seq
    return p.last_completed is not None and p.last_completed == p.last_enqueued


def behind(job: Job, r: Record) -> tuple[Behind, ...]:
    """The ranks whose own counters in the timed-out line's group show them behind it (module docstring)."""
    out = []
    for s in job.ranks:
        if s.stuck is not None or s.first_error is not None:
            continue
        for p in s.positions:
            if _in_group(r.pg, p.group) and _behind(p, r.seq):
                assert p.last_enqueued is not None
                out.append(Behind(s.rank, p.last_enqueued, p.last_completed, p.counted))
    return tuple(out)
