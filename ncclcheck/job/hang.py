"""The rules of a hang: some ranks are stuck in a collective, and the roots of the wait-for graph name the kind.

* a root that raised, was killed or exited before the others' failures: ``rank_failed_first``;
* roots that issued a different collective, or stopped at an earlier sequence number than the
  members waiting for them: ``collective_mismatch``; ranks that wait in a ring across groups: ``deadlock``;
* a root that reached nothing and printed nothing (busy in host code, slow, hung): ``lagging_rank``;
* roots whose error is an NCCL error rather than a timeout: ``nccl_error``;
* every member waiting in the same work, no one missing: ``all_ranks_stuck`` (the transport);
* a trail that leaves the inputs (ranks or members not in them): ``incomplete_evidence``.

Every rule reads the job model only (job/model.py, with the inputs' facts in ``Job.facts``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ncclcheck.job.absent import awaited_words, said_of
from ncclcheck.job.chain import root_words
from ncclcheck.job.frmatch import history_mismatch, never_launched
from ncclcheck.job.graph import UNKNOWN_NODE
from ncclcheck.job.model import (
    HOST_SYNC,
    Edge,
    EdgeReason,
    Ending,
    EndKind,
    GroupId,
    Job,
    RankState,
    VerdictKind,
    Work,
)
from ncclcheck.job.passed import passed
from ncclcheck.job.phrases import absent_phrase, frame_line, place, short, sig
from ncclcheck.ranks import rank_phrase
from ncclcheck.transfer import human_seconds

# Endings of a rank that failed on its own.
FAILED = {EndKind.EXCEPTION, EndKind.KILLED, EndKind.EXITED}
# Endings of a rank that shows no collective it reached (with ABORTED by the launcher; the watchdog's SIGABRT abort
# follows a wait of its own).
_NEVER_ARRIVED = {EndKind.SILENT, EndKind.RUNNING, EndKind.HUNG}
# Endings of a rank that waits for no one.
_NOT_WAITING = {EndKind.SILENT, EndKind.HUNG, EndKind.RUNNING, EndKind.EXCEPTION, EndKind.KILLED, EndKind.EXITED,
                EndKind.NCCL_ERROR, EndKind.ABORTED}


def primary_work(job: Job) -> Work | None:
    """The work the waiters are stuck in, by how many ranks are stuck in it."""
    stuck = [s.stuck for s in job.ranks if s.stuck is not None]
    if not stuck:
        return None
    counts = Counter((w.group, w.seq) for w in stuck)
    (group, seq), _ = counts.most_common(1)[0]
    return next(w for w in stuck if (w.group, w.seq) == (group, seq))


def works_at(job: Job, group: GroupId, seq: int | None) -> dict[int, Work]:
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
    sigs = Counter(sig(w) for w in works.values())
    (top, n), *rest = sigs.most_common()
    if not rest or rest[0][1] < n:
        odd = sorted(r for r, w in works.items() if sig(w) != top)
        return odd, f"{rank_phrase(odd).capitalize()} differ{'s' if len(odd) == 1 else ''} from the majority."
    before = {sig(w) for w in works_at(job, group, seq - 1).values()} if seq > 1 else set()
    if len(before) == 1:
        prev = next(iter(before))
        if prev in sigs and len(sigs) == 2:
            odd = sorted(r for r, w in works.items() if sig(w) != prev)
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
        works = works_at(job, e.work.group, e.work.seq)
        sigs = Counter(sig(w) for w in works.values())
        where = "; ".join(f"{rank_phrase(r for r, w in works.items() if sig(w) == k)}: {k}" for k in sigs)
        culprits, why = _odd_ones(job, e.work.group, e.work.seq or 0, works)
        if e.work.seq is None:  # gloo's timeouts and old releases' lines print no number: where each rank is blocked
            return culprits, (f"In {e.work.group.label()}, whose lines print no sequence number, the ranks are blocked "
                              f"in different collectives ({where}). {why}")
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
        at = f" at {their.number} ({sig(their)})" if their is not None else ""
        return [b.rank for b in behind], (
            f"The ranks' collective sequences diverged in {s.stuck.group.label()}: {rank_phrase(b.rank for b in behind)} "
            f"stopped in {s.stuck.number} ({sig(s.stuck)}) while {rank_phrase(ahead)} waited{at}.")
    return None


def cycle(job: Job, roots: Sequence[int]) -> list[int]:
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


def _in_call(w: Work) -> bool:
    """A work known only from a live stack: the call the rank is blocked in, with no group or number."""
    return w.seq is None and w.group.id is None and w.frame is not None and not w.p2p and w.op != HOST_SYNC


def _deadlock_summary(job: Job, ring: Sequence[int]) -> str:
    runs = []
    members = set(ring)
    inside: dict[int, set[int]] = {r: set() for r in ring}
    for e in job.edges:
        if e.waiter in members and e.target in members and e.target is not None:
            inside[e.waiter].add(e.target)
    live = {p.rank: p for p in job.live}
    for r in ring:
        s = job.rank(r)
        assert s is not None and s.stuck is not None
        targets = sorted(inside[r])
        if _in_call(s.stuck) and (p := live.get(r)) is not None and p.where is not None:
            text = f" (`{p.text}`)" if p.text else ""
            runs.append(f"rank {r} is blocked in {p.collective or sig(s.stuck)} at {frame_line(p.where)}{text} and "
                        f"waits there for {rank_phrase(targets)}")
            continue
        runs.append(f"rank {r} runs {s.stuck.group.label()} {s.stuck.number} ({sig(s.stuck)}) and waits there for "
                    f"{rank_phrase(targets)}")
    if all(_in_call(s.stuck) for r in ring if (s := job.rank(r)) is not None and s.stuck is not None):
        return (f"Deadlock across process groups: {'; '.join(runs)}. A collective returns only once every member of "
                "its group has called it, and each of these ranks is blocked in a different call: they issued these "
                f"collectives in different orders. No single rank is the culprit: every one of {rank_phrase(ring)} "
                "waits for another.")
    orders = []
    pendings = {r: _pending(s) for r in ring if (s := job.rank(r)) is not None}
    frames = {w.frame for ws in pendings.values() for w in ws[:4]}
    one_line = len(frames) == 1 and None not in frames
    for r, pending in pendings.items():
        if len(pending) > 1:
            orders.append(f"rank {r}: {', then '.join(short(w, not one_line) for w in pending[:4])}")
    called = ""
    if one_line:
        f = next(iter(frames))
        assert f is not None
        called = f", all from {frame_line(f)}"
    works = [w for ws in pendings.values() for w in ws[:4]]
    what = "the groups" if not any(w.p2p for w in works) and len({w.group for w in works}) > 1 else "these operations"
    how = (f" They issued {what} in different orders ({'; '.join(orders)}{called})." if len(orders) > 1 else
           " Each is blocked by work the other queued behind its own: the groups were issued in different orders.")
    return (f"Deadlock across process groups: {'; '.join(runs)}.{how} No single rank is the culprit: every one of "
            f"{rank_phrase(ring)} waits for another.")


def _stuck_everywhere(job: Job, stated: bool = True) -> tuple[list[int], list[str]]:
    """Ranks each waiting in two or more groups at once, every member of each group waiting there too.

    A collective whose members all arrived with the same call completes unless the transport failed, or unless
    each member can only start it after another of its own pending collectives, which waits for a member
    stuck the same way: the pattern of groups issued in opposite order. Text logs show the pattern; only the
    dumps' record order (or live stacks) show which order each rank issued its groups in.
    """
    stuck = {s.rank: _pending(s) for s in job.ranks if s.stuck is not None}
    if not stated and any(s.present and s.stuck is None or s.ending.kind is EndKind.UNKNOWN for s in job.ranks):
        return [], []  # a group whose members are not stated may wait for any rank the inputs say nothing of
    if len(stuck) < 2 or any(len({w.group for w in ws}) < 2 for ws in stuck.values()):
        return [], []
    groups = {g.id: g for g in job.groups}
    names = []
    for gid in {w.group for ws in stuck.values() for w in ws}:
        g = groups.get(gid)
        if g is None or (stated and not g.exact) or len(g.members) > len(stuck) or any(m not in stuck for m in g.members):
            return [], []
        sigs = {next((w.seq, w.signature()) for w in stuck[m] if w.group == gid) for m in g.members}
        if len(sigs) != 1:
            return [], []
        names.append(f"{gid.label()} #{next(iter(sigs))[0]}")
    return sorted(stuck), sorted(names)


def _unordered_ring(job: Job, ring: Sequence[int] = (), stated: bool = True) -> tuple[VerdictKind, list[int], str] | None:
    """Every rank pinned in several groups at once, from inputs that do not show the order they issued them in.

    ``ring``: ranks the wait-for graph links in a ring (from text, where each rank's first stuck work is only
    a guess); used when the groups' members are not all known. ``stated``: False accepts groups whose members the
    inputs do not state, when every member they name is there; the summary then says what that leaves open.
    """
    ranks, names = _stuck_everywhere(job, stated)
    others = ""
    if ranks:
        every = "every member of each group" if stated else "every member these inputs name of each group"
        where = f"each wait in {' and '.join(names)} at once, with {every} there and the same collective on every " \
                "member"
        if not stated:
            others = (" These inputs do not state the groups' full membership: if they have other members, one of "
                      "them that never arrived would explain it too.")
    elif ring and set(ring) == {s.rank for s in job.ranks if s.present}:
        ranks = list(ring)
        where = "wait for each other, each in several groups at once (" + "; ".join(
            f"rank {r}: {', '.join(sorted(short(w) for w in _pending(s)))}" for r in ring
            if (s := job.rank(r)) is not None) + ")"  # sorted: text does not show the order they were issued in
    else:
        return None
    return (VerdictKind.ALL_RANKS_STUCK, [],
            f"{rank_phrase(ranks).capitalize()} {where}. Either the ranks issued these groups in "
            "different orders (a deadlock: each runs one while the other waits behind it on its stream; no single "
            "rank is the culprit) or the first of them hung in the transport and the rest queued behind it. These "
            f"logs do not show the order each rank issued them in; flight-recorder dumps or a live snapshot do.{others}")


def _inferred_roots(job: Job) -> list[int]:
    """Where the trail leaves the inputs: the present ranks that wait for no one, if any."""
    return [s.rank for s in job.ranks if s.present and s.stuck is None and s.ending.kind in _NOT_WAITING]


def culprits_work(job: Job, primary: Work, culprits: Sequence[int]) -> Work:
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
class Roots:
    """Where the wait-for graph ends: ranks it names, ranks it names by elimination, ranks without input."""

    named: list[int]
    inferred: list[int]
    absent: list[int]
    leaves_inputs: bool
    awaited: list[int] = field(default_factory=list)  # the one member every waiter waited for, with no line of it

    @property
    def culprits(self) -> list[int]:
        return self.named or self.inferred


def find_roots(job: Job) -> Roots:
    by_rank = {s.rank: s for s in job.ranks}
    unknown = [s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN]
    ranks = [r for r in job.roots if r != UNKNOWN_NODE]
    absent = [r for r in ranks if by_rank[r].ending.kind is EndKind.UNKNOWN]
    named = [r for r in ranks if by_rank[r].ending.kind is not EndKind.UNKNOWN]
    leaves = UNKNOWN_NODE in job.roots
    awaited: list[int] = []
    if len(absent) == 1 and not named and unknown == absent and not leaves and not job.unlisted:
        # Every other rank is accounted for: the one without input is the one waited for. It is named only where a
        # line says something of it (job/absent.py); else it is unknown, not guilty, and the place to look.
        if said_of(job, absent[0]):
            named = absent
        else:
            awaited = absent
    inferred = _inferred_roots(job) if leaves and not named and not absent else []
    return Roots(named, inferred, absent, leaves, awaited)


def _cut_off(job: Job, roots: Sequence[int]) -> list[int]:
    """Roots whose one error is that their peers went away, beside roots that never reached a collective.

    Ranks that time out leave, and a rank still inside a collective with them then reads "Connection closed by peer":
    it had reached a collective, waiting with the others or late. A root that printed nothing of a collective (its
    log stops, or the launcher stopped it still running) never reached one, and explains the others' waits without
    the first: where the trail ends at both, the first are cut off, not waited for. Alone, such a rank is the late
    one (the others waited for it until their timeout, then left)."""
    by_rank = {s.rank: s for s in job.ranks}
    cut = [r for r in roots
           if by_rank[r].ending.kind is EndKind.NCCL_ERROR and by_rank[r].ending.gone is not None]
    never = [r for r in roots if by_rank[r].ending.kind in _NEVER_ARRIVED
             or by_rank[r].ending.kind is EndKind.ABORTED and by_rank[r].ending.signal != "SIGABRT"]
    return cut if cut and never and len(cut) + len(never) == len(roots) else []


def _peer_words(ending: Ending) -> str:
    """``Connection closed by peer [127.0.0.1]:40074``: the words of an error that say a peer went away."""
    return ending.gone.words if ending.gone is not None else ending.detail


def _watchdog_aborted(s: RankState, timeouts: dict[str, int]) -> bool:
    """A rank the launcher reports dead of SIGABRT with no collective of its own in the inputs.

    Releases that print timeouts without a ``[PG ...]`` prefix predate the heartbeat monitor: their watchdog
    aborted a process only after one of its own works timed out or failed, so such a rank was waiting somewhere
    too. Later releases' monitor thread also aborts a rank when another rank signals a timeout through the store,
    so there it may have been anywhere. Its abort must be reported after another rank's timeout (in the same
    file): an abort before any timeout is a crash of its own (an uncaught C++ exception also ends in SIGABRT)."""
    e = s.ending
    return (e.kind is EndKind.ABORTED and e.signal == "SIGABRT" and s.stuck is None and e.loc is not None
            and timeouts.get(e.loc.file, e.loc.line) < e.loc.line)


def stuck_verdict(job: Job, roots: Roots, primary: Work) -> tuple[VerdictKind, list[int], str]:
    """Some ranks are stuck: the roots' endings name the kind."""
    by_rank = {s.rank: s for s in job.ranks}
    waiting = sorted(s.rank for s in job.ranks if s.stuck is not None)
    culprits = roots.culprits
    where = place(primary)
    failed = [r for r in culprits if by_rank[r].ending.kind in FAILED]
    if failed:
        detail = "; ".join(f"rank {r}: {by_rank[r].ending.detail}" for r in failed)
        return (VerdictKind.RANK_FAILED_FIRST, failed,
                f"{rank_phrase(failed).capitalize()} failed first ({detail}); "
                f"{rank_phrase(waiting, job.world, failed)} then waited in {where} for it.")
    ring = cycle(job, roots.named)
    if ring and _issue_order_known(job, ring):
        return VerdictKind.DEADLOCK, [], _deadlock_summary(job, ring)
    hedged = _unordered_ring(job, ring) if ring else None
    if hedged is not None:
        return hedged
    # An all_to_all's tensors differ by rank by design: its split accounting, not its shapes, says who was short.
    mism = history_mismatch(job, ("all_to_all",)) or _mismatch_culprits(job, roots.named) or history_mismatch(job)
    if mism is not None:
        return VerdictKind.COLLECTIVE_MISMATCH, mism[0], mism[1]
    if (past := passed(job)) is not None:  # one member still in a call the others finished with (job/passed.py)
        return VerdictKind.COLLECTIVE_MISMATCH, [], past.summary()
    timed_out = any(s.stuck is not None and s.stuck.state == "timed_out" for s in job.ranks)
    # A rank's word that its peers went away (Ending.gone), from a rank the others waited for until their
    # timeout, is their leaving after it (they kept the connection open all that time), not a failed transport.
    errs = [r for r in culprits if by_rank[r].ending.kind is EndKind.NCCL_ERROR
            and not (timed_out and by_rank[r].ending.gone is not None)]
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
                    f"after their timeout ({'; '.join(_peer_words(by_rank[r].ending) for r in cut[:2])}): "
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
        if roots.awaited:
            return VerdictKind.INCOMPLETE, [], head + awaited_words(job, roots.awaited)
        if roots.absent or unknown or job.unlisted:
            return (VerdictKind.INCOMPLETE, [],
                    head + f"the ranks waited for are not in these inputs ({absent_phrase(job, roots.absent or unknown)}). "
                    "They are unknown, not guilty: the culprit is among them.")
        # Nothing says the job has other ranks: only that the group's members are not named.
        hedged = _unordered_ring(job, stated=False)
        if hedged is not None:
            return hedged
        return (VerdictKind.INCOMPLETE, [],
                head + "these inputs do not name the members of its group, so who they waited for cannot be told "
                "from them.")
    hedged = _unordered_ring(job)
    if hedged is not None:
        return hedged
    if (unlaunched := never_launched(job, primary)) is not None:  # the same call everywhere, one GPU never began it
        return VerdictKind.LAGGING_RANK, *unlaunched
    return (VerdictKind.ALL_RANKS_STUCK, [],
            f"{rank_phrase(waiting, job.world).capitalize()} {'waits' if len(waiting) == 1 else 'wait'} in the same "
            f"collective, {place(primary)}, and no member of its group is missing: suspect the transport (network, "
            "NVLink/PCIe P2P, NCCL itself).")


def alone_after_the_end(job: Job, primary: Work) -> tuple[VerdictKind, list[int], str] | None:
    """Ranks stuck in a collective after the program said the others' work, or their own training, was over.

    Where the inputs name no member that could still arrive, a rank that waits after the others printed that they
    completed, or after its own training loop ended, issued a collective the others never will (or a larger one):
    code that only it runs (``if rank == 0`` around a checkpoint, a barrier, logging), or a size that differs.
    """
    stuck = {s.rank: s.stuck for s in job.ranks if s.stuck is not None}
    if not stuck:
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
    # A member without input could still arrive, unless the program said it completed, or the stuck ranks' own
    # training loop had ended (the others, in step with it, ended theirs).
    unknown = {s.rank for s in job.ranks if s.ending.kind is EndKind.UNKNOWN}
    if unknown and not ended and not unknown <= set(others):
        return None
    ranks = sorted(stuck)
    if others:
        line = next(f.loc for f in facts if f.value.isdigit() and int(f.value) in others)
        why = f"the program printed that {rank_phrase(others)} completed ({line})"
    else:
        why = (f"its training loop had ended first ({ended[0].value}, {ended[0].loc}), and the others, in step with "
               "it through every training step, ended theirs too")
    return (VerdictKind.COLLECTIVE_MISMATCH, ranks,
            f"{rank_phrase(ranks).capitalize()} waited in {place(primary)} after the others' work was over: {why}. "
            f"No other rank will issue it: {rank_phrase(ranks)} ran a collective the others did not (one inside code "
            "only that rank runs, such as `if rank == 0:` or `is_global_zero` around a checkpoint save, a barrier or "
            "logging), or one of another size that the others' smaller call let them finish.")


def consistent(job: Job, kind: VerdictKind, culprits: list[int], summary: str) -> tuple[VerdictKind, list[int], str]:
    """The verdict may not contradict its own table: 'every rank waits' while a member exited is a failure first."""
    if kind is not VerdictKind.ALL_RANKS_STUCK:
        return kind, culprits, summary
    gone = [s for s in job.ranks if s.ending.kind in FAILED and s.stuck is None]
    if not gone:
        return kind, culprits, summary
    detail = "; ".join(f"rank {s.rank}: {s.ending.detail}" for s in gone[:4])
    waiting = sorted(s.rank for s in job.ranks if s.stuck is not None)
    return (VerdictKind.RANK_FAILED_FIRST, [s.rank for s in gone],
            f"{rank_phrase(s.rank for s in gone).capitalize()} failed first ({detail}); "
            f"{rank_phrase(waiting, job.world)} then waited for {'it' if len(gone) == 1 else 'them'}.")
