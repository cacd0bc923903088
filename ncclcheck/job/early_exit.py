"""A rank that left early: it exited with status 0 while the others still needed it (issue 41 §4).

A process that returns normally has run every collective its code asked for; the others were still inside one
with it (a timeout, or gloo's and NCCL's word that the peer went away when its sockets closed). So it ran fewer
collectives than they did: its loop ended sooner (a smaller shard, an uneven last batch, a rank-dependent
``break`` or ``return``). That is a mismatch of the program's collectives, fixed in the code, not a failure of the
rank: it did not crash and it did not lag. torchrun tells such a rank by leaving it out of its failure report
(it lists the workers that failed, ``ProcessFailure``, never one that exited 0): job/build.py reads it as
``EXITED``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.job.hang import primary_work
from ncclcheck.job.model import EndKind, Job, VerdictKind
from ncclcheck.job.partition import waited
from ncclcheck.job.phrases import place
from ncclcheck.ranks import rank_phrase


def left_early(job: Job, kind: VerdictKind, culprits: Sequence[int],
               summary: str) -> tuple[VerdictKind, list[int], str]:
    """A verdict that names only ranks that exited 0 as failed: a collective mismatch, said as such."""
    states = [job.rank(r) for r in culprits]
    if kind is not VerdictKind.RANK_FAILED_FIRST or not states or \
            any(s is None or s.ending.kind is not EndKind.EXITED for s in states):
        return kind, list(culprits), summary
    named = set(culprits)
    others = [s for s in job.ranks if s.rank not in named and s.present and waited(s)]
    if not others:
        return kind, list(culprits), summary
    left = rank_phrase(culprits)
    at = next((s.ending.loc for s in states if s is not None and s.ending.loc is not None), None)
    work = primary_work(job)
    inside = (f"waited in {place(work)}" if work is not None else
              f"were still inside a collective with {'it' if len(named) == 1 else 'them'}: "
              f"{'its' if len(others) == 1 else 'their'} first error says the peer went away "
              f"({others[0].ending.loc})" if others[0].ending.loc is not None else "were still inside a collective")
    return (VerdictKind.COLLECTIVE_MISMATCH, list(culprits),
            f"{left.capitalize()} exited with status 0{f' ({at})' if at is not None else ''} while "
            f"{rank_phrase(s.rank for s in others)} {inside}: {left} ran fewer collectives than they did. Its "
            "training loop ended sooner (a smaller shard or an uneven last batch, a rank-dependent `break` or "
            "`return`), so the others called a collective it never would. Nothing crashed or lagged; the code must "
            "give every rank the same number of steps (DistributedSampler with drop_last=True, or the same step "
            "count on every rank).")
