"""Decide what happened from the job model: the root rank(s), the chain, and the kind of failure.

The roots of the wait-for graph are the answer; how they ended names the verdict:

* a root that raised, was killed or exited before the others' failures: ``rank_failed_first``;
* roots that issued a different collective, or stopped at an earlier sequence number than the
  members waiting for them: ``collective_mismatch``;
* a root that reached nothing and printed nothing (busy in host code, slow, hung): ``lagging_rank``;
* ranks that saw an NCCL error (peer gone, network) rather than a timeout: ``nccl_error``;
* every member waiting in the same work, no one missing: ``all_ranks_stuck`` (the transport);
* a trail that leaves the inputs (ranks or members not in them): ``incomplete_evidence``, naming
  what to collect rather than guessing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ncclcheck import signals
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import ElasticFailure, FileScan, Loc
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.build import build_job
from ncclcheck.job.causes import (
    DEVICE,
    HOST,
    LATE,
    LAUNCHER,
    MEMORY,
    NETWORK,
    PEER_LOST,
    PROBE,
    PROGRAM,
    SETUP,
    Diagnosis,
    awaited_rank,
    awaiting_ranks,
    describe,
    diagnose,
    one_line,
)
from ncclcheck.job.chain import chain_lines, root_words
from ncclcheck.job.findings import (
    counter_findings,
    detector_findings,
    membership_findings,
    mismatch_summary,
    next_steps,
    report_findings,
    size_finding,
)
from ncclcheck.job.graph import UNKNOWN_NODE, gaps
from ncclcheck.job.live import HOST_CODE, UNKNOWN, live_summary
from ncclcheck.job.model import (
    Analysis,
    Edge,
    EdgeReason,
    EndKind,
    Group,
    GroupId,
    Job,
    RankState,
    Record,
    Verdict,
    VerdictKind,
    Work,
)
from ncclcheck.job.runs import Restart
from ncclcheck.job.slow import Busy, busy_rank, slow_steps
from ncclcheck.ranks import ranges_of, rank_phrase
from ncclcheck.transfer import human_seconds

_FAILED = {EndKind.EXCEPTION, EndKind.KILLED, EndKind.EXITED}
# Endings of a rank that shows no collective it reached (with ABORTED by the launcher; the watchdog's SIGABRT abort
# follows a wait of its own).
_NEVER_ARRIVED = {EndKind.SILENT, EndKind.RUNNING, EndKind.HUNG}
_NOT_WAITING = {EndKind.SILENT, EndKind.HUNG, EndKind.RUNNING, EndKind.EXCEPTION, EndKind.KILLED, EndKind.EXITED,
                EndKind.NCCL_ERROR, EndKind.ABORTED}


def _sig(w: Work) -> str:
    s = w.op.upper() if w.op else "an unnamed collective"
    if w.sizes:
        s += " " + ",".join("x".join(f"{d:,}" for d in sz) or "scalar" for sz in w.sizes)
    elif w.numel_in is not None:
        s += f" NumelIn={w.numel_in:,}"
    return s + (f" {'/'.join(w.dtypes)}" if w.dtypes else "")


def _place(w: Work) -> str:
    """``ALLREDUCE NumelIn=4,096 (#4, PG 1 (dp))``, naming only what is known (a live stack has no number)."""
    parts = ([w.number] if w.seq is not None else []) + ([w.group.label()] if w.group.id is not None else [])
    return _sig(w) + (f" ({', '.join(parts)})" if parts else "")


def _works_at(job: Job, group: GroupId, seq: int | None) -> dict[int, Work]:
    """Each rank's collective at one sequence number of one group (dumps record it; logs name the stuck one)."""
    works: dict[int, Work] = {}
    for s in job.ranks:
        for p in s.positions:
            if p.group != group:
                continue
            w = next((x for x in p.works if not x.p2p and x.seq == seq), None)
            if w is None and p.stuck is not None and not p.stuck.p2p and p.stuck.seq == seq:
                w = p.stuck
            if w is not None:
                works[s.rank] = w
    return works


def _odd_ones(job: Job, group: GroupId, seq: int, works: dict[int, Work]) -> tuple[list[int], str]:
    """Who differs, and why them: a majority, or the one side that broke the pattern of the step before.

    With no majority and no such reason no rank is named: the ranks disagree, and either side may be wrong.
    """
    sigs = Counter(_sig(w) for w in works.values())
    (top, n), *rest = sigs.most_common()
    if not rest or rest[0][1] < n:
        odd = sorted(r for r, w in works.items() if _sig(w) != top)
        return odd, f"{rank_phrase(odd).capitalize()} differ{'s' if len(odd) == 1 else ''} from the majority."
    before = {_sig(w) for w in _works_at(job, group, seq - 1).values()} if seq > 1 else set()
    if len(before) == 1:
        prev = next(iter(before))
        if prev in sigs and len(sigs) == 2:
            odd = sorted(r for r, w in works.items() if _sig(w) != prev)
            return odd, (f"{rank_phrase(odd).capitalize()} broke the pattern: every rank ran {prev} at #{seq - 1}, "
                         f"and only {rank_phrase(odd)} issued something else at #{seq}.")
    return [], ("No majority and nothing else singles one side out: the ranks disagree, and either side may be the "
                "one that is wrong (a rank-dependent branch, an uneven last batch).")


def _p2p_mismatch(e: Edge) -> tuple[list[int], str]:
    """A send and its receive that disagree on size or dtype: both sides are named, neither is blamed."""
    return [], f"Rank {e.waiter} waits in {e.work.describe()} ({e.work.number}) of {e.work.group.label()}; {e.detail}."


def _mismatch_culprits(job: Job, roots: Sequence[int]) -> tuple[list[int], str] | None:
    """Ranks whose collective at one sequence number differs from the others', or who stopped short."""
    diff = [e for e in job.edges if e.reason is EdgeReason.DIFFERENT_COLLECTIVE]
    if diff:
        e = diff[0]
        if e.work.p2p:
            return _p2p_mismatch(e)
        works = _works_at(job, e.work.group, e.work.seq)
        sigs = Counter(_sig(w) for w in works.values())
        where = "; ".join(f"{rank_phrase(r for r, w in works.items() if _sig(w) == k)}: {k}" for k in sigs)
        culprits, why = _odd_ones(job, e.work.group, e.work.seq or 0, works)
        return culprits, (f"At #{e.work.seq} of {e.work.group.label()} the ranks issued different collectives "
                          f"({where}). {why}")
    stuck_roots = [job.rank(r) for r in roots]
    # A root is behind only if a member waits for a number it never issued; roots that block each other (a
    # ring) are not behind anyone.
    short = {e.target for e in job.edges if e.reason is EdgeReason.NOT_REACHED}
    behind = [s for s in stuck_roots if s is not None and s.stuck is not None and not s.stuck.p2p and s.rank in short]
    if behind:
        s = behind[0]
        assert s.stuck is not None
        behind_ranks = {b.rank for b in behind}
        ahead = sorted({e.waiter for e in job.edges if e.target in behind_ranks})
        their = next((e.work for e in job.edges if e.target == s.rank), None)
        at = f" at {their.number} ({_sig(their)})" if their is not None else ""
        return [b.rank for b in behind], (
            f"The ranks' collective sequences diverged in {s.stuck.group.label()}: {rank_phrase(b.rank for b in behind)} "
            f"stopped in {s.stuck.number} ({_sig(s.stuck)}) while {rank_phrase(ahead)} waited{at}.")
    return None


def _cycle(job: Job, roots: Sequence[int]) -> list[int]:
    """Roots that wait for one another in a ring, each blocked by work the next one queued behind its own.

    Collectives of different groups on one rank run in issue order on its stream: a rank stuck in one
    group's work cannot start the next, so two ranks that issued two groups in opposite order wait for each
    other. Each edge inside such a ring is "blocked elsewhere" (or a send/receive peer), never a rank that
    did not arrive or issued something else: that would be a root of its own.
    """
    ranks = [r for r in roots if r != UNKNOWN_NODE]
    if len(ranks) < 2 or any((s := job.rank(r)) is None or s.stuck is None for r in ranks):
        return []
    members = set(ranks)
    inner = [e for e in job.edges if e.waiter in members and e.target in members]
    ok = {EdgeReason.BLOCKED_ELSEWHERE, EdgeReason.P2P_PEER}
    if not inner or any(e.reason not in ok for e in inner) or {e.waiter for e in inner} != members:
        return []
    return ranks


def _issue_order_known(job: Job, ring: Sequence[int]) -> bool:
    """Dumps (record ids) and live stacks order a rank's works; text logs order its timeouts by when its
    watchdog polled each group, not by when the rank issued them."""
    return all(p.source != "logs" for r in ring if (s := job.rank(r)) is not None for p in s.positions
               if p.stuck is not None)


def _pending(s: RankState) -> list[Work]:
    """A rank's unfinished works over all its groups, in the order it issued them."""
    works = {(w.group, w.seq, w.p2p): w for p in s.positions for w in p.works if w.state != "completed"}
    for p in s.positions:
        if p.stuck is not None:
            works.setdefault((p.stuck.group, p.stuck.seq, p.stuck.p2p), p.stuck)
    return sorted(works.values(), key=lambda w: w.order)


def _line(f: Frame) -> str:
    """``train.py:49``: where a rank issued a work, short enough for a sentence."""
    return f"{f.file.rsplit('/', 1)[-1]}:{f.line}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _short(w: Work, frame: bool = True) -> str:
    name = w.group.desc if w.group.desc and w.group.desc != "default_pg" else w.group.label()
    where = f" ({_line(w.frame)})" if frame and w.frame is not None else ""
    return f"{name} {w.number}{where}"


def _deadlock_summary(job: Job, ring: Sequence[int]) -> str:
    runs = []
    members = set(ring)
    inside: dict[int, set[int]] = {r: set() for r in ring}
    for e in job.edges:
        if e.waiter in members and e.target in members and e.target is not None:
            inside[e.waiter].add(e.target)
    for r in ring:
        s = job.rank(r)
        assert s is not None and s.stuck is not None
        targets = sorted(inside[r])
        runs.append(f"rank {r} runs {s.stuck.group.label()} {s.stuck.number} ({_sig(s.stuck)}) and waits there for "
                    f"{rank_phrase(targets)}")
    orders = []
    pendings = {r: _pending(s) for r in ring if (s := job.rank(r)) is not None}
    frames = {w.frame for ws in pendings.values() for w in ws[:4]}
    one_line = len(frames) == 1 and None not in frames
    for r, pending in pendings.items():
        if len(pending) > 1:
            orders.append(f"rank {r}: {', then '.join(_short(w, not one_line) for w in pending[:4])}")
    called = ""
    if one_line:
        f = next(iter(frames))
        assert f is not None
        called = f", all from {_line(f)}"
    works = [w for ws in pendings.values() for w in ws[:4]]
    what = "the groups" if not any(w.p2p for w in works) and len({w.group for w in works}) > 1 else "these operations"
    how = (f" They issued {what} in different orders ({'; '.join(orders)}{called})." if len(orders) > 1 else
           " Each is blocked by work the other queued behind its own: the groups were issued in different orders.")
    return (f"Deadlock across process groups: {'; '.join(runs)}.{how} No single rank is the culprit: every one of "
            f"{rank_phrase(ring)} waits for another.")


def _stuck_everywhere(job: Job) -> tuple[list[int], list[str]]:
    """Ranks each waiting in two or more groups at once, every member of each group waiting there too.

    A collective whose members all arrived with the same call completes unless the transport failed, or unless
    each member can only start it after another of its own pending collectives, which waits for a member
    stuck the same way: the pattern of groups issued in opposite order. Text logs show the pattern; only the
    dumps' record order (or live stacks) show which order each rank issued its groups in.
    """
    stuck = {s.rank: _pending(s) for s in job.ranks if s.stuck is not None}
    if len(stuck) < 2 or any(len({w.group for w in ws}) < 2 for ws in stuck.values()):
        return [], []
    groups = {g.id: g for g in job.groups}
    names = []
    for gid in {w.group for ws in stuck.values() for w in ws}:
        g = groups.get(gid)
        if g is None or not g.exact or len(g.members) > len(stuck) or any(m not in stuck for m in g.members):
            return [], []
        sigs = {next((w.seq, w.signature()) for w in stuck[m] if w.group == gid) for m in g.members}
        if len(sigs) != 1:
            return [], []
        names.append(f"{gid.label()} #{next(iter(sigs))[0]}")
    return sorted(stuck), sorted(names)


def _unordered_ring(job: Job, ring: Sequence[int] = ()) -> tuple[VerdictKind, list[int], str] | None:
    """Every rank pinned in several groups at once, from inputs that do not show the order they issued them in.

    ``ring``: ranks the wait-for graph links in a ring (from text, where each rank's first stuck work is only
    a guess); used when the groups' members are not all known.
    """
    ranks, names = _stuck_everywhere(job)
    if ranks:
        where = f"each wait in {' and '.join(names)} at once, with every member of each group there and the same " \
                "collective on every member"
    elif ring and set(ring) == {s.rank for s in job.ranks if s.present}:
        ranks = list(ring)
        where = "wait for each other, each in several groups at once (" + "; ".join(
            f"rank {r}: {', '.join(sorted(_short(w) for w in _pending(s)))}" for r in ring
            if (s := job.rank(r)) is not None) + ")"  # sorted: text does not show the order they were issued in
    else:
        return None
    return (VerdictKind.ALL_RANKS_STUCK, [],
            f"{rank_phrase(ranks).capitalize()} {where}. Either the ranks issued these groups in "
            "different orders (a deadlock: each runs one while the other waits behind it on its stream; no single "
            "rank is the culprit) or the first of them hung in the transport and the rest queued behind it. These "
            "logs do not show the order each rank issued them in; flight-recorder dumps or a live snapshot do.")


def _inferred_roots(job: Job) -> list[int]:
    """Where the trail leaves the inputs: the present ranks that wait for no one, if any."""
    return [s.rank for s in job.ranks if s.present and s.stuck is None and s.ending.kind in _NOT_WAITING]


def _culprits_work(job: Job, primary: Work, culprits: Sequence[int]) -> Work:
    """The collective the verdict names: where the waiting began, unless a culprit is not in that group; then the
    first waiter's collective in a group the culprit is in (the one it did not join)."""
    members = {g.id: g.members if isinstance(g.members, range) else set(g.members) for g in job.groups}
    if not culprits or any(c in members.get(primary.group, culprits) for c in culprits):
        return primary
    named = set(culprits)
    holds: dict[GroupId, bool] = {}  # whether a culprit is in the group, asked once a group

    def has_culprit(group: GroupId) -> bool:
        if group not in holds:
            m = members.get(group, ())
            holds[group] = (any(c in m for c in named) if len(named) <= len(m)
                            else any(r in named for r in m))
        return holds[group]

    return next((s.stuck for s in job.ranks if s.stuck is not None and s.rank not in named
                 and has_culprit(s.stuck.group)), primary)


def _primary(job: Job) -> Work | None:
    """The work the waiters are stuck in, by how many ranks are stuck in it."""
    stuck = [s.stuck for s in job.ranks if s.stuck is not None]
    if not stuck:
        return None
    counts = Counter((w.group, w.seq) for w in stuck)
    (group, seq), _ = counts.most_common(1)[0]
    return next(w for w in stuck if (w.group, w.seq) == (group, seq))


def _last_frame(s: RankState) -> str:
    """The line of code of the rank's last recorded work (dumps), to say where it was."""
    works = [w for p in s.positions for w in p.works if w.frame is not None]
    if not works:
        return ""
    w = max(works, key=lambda x: x.order)
    assert w.frame is not None
    where = f"({w.number}, {w.state})" if w.p2p else f"{w.number} ({w.state})"
    return f"; its last recorded work was {w.describe()} {where} from {w.frame}"


@dataclass(frozen=True)
class _Roots:
    """Where the wait-for graph ends: ranks it names, ranks it names by elimination, ranks without input."""

    named: list[int]
    inferred: list[int]
    absent: list[int]
    leaves_inputs: bool

    @property
    def culprits(self) -> list[int]:
        return self.named or self.inferred


def _roots(job: Job) -> _Roots:
    by_rank = {s.rank: s for s in job.ranks}
    unknown = [s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN]
    ranks = [r for r in job.roots if r != UNKNOWN_NODE]
    absent = [r for r in ranks if by_rank[r].ending.kind is EndKind.UNKNOWN]
    named = [r for r in ranks if by_rank[r].ending.kind is not EndKind.UNKNOWN]
    leaves = UNKNOWN_NODE in job.roots
    if len(absent) == 1 and not named and unknown == absent and not leaves and not job.unlisted:
        named = absent  # every other rank is accounted for: the one without input is the one waited for
    inferred = _inferred_roots(job) if leaves and not named and not absent else []
    return _Roots(named, inferred, absent, leaves)


def _cut_off(job: Job, roots: Sequence[int]) -> list[int]:
    """Roots whose one error is that their peers went away, beside roots that never reached a collective.

    Ranks that time out leave, and a rank still inside a collective with them then reads "Connection closed by peer":
    it had reached a collective, waiting with the others or late. A root that printed nothing of a collective (its
    log stops, or the launcher stopped it still running) never reached one, and explains the others' waits without
    the first: where the trail ends at both, the first are cut off, not waited for. Alone, such a rank is the late
    one (the others waited for it until their timeout, then left)."""
    by_rank = {s.rank: s for s in job.ranks}
    cut = [r for r in roots
           if by_rank[r].ending.kind is EndKind.NCCL_ERROR and PEER_LOST.search(by_rank[r].ending.detail)]
    never = [r for r in roots if by_rank[r].ending.kind in _NEVER_ARRIVED
             or by_rank[r].ending.kind is EndKind.ABORTED and "SIGABRT" not in by_rank[r].ending.detail]
    return cut if cut and never and len(cut) + len(never) == len(roots) else []


def _peer_words(detail: str) -> str:
    """``Connection closed by peer [127.0.0.1]:40074``: the words of an error that say a peer went away."""
    m = PEER_LOST.search(detail)
    return detail[m.start():].split(". ")[0].rstrip(".")[:120] if m else detail


def _watchdog_aborted(s: RankState, timeouts: dict[str, int]) -> bool:
    """A rank the launcher reports dead of SIGABRT with no collective of its own in the inputs.

    Releases that print timeouts without a ``[PG ...]`` prefix predate the heartbeat monitor: their watchdog
    aborted a process only after one of its own works timed out or failed, so such a rank was waiting somewhere
    too. Later releases' monitor thread also aborts a rank when another rank signals a timeout through the store,
    so there it may have been anywhere. Its abort must be reported after another rank's timeout (in the same
    file): an abort before any timeout is a crash of its own (an uncaught C++ exception also ends in SIGABRT)."""
    e = s.ending
    return (e.kind is EndKind.ABORTED and "SIGABRT" in e.detail and s.stuck is None and e.loc is not None
            and timeouts.get(e.loc.file, e.loc.line) < e.loc.line)


def _absent_phrase(job: Job, listed: Sequence[int]) -> str:
    """The ranks without input: those with a state, and the ranges of a stated world that have none."""
    if not job.unlisted:
        return rank_phrase(listed, job.world)
    spans = gaps(sorted(s.rank for s in job.ranks if s.present), range(job.world or 0))
    return f"ranks {ranges_of(spans)}"


def _stuck_verdict(job: Job, roots: _Roots, primary: Work) -> tuple[VerdictKind, list[int], str]:
    """Some ranks are stuck: the roots' endings name the kind."""
    by_rank = {s.rank: s for s in job.ranks}
    waiting = sorted(s.rank for s in job.ranks if s.stuck is not None)
    culprits = roots.culprits
    where = _place(primary)
    failed = [r for r in culprits if by_rank[r].ending.kind in _FAILED]
    if failed:
        detail = "; ".join(f"rank {r}: {by_rank[r].ending.detail}" for r in failed)
        return (VerdictKind.RANK_FAILED_FIRST, failed,
                f"{rank_phrase(failed).capitalize()} failed first ({detail}); "
                f"{rank_phrase(waiting, job.world, failed)} then waited in {where} for it.")
    ring = _cycle(job, roots.named)
    if ring and _issue_order_known(job, ring):
        return VerdictKind.DEADLOCK, [], _deadlock_summary(job, ring)
    hedged = _unordered_ring(job, ring) if ring else None
    if hedged is not None:
        return hedged
    mism = _mismatch_culprits(job, roots.named)
    if mism is not None:
        return VerdictKind.COLLECTIVE_MISMATCH, mism[0], mism[1]
    timed_out = any(s.stuck is not None and s.stuck.state == "timed_out" for s in job.ranks)
    # A rank's word that its peers went away (causes.PEER_LOST), from a rank the others waited for until their
    # timeout, is their leaving after it (they kept the connection open all that time), not a failed transport.
    errs = [r for r in culprits if by_rank[r].ending.kind is EndKind.NCCL_ERROR
            and not (timed_out and PEER_LOST.search(by_rank[r].ending.detail))]
    if errs:
        return (VerdictKind.NCCL_ERROR, errs,
                "; ".join(f"rank {r}: {by_rank[r].ending.detail}" for r in errs) + ".")
    timeouts: dict[str, int] = {}  # each file's first timeout line
    for s in job.ranks:
        if s.stuck is not None and s.stuck.state == "timed_out" and s.stuck.loc is not None:
            loc = s.stuck.loc
            timeouts[loc.file] = min(loc.line, timeouts.get(loc.file, loc.line))
    if culprits and primary.group.id is None and all(_watchdog_aborted(by_rank[r], timeouts) for r in culprits):
        return (VerdictKind.ALL_RANKS_STUCK, [],
                f"{rank_phrase(waiting, job.world).capitalize()} timed out in {where}; {rank_phrase(culprits)} printed "
                f"no timeout here but died of SIGABRT, the watchdog's abort, which follows only a timeout or an NCCL "
                f"error of its own: {'it was' if len(culprits) == 1 else 'they were'} waiting in a collective too, not "
                "lagging in host code (its own stderr names the collective). If it was the same one, every rank "
                "waited in it and no member was missing: suspect the transport (GPU peer-to-peer over PCIe, the "
                "network, NCCL itself); if it was another, the ranks' calls disagree.")
    cut = _cut_off(job, culprits) if timed_out else []
    if cut:
        kept = set(cut)
        culprits = [r for r in culprits if r not in kept]
    if culprits:
        lines = "; ".join(f"rank {r} {root_words(by_rank[r])}{_last_frame(by_rank[r])}" for r in culprits[:4])
        one = len(culprits) == 1
        how = ("" if not roots.inferred else
               f" {'It is' if one else 'They are'} named by elimination: the only {'rank' if one else 'ranks'} in "
               "these inputs that waited nowhere, while the groups that lead there have members the inputs do not "
               "name.")
        if timed_out:
            limit = f" until the {human_seconds(primary.timeout_ms / 1000)} timeout" if primary.timeout_ms else ""
            waited = f"waited{limit}"
        else:  # a live job, or dumps taken before any timeout: they are still waiting
            waited = "wait" if len(waiting) > 1 or not waiting else "waits"
        if cut:
            how += (f" {rank_phrase(cut).capitalize()} lost {'its' if len(cut) == 1 else 'their'} peers when they left "
                    f"after their timeout ({'; '.join(_peer_words(by_rank[r].ending.detail) for r in cut[:2])}): "
                    f"{'it' if len(cut) == 1 else 'they'} had reached a collective, which {rank_phrase(culprits)} "
                    "never did.")
        late = [r for r in culprits if by_rank[r].ending.kind is EndKind.NCCL_ERROR]
        if late:
            how += (f" The connection error of {rank_phrase(late)} came from the others leaving after their timeout "
                    f"(they kept the connection open until then): {rank_phrase(late)} arrived late, the transport "
                    "did not fail.")
        hung = all(by_rank[r].ending.kind is EndKind.HUNG for r in culprits)
        return (VerdictKind.WATCHDOG_STUCK if hung else VerdictKind.LAGGING_RANK, culprits,
                f"{rank_phrase(waiting, job.world, culprits).capitalize()} {waited}; the trail of who waits for "
                f"whom ends at {rank_phrase(culprits)}: {lines}.{how}")
    unknown = [s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN]
    if roots.leaves_inputs or roots.absent or unknown or job.unlisted:
        ran = f" for {human_seconds(primary.ran_for_ms / 1000)}" if primary.ran_for_ms else ""
        done = [p.last_completed for s in job.ranks if s.stuck is not None for p in s.positions
                if p.group == primary.group and p.last_completed is not None]
        after = f" after completing #{max(done)}" if done else ""
        head = f"{rank_phrase(waiting, job.world).capitalize()} waited{ran} in {where}{after}; "
        if roots.absent or unknown or job.unlisted:
            return (VerdictKind.INCOMPLETE, [],
                    head + f"the ranks waited for are not in these inputs ({_absent_phrase(job, roots.absent or unknown)}). "
                    "They are unknown, not guilty: the culprit is among them.")
        # Nothing says the job has other ranks: only that the group's members are not named.
        return (VerdictKind.INCOMPLETE, [],
                head + "these inputs do not name the members of its group, so who they waited for cannot be told "
                "from them.")
    hedged = _unordered_ring(job)
    if hedged is not None:
        return hedged
    return (VerdictKind.ALL_RANKS_STUCK, [],
            f"{rank_phrase(waiting, job.world).capitalize()} {'waits' if len(waiting) == 1 else 'wait'} in the same "
            f"collective, {_place(primary)}, and no member of its group is missing: suspect the transport (network, "
            "NVLink/PCIe P2P, NCCL itself).")


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
    if suspects and all(PEER_LOST.search(by_rank[r].ending.detail) for r in nccl_err):
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


def _alone_after_the_end(job: Job, primary: Work) -> tuple[VerdictKind, list[int], str] | None:
    """Ranks stuck in a collective after the program said the others' work, or their own training, was over.

    Where the inputs name no member that could still arrive, a rank that waits after the others printed that they
    completed, or after its own training loop ended, issued a collective the others never will (or a larger one):
    code that only it runs (``if rank == 0`` around a checkpoint, a barrier, logging), or a size that differs.
    """
    stuck = {s.rank: s.stuck for s in job.ranks if s.stuck is not None}
    if not stuck or any(s.ending.kind is EndKind.UNKNOWN for s in job.ranks):
        return None
    facts = job.facts.work_done
    others = sorted({int(f.value) for f in facts if f.value.isdigit()} - set(stuck))
    last: dict[str, int] = {}  # each file's last line of a stuck work
    for w in stuck.values():
        if w.loc is not None:
            last[w.loc.file] = max(w.loc.line, last.get(w.loc.file, w.loc.line))
    ended = [f for f in facts if not f.value.isdigit() and f.loc.line < last.get(f.loc.file, f.loc.line)]
    if not others and not ended:
        return None
    ranks = sorted(stuck)
    if others:
        line = next(f.loc for f in facts if f.value.isdigit() and int(f.value) in others)
        why = f"the program printed that {rank_phrase(others)} completed ({line})"
    else:
        why = (f"its training loop had ended first ({ended[0].value}, {ended[0].loc}), and the others, in step with "
               "it through every training step, ended theirs too")
    return (VerdictKind.COLLECTIVE_MISMATCH, ranks,
            f"{rank_phrase(ranks).capitalize()} waited in {_place(primary)} after the others' work was over: {why}. "
            f"No other rank will issue it: {rank_phrase(ranks)} ran a collective the others did not (one inside code "
            "only that rank runs, such as `if rank == 0:` or `is_global_zero` around a checkpoint save, a barrier or "
            "logging), or one of another size that the others' smaller call let them finish.")


def _quiet_verdict(job: Job) -> tuple[VerdictKind, list[int], list[int], str]:
    """No rank is stuck in a collective: a stuck watchdog, a DETAIL mismatch, a failure, an NCCL error, or nothing."""
    by_rank = {s.rank: s for s in job.ranks}
    heartbeats = job.facts.heartbeats
    mismatches = job.facts.mismatches
    failed = [s.rank for s in job.ranks if s.ending.kind in _FAILED]
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
        return (VerdictKind.WATCHDOG_STUCK, hung, [],
                f"The heartbeat monitor fired on {rank_phrase(hung)}: the NCCL watchdog thread was stuck, not a "
                "collective timeout. A CUDA call or the GIL is blocked in that process.")
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
        return (VerdictKind.ALL_RANKS_STUCK, [], elastic,
                "Every failed rank in torchrun's summary ended by SIGABRT (the watchdog's abort after a collective "
                "timeout) or SIGTERM (torchrun stopping the survivors); the timeout lines themselves are not in these "
                "inputs. Give the ranks' own logs to name the collective.")
    unnamed = job.facts.unnamed_failures
    if unnamed:
        e = unnamed[0]
        more = f" ({len(unnamed) - 1} more such line{'s' if len(unnamed) > 2 else ''})" if len(unnamed) > 1 else ""
        return (VerdictKind.RANK_FAILED_FIRST, [], [],
                f"A process failed: {one_line(e.message)} ({e.loc}){more}. The line names no rank; the per-rank logs "
                "(torchrun --log-dir DIR --redirects 3 --tee 3) or a [rankN]: prefix would.")
    present = sorted(s.rank for s in job.ranks if s.present and 0 <= s.rank < (job.world or 0))
    # A launcher's console that tags no line with a rank (Accelerate's, DeepSpeed's) carries its workers' output
    # untagged: that no rank is named there says nothing of which ranks it covers.
    if job.world and present and len(present) < job.world:
        # Every rank of a world that was materialised has a state; a stated world's other ranks are ranges.
        missing = _absent_phrase(job, [s.rank for s in job.ranks if not s.present and 0 <= s.rank < job.world])
        return (VerdictKind.INCOMPLETE, [], [],
                f"Nothing failed in these inputs, but they cover {len(present)} of the job's {job.world} "
                f"ranks: {missing} left no input. A node that "
                "died or a rank killed there "
                "shows only in its own logs, its agent's console or the host's kernel log (dmesg -T).")
    return (VerdictKind.NO_FAILURE, [], [],
            "No collective timeout, NCCL error, desync, heartbeat failure or rank failure found in these inputs.")


EXIT_TEARDOWN_STEP = (
    "Call `torch.distributed.destroy_process_group()` at the end of the program on every rank, after its last "
    "collective and before it exits: the groups (and their NCCL communicators) are then torn down together instead of "
    "by each process's exit (https://pytorch.org/docs/stable/distributed.html#shutdown); a job with many groups (expert or "
    "pipeline parallel) hangs there most (modelscope/ms-swift#7992).")


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
        return (VerdictKind.NCCL_ERROR, [], f"{_cap(d.cause.title)}{seen}: {d.detail} ({d.loc}); {d.cause.why}.", d)
    if d.cause.family == LATE and (late := awaited_rank(d)) is not None:
        waited = sorted({*d.ranks, *awaiting_ranks(d)} - {late})
        who = rank_phrase(waited, job.world).capitalize() if waited else "Ranks"
        return (VerdictKind.LAGGING_RANK, [late],
                f"{who} waited for rank {late} to set up NCCL: {d.detail} ({d.loc}). {_cap(d.cause.why)}.", d)
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
                f"{rank_phrase(ranks).capitalize() + ' failed first' if ranks else _nobody(c.family)}: "
                f"{d.detail}{at}{why}.{tail}",
                d)
    if c.family == SETUP:
        ranks = list(d.ranks) or culprits
        present = [s.rank for s in job.ranks if s.present]
        every = bool(ranks) and len(present) > 1 and set(present) <= set(ranks)
        scope = (" Every rank in these inputs hit it: the host or its settings are the cause, not one rank."
                 if every else "")
        who = rank_phrase(ranks).capitalize() if ranks else "The job"
        return (VerdictKind.SETUP_FAILURE, ranks, f"{who} could not set up NCCL, {c.title}: {d.detail}{at}. "
                f"{_cap(c.why)}.{scope}", d)
    if c.family == LAUNCHER:
        present = sorted(s.rank for s in job.ranks if s.present)
        lost = (f" {rank_phrase(present).capitalize()} and the agents in these inputs only lost it: they are not "
                "the cause." if present and c.kind == "store_lost" else "")
        return (VerdictKind.LAUNCHER_FAILURE, [], f"{_cap(c.title)}: {d.detail}{at}. {_cap(c.why)}.{lost}", d)
    if c.family == PROGRAM:
        return (VerdictKind.COLLECTIVE_MISMATCH, [], f"{_cap(c.title)}: {d.detail}{at}. {_cap(c.why)}.", d)
    if kind in (VerdictKind.NO_FAILURE, VerdictKind.ALL_RANKS_STUCK):
        return (VerdictKind.NCCL_ERROR, culprits, f"{_cap(c.title)}: {d.detail}{at}; {c.why}.", d)
    return kind, culprits, summary, d


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
    if text and (kind is VerdictKind.NO_FAILURE or (culprits and sorted(culprits) == host)):
        return kind, text
    return kind, summary


def _nobody(family: str) -> str:
    """Who failed, where no rank is named: a node's fate is the job's, a crash is one process's."""
    return "The job failed" if family == HOST else "A process failed"


def _host_findings(job: Job, cause: Diagnosis | None) -> list[Finding]:
    """Every host or scheduler record besides the one the verdict quotes: what it says, and whose it is."""
    out: list[Finding] = []
    for j in job.facts.host_records:
        if cause is not None and j.event.loc in cause.locs:
            continue
        text = describe(j)
        if not j.ranks and j.by == "" and j.event.source == "slurm" and j.event.pid is None and j.event.host is None:
            text += "; the whole job's record: it names no task or process"
        elif not j.ranks and j.by == "":
            text += "; no rank of these inputs had that PID, GPU or host: another process's record"
        out.append(Finding(Severity.WARNING if j.ranks else Severity.INFO, "host-record", text, (j.event.loc,)))
    return out


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


# Names the tensor of a collective (explain's table, when the user gave the model); None when it cannot.
TensorOf = Callable[[Work, Group | None], Finding | None]


def decide(scans: Sequence[FileScan], records: Sequence[Record], dtype: str = "float32",
           restarts: Sequence[Restart] = (), tensor_of: TensorOf | None = None) -> Analysis:
    """Build the job model and decide the verdict, the chain and the findings (of the last run of each file).

    ``tensor_of`` names the tensor of the hung collective (explain's table, when the user gave the model)."""
    job = build_job(scans, records)
    primary = _primary(job)
    findings: list[Finding] = []
    ring: list[int] = []
    if primary is not None:
        roots = _roots(job)
        kind, culprits, summary = _consistent(job, *_stuck_verdict(job, roots, primary))
        if kind is VerdictKind.INCOMPLETE and (alone := _alone_after_the_end(job, primary)) is not None:
            kind, culprits, summary = alone
        if kind is VerdictKind.DEADLOCK:
            ring = _cycle(job, roots.named)
        blamed = set(culprits)
        waiting = sorted(s.rank for s in job.ranks if s.stuck is not None and s.rank not in blamed)
        group = next((g for g in job.groups if g.id == primary.group), None)
        size = size_finding(primary, dtype, group, tensor_of is not None, job.facts.network)
        tensor = tensor_of(primary, group) if tensor_of is not None else None
        findings += [f for f in (size, tensor) if f is not None]
    else:
        kind, culprits, waiting, summary = _quiet_verdict(job)
    killed_ranks = [(s.rank, s.ending.loc, s.ending.signal or "") for s in job.ranks
                    if s.ending.kind is EndKind.KILLED and s.ending.loc is not None]
    fired = [r.started_s + r.ran_for_ms / 1000 for r in job.records if r.started_s is not None and r.ran_for_ms]
    # Ranks named for dying without a word (their peers' lost connections point at them): no line of theirs says how.
    silent = [r for r in culprits if kind is VerdictKind.RANK_FAILED_FIRST and (s := job.rank(r)) is not None
              and s.ending.kind is EndKind.SILENT]
    kind, culprits, summary, cause = _with_cause(job, kind, culprits, summary,
                                                 diagnose(scans, killed_ranks, min(fired, default=None), silent),
                                                 job.facts.hosts)
    blamed = set(culprits)
    waiting = [r for r in waiting if r not in blamed]
    kind, summary = _live_words(job, kind, culprits, summary)
    timeout_ms = primary.timeout_ms if primary is not None else None
    busy = (busy_rank(scans, culprits[0], timeout_ms) if kind is VerdictKind.LAGGING_RANK and len(culprits) == 1
            else None)
    if busy is not None:
        summary += " " + busy.words()
    elif kind in (VerdictKind.LAGGING_RANK, VerdictKind.INCOMPLETE) and (
            unnamed := busy_rank(scans, None, timeout_ms)) is not None:
        findings.append(Finding(Severity.WARNING, "busy-rank", unnamed.words(), (unnamed.loc,),
                                " ".join(slow_steps(unnamed))))
    if kind is not VerdictKind.NO_FAILURE:
        findings.insert(0, Finding(Severity.ERROR, kind.value.replace("_", "-"), summary,
                                   _evidence(job, culprits, cause, busy)))
    findings += _host_findings(job, cause)
    findings += counter_findings(records)
    findings += detector_findings(scans)
    findings += membership_findings(job)
    findings += report_findings(scans)
    for r in restarts:
        earlier = "; ".join(f"rank {x.who} {x.op_type or 'an unnamed collective'}"
                            + (f" #{x.seq}" if x.seq is not None else "") for x in r.earlier[:4])
        findings.append(Finding(Severity.INFO, "earlier-runs",
                                f"{r.file} holds more than one run of the job (a restart appending to the same file): "
                                f"the last run, from line {r.line}, is analysed; the earlier run timed out too "
                                f"({earlier}). Analyse it separately if it matters.",
                                tuple(x.loc for x in r.earlier[:4])))
    relaunches = job.facts.relaunches
    if relaunches:
        findings.append(Finding(Severity.INFO, "elastic-restarts",
                                f"torchrun restarted the workers after a failure {len(relaunches)} time(s) (last: "
                                f"{relaunches[-1].text}). Each attempt is a run of its own: if they all fail the same "
                                "way, more restarts will not help. Give one attempt's directory (attempt_N) to analyse "
                                "it alone.", tuple(c.loc for c in relaunches[:8])))
    findings += _root_causes(job, primary is not None)
    found = kind is not VerdictKind.NO_FAILURE
    killed = any(s.ending.kind is EndKind.KILLED and s.ending.signal in (None, "SIGKILL")
                 for s in job.ranks if s.rank in blamed)
    # A rank the others wait for can be named even without its own input; what it did stays unknown.
    unknown = [s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN] if found else []
    named = _culprits_work(job, primary, culprits) if primary is not None else None
    pg = named.group.to_pg() if named is not None else None
    host_kill = cause is not None and cause.cause.kind == "host_kill"
    dumps = job.facts.dumped
    dumped = bool(dumps) and {s.rank for s in job.ranks if s.present} <= dumps
    waiters = set(waiting)
    others = [s for s in job.ranks if s.rank in waiters]
    waited = ("timeouts" if any(s.stuck is not None for s in others) else
              "NCCL errors" if any(s.ending.kind is EndKind.NCCL_ERROR for s in others) else "")
    steps = next_steps(kind, culprits, killed and not host_kill, unknown, dumped and not unknown, waited,
                       slow_steps(busy) if busy is not None else ())
    if primary is None and job.facts.exit_teardown:
        steps = (EXIT_TEARDOWN_STEP, *steps)
    if cause is not None:
        steps = (*cause.cause.fix, *((PROBE,) if cause.cause.probe else ()), *steps)
    verdict = Verdict(kind, summary, tuple(culprits), tuple(waiting), tuple(unknown), pg,
                      named.seq if named is not None else job.facts.detail_seq,
                      chain_lines(job, culprits or ring) if found else (), tuple(findings), steps, cause, tuple(ring))
    return Analysis(tuple(scans), tuple(records), job, verdict, dtype)


def _root_causes(job: Job, hung: bool) -> list[Finding]:
    """torchrun's 'Root Cause' of every node's summary, each quoted: on a hang each is only the first process of its
    node to exit, not necessarily the rank that hung."""
    roots = list({(f.rank, f.host, f.loc.file): f for f in job.facts.elastic if f.root_cause}.values())
    if not roots:
        return []
    nodes = len({(f.host, f.loc.file) for f in roots}) > 1

    def said(f: ElasticFailure) -> str:
        sig = f.signal or (signals.name(-f.exitcode) if f.exitcode is not None and f.exitcode < 0 else None)
        how = f"exitcode {f.exitcode}" + (f", {sig}" if sig else "") if f.exitcode is not None else ""
        where = f" on {f.host}" if f.host and nodes else ""
        return f"rank {f.rank}{where}" + (f" ({how})" if how and nodes else "")

    each = "; ".join(said(f) for f in roots[:8])
    if not hung:
        return [Finding(Severity.INFO, "torchrun-root-cause", f"torchrun's 'Root Cause' {'on each node ' if nodes else ''}"
                        f"names {each}.", tuple(f.loc for f in roots[:8]))]
    what = ("each is only the first process of its node to exit" if nodes else "that is only the first process to exit")
    return [Finding(Severity.INFO, "root-cause-caveat", f"torchrun's 'Root Cause' {'on each node ' if nodes else ''}"
                    f"names {each}: {what}, not necessarily the rank that hung.", tuple(f.loc for f in roots[:8]))]


def _consistent(job: Job, kind: VerdictKind, culprits: list[int], summary: str) -> tuple[VerdictKind, list[int], str]:
    """The verdict may not contradict its own table: 'every rank waits' while a member exited is a failure first."""
    if kind is not VerdictKind.ALL_RANKS_STUCK:
        return kind, culprits, summary
    gone = [s for s in job.ranks if s.ending.kind in _FAILED and s.stuck is None]
    if not gone:
        return kind, culprits, summary
    detail = "; ".join(f"rank {s.rank}: {s.ending.detail}" for s in gone[:4])
    waiting = sorted(s.rank for s in job.ranks if s.stuck is not None)
    return (VerdictKind.RANK_FAILED_FIRST, [s.rank for s in gone],
            f"{rank_phrase(s.rank for s in gone).capitalize()} failed first ({detail}); "
            f"{rank_phrase(waiting, job.world)} then waited for {'it' if len(gone) == 1 else 'them'}.")


def _evidence(job: Job, culprits: Sequence[int], cause: Diagnosis | None = None,
              busy: Busy | None = None) -> tuple[Loc, ...]:
    """The cause's lines first (or the slow rank's last line), then the culprits' endings, then the waiters' stuck
    works: at most eight lines."""
    locs = list(cause.locs) if cause is not None else []
    locs += [busy.loc] if busy is not None else []
    named = set(culprits)
    locs += [s.ending.loc for s in job.ranks if s.rank in named and s.ending.loc is not None]
    locs += [s.stuck.loc for s in job.ranks if s.stuck is not None and s.stuck.loc is not None]
    return tuple(dict.fromkeys(locs))[:8]
