"""Build the job model from evidence: every text log, dump and live stack into one :class:`Job`.

What each source contributes:

* timeout records (watchdog and status lines): a rank's stuck work in one group, with the
  group's counters; ``[rankN]:`` prefixes and log paths give the global rank, ``[Rank N]`` the
  rank inside the group (kept apart);
* dump-signal lines: a rank's counters in a group even where it printed no timeout;
* ``initialization options`` lines: group rank, group size and global rank of each member;
* flight-recorder dumps: exact members (``pg_config``), every recorded work per group with its
  sizes, state, Python frame and p2p peer, and the issue order across groups;
* errors, async NCCL errors, torchrun's failure table and live stacks: how each rank ended.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from ncclcheck import signals
from ncclcheck.evidence.formats.errors import fatal_signal
from ncclcheck.evidence.frdump import Dump, Entry, numel
from ncclcheck.evidence.tables import as_work, rows, rows_with
from ncclcheck.evidence.types import (
    PG,
    DumpSignal,
    ElasticFailure,
    ErrorKind,
    FileScan,
    LiveStack,
    Loc,
    RankError,
    WorkMention,
    is_default_group,
)
from ncclcheck.job import origins
from ncclcheck.job.calls import call_before
from ncclcheck.job.causes import one_line
from ncclcheck.job.facts import with_facts
from ncclcheck.job.graph import gaps, wait_for
from ncclcheck.job.live import library, live_state
from ncclcheck.job.model import (
    BY_LINE,
    BY_RECORD,
    BY_START,
    HOST_SYNC,
    STATED_LIMIT,
    Ending,
    EndKind,
    Group,
    GroupId,
    Job,
    MemberSource,
    Position,
    RankState,
    Record,
    Work,
)
from ncclcheck.job.tables import Tables
from ncclcheck.job.world import WorldStatement, statements, strongest
from ncclcheck.ranks import Spans, ranges
from ncclcheck.transfer import GATHER_SCATTER_OPS

REAL_FAILURES = {ErrorKind.OOM, ErrorKind.CUDA, ErrorKind.EXCEPTION}
_DEFAULT_KEY = ("guid", "0")
_NO_PG = PG()  # a status line's group that names nothing: made once, not once a line (issue 42)
_ASYNC = "async_exception"  # the works the build keeps of a scan: its table is asked for these alone (evidence/tables.py)
# Status lines alone ("failure detected by watchdog") follow errors as well as timeouts.
_NOT_TIMEOUT = {"failure_detected", "exception_detected"}


def group_key(pg: PG | GroupId | None) -> tuple[str, str]:
    """Groups are told apart by GUID where one is known (IDs repeat across a mesh), else by ID."""
    if pg is None:
        return ("unknown", "")
    if is_default_group(pg):
        return _DEFAULT_KEY
    if pg.guid is not None:
        return ("guid", pg.guid)
    if pg.id is not None:
        return ("id", pg.id)
    return ("unknown", "")


@dataclass
class _GroupB:
    id: str | None = None
    guid: str | None = None
    desc: str | None = None
    members: dict[int, int | None] = field(default_factory=dict)  # global -> group rank
    exact: tuple[int, ...] | None = None
    size: int | None = None
    size_at: Loc | None = None  # the line that stated ``size``
    _gid: GroupId | None = None  # shared by every work of the group while its identity stays the same
    last: PG | GroupId | None = None  # the identity absorbed last

    def absorb(self, pg: PG | GroupId | None) -> None:
        if pg is None:
            return
        self.id = self.id if self.id is not None else pg.id
        self.guid = self.guid if self.guid is not None else pg.guid
        self.desc = self.desc or pg.desc or None

    def gid(self) -> GroupId:
        key = (self.id, self.guid, self.desc)
        if self._gid is None or (self._gid.id, self._gid.guid, self._gid.desc) != key:
            self._gid = GroupId(*key)
        return self._gid


@dataclass
class _PosB:
    group_rank: int | None = None
    enq: int | None = None
    started: int | None = None
    done: int | None = None
    stuck: Work | None = None
    works: list[Work] = field(default_factory=list)
    source: str = "logs"
    counted: Loc | None = None  # the line that stated its counters alone


def _world_numbered(g: _GroupB, table: set[int]) -> bool:
    """Whether a group no line names is numbered as the world group: releases before the ``[PG ...]`` prefix print
    one ``[Rank N]`` for every group, and ``_Builder._record_rank`` reads such a rank as global where nothing else
    gives one. Where every member's group rank is its global rank (ProcessGroupNCCL.cpp's watchdog line of a
    default-group work, no ``[rankN]:`` saying otherwise), the group is the world's, which holds every rank up to
    the highest: ``[Rank 3]`` alone says ranks 0-2 are members too. gloo's timeouts print no group rank at all; there
    torchrun's failure table (``table``: its workers' global ranks), the job's ranks when no line states the world,
    makes the group the world's as a stated world does (``_groups``: a group no line names is the world group)."""
    return bool(g.members) and (any(k is not None for k in g.members.values()) or bool(table)) and \
        all(k is None or k == r for r, k in g.members.items())


def _hi(a: int | None, b: int | None) -> int | None:
    """The higher counter of two; a negative one (a group's "none yet", -1) or a missing one counts only where the
    other is missing too. Asked several times a rank: plain comparisons, no list (issue 42)."""
    if b is None or b < 0:
        return b if a is None else a
    if a is None or a < 0 or b > a:
        return b
    return a


class _Builder:
    def __init__(self, scans: Sequence[FileScan], records: Sequence[Record]) -> None:
        self.scans = scans
        self.records = records
        self.groups: dict[tuple[str, str], _GroupB] = {}
        self.pos: dict[tuple[int, tuple[str, str]], _PosB] = {}
        self.files: dict[int, set[str]] = defaultdict(set)
        self.seen: set[int] = set()
        self.async_errors: dict[tuple[int, int | None], WorkMention] = {}
        self.only_key: tuple[str, str] | None = None  # the one group the records name (from_records)
        # Each group object already absorbed, by identity (kept, so that no other object takes its id): a job of
        # 100,000 ranks names its groups about six times a rank; absorbing an object again changes nothing.
        self.absorbed: dict[int, tuple[PG | GroupId | None, tuple[str, str]]] = {}

    def group(self, pg: PG | GroupId | None) -> tuple[str, str]:
        known = self.absorbed.get(id(pg))
        if known is not None and known[0] is pg:
            return known[1]
        key = group_key(pg)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _GroupB()
        if g.last is not pg:  # a log names its groups with a few shared objects: absorb each once
            g.last = pg
            g.absorb(pg)
            if key == _DEFAULT_KEY:
                g.id, g.guid, g.desc = g.id or "0", g.guid or "0", g.desc or "default_pg"
        self.absorbed[id(pg)] = (pg, key)
        return key

    def at(self, rank: int, key: tuple[str, str]) -> _PosB:
        p = self.pos.get((rank, key))
        if p is None:
            p = self.pos[(rank, key)] = _PosB()
        return p

    def member(self, key: tuple[str, str], rank: int, group_rank: int | None) -> None:
        g = self.groups[key]
        if g.members.get(rank) is None:
            g.members[rank] = group_rank

    # ------------------------------------------------------------------ text evidence
    def from_records(self) -> None:
        self.async_errors = {}
        for s in self.scans:
            # a table's rows of async errors alone (evidence/tables.py); a kept one as its object
            for w in rows_with(s.works, "evidence", _ASYNC.__eq__):
                if w.evidence != "async_exception":  # asked first: the rank only of the few that are (issue 42)
                    continue
                rank = w.who.rank if w.who.rank is not None else w.rank
                if rank is not None and (rank, w.seq) not in self.async_errors:
                    self.async_errors[rank, w.seq] = as_work(w)
        rank_of = [self._record_rank(r) for r in self.records]
        untimed = {rank for rank, r in zip(rank_of, self.records, strict=True) if r.started_s is None}
        timed = set(rank_of) - untimed
        # Each record's group key once: the keys, then the records' walk (a group absorbed in the same order)
        key_of = [self.group(r.pg) if r.pg is not None else None for r in self.records]
        keyed = set(key_of)
        keyed.discard(None)
        only = next(iter(keyed)) if len(keyed) == 1 else None
        self.only_key = only
        for rank, rec, key in zip(rank_of, self.records, key_of, strict=True):
            if rank is None:
                continue
            if key is None:
                key = only if only is not None else self.group(None)
            self.member(key, rank, rec.group_rank)
            p = self.at(rank, key)
            p.group_rank = p.group_rank if p.group_rank is not None else rec.group_rank
            p.enq, p.done = _hi(p.enq, rec.last_enqueued), _hi(p.done, rec.last_completed)
            timed_out = not _NOT_TIMEOUT.issuperset(rec.evidence)
            err = self.async_errors.get((rank, rec.seq))
            op = rec.op_type or (err.op_type if err else None)
            call = call_before(self.scans, rank, rec.loc) if op is None and "gloo_timeout" in rec.evidence else None
            op, frame = call if call is not None else (op, None)  # gloo names no op: its traceback does
            if rec.seq is not None and (op or "") not in ("SEND", "RECV"):
                p.enq = _hi(p.enq, rec.seq)  # a send's or receive's SeqNum counts p2p ops, not collectives
            numel = rec.numel_in if rec.numel_in is not None else (err.numel_in if err else None)
            # A rank's timeouts ordered by their start stamps when each has one, else all by line: never a start
            # time against a line number.
            if not timed_out:
                continue  # an error on this work, not a wait: the rank's ending says what failed
            order = ((BY_START, rec.started_s) if rank in timed and rec.started_s is not None
                     else (BY_LINE, float(rec.loc.line)))
            work = Work(self.groups[key].gid(), rec.seq, op, numel, rec.numel_out,
                        p2p=(op or "") in ("SEND", "RECV"), state="timed_out", timeout_ms=rec.timeout_ms,
                        ran_for_ms=rec.ran_for_ms, order=order, loc=rec.loc, frame=frame)
            if p.stuck is None or _earlier(work, p.stuck):
                p.stuck = work

    @staticmethod
    def _record_rank(rec: Record) -> int | None:
        """The global rank; the message's group rank stands in only where the group is the world."""
        if rec.global_rank is not None:
            return rec.global_rank
        if rec.path_rank is not None:
            return rec.path_rank
        if rec.pg is None or is_default_group(rec.pg):
            return rec.rank
        return None

    def _counters(self, d: DumpSignal) -> None:
        """A group's counters stated alone: the rank's position there, no wait (a periodic line is printed while its
        work runs). A prefix without a group (before 2.3) is the group the timeouts name where they name one."""
        rank = d.who.rank if d.who.rank is not None else (
            d.rank if d.pg is None or is_default_group(d.pg) else None)
        if rank is None:
            return
        only = self.only_key  # from_records' walk, once: not the records again for each such line (issue 42)
        key = self.group(d.pg) if d.pg is not None else (only if only is not None else self.group(None))
        p = self.at(rank, key)
        p.enq, p.done = _hi(p.enq, d.last_enqueued), _hi(p.done, d.last_completed)
        p.counted = d.loc if p.counted is None or p.counted.line < d.loc.line else p.counted
        self.member(key, rank, None)
        self.seen.add(rank)  # the line is its own: it printed where it stood
        self.files[rank].add(d.loc.file)

    def from_text(self) -> None:
        files = self.files
        for s in self.scans:
            self.seen.update(s.ranks_seen)
            for r in s.ranks_seen:
                files[r].add(s.file)
            for d in s.dump_signals:
                if d.alone:
                    self._counters(d)
                    continue
                rank = d.who.rank
                if rank is None or d.pg is None:
                    continue
                key = self.group(d.pg)
                p = self.at(rank, key)
                p.enq, p.done = _hi(p.enq, d.last_enqueued), _hi(p.done, d.last_completed)
                self.member(key, rank, None)
                pending = d.last_enqueued is not None and d.last_completed is not None and \
                    d.last_enqueued > d.last_completed
                if d.from_rank is None and pending and p.stuck is None:
                    # "from this local rank": this process's own watchdog timed out; its WorkNCCL line is missing.
                    assert d.last_completed is not None
                    p.stuck = Work(self.groups[key].gid(), d.last_completed + 1, None, state="timed_out",
                                   order=(BY_LINE, d.loc.line), loc=d.loc)
            for gi in rows(s.group_inits):  # three a rank or more: rows, member() written out (issue 42)
                rank = gi.global_rank if gi.global_rank is not None else gi.who.rank
                if rank is None:
                    continue
                g = self.groups[self.group(gi.pg)]
                if g.members.get(rank) is None:
                    g.members[rank] = gi.group_rank
                if not g.size and gi.size:
                    g.size, g.size_at = gi.size, gi.loc
            for st in rows(s.statuses):
                if st.who.global_rank is not None and st.pg is not None and st.pg != _NO_PG:
                    self.member(self.group(st.pg), st.who.global_rank, st.rank)
            for w in rows_with(s.works, "evidence", _ASYNC.__eq__):
                if w.evidence != "async_exception":
                    continue
                rank = w.who.rank if w.who.rank is not None else w.rank
                if rank is None:
                    continue
                self.seen.add(rank)
                self.files[rank].add(s.file)

    # ------------------------------------------------------------------ dumps
    def from_dumps(self) -> None:
        scans = [s for s in self.scans if s.dump is not None and s.dump.rank is not None]
        dumps = [s.dump for s in scans if s.dump is not None]
        # split_group (DeviceMesh's sub-groups) gives disjoint groups one name: told apart by their members, as
        # PyTorch's own analyzer does (components/builder.py keys a group by its name and its ranks).
        lists: dict[str, set[tuple[int, ...]]] = defaultdict(set)
        for d in dumps:
            for name, ranks in d.pg_ranks.items():
                if ranks:
                    lists[name].add(tuple(sorted(ranks)))
        split = {name for name, seen in lists.items() if len(seen) > 1}
        for s in scans:
            assert s.dump is not None
            self._dump(s.dump, s.file, split)

    def _dump(self, d: Dump, file: str, split: set[str]) -> None:
        rank = d.rank
        assert rank is not None
        self.seen.add(rank)
        self.files[rank].add(file)
        descs = {e.pg: e.pg_desc for e in d.entries if e.pg_desc}
        ids = {e.pg: e.pg_id for e in d.entries if e.pg_id is not None}

        def guid(name: str) -> str:
            ranks = d.pg_ranks.get(name)
            return f"{name}:{ranges(ranks)}" if name in split and ranks else name

        for name, ranks in d.pg_ranks.items():
            gid = GroupId(ids.get(name) or ("0" if name == "0" else None), guid(name),
                          descs.get(name) or d.pg_desc.get(name))
            key = self.group(gid)
            g = self.groups[key]
            if ranks:
                g.exact = tuple(sorted(ranks))
                g.size, g.size_at = len(ranks), Loc(d.file, 0)
                for i, r in enumerate(ranks):
                    self.member(key, r, i)
        by_pg: dict[str, list[Entry]] = defaultdict(list)
        for e in d.entries:
            by_pg[e.pg].append(e)
        for name, entries in by_pg.items():
            gid = GroupId(ids.get(name) or ("0" if name == "0" else None), guid(name), descs.get(name))
            key = self.group(gid)
            members = self.groups[key].exact
            p = self.at(rank, key)
            p.source = "dump"
            status = d.pg_status.get(ids.get(name) or name, {})
            coll = [e for e in entries if not e.is_p2p and e.seq is not None]
            works = [self._work(self.groups[key].gid(), e, members) for e in sorted(entries, key=_order)]
            p.works = works
            for e in coll:
                p.enq = _hi(p.enq, e.seq)
                if e.state in ("started", "completed"):
                    p.started = _hi(p.started, e.seq)
                if e.state == "completed":
                    p.done = _hi(p.done, e.seq)
            p.enq = _hi(p.enq, status.get("last_enqueued_collective"))
            p.started = _hi(p.started, status.get("last_started_collective"))
            p.done = _hi(p.done, status.get("last_completed_collective"))
            pending = [w for w in works if w.state != "completed"]
            if pending:
                first = pending[0]
                old = p.stuck
                if old is not None and old.seq == first.seq and not first.p2p:
                    first = Work(first.group, first.seq, first.op, first.numel_in, first.numel_out, first.sizes,
                                 first.dtypes, first.p2p, first.peer, "timed_out", first.frame,
                                 old.timeout_ms or first.timeout_ms, old.ran_for_ms, first.order, old.loc,
                                 first.out_sizes, first.out_dtypes)
                p.stuck = first

    @staticmethod
    def _work(gid: GroupId, e: Entry, members: tuple[int, ...] | None) -> Work:
        peer = None
        if e.peer is not None:
            peer = members[e.peer] if members and e.peer < len(members) else e.peer if gid.guid == "0" else None
        return Work(gid, e.p2p_seq if e.is_p2p else e.seq, op_name(e.op), e.numel_in,
                    sum(numel(s) for s in e.output_sizes) if e.output_sizes else None, e.input_sizes, e.dtypes,
                    e.is_p2p, peer, e.state, e.user_frame(), e.timeout_ms, None, (BY_RECORD, e.record_id or 0), None,
                    e.output_sizes, e.output_dtypes)

    def _live_position(self, rank: int, ls: LiveStack) -> None:
        """A rank whose Python stack is inside a collective waits in it, in a group the stack does not name.

        With the dumps of the same moment, the dump's position is exact and this adds nothing.
        """
        if any(r == rank and p.stuck is not None for (r, _), p in self.pos.items()):
            return
        frames = ls.threads[0].frames if ls.threads else ()
        on_gpu = any("/torch/cuda/" in f.file and f.name.rsplit(".", 1)[-1] == "synchronize" for f in frames)
        if ls.collective is None and not on_gpu:
            return  # in its own code: the ending says where
        frame = next((f for f in frames if not library(f.file) and not f.file.startswith("<")), None)
        op = op_name(ls.collective) if ls.collective else HOST_SYNC  # NCCL: blocked behind GPU work
        key = self.group(None)
        self.at(rank, key).source = "stack"  # the call the rank is blocked in now: after all it issued before
        self.at(rank, key).stuck = Work(self.groups[key].gid(), None, op, state="scheduled", frame=frame, order=(BY_LINE, 0),
                                        loc=ls.loc)

    # ------------------------------------------------------------------ the whole job
    def world(self) -> WorldStatement | None:
        """The strongest statement of the world (see :mod:`ncclcheck.job.world`); a failure table is none."""
        found = statements(self.scans)
        for key, g in self.groups.items():
            if g.exact:
                kind = "dump" if key == _DEFAULT_KEY else "group_members"
                # A world group's list states its size; a member numbered past it (a damaged dump) makes it larger.
                size = max(g.exact) + 1 if kind == "group_members" else max(len(g.exact), max(g.exact) + 1)
                found.append(WorldStatement(size, kind, None))
        for r in self.records:
            if r.op_type not in GATHER_SCATTER_OPS:  # asked first: one test a record, not a sort (issue 42)
                continue
            small, big = sorted((r.numel_in or 0, r.numel_out or 0))
            if small and big > small and big % small == 0 and is_default_group(r.pg):
                found.append(WorldStatement(big // small, "gather", r.loc))
        seen = set(self.seen) | {r for r, _ in self.pos}
        if seen:
            top = max(seen)
            files = sorted(self.files.get(top, ()))
            found.append(WorldStatement(top + 1, "ranks_seen", Loc(files[0], 0) if files else None))
        # The tasks a launcher names (Slurm's "tasks 0-7: Killed") ran: the job has at least that many.
        if self.spans:
            lo, hi, e = max(self.spans, key=lambda x: x[1])
            found.append(WorldStatement(hi + 1, "ranks_seen", e.loc))
        return strongest(found)

    def job(self) -> Job:
        self._index()
        self.from_records()
        self.from_text()
        self.from_dumps()
        stated = self.world()
        # Ranks seen show the job is at least that large, not its size: the world group then stays "partial".
        world = stated.size if stated is not None and stated.kind != "ranks_seen" else None
        world_at = stated.loc if stated is not None and stated.kind != "ranks_seen" else None
        live = {ls.global_rank: ls for s in self.scans for ls in s.live}
        for r, ls in live.items():
            self.seen.add(r)
            self.files[r].add(ls.loc.file)
            self._live_position(r, ls)
        groups = self._groups(world)
        gid_of = {k: g.id for k, g in zip(self.groups, groups, strict=True)}
        positions: dict[int, list[Position]] = defaultdict(list)
        for (rank, key), p in sorted(self.pos.items(), key=itemgetter(0)):
            gid = gid_of[key]
            stuck = p.stuck if p.stuck is None else _regroup(p.stuck, gid)
            positions[rank].append(Position(rank, gid, p.group_rank, p.enq, p.started, p.done, stuck,
                                            tuple(_regroup(w, gid) for w in p.works), p.source, p.counted))
        # A failure table's ranks are ranks of the job (their endings say how they failed); they bound nothing.
        ranks = set(self.seen) | set(positions) | set(self.elastic)
        for g in groups:
            if not isinstance(g.members, range):
                ranks |= set(g.members)
        limit = max(STATED_LIMIT, 2 * len(ranks))
        for g in groups:
            if isinstance(g.members, range) and len(g.members) <= limit:
                ranks |= set(g.members)
        unlisted: tuple[range, ...] = ()
        # The tasks a launcher names are ranks of the job, listed one by one only as far as the limit goes.
        for lo, hi, _ in self.spans:
            if hi - lo < limit:
                ranks |= set(range(lo, hi + 1))
        if world and world <= limit:
            ranks |= set(range(world))
        elif world:
            unlisted = gaps(sorted(r for r in ranks if 0 <= r < world), range(world))
        states = [self._rank_state(r, positions.get(r, []), live.get(r)) for r in sorted(ranks)]
        edges, roots = wait_for(states, groups)
        live_positions, stack_groups = live_state(self.scans)
        return Job(world, tuple(states), tuple(groups), tuple(edges), tuple(roots), tuple(self.records),
                   live_positions, stack_groups, stated, world_at, unlisted)

    def _layout(self) -> dict[tuple[str, str], tuple[int, ...]]:
        """Members of sub-groups placed from what their lines say: the group's size (its ``initialization options``
        line, or its siblings': the groups of one mesh dimension, same description or ID, have one size) and the
        group ranks of the members that printed (``[PG … Rank k]``). A dimension's groups are evenly strided (tp
        groups 4-5 and 6-7, dp groups 1, 3, 5, 7): the stride comes from two members of the group or from a sibling.
        So rank 5, silent, is placed in tp group 4-5 where rank 4 printed group rank 0 of size 2."""
        def sibling(g: _GroupB) -> tuple[str, str | None]:
            return ("desc", g.desc) if g.desc and g.desc != "default_pg" else ("id", g.id)

        def pairs(g: _GroupB) -> list[tuple[int, int]]:
            return sorted((k, r) for r, k in g.members.items() if k is not None)

        sizes: dict[tuple[str, str | None], set[int]] = defaultdict(set)
        strides: dict[tuple[str, str | None], set[int]] = defaultdict(set)
        subgroups = [(key, g) for key, g in self.groups.items() if key not in (_DEFAULT_KEY, ("unknown", ""))
                     and g.exact is None and sibling(g)[1] is not None]
        # Each sub-group's stride found once, for both walks; its pairs are sorted again in the second, not kept
        # between them (kept, they were ~60 MB more at 262,144 ranks).
        stride_of = [_stride(pairs(g)) for _, g in subgroups]
        for (_, g), st in zip(subgroups, stride_of, strict=True):
            if g.size:
                sizes[sibling(g)].add(g.size)
            if st is not None:
                strides[sibling(g)].add(st)
        out: dict[tuple[str, str], tuple[int, ...]] = {}
        for (key, g), stride in zip(subgroups, stride_of, strict=True):
            known = pairs(g)
            size = {g.size} if g.size else sizes[sibling(g)]
            if stride is None and len(strides[sibling(g)]) == 1:
                stride = next(iter(strides[sibling(g)]))
            if not known or stride is None or len(size) != 1 or len(known) >= (n := next(iter(size))):
                continue
            base = known[0][1] - known[0][0] * stride
            members = tuple(base + i * stride for i in range(n))
            if base >= 0 and all(0 <= k < n and members[k] == r for k, r in known):
                out[key] = members
        return out

    def _groups(self, world: int | None) -> list[Group]:
        out = []
        placed = self._layout()
        # torchrun's failure table lists its workers by global rank: ranks of the job, so members of its world group
        table = {r for r, fs in self.elastic.items() if any(not f.agent_line for f in fs)}
        for key, g in self.groups.items():
            members = tuple(sorted(g.members))
            if g.exact:
                out.append(Group(g.gid(), g.exact, len(g.exact), MemberSource.PG_CONFIG))
            elif key in placed:
                out.append(Group(g.gid(), placed[key], len(placed[key]), MemberSource.LAYOUT))
            elif key == _DEFAULT_KEY and (world or g.size):
                n = g.size or world or 0
                out.append(Group(g.gid(), range(n), n, MemberSource.DEFAULT_GROUP))
            elif g.size and len(members) >= g.size:
                out.append(Group(g.gid(), members, g.size, MemberSource.INIT_LINES))
            elif world and len(members) == world and members[0] == 0 and members[-1] == world - 1:
                out.append(Group(g.gid(), members, world, MemberSource.ALL_RANKS))
            elif key == ("unknown", "") and world:
                out.append(Group(g.gid(), range(world), world, MemberSource.DEFAULT_GROUP))
            elif key == _DEFAULT_KEY and members or key == ("unknown", "") and _world_numbered(g, table):
                # The world group holds every rank up to the highest seen, whatever its size: a gap is a member.
                out.append(Group(g.gid(), range(max((*members, *table)) + 1), None, MemberSource.PARTIAL))
            else:
                out.append(Group(g.gid(), members, g.size, MemberSource.PARTIAL if members else MemberSource.UNKNOWN))
        return out

    def _rank_state(self, rank: int, positions: list[Position], live: LiveStack | None) -> RankState:
        stuck_works = [p.stuck for p in positions if p.stuck is not None]
        stuck = min(stuck_works, key=_stuck_order) if stuck_works else None
        first_error = self._first_error(rank)
        return RankState(rank, self._ending(rank, positions, first_error, live), tuple(positions), stuck,
                         first_error, tuple(sorted(self.files.get(rank, ()))), live)

    def _index(self) -> None:
        """Per-rank lookups of errors, NCCL errors and launcher entries, built once."""
        self.errors: dict[int, RankError] = {}
        self.nccl_errors: dict[int, WorkMention] = {}
        self.elastic: dict[int, list[ElasticFailure]] = defaultdict(list)
        self.tables: list[tuple[list[tuple[int, int]], ElasticFailure]] = []
        self.spans: list[tuple[int, int, ElasticFailure]] = []
        self.heartbeats = {h.who.rank: h for s in self.scans for h in s.heartbeats if h.who.rank is not None}
        for s in self.scans:
            for e in s.errors:
                if e.who.rank is not None:
                    self.errors.setdefault(e.who.rank, e)
            for w in rows_with(s.works, "evidence", _ASYNC.__eq__):
                if w.evidence != "async_exception":
                    continue
                rank = w.who.rank if w.who.rank is not None else w.rank
                if rank is not None and rank not in self.nccl_errors:
                    self.nccl_errors[rank] = as_work(w)
            for f in s.elastic:
                if f.rank is not None and f.last_rank is not None:
                    self.spans.append((f.rank, f.last_rank, f))  # a launcher's task range: kept as one
                elif f.rank is not None:
                    self.elastic[f.rank].append(f)
            listed = merged((f.rank, _last(f)) for f in s.elastic if f.rank is not None)
            if listed:
                self.tables.append((listed, s.elastic[0]))
        self.span_index = Spans(self.spans)
        # The launcher's "Sending process N closing signal SIGTERM": which processes it stopped, joined to ranks by PID
        # (NCCL's line header and torchrun's failure table give a rank's PID).
        self.stopped: dict[int, tuple[str, Loc]] = {}
        for s in self.scans:
            for c in s.clues:
                if c.closing is not None:  # the agent's "Sending process N closing signal SIG…" (formats/torchrun.py)
                    self.stopped.setdefault(c.closing.pid, (c.closing.signal, c.loc))
        self.received = set(origins.received([(c.text, c.loc) for s in self.scans for c in s.clues
                                              if c.kind == "launcher"]))
        self.pid_of: dict[int, int] = {}
        if self.stopped:
            for s in self.scans:
                for fact in s.facts:
                    if fact.key == "pid" and fact.who.rank is not None and fact.value.isdigit():
                        self.pid_of.setdefault(fact.who.rank, int(fact.value))
            for r, fs in self.elastic.items():
                for f in fs:
                    if f.pid is not None and not f.agent_line:
                        self.pid_of.setdefault(r, f.pid)
        # Asked by every rank with no ending of its own: built once (issue 42).
        self.unplaced = sorted(set(self.stopped) - set(self.pid_of.values()))
        self.table_index = Tables(self.tables)
        self.agents = origins.agents(self.stopped)
        self.self_aborted = self._self_aborted()
        # Each rank's news that its library shut down after another rank's failure (Horovod's, formats/errors.py)
        self.shut_down = {c.who.rank: c for s in self.scans for c in s.clues
                          if c.kind == "shutdown" and c.who.rank is not None}

    def _self_aborted(self) -> frozenset[int]:
        """The ranks whose SIGABRT was their own process's, not the watchdog's: glibc printed its check's words
        (evidence/formats/glibc.py) before it aborted the process. A line of no rank is the abort of the one rank
        the launcher reports dead of SIGABRT, where it reports one alone."""
        checked = {c.who.rank for s in self.scans for c in s.clues if c.kind == "glibc"}
        if not checked:
            return frozenset()
        aborted = {r for r, fs in self.elastic.items() if any(f.signal == "SIGABRT" for f in fs)}
        named = {r for r in checked if r in aborted}
        return frozenset(named if named or None not in checked or len(aborted) != 1 else aborted)

    def _first_error(self, rank: int) -> RankError | None:
        return self.errors.get(rank)

    def _ending(self, rank: int, positions: list[Position], err: RankError | None, live: LiveStack | None) -> Ending:
        elastic = self.elastic.get(rank, []) + self.span_index.at(rank)
        for f in elastic:
            if f.signal in signals.FATAL:
                code = f" (exit code {f.exitcode})" if f.exitcode is not None else ""
                return Ending(EndKind.KILLED, f"killed by {f.signal}{code}, no traceback", f.loc, f.signal)
        timeouts = [p.stuck for p in positions if p.stuck is not None and p.stuck.state == "timed_out"]
        if err is not None and err.kind is ErrorKind.KILLED:
            sig = fatal_signal(err.message)
            how = f"died of {sig}" if sig else "died with no error of its own, by a signal the line does not name"
            return Ending(EndKind.KILLED, f"{how}: {one_line(err.message)}", err.loc, sig, err.gone)
        if err is not None and (stop := origins.interrupted(err)) is not None:
            return stop
        if err is not None and err.kind in REAL_FAILURES:
            before = not any(
                w.loc is not None and w.loc.file == err.loc.file and w.loc.line < err.loc.line for w in timeouts)
            if before:
                return Ending(EndKind.EXCEPTION, one_line(err.message), err.loc, gone=err.gone)
        w = self.nccl_errors.get(rank)
        if w is not None:
            op = f"{w.op_type} #{w.seq}" if w.op_type else "a collective"
            return Ending(EndKind.NCCL_ERROR, f"NCCL error in {op}: {_first_sentence(w.error)}", w.loc, gone=w.gone)
        if err is not None and err.kind in (ErrorKind.CONNECTION, ErrorKind.NCCL_ERROR) and not timeouts:
            return Ending(EndKind.NCCL_ERROR, one_line(err.message), err.loc, gone=err.gone)
        if timeouts:
            first = min(timeouts, key=_stuck_order)
            return Ending(EndKind.TIMED_OUT, f"timed out in {first.describe()} {first.number}", first.loc)
        pid = self.pid_of.get(rank)
        if pid is not None and pid in self.stopped and not any(f.signal or f.exitcode for f in elastic):
            sig, loc = self.stopped[pid]
            return Ending(EndKind.ABORTED, f"stopped by the launcher ({sig} to its PID {pid}) after another process "
                          "failed; it printed no error of its own", loc, sig)
        outside = origins.outside_stop(elastic, self.stopped, self.agents, self.received)
        if outside is not None:
            return outside
        if (news := self.shut_down.get(rank)) is not None and not timeouts:
            # its exit (a launcher's exit code) follows from that news: it stopped after another rank's failure
            return Ending(EndKind.ABORTED, f"stopped after another rank's failure: {one_line(news.text)}", news.loc)
        exited = self._exited(rank)
        if exited is not None:
            return exited
        for f in elastic:
            if f.signal or (f.exitcode or 0) != 0:
                code = f" (exit code {f.exitcode})" if f.exitcode is not None else ""
                how = f"{f.signal}{code}" if f.signal else f"exit code {f.exitcode}"
                if f.signal == "SIGABRT" and rank in self.self_aborted:
                    return Ending(EndKind.EXCEPTION, f"ended by {how}: glibc aborted it on its own check", f.loc,
                                  f.signal)
                if f.signal in ("SIGABRT", "SIGTERM"):
                    who = "the watchdog's abort" if f.signal == "SIGABRT" else "the launcher stopping it"
                    return Ending(EndKind.ABORTED, f"ended by {how}: {who}, after a failure", f.loc, f.signal)
                return Ending(EndKind.EXCEPTION, f"exited with {how}", f.loc)
        if live is not None:
            where = f"in {live.collective}" if live.collective else "in host code"
            return Ending(EndKind.RUNNING, f"still running, {where}", live.loc)
        pending = [p.stuck for p in positions if p.stuck is not None]
        if pending:
            first = min(pending, key=_stuck_order)
            files = sorted(self.files.get(rank, ()))
            return Ending(EndKind.WAITING, f"its dump shows it waiting in {first.describe()} {first.number} "
                          f"({first.state}); no timeout line in these inputs", Loc(files[0], 0) if files else None)
        beat = self.heartbeats.get(rank)
        if beat is not None:
            how = f"for {beat.seconds} s " if beat.seconds else ""
            return Ending(EndKind.HUNG, f"reported its own watchdog stuck {how}(the heartbeat monitor): the process "
                          "is blocked, in a CUDA call or holding the GIL, not waiting in a collective", beat.loc)
        if rank in self.seen:
            return Ending(EndKind.SILENT, "its input shows no timeout, error or exit")
        return Ending(EndKind.UNKNOWN, "no input from this rank")

    def _exited(self, rank: int) -> Ending | None:
        """A rank missing from a torchrun failure table that lists its other ranks exited with status 0, unless the
        launcher stopped processes no input ties to a rank: then it may be one of them."""
        if rank not in self.seen:
            return None
        unplaced = self.unplaced
        if unplaced and self.table_index.left_out(rank):
            sig, loc = self.stopped[unplaced[0]]
            return Ending(EndKind.ABORTED, f"not in torchrun's failure table, while the launcher stopped "
                          f"{len(unplaced)} process(es) ({sig}) that these inputs do not tie to a rank: most likely "
                          "stopped after another process failed, not exited", loc, sig)
        # the listed ranks and this one are one unbroken run: it is the one the table leaves out
        first = None if unplaced else self.table_index.completed_by(rank)
        if first is not None:
            return Ending(EndKind.EXITED, "exited with status 0 while the others still needed it (torchrun's "
                          "failure table lists the ranks around it, not this one)", first.loc)
        return None


def _last(f: ElasticFailure) -> int:
    """The last rank an entry is about (a launcher's task range ``0-7`` is one entry)."""
    assert f.rank is not None
    return f.last_rank if f.last_rank is not None else f.rank


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive rank intervals merged where they touch or overlap: ``(0, 2), (3, 5), (7, 7)`` -> ``(0, 5), (7, 7)``."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _stride(pairs: Sequence[tuple[int, int]]) -> int | None:
    """The one stride of (group rank, global rank) pairs, or None: fewer than two, or no single positive stride."""
    found = set()
    for (k1, r1), (k2, r2) in zip(pairs, pairs[1:], strict=False):
        if k2 == k1 or (r2 - r1) % (k2 - k1):
            return None
        found.add((r2 - r1) // (k2 - k1))
    return found.pop() if len(found) == 1 and min(found) > 0 else None


def _earlier(a: Work, b: Work) -> bool:
    """Was ``a`` issued before ``b``? The same counter says so; a p2p op and a collective count apart, so their
    timeouts' order (start time, else line) stands in."""
    if a.p2p != b.p2p or a.seq is None or b.seq is None:
        return a.order < b.order
    return a.seq < b.seq


def _first_sentence(text: str | None) -> str:
    if not text:
        return "async exception"
    cut = text.split(", NCCL version")[0]
    return cut if len(cut) <= 160 else cut[:157] + "..."


def op_name(op: str) -> str:
    """A dump's ``all_reduce`` / ``_all_gather_base`` in the log's spelling: ``ALLREDUCE`` / ``_ALLGATHER_BASE``."""
    up = op.upper()
    for a, b in (("ALL_REDUCE", "ALLREDUCE"), ("ALL_GATHER", "ALLGATHER"), ("ALL_TO_ALL", "ALLTOALL")):
        up = up.replace(a, b)
    return up


def _order(e: Entry) -> int:
    return e.record_id if e.record_id is not None else (e.seq or e.p2p_seq or 0)


# Dumps order works across groups (record id); logs by the line where the timeout was printed. An attrgetter: asked
# for every rank's stuck work, a C-level key (issue 42).
_stuck_order = attrgetter("order")


def _regroup(w: Work, gid: GroupId) -> Work:
    if w.group is gid or w.group == gid:  # the same object, a rank at a time: no field compared (issue 42)
        return w
    return Work(gid, w.seq, w.op, w.numel_in, w.numel_out, w.sizes, w.dtypes, w.p2p, w.peer, w.state, w.frame,
                w.timeout_ms, w.ran_for_ms, w.order, w.loc, w.out_sizes, w.out_dtypes)


def build_job(scans: Sequence[FileScan], records: Sequence[Record]) -> Job:
    """Every source into one job: ranks, groups, positions, endings and the wait-for graph."""
    return with_facts(_Builder(scans, records).job(), scans)
