"""The wait-for graph: who each stuck rank waits for, across groups, down to the root(s).

A rank stuck in work #s of group G waits for every member of G that has not reached #s, that
issued a different collective at #s, or that reached it but is itself stuck in earlier work of
another group.  A send or receive waits for its one peer.  Following edges across groups ends
in ranks that wait for no one: dead, killed, exited, busy in host code, or silent.  Those are
the roots; every other rank on the way is only waiting.  Where a group's members or a rank's
input are missing, the edge points at "unknown" rather than at a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ncclcheck.evidence.frdump import Frame
from ncclcheck.job.model import HOST_SYNC, STATED_LIMIT, Edge, EdgeReason, EndKind, Group, GroupId, Position, RankState, Work
from ncclcheck.ranks import ranges, ranges_of, rank_phrase

_ENDED = {EndKind.EXCEPTION, EndKind.KILLED, EndKind.EXITED, EndKind.NCCL_ERROR}


def _same_work(a: Work, b: Work) -> bool:
    """One work of one group. A live stack names neither group nor number, only the call the rank is blocked in:
    ranks blocked at different lines are in different calls (a call returns once every member has made it). Not so
    for a CUDA synchronisation: ranks blocked there at different lines may wait behind one collective."""
    if (a.seq is None and b.seq is None and a.frame is not None and b.frame is not None and a.frame != b.frame
            and HOST_SYNC not in (a.op, b.op)):
        return False
    return a.group == b.group and a.seq == b.seq and a.p2p == b.p2p


def differs(a: Work, b: Work) -> bool:
    """Two ranks' works at one sequence number that cannot be the same collective."""
    if a.op and b.op and a.op != b.op:
        return True
    if a.sizes and b.sizes and not (a.op or "").startswith("ALLTOALL"):  # an all_to_all's splits differ by rank
        return a.sizes != b.sizes or (bool(a.dtypes and b.dtypes) and a.dtypes != b.dtypes)
    return a.numel_in is not None and b.numel_in is not None and a.numel_in != b.numel_in and a.op not in (
        "ALLGATHER", "GATHER", "SCATTER", "ALLTOALL", "ALLTOALL_BASE", "REDUCE_SCATTER", "COALESCED")


def _at(p: Position, seq: int | None) -> Work | None:
    return next((w for w in p.works if not w.p2p and w.seq == seq), None)


class _Graph:
    def __init__(self, states: Sequence[RankState], groups: Sequence[Group]) -> None:
        self.by_rank = {s.rank: s for s in states}
        self.groups = {g.id: g for g in groups}
        self.pos = {(s.rank, p.group): p for s in states for p in s.positions}
        self.edges: list[tuple[int, Work, int | None, EdgeReason, str]] = []
        self.cache: dict[tuple[GroupId, int | None, tuple[object, ...], Frame | None],
                         tuple[list[tuple[int | None, EdgeReason, str]], bool]] = {}

    def add(self, waiter: int, w: Work, target: int | None, reason: EdgeReason, detail: str) -> None:
        self.edges.append((waiter, w, target, reason, detail))

    def collective(self, s: RankState, w: Work) -> None:
        key = (w.group, w.seq, w.signature(), w.frame if w.seq is None else None)
        if key not in self.cache:
            self.cache[key] = self._members(w)
        found, passed = self.cache[key]
        rank = s.rank
        mine = [x for x in found if x[0] != rank]
        self.edges.extend([(rank, w, m, reason, detail) for m, reason, detail in mine])
        if passed or mine:
            return
        g = self.groups.get(w.group)
        if not (g is not None and g.exact):
            named = f" (known members: {rank_phrase(g.members)})" if g and g.members else ""
            self.add(rank, w, None, EdgeReason.UNKNOWN, f"its membership is not in these inputs{named}")

    def _members(self, w: Work) -> tuple[list[tuple[int | None, EdgeReason, str]], bool]:
        """What every member of the group says about work ``w``: evaluated once for all its waiters."""
        g = self.groups.get(w.group)
        members: Sequence[int] = g.members if g else ()
        beyond = ""
        if len(members) > max(STATED_LIMIT, len(self.by_rank)):
            # A stated world far beyond the ranks read: only ranks with a state can say anything; the rest are one
            # edge in rank ranges, never one call per member.
            inside = members if isinstance(members, range) else set(members)
            known = sorted(m for m in self.by_rank if m in inside)
            if isinstance(members, range) and members.step == 1:
                beyond = ranges_of(gaps(known, members))
            else:
                beyond = ranges(sorted(set(members) - set(known)))
            members = known
        found: list[tuple[int | None, EdgeReason, str]]
        found = [(m, *edge) for m in members if (edge := self._member(w, m)) is not None]
        # Members without any input are one edge, not one each: logs of some nodes of a 100,000-rank job would
        # otherwise give every waiter an edge to every rank not collected (waiters x missing ranks).
        absent = [m for m, reason, _ in found if m is not None and reason is EdgeReason.UNKNOWN and self._no_input(m)]
        if len(absent) > 1:
            gone = set(absent)
            found = [x for x in found if x[0] not in gone]
            found.append((None, EdgeReason.UNKNOWN, NO_INPUT + rank_phrase(absent)))
        if beyond and beyond != "none":
            found.append((None, EdgeReason.UNKNOWN, f"{NO_INPUT}ranks {beyond}"))
        # Members that completed this very number did something else with it: the waiter is the odd one out.
        passed = any((p := self.pos.get((m, w.group))) is not None and p.last_completed is not None
                     and w.seq is not None and p.last_completed >= w.seq for m in members)
        return found, passed

    def _no_input(self, m: int) -> bool:
        st = self.by_rank.get(m)
        return st is None or st.ending.kind is EndKind.UNKNOWN

    def _member(self, w: Work, m: int) -> tuple[EdgeReason, str] | None:
        """Why a waiter in ``w`` waits for member ``m``, or None when ``m`` is there with it (or past it)."""
        st = self.by_rank.get(m)
        if st is None or st.ending.kind is EndKind.UNKNOWN:
            return EdgeReason.UNKNOWN, f"{NO_INPUT}rank {m}"
        p = self.pos.get((m, w.group))
        if p is None:
            if st.stuck is not None:
                return EdgeReason.BLOCKED_ELSEWHERE, f"rank {m} is stuck in {_where(st.stuck)}"
            if st.ending.kind in _ENDED:
                return EdgeReason.NOT_REACHED, f"rank {m} {st.ending.detail}"
            return EdgeReason.NOT_REACHED, f"rank {m} never reported waiting there"
        mine = _at(p, w.seq)
        if mine is None and p.stuck is not None and p.stuck.seq == w.seq and not p.stuck.p2p:
            mine = p.stuck
        if mine is not None and differs(w, mine):
            if w.seq is None:  # gloo's timeouts print no number: each rank's is the collective it is blocked in
                return EdgeReason.DIFFERENT_COLLECTIVE, f"rank {m} is blocked in {mine.describe()}, not {w.describe()}"
            return EdgeReason.DIFFERENT_COLLECTIVE, f"rank {m} issued {mine.describe()} as #{w.seq}, not {w.describe()}"
        if mine is None and w.seq is not None and p.last_enqueued is not None and p.last_enqueued < w.seq:
            return EdgeReason.NOT_REACHED, f"rank {m} never issued #{w.seq} there (its last was #{p.last_enqueued})"
        if st.stuck is not None and not _same_work(st.stuck, w):
            if p.last_completed is not None and w.seq is not None and p.last_completed >= w.seq:
                return None  # it finished this work; it waits elsewhere, not on the waiter's account
            if _past(p.stuck, w):
                return None  # its timeout names a later number here, the oldest it had not finished: past this one
            return EdgeReason.BLOCKED_ELSEWHERE, f"rank {m} is stuck in {_where(st.stuck)}"
        return None

    def p2p(self, s: RankState, w: Work) -> None:
        peer = w.peer
        if peer is None:
            g = self.groups.get(w.group)
            self.add(s.rank, w, None, EdgeReason.UNKNOWN,
                     f"its peer is not named in these inputs{'' if g is None else ' (' + g.id.label() + ')'}")
            return
        st = self.by_rank.get(peer)
        if st is None or st.ending.kind is EndKind.UNKNOWN:
            self.add(s.rank, w, peer, EdgeReason.UNKNOWN, f"no input from rank {peer}")
            return
        match = self._matching(s.rank, w, peer)
        if match is not None and _p2p_differs(w, match):
            self.add(s.rank, w, peer, EdgeReason.DIFFERENT_COLLECTIVE,
                     f"rank {peer}'s matching {(match.op or 'operation').lower()} ({match.number}, {match.state}) is "
                     f"{_payload(match)}, this {(w.op or 'operation').lower()} is {_payload(w)}: the two sides disagree")
            return
        theirs = st.stuck
        if theirs is not None and theirs.p2p and theirs.peer == s.rank:
            return  # both sides posted: they wait together
        if theirs is not None:
            self.add(s.rank, w, peer, EdgeReason.BLOCKED_ELSEWHERE, f"rank {peer} is stuck in {_where(theirs)}")
            return
        verb = "send" if (w.op or "").upper().startswith("RECV") else "receive"
        detail = f"rank {peer} never posted the matching {verb}"
        if st.ending.kind in _ENDED:
            detail += f": it {st.ending.detail}"
        self.add(s.rank, w, peer, EdgeReason.P2P_PEER, detail)

    def _matching(self, rank: int, w: Work, peer: int) -> Work | None:
        """The peer's op that pairs with ``w``: the k-th send to a rank meets that rank's k-th receive from it."""
        mine = self._p2p_with(rank, w.group, peer, w.op)
        k = next((i for i, x in enumerate(mine) if x.seq == w.seq), None)
        other = "RECV" if (w.op or "").upper().startswith("SEND") else "SEND"
        theirs = self._p2p_with(peer, w.group, rank, other)
        return theirs[k] if k is not None and k < len(theirs) else None

    def _p2p_with(self, rank: int, group: GroupId, peer: int, op: str | None) -> list[Work]:
        p = self.pos.get((rank, group))
        kind = (op or "").upper()[:4]
        return [] if p is None else sorted(
            (x for x in p.works if x.p2p and x.peer == peer and (x.op or "").upper().startswith(kind)),
            key=lambda x: x.order)


def _payload(w: Work) -> str:
    count = f"{w.numel_in:,} element{'' if w.numel_in == 1 else 's'}" if w.numel_in is not None else "of unknown size"
    return count + (f" of {'/'.join(w.dtypes)}" if w.dtypes else "")


def _p2p_differs(a: Work, b: Work) -> bool:
    """A send and its receive must move the same elements of the same dtype."""
    if a.numel_in is not None and b.numel_in is not None and a.numel_in != b.numel_in:
        return True
    return bool(a.dtypes and b.dtypes) and a.dtypes != b.dtypes


def _past(theirs: Work | None, w: Work) -> bool:
    """A member whose watchdog timed out two or more collectives later in the waiter's group: the watchdog names a
    group's oldest unfinished work, and the group's collectives complete in order, so it had completed the waiter's
    and the one after (job/passed.py). One number past it, the member may still wait on the waiter: the edge stays."""
    return (theirs is not None and not theirs.p2p and not w.p2p and theirs.state == "timed_out"
            and theirs.group == w.group and theirs.seq is not None and w.seq is not None and theirs.seq >= w.seq + 2)


def _where(w: Work) -> str:
    number = f"({w.number})" if w.p2p else w.number
    return f"{w.describe()} {number} of {w.group.label()}"


def _sccs(nodes: Iterable[int], out: dict[int, set[int]]) -> list[set[int]]:
    """Strongly connected components (iterative Tarjan): mismatch cycles are one component."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    comps: list[set[int]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(out.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(out.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                comps.append(comp)
    return comps


UNKNOWN_NODE = -1
NO_INPUT = "no input from "  # an edge's detail when the ranks waited for left nothing in the inputs


def roots_of(edges: Sequence[tuple[int, int | None]], stuck: Iterable[int]) -> list[set[int]]:
    """The sink components reachable from the stuck ranks; ``UNKNOWN_NODE`` stands for unnamed members."""
    out: dict[int, set[int]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(UNKNOWN_NODE if b is None else b)
    reach: set[int] = set()
    todo = [r for r in stuck if r in out]
    while todo:
        v = todo.pop()
        if v in reach:
            continue
        reach.add(v)
        todo.extend(out.get(v, ()))
    # Peeled from the far end first: a node whose every edge leads to nodes already peeled is on no cycle, so it is
    # a component of its own, and a sink only with no edge out. A hang's waiters wait for peers that wait for the
    # straggler, a chain with no cycle: all of them peel, one step an edge, and Tarjan's heavier walk runs only over
    # the rest, with its edges among the rest (a component there that no edge of the whole graph leaves is one of
    # the whole graph, and every sink that is not peeled lies inside the rest) (issue 42).
    into: dict[int, list[int]] = {}
    left: dict[int, int] = {}
    for v in reach:
        targets = out.get(v, ())
        left[v] = len(targets)
        for t in targets:
            into.setdefault(t, []).append(v)
    ends = [v for v, n in left.items() if n == 0]
    todo = list(ends)
    peeled = set(ends)
    while todo:
        for u in into.get(todo.pop(), ()):
            left[u] -= 1
            if left[u] == 0:
                peeled.add(u)
                todo.append(u)
    rest = reach - peeled
    inner = {v: {t for t in out[v] if t in rest} for v in rest}
    comps = [{v} for v in sorted(ends)] + _sccs(sorted(rest), inner)
    sinks = []
    for c in comps:
        if all(t in c for v in c for t in out.get(v, ())):
            sinks.append(c)
    return sinks


def wait_for(states: Sequence[RankState], groups: Sequence[Group]) -> tuple[list[Edge], list[int]]:
    """(edges, roots) of the job; roots are ranks, ``UNKNOWN_NODE`` where the trail leaves the inputs."""
    g = _Graph(states, groups)
    for s in states:
        if s.stuck is None:
            continue
        if s.stuck.p2p:
            g.p2p(s, s.stuck)
        else:
            g.collective(s, s.stuck)
    edges = [Edge(a, w, b, reason, detail) for a, w, b, reason, detail in g.edges]
    sinks = roots_of([(e.waiter, e.target) for e in edges], [s.rank for s in states if s.stuck is not None])
    roots = sorted({r for c in sinks for r in c})
    return edges, roots


def gaps(present: Sequence[int], span: range) -> tuple[range, ...]:
    """The ranks of ``span`` (step 1) not in ``present`` (sorted, inside it), as ranges: one per gap."""
    out: list[range] = []
    nxt = span.start
    for r in present:
        if r > nxt:
            out.append(range(nxt, r))
        nxt = max(nxt, r + 1)
    if nxt < span.stop:
        out.append(range(nxt, span.stop))
    return tuple(out)
