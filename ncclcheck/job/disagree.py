"""Members whose own calls at one sequence number of one group differ: the catalogue's calls_disagree.

ProcessGroupNCCL numbers each group's collectives in the order the program issues them (``seq_`` in
ProcessGroupNCCL.cpp: the watchdog's ``WorkNCCL(SeqNum=N, OpType=..., NumelIn=...)`` and the flight recorder's
``collective_seq_id``), one count per group on every member, so one call of the program has one number on every rank.
Two members whose work at the same number is the same op with another element count made one call with different
sizes: NCCL checks no size across ranks (a broadcast or all_reduce of different counts waits for data that never
comes, or reads too much), so the collective hangs or corrupts. That is calls_disagree's mechanism (job/catalogue/
calls_disagree.toml: data or buffers of different shapes on different ranks), whether or not a majority singles one
side out; who is wrong stays the verdict's (job/hang.py names a side only with a reason). Another op at the number is
most often another place in the program (a rank that ran one iteration more or fewer: its next call is another op),
which the hang's steps explain (job/waitsteps.py); lines without a number (gloo's, old releases') show where each
rank is blocked, not one position; a send and its receive are matched by their own rule: none is read here. So is a
one-element ALLREDUCE against a larger one: ProcessGroupNCCL's ``barrier()`` is an all_reduce of a one-element
tensor, recorded as ``OpType=ALLREDUCE, NumelIn=1``, so the pair may be a barrier against an all_reduce (a rank at
another place), not one call.
"""

from __future__ import annotations

from collections import Counter

from ncclcheck.evidence.types import Loc
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.hang import works_at
from ncclcheck.job.model import EdgeReason, GroupId, Job, VerdictKind, Work
from ncclcheck.job.passed import passed
from ncclcheck.job.phrases import sig
from ncclcheck.ranks import rank_phrase

DISAGREE = cause("calls_disagree")


def _line(job: Job, rank: int, w: Work) -> Loc | None:
    """The line of a rank's work: its own, or the timeout line of the same work (a dump's entry has none)."""
    s = job.rank(rank)
    stuck = s.stuck if s is not None else None
    if w.loc is None and stuck is not None and (stuck.group, stuck.seq) == (w.group, w.seq):
        return stuck.loc
    return w.loc


def _input(job: Job, rank: int) -> Loc | None:
    """A rank's input as a whole, where its work has no line (a flight-recorder dump's entry)."""
    s = job.rank(rank)
    return Loc(s.files[0], 0) if s is not None and s.files else None


def calls_differ(job: Job) -> Diagnosis | None:
    """The first collective whose members' works at one printed sequence number are one op of different sizes, as
    calls_disagree."""
    seen: set[tuple[GroupId, int]] = set()  # each call once: works_at walks every rank, and many edges share a call
    for e in job.edges:
        if e.reason is not EdgeReason.DIFFERENT_COLLECTIVE or e.work.p2p or e.work.seq is None \
                or (e.work.group, e.work.seq) in seen:
            continue
        seen.add((e.work.group, e.work.seq))
        works = works_at(job, e.work.group, e.work.seq)
        sigs = Counter(sig(w) for w in works.values())
        ops = {w.op for w in works.values()}
        if len(sigs) < 2 or len(ops) != 1 or ops == {"ALLREDUCE"} and any(w.numel_in == 1 for w in works.values()):
            continue  # another op, or a barrier's one-element all_reduce: maybe another place in the program
        where = "; ".join(f"{rank_phrase(r for r, w in works.items() if sig(w) == k)}: {k}" for k in sigs)
        locs = tuple(dict.fromkeys(loc for r, w in sorted(works.items())
                                   if (loc := _line(job, r, w) or _input(job, r)) is not None))
        if not locs:
            continue
        detail = f"at #{e.work.seq} of {e.work.group.label()} the ranks issued different collectives ({where})"
        return Diagnosis(DISAGREE, tuple(sorted(works)), detail, locs[0], locs[:8], detail)
    return _passed_sizes(job)


def _passed_sizes(job: Job) -> Diagnosis | None:
    """Members stuck at two numbers of one group in one op of two sizes, the earlier a call the others finished with
    (job/passed.py): their calls at that number were of different sizes, as calls_disagree (another op is left to the
    hang's steps, as above)."""
    if (p := passed(job)) is None or p.early.op != p.late.op or p.early.numel_in == 1 or p.late.numel_in == 1:
        return None
    ranks = (*p.behind, *p.ahead)
    locs = tuple(dict.fromkeys(loc for r in sorted(ranks) if (s := job.rank(r)) is not None and s.stuck is not None
                               and (loc := s.stuck.loc) is not None))
    if not locs:
        return None
    detail = (f"in {p.early.group.label()} {rank_phrase(p.behind)} {'is' if len(p.behind) == 1 else 'are'} still in "
              f"{p.early.number} ({sig(p.early)}), which {rank_phrase(p.ahead)} completed before {p.late.number} "
              f"({sig(p.late)}): the ranks issued {p.early.op} calls of different sizes")
    return Diagnosis(DISAGREE, tuple(sorted(ranks)), detail, locs[0], locs[:8], detail)


def restate(job: Job, kind: VerdictKind, culprits: list[int], summary: str, found: Diagnosis | None,
            ) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """A mismatch of the members' own calls with no cause of the catalogue's read from a line: calls_disagree."""
    if kind is not VerdictKind.COLLECTIVE_MISMATCH or found is not None:
        return kind, culprits, summary, found
    return kind, culprits, summary, calls_differ(job)
