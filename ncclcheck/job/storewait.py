"""A store's wait that timed out after the job had run: ranks waiting for a rank still at work, not a lost store.

PyTorch's TCPStore waits for keys in ``TCPStore::doWait`` (torch/csrc/distributed/c10d/TCPStore.cpp, under every
``get``, ``wait`` and ``multi_get``): the client asks the server to wait for the keys and, when they are not set
within the timeout, cancels and raises, ``Socket Timeout`` up to 2.1 and ``wait timeout after <N>ms, keys: <keys>``
since. The server answered the wait, so the store was reachable; a key was not set, and another rank sets it when it
gets to the same point: a store-based barrier, an object or key exchange, a group's or communicator's set-up.

At start-up that is a rank that never started, had not got there or died first: 2.1's words stay the catalogue's
``store_unreachable`` (its older reading), the words since 2.2 ``incomplete_evidence`` with the waiters named and no
culprit (the rank waited for is not named by any line).
Once the inputs show the job had run (a rank's progress past its first count, a line of another phase's work, a
collective TORCH_DISTRIBUTED_DEBUG's wrapper logged, NCCL's set-up complete), it is ranks that waited at such a point
for a rank that had not got there: ``lagging_rank``. The rank still at work is the culprit where a line names it: a
busy line of its own (job/slow.py), or, for a busy line that names no rank (a console without rank prefixes, where
frameworks print their progress from the main process), the one rank the inputs show going on, not waiting: its own
line after that work (the wrapper's next collective), or the launcher's stop of it while it still ran. Else no rank
is named, and the busy line is said beside the verdict. It was slow, not dead: the fixes are the busy rank's.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.evidence.types import Fact, Loc, RankError
from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import EndKind, Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.job.slow import busy_rank
from ncclcheck.ranks import rank_phrase

STORE_WAIT = cause("store_wait")
# The causes a store's wait is read as before the job is shown past its start.
_READ_AS = ("store_unreachable", "store_wait")
# Endings of a rank that still ran when the others gave up: stopped by the launcher after their failure, or no end.
_STILL_RAN = (EndKind.ABORTED, EndKind.SILENT, EndKind.RUNNING)


def _waits(job: Job) -> list[RankError]:
    """Every error line that is the store's wait giving up (TCPStore::doWait: evidence/formats/storeclient.py)."""
    return [e for e in job.facts.errors if e.store is not None and e.store.waited]


def _ran(job: Job, first: RankError, waited: set[int]) -> Fact | None:
    """The first line that shows the job past its start when the store's wait gave up: before that wait in its file,
    a count past 0, a collective the DETAIL wrapper logged, NCCL's set-up complete; anywhere, a line of another
    phase's work by a rank that did not wait (the parser keeps a rank's last such line only)."""
    facts = job.facts
    before = [f for f in (*facts.wrapper_calls, *facts.nccl_ready, *facts.progress)
              if f.loc.file == first.loc.file and f.loc.line < first.loc.line
              and (f.key != "progress" or not f.value.rpartition(": ")[2].startswith("0/"))]
    busy = [f for _, f in job.facts.busy if f.who.rank not in waited or f.who.rank is None]
    return min((*before, *busy), key=lambda f: (f.loc.file, f.loc.line), default=None)


def store_waited(job: Job, d: Decision) -> Decision:
    """The decision for a store's wait that gave up after the job had run (the module's docstring), else ``d``."""
    waits = _waits(job)
    if not waits or d.primary is not None:  # a rank stuck in a collective: the hang's rules decide (job/hang.py)
        return d
    said = d.cause is not None and d.cause.cause.kind in _READ_AS and d.cause.store is not None and d.cause.store.waited
    waited = {r for e in waits if (r := e.who.rank) is not None}
    failed = d.kind is VerdictKind.RANK_FAILED_FIRST and d.cause is None and bool(d.culprits) and \
        set(d.culprits) <= waited
    if not (said or failed):
        return d
    first = min(waits, key=lambda e: (e.loc.file, e.loc.line))
    ran = _ran(job, first, waited)
    if ran is None:
        return _at_start(job, d, first, waited) if d.cause is not None and d.cause.cause.kind == STORE_WAIT.kind else d
    timeout_ms = first.store.wait_ms if first.store is not None else None
    lines, used = job.facts.busy, job.facts.framework
    named = sorted({f.who.rank for _, f in lines if f.who.rank is not None and f.who.rank not in waited})
    busy, culprits = None, []
    if len(named) == 1:
        busy = busy_rank(lines, used, named[0], timeout_ms)
        culprits = [named[0]] if busy is not None else []
    unnamed = busy_rank(lines, used, None, timeout_ms) if busy is None else None
    if unnamed is not None and (on := _going_on(job, waited, unnamed.loc)) is not None:
        busy, unnamed, culprits = replace(unnamed, rank=on[0], named_by=on[1]), None, [on[0]]
    waiting = sorted(waited - set(culprits))
    who = rank_phrase(waiting, job.world).capitalize() if waiting else "Ranks"
    detail = " ".join(first.message.split())[:200]
    summary = (f"{who} waited in the rendezvous store for a key that was not set in time: \"{detail}\" ({first.loc}) "
               "is the store's wait giving up (TCPStore::doWait), not a store that could not be reached: it answered "
               f"the wait. The inputs show the job past its start ({ran.loc}), so this was a store-based wait (a "
               "barrier, an object or key exchange, a new group's set-up) for a rank that had not got there yet"
               + ("." if culprits else ": no line names which rank that was."))
    locs = tuple(dict.fromkeys((first.loc, *(e.loc for e in waits[1:4]), ran.loc)))
    diag = Diagnosis(STORE_WAIT, tuple(waiting), detail, first.loc, locs, detail, store=first.store)
    return replace(d, kind=VerdictKind.LAGGING_RANK, summary=summary, culprits=tuple(culprits),
                   waiting=tuple(waiting), cause=diag, busy=busy, unnamed_busy=unnamed, killed=False)


def _going_on(job: Job, waited: set[int], after: Loc) -> tuple[int, str] | None:
    """The one rank the inputs show going on, not waiting, once the work a line that names no rank was done: its own
    line after that line (the DETAIL wrapper's next collective), or the launcher's stop of it while it ran."""
    went = {int(f.value.partition(" ")[0]): f.loc for f in job.facts.wrapper_calls
            if f.loc.file == after.file and f.loc.line > after.line}
    stopped = {s.rank: s.ending.loc for s in job.ranks if s.ending.kind in _STILL_RAN and s.present}
    ranks = (set(went) | set(stopped)) - waited
    if len(ranks) != 1:
        return None
    rank = ranks.pop()
    if rank in went:
        return rank, (f"rank {rank}'s own line after it ({went[rank]}) shows that rank going on to its next "
                      "collective once the work was done, and no line shows it waiting in the store: frameworks "
                      "print such progress from the main process")
    return rank, (f"rank {rank} is the one rank that did not wait in the store: it was still running when the launcher "
                  f"stopped it ({stopped[rank]}), and frameworks print such progress from the main process")


def _at_start(job: Job, d: Decision, first: RankError, waited: set[int]) -> Decision:
    """The store's wait with nothing before it to show the job had run: the ranks that raised it waited for a rank
    that never started, never got to that point or died first; that rank is not in these inputs' words."""
    waiting = sorted(waited)
    who = rank_phrase(waiting, job.world).capitalize() if waiting else "A rank"
    detail = " ".join(first.message.split())[:200]
    summary = (f"{who} waited in the rendezvous store for a key that was not set in time: \"{detail}\" ({first.loc}) "
               "is the store's wait giving up (TCPStore::doWait): the store answered, so it was reachable, and the key "
               "is another rank's to set. Nothing before it shows the job had run: that rank never started, had not "
               "got to this point (still loading or preprocessing) or died first; no line here says which rank it is, "
               "so bring every rank's log.")
    return replace(d, kind=VerdictKind.INCOMPLETE, summary=summary, culprits=(), waiting=tuple(waiting), killed=False)
