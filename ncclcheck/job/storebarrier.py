"""Ranks waiting in c10d's store-based barrier: processes that never reached a process group's creation.

init_process_group and new_group end in ``_store_based_barrier`` (torch/distributed/distributed_c10d.py): each process
adds itself to the group's store key and waits until the count is the world's size; every process of the world must
enter new_group, member of the new group or not. The waiting ranks log the count (evidence/formats/pgstart.py reads
the wait and its timeout as ``R W C K`` facts): W-C processes never got there. What held them, no line of the
barrier says: a hung import, a logger's or tracker's set-up, data loading on one rank, a crash of their own, or a
path that skips the call.

The ranks that reached the barrier all wait in it until the last arrives, so where the waiting ranks the lines name
are as many as the count (C), the world's other ranks are exactly those that never arrived: ``lagging_rank``, each a
culprit; else they are unknown, and the verdict is ``incomplete_evidence`` with the waiting ranks named. It is
read where a key's wait has no ``Completed store-based barrier`` line after it, no collective hung (the hang's rules
decide there), and the verdict so far is nothing failed (or only ranks without input), a start that did not finish,
a store's wait or the failure of a waiting rank itself (its timeout).
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import Fact
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

BARRIER_WAIT = cause("store_barrier_wait")
# The causes a verdict may already hold that the barrier's lines explain better: a start with nothing after it (the
# wait line is a start's line too) and the store's wait giving up (the barrier's own wait, 2.x).
_EXPLAINED = ("pg_start_unfinished", "store_wait", "store_unreachable")


def _waits(job: Job) -> list[tuple[int, int, int, str, Fact]]:
    """Every barrier wait whose key no completion line closes: (rank, world, joined, key, fact)."""
    out = []
    for f in job.facts.barrier_waits:
        rank, world, joined, key = f.value.split(" ", 3)
        if key not in job.facts.barriers_done:
            out.append((int(rank), int(world), int(joined), key, f))
    return out


def barrier_waited(job: Job, d: Decision) -> Decision:
    """The decision for ranks waiting in the store-based barrier (the module's docstring), else ``d``."""
    if d.primary is not None or not (waits := _waits(job)):
        return d
    waited = {w[0] for w in waits}
    explained = d.cause is not None and d.cause.cause.kind in _EXPLAINED
    failed = d.kind is VerdictKind.RANK_FAILED_FIRST and d.cause is None and set(d.culprits) <= waited
    quiet = d.cause is None and d.kind in (VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE)  # nothing failed, or no input
    if not (quiet or explained or failed):
        return d
    last = max(waits, key=lambda w: (w[2] == w[1], w[4].loc.file, w[4].loc.line))  # the key still short
    _, world, joined, key, fact = last
    waiting = sorted({w[0] for w in waits if w[3] == key})
    short = world - joined
    missing = sorted(set(range(world)) - set(waiting)) if len(waiting) == joined and waiting[-1] < world else []
    who = rank_phrase(waiting, job.world).capitalize()
    detail = f"{who} waited in the store-based barrier for {key}: {joined} of {world} processes reached it"
    if missing:
        gone = (f"{rank_phrase(missing)} never reached it: the {joined} ranks that did all wait there and each "
                "prints its own line, so the others of the world are the ones missing")
    else:
        gone = (f"{short} process{'es' if short != 1 else ''} never reached it, and the lines do not say which (every "
                "rank that reached it prints its wait; the ranks missing from those lines, in every rank's log, are the "
                "ones)")
    summary = (f"{detail} ({fact.loc}; world_size={world}, {joined} joined). The barrier ends a process group's "
               "creation (init_process_group, new_group) and waits until every process of the world has reached it: "
               f"{gone}. What held them no line here says: a process stuck or busy before the group's creation (a hung "
               "import, a logger's or experiment tracker's set-up, data loading on one rank), one that died first, or "
               "one whose code path skips the call (new_group must be entered by every process, member or not).")
    locs = tuple(dict.fromkeys(w[4].loc for w in waits))[:8]
    diag = Diagnosis(BARRIER_WAIT, tuple(waiting), detail, fact.loc, locs, detail)
    kind = VerdictKind.LAGGING_RANK if missing else VerdictKind.INCOMPLETE
    return replace(d, kind=kind, summary=summary, culprits=tuple(missing), waiting=tuple(waiting), cause=diag,
                   busy=None, unnamed_busy=None, killed=False)
