"""Members of one group stuck at different sequence numbers, the earlier one in a call the others finished with.

ProcessGroupNCCL numbers each group's collectives in the order the program issues them (``SeqNum`` in the watchdog's
``WorkNCCL(SeqNum=N, OpType=..., NumelIn=...)``, the flight recorder's ``collective_seq_id``) and runs them on the
group's one NCCL stream in that order; its watchdog walks the group's works in that order too and reports the first
that timed out, which is the oldest unfinished (each times out counted from when it was issued). So a member whose
timeout names #b had completed every collective of that group before it; a member whose timeout names an earlier #a
had not completed #a.

An all-reduce, all-gather, reduce-scatter, all-to-all or barrier completes on a member only with every member's data
in it: the others' #a took the stuck member's call in, yet its #a never finished. NCCL checks no size across ranks and
moves a collective's data in chunks, so the others' smaller calls completed against its larger one (or its call took
the start of theirs): the ranks issued different collectives. The others having completed at least two works past
#a (b >= a + 2) rules out the one reading that needs no mismatch, the stuck member losing the last chunk of #a after
everyone else had sent theirs: the others' #a+1 would then wait for it, as its stream stays blocked in #a. And where
the two timed-out works are the same op of the same size, the numbers are not read at all (releases whose seq_
counted sends and receives too give members of one group different numbers for one call).

Only one run's members are compared: a process's watchdog times out at most once per group and run (it then takes
the process down; job/runs.py), so a member with timeouts at two numbers of one group in these inputs holds more than
one run of it (folders of separate recordings read together, a restart into per-rank files), and a member whose own
counters say it completed the work it is stuck in is not stuck there in the same run: its group is not compared.

That decides the hang whatever a member without input did: the ranks' calls disagree (collective_mismatch), and
neither side is shown to be the wrong one (a data-dependent branch on one side, or on the other). A member whose
timeout names no number, a send or receive, or another group's work is not compared.
(https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: seqCollective_,
the watchdog's walk of workMetaList_; https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/collectives.html)
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclcheck.job.graph import differs
from ncclcheck.job.model import Job, Work
from ncclcheck.job.phrases import sig
from ncclcheck.ranks import rank_phrase

# WorkNCCL's op names (opTypeToString) whose completion on any member takes every member's data.
EVERY_MEMBER = frozenset({
    "ALLREDUCE", "ALLREDUCE_COALESCED", "ALLGATHER", "_ALLGATHER_BASE", "ALLGATHER_COALESCED", "ALLGATHER_INTO_TENSOR_COALESCED",
    "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE", "REDUCE_SCATTER_TENSOR_COALESCED", "ALLTOALL", "ALLTOALL_BASE", "BARRIER",
})
STUCK = ("timed_out", "started")  # a work the watchdog timed out, or a dump's entry that began


@dataclass(frozen=True)
class Passed:
    """The members stuck in the earlier call (``behind``, at ``early``) and those past it (``ahead``, at ``late``)."""

    behind: tuple[int, ...]
    early: Work
    ahead: tuple[int, ...]
    late: Work

    def summary(self) -> str:
        e, lt = self.early, self.late
        past = f"#{e.seq}" + (f"-{lt.seq - 1}" if lt.seq is not None and lt.seq - 1 > (e.seq or 0) else "")
        one = len(self.behind) == 1
        return (f"In {e.group.label()} {rank_phrase(self.behind)} {'is' if one else 'are'} still in {e.number} "
                f"({sig(e)}) while {rank_phrase(self.ahead)} completed {past} and wait in {lt.number} ({sig(lt)}). "
                f"{e.op or 'That collective'} completes on a member only with every member's data, and a group's "
                f"collectives run in order: the others' {e.number} took {rank_phrase(self.behind)}'s call in, yet "
                f"{'its own' if one else 'their own'} never finished. The ranks issued different collectives: the "
                "others' calls completed against a larger or other one (NCCL moves data in chunks and checks no size "
                "across ranks). Neither side is shown to be the wrong one: code that branches on the rank or the data "
                "(a batch that skips a submodule, a condition on the input) makes one side's collectives differ.")


def _runs_apart(job: Job) -> set[tuple[int, tuple[str | None, str | None]]]:
    """The (rank, group) pairs whose evidence holds more than one run: timeouts at two numbers of one group, or a
    stuck work its own counters say it completed."""
    timed_out: dict[tuple[int, tuple[str | None, str | None]], set[int]] = {}
    for r in job.records:
        if r.who is not None and r.pg is not None and r.seq is not None and "watchdog_timeout" in r.evidence:
            timed_out.setdefault((r.who, (r.pg.id, r.pg.guid)), set()).add(r.seq)
    apart = {k for k, seqs in timed_out.items() if len(seqs) > 1}
    for s in job.ranks:
        for p in s.positions:
            if p.stuck is not None and p.stuck.seq is not None and p.last_completed is not None \
                    and p.last_completed >= p.stuck.seq:
                apart.add((s.rank, p.group.key))
    return apart


def passed(job: Job) -> Passed | None:
    """The first group whose members' timed-out works say the earlier one's call was finished with by the others."""
    by_group: dict[object, list[tuple[int, Work]]] = {}
    for s in job.ranks:
        w = s.stuck
        if w is not None and not w.p2p and w.seq is not None and w.state in STUCK:
            by_group.setdefault(w.group, []).append((s.rank, w))
    apart = _runs_apart(job) if by_group else set()  # a pass over the records only where a group has stuck members
    for stuck in by_group.values():
        if any((r, w.group.key) in apart for r, w in stuck):
            continue
        first = min(w.seq or 0 for _, w in stuck)
        early = next(w for _, w in stuck if w.seq == first)
        if (early.op or "").upper() not in EVERY_MEMBER:
            continue
        later = [(r, w) for r, w in stuck if (w.seq or 0) >= first + 2]
        if not later:
            continue
        late = min((w for _, w in later), key=lambda w: w.seq or 0)
        if not differs(early, late):
            continue
        behind = tuple(sorted(r for r, w in stuck if w.seq == first))
        return Passed(behind, early, tuple(sorted(r for r, _ in later)), late)
    return None
