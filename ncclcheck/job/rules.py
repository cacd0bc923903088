"""The verdict's decision, from the job model only: which kind, who failed, who waited, which cause.

A hang's rules are in job/hang.py; these are the rest: no rank stuck in a collective (a stuck watchdog, DETAIL's
mismatch, a failure, lost peers, nothing), the catalogue's cause where it names the failure better, a live job's
positions, and what a lagging rank was busy with. Everything is decided from ``Job`` (its ``facts`` hold what the
inputs say beyond the ranks); the one lookup that still reads lines, the cause catalogue's, is given as a function.
The result is a frozen :class:`Decision`; job/wording.py words its findings and next steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ncclcheck import signals
from ncclcheck.evidence.types import ErrorKind, Loc
from ncclcheck.job import callphase, disagree, dupgpu, nodeloss, worldview
from ncclcheck.job.causes import (
    DEVICE,
    HOST,
    LATE,
    LAUNCHER,
    MEMORY,
    NETWORK,
    PROGRAM,
    SETUP,
    Diagnosis,
    awaited_rank,
    awaiting_ranks,
    one_line,
)
from ncclcheck.job.early_exit import left_early
from ncclcheck.job.findings import mismatch_summary
from ncclcheck.job.frmatch import history_verdict
from ncclcheck.job.hang import (
    FAILED,
    alone_after_the_end,
    consistent,
    culprits_work,
    cycle,
    find_roots,
    primary_work,
    stuck_verdict,
)
from ncclcheck.job.live import HOST_CODE, UNKNOWN, blocked_summary, live_summary
from ncclcheck.job.model import EndKind, Job, VerdictKind, Work
from ncclcheck.job.origins import interrupted_job, unended
from ncclcheck.job.partition import stopped
from ncclcheck.job.phrases import absent_phrase, cap, nobody
from ncclcheck.job.remote import unnamed_remote
from ncclcheck.job.sizecheck import sized_call
from ncclcheck.job.slow import Busy, busy_member, busy_rank
from ncclcheck.job.stated import restate
from ncclcheck.job.unplaced import unplaced_killed, unplaced_verdict
from ncclcheck.ranks import rank_phrase

# The cause catalogue's match (causes.diagnose over the job): killed ranks with their line and signal, when the
# first watchdog fired, and the ranks named for dying without a word.
Diagnose = Callable[[list[tuple[int | None, Loc, str]], float | None, list[int]], Diagnosis | None]


@dataclass(frozen=True)
class Decision:
    """The verdict as decided, before it is worded: the kind, the ranks in each role and the facts the words need."""

    kind: VerdictKind
    summary: str  # the rule's own sentence; a busy rank's words are added by job/wording.py
    culprits: tuple[int, ...]
    waiting: tuple[int, ...]
    unknown: tuple[int, ...]  # ranks without input, where a failure was found
    ring: tuple[int, ...]  # a deadlock's ranks
    cause: Diagnosis | None  # the catalogue's cause
    primary: Work | None  # the work the waiters are stuck in
    named: Work | None  # the collective the verdict names (where the culprit did not arrive)
    busy: Busy | None  # what the one lagging culprit was busy with
    unnamed_busy: Busy | None  # a busy line that names no rank, beside a lagging or incomplete verdict
    killed: bool  # a culprit was killed by SIGKILL (or an unnamed signal), and no host record says by whom
    dumped: bool  # every present rank's flight-recorder dump is in the inputs, and no rank is unknown
    waited: str  # what the others printed after the culprit failed: "timeouts", "NCCL errors" or ""

    @property
    def found(self) -> bool:
        return self.kind is not VerdictKind.NO_FAILURE


def decide_job(job: Job, diagnose: Diagnose) -> Decision:
    """The verdict's decision over the job model: the hang's rules or the quiet ones, then the cause, the live job's
    positions and a lagging rank's last busy line."""
    primary = primary_work(job)
    ring: list[int] = []
    if primary is not None:
        roots = find_roots(job)
        kind, culprits, summary = consistent(job, *stuck_verdict(job, roots, primary))
        absent = all((s := job.rank(r)) is not None and s.ending.kind is EndKind.UNKNOWN for r in culprits)
        if (kind is VerdictKind.INCOMPLETE or kind is VerdictKind.LAGGING_RANK and absent) and \
                (alone := alone_after_the_end(job, primary)) is not None:  # a member without input did finish
            kind, culprits, summary = alone
        if kind is VerdictKind.DEADLOCK:
            ring = cycle(job, roots.named)
        blamed = set(culprits)
        waiting = sorted(s.rank for s in job.ranks if s.stuck is not None and s.rank not in blamed)
    else:
        kind, culprits, waiting, summary = _quiet_verdict(job)
    kind, culprits, summary = left_early(job, kind, culprits, summary)  # an exit 0 while others wait (early_exit.py)
    killed_ranks: list[tuple[int | None, Loc, str]] = [(s.rank, s.ending.loc, s.ending.signal or "") for s in job.ranks
                                                       if s.ending.kind is EndKind.KILLED and s.ending.loc is not None]
    killed_ranks += unplaced_killed(job)  # workers the launcher names by their local rank alone (job/unplaced.py)
    fired = [r.started_s + r.ran_for_ms / 1000 for r in job.records if r.started_s is not None and r.ran_for_ms]
    # Ranks named for dying without a word (their peers' lost connections point at them): no line of theirs says how.
    silent = [r for r in culprits if kind is VerdictKind.RANK_FAILED_FIRST and (s := job.rank(r)) is not None
              and s.ending.kind is EndKind.SILENT]
    kind, culprits, summary, cause = _with_cause(job, kind, culprits, summary,
                                                 diagnose(killed_ranks, min(fired, default=None), silent),
                                                 job.facts.hosts)
    kind, culprits, summary, cause = disagree.restate(job, kind, culprits, summary, cause)  # job/disagree.py
    kind, culprits, summary, cause = restate(job, kind, culprits, summary, cause, primary is not None)
    kind, culprits, summary, cause = callphase.restate(job, kind, culprits, summary, cause)  # job/callphase.py
    kind, culprits, summary, cause = nodeloss.restate(job, kind, culprits, summary, cause)  # job/lostnode.py
    kind, culprits, summary, cause = worldview.restate(job, kind, culprits, summary, cause)  # job/worldview.py
    blamed = set(culprits)
    waiting = [r for r in waiting if r not in blamed]
    kind, summary = _live_words(job, kind, culprits, summary)
    timeout_ms = primary.timeout_ms if primary is not None else None
    lines, used = job.facts.busy, job.facts.framework
    busy = (busy_rank(lines, used, culprits[0], timeout_ms) if kind is VerdictKind.LAGGING_RANK and len(culprits) == 1
            else None)
    if (member := busy_member(job, kind, culprits, summary, primary, lines, used)) is not None:
        busy, summary = member  # a busy member that waited nowhere, from its line or the console's (job/slow.py)
    unnamed = (busy_rank(lines, used, None, timeout_ms)
               if busy is None and kind in (VerdictKind.LAGGING_RANK, VerdictKind.INCOMPLETE) else None)
    found = kind is not VerdictKind.NO_FAILURE
    killed = any(s.ending.kind is EndKind.KILLED and s.ending.signal in (None, "SIGKILL")
                 for s in job.ranks if s.rank in blamed)
    # A rank the others wait for can be named even without its own input; what it did stays unknown.
    unknown = [s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN] if found else []
    named = culprits_work(job, primary, culprits) if primary is not None else None
    host_kill = cause is not None and cause.cause.kind == "host_kill"
    dumps = job.facts.dumped
    dumped = bool(dumps) and {s.rank for s in job.ranks if s.present} <= dumps
    waiters = set(waiting)
    others = [s for s in job.ranks if s.rank in waiters]
    waited = ("timeouts" if any(s.stuck is not None for s in others) else
              "NCCL errors" if any(s.ending.kind is EndKind.NCCL_ERROR for s in others) else "")
    return Decision(kind, summary, tuple(culprits), tuple(waiting), tuple(unknown), tuple(ring), cause, primary, named,
                    busy, unnamed, killed and not host_kill, dumped and not unknown, waited)


def _quiet_verdict(job: Job) -> tuple[VerdictKind, list[int], list[int], str]:
    """No rank is stuck in a collective: a stuck watchdog, a DETAIL mismatch, a failure, an NCCL error, or nothing."""
    by_rank = {s.rank: s for s in job.ranks}
    heartbeats = job.facts.heartbeats
    mismatches = job.facts.mismatches
    failed = [s.rank for s in job.ranks if s.ending.kind in FAILED]
    nccl_err = [s.rank for s in job.ranks if s.ending.kind is EndKind.NCCL_ERROR]
    if heartbeats and (exits := job.facts.exit_teardown):
        hung = sorted({h.who.rank for h in heartbeats if h.who.rank is not None})
        said = sorted({f.who.rank for f in exits if f.who.rank is not None})
        groups = sorted({h.pg.label() for h in heartbeats if h.pg is not None})
        return (VerdictKind.WATCHDOG_STUCK, [], [],
                f"The heartbeat monitor fired on {rank_phrase(hung) or 'a rank'}"
                f"{' in ' + ', '.join(groups) if groups else ''} after the program had ended: "
                f"{rank_phrase(said) or 'the ranks'} printed 'destroy_process_group() was not called before program "
                f"exit' ({exits[0].loc}) before it. The work was done; the process groups were being torn down by the "
                "interpreter's exit, on each rank in its own order, and a communicator's teardown hung. No rank is the "
                "culprit.")
    if heartbeats:
        hung = sorted({h.who.rank for h in heartbeats if h.who.rank is not None})
        if len(hung) > 1:  # the same block on each: what they share, none of them singled out (job/afterend.py)
            return (VerdictKind.WATCHDOG_STUCK, [], [],
                    f"The heartbeat monitor fired on {rank_phrase(hung)}: the NCCL watchdog thread of each was stuck, "
                    "not a collective timeout. Stuck alike on several ranks, they share what blocked them (a "
                    "communicator's tear-down or abort waiting for its other ranks, as at the program's exit with its "
                    "groups never destroyed, or a CUDA call hung on each), so none of them is singled out.")
        return (VerdictKind.WATCHDOG_STUCK, hung, [],
                f"The heartbeat monitor fired on {rank_phrase(hung) if hung else 'a process no line names'}: the NCCL "
                "watchdog thread was stuck, not a collective timeout. A CUDA call or the GIL is blocked in that process.")
    if mismatches:
        culprits, waiting, summary = mismatch_summary(mismatches)
        return VerdictKind.COLLECTIVE_MISMATCH, culprits, waiting, summary
    if failed:
        return (VerdictKind.RANK_FAILED_FIRST, failed, nccl_err,
                "; ".join(f"Rank {r} failed: {by_rank[r].ending.detail}" for r in failed) + ".")
    if nccl_err:
        return _lost_peer_verdict(job, nccl_err)
    # A launcher's task range of a stated world far beyond the inputs: said as stated, its ranks never listed.
    spans = [f for f in job.facts.elastic if f.rank is not None and f.last_rank is not None
             and job.rank(f.rank) is None]
    killed = [f for f in spans if f.signal in signals.FATAL]
    if killed:
        f = killed[0]
        assert f.rank is not None and f.last_rank is not None
        return (VerdictKind.RANK_FAILED_FIRST, [], [],
                f"The launcher reports {f.last_rank - f.rank + 1:,} tasks killed by {f.signal}"
                f"{' on ' + f.host if f.host else ''} (ranks {f.rank}-{f.last_rank}, {f.loc}); these inputs hold none "
                "of them, so they are reported as stated, not one by one.")
    elastic = sorted({f.rank for f in job.facts.elastic if f.rank is not None
                      and not (f.last_rank is not None and job.rank(f.rank) is None)})  # not in spans
    if elastic:
        # SIGABRT is the watchdog's abort after a wait; a launcher's SIGTERM says nothing of one: stopped, not waiting
        # The launcher's words are its own (torchrun's failure table, mpirun's or prterun's notice): cite its line.
        aborted = [r for r in elastic if (s := job.rank(r)) is None or not stopped(s)]
        first = min((f for f in job.facts.elastic if f.rank is not None), key=lambda f: (f.loc.file, f.loc.line))
        return (VerdictKind.ALL_RANKS_STUCK, [], aborted,
                f"Every failed rank the launcher reports ({first.loc}) ended by SIGABRT (the abort PyTorch's NCCL "
                "watchdog makes after a collective timeout, as does any other abort(): an uncaught C++ exception, a "
                "failed assertion) or SIGTERM (the launcher stopping the survivors); no timeout line is in these "
                "inputs. Give the ranks' own logs to name the collective, or the abort's own message.")
    if (local := unplaced_verdict(job)) is not None:  # a worker named by its local rank alone (job/unplaced.py)
        return local
    stop = interrupted_job(job)  # Ctrl-C: every rank stopped by SIGINT (job/origins.py)
    if stop is not None:
        return stop
    if (remote := unnamed_remote(job)) is not None:  # NCCL lost a peer, and no line names a rank (job/remote.py)
        return remote
    unnamed = job.facts.unnamed_failures
    if unnamed:
        e = unnamed[0]
        more = f" ({len(unnamed) - 1} more such line{'s' if len(unnamed) > 2 else ''})" if len(unnamed) > 1 else ""
        # NCCL's own error line (its WARN, "NCCL error: ...") is a failure inside NCCL, whichever process printed it
        kind = VerdictKind.NCCL_ERROR if e.kind in (ErrorKind.NCCL_ERROR, ErrorKind.NCCL_WARN) \
            else VerdictKind.RANK_FAILED_FIRST
        return (kind, [], [],
                f"A process failed: {one_line(e.message)} ({e.loc}){more}. The line names no rank; the per-rank logs "
                "(torchrun --log-dir DIR --redirects 3 --tee 3) or a [rankN]: prefix would.")
    if (history := history_verdict(job)) is not None:  # the dumps' calls disagreed, though nothing is stuck
        return history
    present = sorted(s.rank for s in job.ranks if s.present and 0 <= s.rank < (job.world or 0))
    # A launcher's console that tags no line with a rank (Accelerate's, DeepSpeed's) carries its workers' output
    # untagged: that no rank is named there says nothing of which ranks it covers.
    if job.world and present and len(present) < job.world:
        # Every rank of a world that was materialised has a state; a stated world's other ranks are ranges.
        missing = absent_phrase(job, [s.rank for s in job.ranks if not s.present and 0 <= s.rank < job.world])
        return (VerdictKind.INCOMPLETE, [], [],
                f"Nothing failed in these inputs, but they cover {len(present)} of the job's {job.world} "
                f"ranks: {missing} left no input. A node that "
                "died or a rank killed there "
                "shows only in its own logs, its agent's console or the host's kernel log (dmesg -T).")
    cut = unended(job)  # torchrun's per-rank files alone, all stopping without an ending (job/origins.py)
    if cut is not None:
        return cut
    return (VerdictKind.NO_FAILURE, [], [],
            "No collective timeout, NCCL error, desync, heartbeat failure or rank failure found in these inputs.")


def _lost_peer_verdict(job: Job, nccl_err: list[int]) -> tuple[VerdictKind, list[int], list[int], str]:
    """Ranks whose NCCL lost a connection: the root is a rank that stopped without a word, narrowed to the host of
    the peer their WARN lines name when the inputs place ranks there."""
    by_rank = {s.rank: s for s in job.ranks}
    quiet = [s.rank for s in job.ranks if s.ending.kind is EndKind.SILENT]
    lost = job.facts.peers_lost
    hosts = job.facts.hosts
    there = sorted({r for p in lost for r in p.ranks} - set(nccl_err))
    placed = set(there)
    # A quiet rank the inputs place on another host than every lost peer did not take the connection down (the
    # peers' names together: a rank is elsewhere than each of them when it is at none of their names).
    peer_names: frozenset[str] = frozenset().union(*(p.names for p in lost))
    suspects = [r for r in quiet if r in placed] or [
        r for r in quiet if not (lost and (at := hosts.get(r, frozenset())) and not peer_names & at)]
    said = "; ".join(f"Rank {r}: {by_rank[r].ending.detail}" for r in nccl_err[:3]) + "."
    if lost:
        p = lost[0]
        who = f"Rank {p.reporter}'s NCCL" if p.reporter is not None else "NCCL"
        said += f" {who} lost its connection to the peer {p.peer} ({p.loc})" + (
            f", the host of {rank_phrase(p.ranks)}." if p.ranks else ", a host no rank in these inputs names.")
    stops = "its log stops" if len(suspects) == 1 else "their logs stop"
    if suspects and all(by_rank[r].ending.gone is not None for r in nccl_err):
        # Every error says only that a peer went away, and a rank stopped without a word: its death is the
        # failure, the others' lost connections its consequence (a rank alive behind a failed link prints an
        # error or a timeout of its own).
        return (VerdictKind.RANK_FAILED_FIRST, suspects, nccl_err,
                f"{rank_phrase(suspects).capitalize()} printed no error: {stops} while {rank_phrase(nccl_err)} lost "
                f"{'its connection' if len(nccl_err) == 1 else 'their connections'} to a peer. {said}")
    if suspects:
        return (VerdictKind.NCCL_ERROR, suspects, nccl_err,
                f"{said} {rank_phrase(suspects).capitalize()} printed no error: {stops}, as a rank that died would.")
    absent = [r for r in there if not by_rank[r].present] if there else []
    if absent:
        return (VerdictKind.NCCL_ERROR, [], nccl_err,
                f"{said} {rank_phrase(absent).capitalize()} left no input: what happened there is in their own logs "
                "and that host's kernel log.")
    if lost and not any(p.ranks for p in lost):
        elsewhere = f" {rank_phrase(quiet).capitalize()} ran on another host." if quiet else ""
        return (VerdictKind.NCCL_ERROR, [], nccl_err,
                f"{said}{elsewhere} Collect the logs of the ranks on that host and its kernel log (dmesg -T): a rank "
                "that died there, or the link to it, is the cause.")
    return VerdictKind.NCCL_ERROR, [], nccl_err, f"{said} No rank in these inputs stopped without an error: suspect the network."


# Verdicts a cause from the catalogue may restate: they name a failure but not why it happened.
_RESTATABLE = {VerdictKind.NO_FAILURE, VerdictKind.RANK_FAILED_FIRST, VerdictKind.NCCL_ERROR, VerdictKind.ALL_RANKS_STUCK,
               VerdictKind.INCOMPLETE}


def _with_cause(job: Job, kind: VerdictKind, culprits: list[int], summary: str,
                d: Diagnosis | None, hosts: Mapping[int, frozenset[str]] | None = None,
                ) -> tuple[VerdictKind, list[int], str, Diagnosis | None]:
    """Let the catalogue's cause name the failure, where the verdict so far only said that ranks failed or waited.

    A hang with a root of its own (a lagging rank, a mismatch) keeps its verdict; the cause stands beside it
    only when it is about the same ranks. Two causes decide whatever the hang looked like: an InfiniBand/RoCE
    completion error is the transport's failure between the ranks that report it (never a lagging rank), and
    ranks that waited for another's NCCL id name that rank.
    """
    if d is None:
        return kind, culprits, summary, None
    if kind is VerdictKind.COLLECTIVE_MISMATCH and d.cause.family == PROGRAM:
        return kind, culprits, summary, d  # the catalogue says why calls disagree; the verdict already says who
    # A rank that failed on its own (an exception, an exit) before its peers' NICs gave up is the cause; their
    # completion errors are its echo.
    echo = kind is VerdictKind.RANK_FAILED_FIRST and bool(culprits) and not set(culprits) & set(d.ranks)
    if d.cause.kind == "ib_error" and not echo and kind not in (VerdictKind.DEADLOCK, VerdictKind.COLLECTIVE_MISMATCH):
        where = [f"rank {r} ({min(hs, key=len)})" if (hs := (hosts or {}).get(r)) else f"rank {r}"
                 for r in d.ranks]
        seen = f" seen by {', '.join(where)}" if where else ""
        return (VerdictKind.NCCL_ERROR, [], f"{cap(d.cause.title)}{seen}: {d.detail} ({d.loc}); {d.cause.why}.", d)
    if d.cause.family == LATE and (late := awaited_rank(d)) is not None:
        waited = sorted({*d.ranks, *awaiting_ranks(d)} - {late})
        who = rank_phrase(waited, job.world).capitalize() if waited else "Ranks"
        return (VerdictKind.LAGGING_RANK, [late],
                f"{who} waited for rank {late} to set up NCCL: {d.detail} ({d.loc}). {cap(d.cause.why)}.", d)
    if kind not in _RESTATABLE and not _explains(job, culprits, d):
        return kind, culprits, summary, (d if set(d.ranks) & set(culprits) else None)
    c = d.cause
    stuck = sorted(s.rank for s in job.ranks if s.stuck is not None)
    at = f" ({d.loc})"
    if c.family in (DEVICE, MEMORY, HOST):
        ranks = list(d.ranks) or culprits
        failed = set(ranks)
        waited = [r for r in stuck if r not in failed]
        tail = f" {rank_phrase(waited, job.world).capitalize()} then waited for it." if waited else ""
        why = "" if ", that is " in d.detail else f"; {c.why}"  # the kernel's meaning already says why
        return (VerdictKind.RANK_FAILED_FIRST, ranks,
                f"{rank_phrase(ranks).capitalize() + ' failed first' if ranks else nobody(c.family)}: "
                f"{d.detail}{at}{why}.{tail}",
                d)
    if c.family == SETUP and c.host:  # the host's CUDA stack: where it was seen, not who failed first
        seen = f" (seen by {rank_phrase(d.ranks)})" if d.ranks else ""
        return (VerdictKind.SETUP_FAILURE, [], f"The job could not set up {c.sets_up}, {c.title}{seen}: {d.detail}{at}. "
                f"{cap(c.why)}. The host is the cause, not one rank: every rank there has the same driver, "
                "libraries, interfaces and settings.", d)
    if c.family == SETUP:
        # a duplicate GPU's two ranks are the failing communicator's: the job's culprits only where it is the world;
        # the rank that reports it is one of a pair that share a GPU (job/dupgpu.py), never the one at fault alone
        ranks = dupgpu.culprits(job, d.nccl) if c.kind == "duplicate_gpu" else list(d.ranks) or culprits
        present = [s.rank for s in job.ranks if s.present]
        every = bool(ranks) and len(present) > 1 and set(present) <= set(ranks)
        scope = (" Every rank in these inputs hit it: the host or its settings are the cause, not one rank."
                 if every else "")
        if c.kind == "duplicate_gpu":  # every process states one device: the launch's (job/dupgpu.py)
            scope += dupgpu.launch_words(job)
            if d.ranks and not ranks:
                scope += (f" {rank_phrase(list(d.ranks)).capitalize()} reported it: one of the ranks that share a "
                          "GPU, not the one at fault alone; how each process picks its device is.")
        who = rank_phrase(ranks).capitalize() if ranks else "The job"
        return (VerdictKind.SETUP_FAILURE, ranks, f"{who} could not set up {c.sets_up}, {c.title}: {d.detail}{at}. "
                f"{cap(c.why)}.{scope}", d)
    if c.family == LAUNCHER:
        present = sorted(s.rank for s in job.ranks if s.present)
        lost = (f" {rank_phrase(present).capitalize()} and the agents in these inputs only lost it: they are not "
                "the cause." if present and c.kind == "store_lost" else "")
        return (VerdictKind.LAUNCHER_FAILURE, [], f"{cap(c.title)}: {d.detail}{at}. {cap(c.why)}.{lost}", d)
    if c.family == PROGRAM and c.culprit and kind is VerdictKind.LAGGING_RANK and set(culprits) <= set(d.ranks):
        return kind, culprits, summary, d  # the rank that never issued the collective, and the verdict says where it is
    if c.family == PROGRAM and c.kind == "collective_size":  # the call's own check, raised by the rank that made it
        return (VerdictKind.COLLECTIVE_MISMATCH, list(d.ranks), sized_call(job, c, d), d)  # (job/sizecheck.py)
    if c.family == PROGRAM:  # a line said by a rank of its own disagreement names no culprit; one said about it does
        return (VerdictKind.COLLECTIVE_MISMATCH, list(d.ranks) if c.culprit else [],
                f"{cap(c.title)}: {d.detail}{at}. {cap(c.why)}.", d)
    if kind in (VerdictKind.NO_FAILURE, VerdictKind.ALL_RANKS_STUCK):
        return (VerdictKind.NCCL_ERROR, culprits, f"{cap(c.title)}: {d.detail}{at}; {c.why}.", d)
    return kind, culprits, summary, d


def _explains(job: Job, culprits: Sequence[int], d: Diagnosis) -> bool:
    """Does the cause explain why the hang's roots never arrived? Only if they printed it themselves.

    A lost store explains it only when it was lost before the first timeout: a store that goes away
    after the watchdogs fired is the end of the job, not its cause.
    """
    if not culprits or not set(culprits) <= set(d.ranks) or d.cause.family == NETWORK:
        return False
    if d.cause.family != LAUNCHER:
        return True
    fired = [r.started_s + r.ran_for_ms / 1000 for r in job.records if r.started_s is not None and r.ran_for_ms]
    return d.clock_s is not None and bool(fired) and d.clock_s <= min(fired)


def _live_words(job: Job, kind: VerdictKind, culprits: Sequence[int], summary: str) -> tuple[VerdictKind, str]:
    """A live job's positions in words (with the user's lines and the GPUs' state, as a snapshot shows them) where
    they decide: the culprits are the ranks in host code, or nothing failed; no readable stack or dump at all is
    nothing to decide."""
    if not job.live:
        return kind, summary
    if all(p.state == UNKNOWN for p in job.live):
        return VerdictKind.INCOMPLETE, "No rank's stack or dump could be read: nothing to decide."
    text = live_summary(job.live)
    host = sorted(p.rank for p in job.live if p.state == HOST_CODE)
    seen = {p.rank for p in job.live}
    if text and culprits and sorted(culprits) == host and any(
            s.stuck is not None and s.rank not in seen for s in job.ranks):
        # the others' own lines say where they wait (a log's timeouts): the stacks add what the culprits wait for
        blocked = blocked_summary(job.live)
        return kind, f"{summary} {blocked}" if blocked else summary
    if text and (kind is VerdictKind.NO_FAILURE or (culprits and sorted(culprits) == host)):
        return kind, text
    return kind, summary
