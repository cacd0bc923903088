"""The ``--json`` contract of ``analyze-log``: stable, versioned, complete, no markup.

Record field names follow the conformance files in ``../shared/conformance``.  Version 2 adds the
job model (groups with members, each rank's ending and positions, the wait-for edges and roots),
the verdict's chain and unknown ranks, and every input problem.  Version 3 adds the verdict's ``cause``
(the failure catalogue's kind, its detail, the ranks that show it and the fix), the verdict's ``cycle`` (the
ranks of a deadlock across groups) and the ``clues`` events.  Version 4 folds every list that grows with the
job (records, groups, ranks, edges, events, inputs, dumps) into classes with rank sets, so that the default JSON
stays small at 100,000 ranks; ``per_rank`` holds the version-3 lists item by item when asked for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import partial
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

from ncclcheck.evidence.formats import colltrace, ncclsetup
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.tables import LineTable, rows, rows_with
from ncclcheck.evidence.types import PG, FileScan, Lagging, Loc
from ncclcheck.findings import Finding
from ncclcheck.job.actions import Action
from ncclcheck.job.causes import Diagnosis
from ncclcheck.job.hosts import join_events
from ncclcheck.job.model import STATED_LIMIT as LISTED
from ncclcheck.job.model import Analysis, Edge, Group, GroupId, Job, Position, RankState, Record, Verdict, Work
from ncclcheck.job.reasons import Stated
from ncclcheck.ranks import ranges, ranges_of
from ncclcheck.render.versions import versions_json
from ncclcheck.schemas import ANALYZE_LOG as SCHEMA_VERSION


def pg_json(pg: PG | None) -> dict[str, Any] | None:
    """A PG as ``{id, guid, desc}`` or null."""
    return None if pg is None else {"id": pg.id, "guid": pg.guid, "desc": pg.desc}


def loc_json(loc: Loc) -> str:
    """``file:line``."""
    return str(loc)


def record_json(r: Record) -> dict[str, Any]:
    """One timeout event."""
    return {
        "rank": r.rank,
        "global_rank": r.global_rank,
        "pg": pg_json(r.pg),
        "seq": r.seq,
        "op_type": r.op_type,
        "numel_in": r.numel_in,
        "numel_out": r.numel_out,
        "tensor_shape": r.tensor_shape,
        "timeout_ms": r.timeout_ms,
        "ran_for_ms": r.ran_for_ms,
        "last_enqueued": r.last_enqueued,
        "last_completed": r.last_completed,
        "evidence": list(r.evidence),
        "occurrences": r.occurrences,
        "file": r.loc.file,
        "line": r.loc.line,
    }


def finding_json(f: Finding) -> dict[str, Any]:
    """One finding."""
    return {
        "severity": f.severity.value,
        "code": f.code,
        "message": f.message,
        "evidence": [str(e) for e in f.evidence],
        "fix": f.fix,
    }


def cause_json(d: Diagnosis | None) -> dict[str, Any] | None:
    """The catalogue's cause: what failed, where it shows, why, and the fix."""
    if d is None:
        return None
    c = d.cause
    return {"kind": c.kind, "family": c.family, "title": c.title, "detail": d.detail, "ranks": list(d.ranks),
            "evidence": [loc_json(x) for x in d.locs], "why": c.why, "fix": list(d.fix), "probe": c.probe,
            "reference": c.source}


def stated_json(x: Stated | None) -> dict[str, Any] | None:
    """The most specific line the job wrote about its failure (job/reasons.py): its source, words, meaning, rank and
    place."""
    if x is None:
        return None
    return {"source": x.source, "text": x.text, "meaning": x.meaning, "rank": x.rank, "at": loc_json(x.loc)}


def group_json(g: GroupId) -> dict[str, Any]:
    """A group's identity."""
    return {"id": g.id, "guid": g.guid, "desc": g.desc}


def work_json(w: Work | None) -> dict[str, Any] | None:
    """One work as a rank issued it."""
    if w is None:
        return None
    return {
        "group": group_json(w.group), "seq": w.seq, "op": w.op, "numel_in": w.numel_in, "numel_out": w.numel_out,
        "sizes": [list(s) for s in w.sizes], "dtypes": list(w.dtypes), "p2p": w.p2p, "peer": w.peer,
        "state": w.state, "timeout_ms": w.timeout_ms, "ran_for_ms": w.ran_for_ms,
        "frame": None if w.frame is None else _frame(w.frame),
        "at": None if w.loc is None else loc_json(w.loc),
    }


def _position(p: Position) -> dict[str, Any]:
    return {"group": group_json(p.group), "group_rank": p.group_rank, "last_enqueued": p.last_enqueued,
            "last_started": p.last_started, "last_completed": p.last_completed, "stuck": work_json(p.stuck),
            "source": p.source}


def _rank(s: RankState) -> dict[str, Any]:
    e = s.first_error
    return {
        "rank": s.rank,
        "ending": {"kind": s.ending.kind.value, "detail": s.ending.detail,
                   "at": None if s.ending.loc is None else loc_json(s.ending.loc)},
        "stuck": work_json(s.stuck),
        "positions": [_position(p) for p in s.positions],
        "first_error": None if e is None else {"kind": e.kind.value, "message": e.message, "at": loc_json(e.loc)},
        "files": list(s.files),
    }


def _group(g: Group) -> dict[str, Any]:
    # A stated world's group far beyond the ranks read is written in the report's notation, never expanded.
    members: list[int] | str | None = (ranks_json(g.members) if isinstance(g.members, range) and len(g.members) > LISTED
                                       else list(g.members))
    return {**group_json(g.id), "members": members, "size": g.size, "members_source": g.source.value}


def _edge(e: Edge) -> dict[str, Any]:
    return {"waiter": e.waiter, "target": e.target, "reason": e.reason.value, "detail": e.detail,
            "work": work_json(e.work)}


# ---------------------------------------------------------------------------------------------- events
# Each event list of the JSON is written twice, item by item (``per_rank.events``) and folded into classes
# (``events``); one table says what each holds, and both writers read it.  A field is one of:
#   WHAT   what happened: written in both forms, and the classes' key (the raw value; JSON through ``to``)
#   WHOSE  whose it is or where (a rank, a group rank, a pid): item by item only; a class has its ``ranks``
#   GROUP  the process group: ``{id, guid, desc}`` item by item, ``{id, desc}`` in a class (``groups`` counts them)
#   OTHER  the other rank of a pair: item by item under its name, in a class as the ``other_ranks`` set
WHAT, WHOSE, GROUP, OTHER = "what", "whose", "group", "other"


class _Field:
    __slots__ = ("name", "role", "get", "to")

    def __init__(self, name: str, role: str, get: Callable[[Any], Any], to: Callable[[Any], Any] | None = None) -> None:
        self.name, self.role, self.get, self.to = name, role, get, to


class _Event:
    """One event list: the scans' attribute it comes from, which items, whose they are, and their fields in order."""

    __slots__ = ("name", "attr", "keep", "rank", "fields", "count_groups", "pick", "by_pick")

    def __init__(self, name: str, attr: str, rank: Callable[[Any], int | None], fields: Sequence[_Field],
                 keep: Callable[[Any], bool] | None = None, count_groups: bool = True,
                 pick: tuple[str, Callable[[Any], bool]] | None = None) -> None:
        self.name, self.attr, self.keep, self.rank, self.fields = name, attr, keep, rank, tuple(fields)
        self.count_groups = count_groups  # a class says how many groups (GUIDs) its items are in
        self.pick = pick  # a field and the values of it ``keep`` can take: a table's other rows are never made
        self.by_pick = keep is None and pick is not None
        if keep is None and pick is not None:  # the items are those of the values picked: a table's classes are
            self.keep = partial(_picked, attrgetter(pick[0]), pick[1])  # read by their values (_by_columns)

    def items(self, scans: Sequence[FileScan]) -> Iterable[Any]:
        return self._items(map(attrgetter(self.attr), scans))

    def _items(self, lists: Iterable[Sequence[Any]]) -> Iterable[Any]:
        # a list kept as a table (evidence/tables.py) is read as its rows: the same attributes, no object a line
        pick = self.pick
        every = chain.from_iterable(map(rows, lists) if pick is None else (rows_with(x, *pick) for x in lists))
        return every if self.keep is None else filter(self.keep, every)

    def one(self, x: Any) -> dict[str, Any]:
        """One item, every field."""
        out: dict[str, Any] = {}
        for f in self.fields:
            v = f.get(x)
            out[f.name] = pg_json(v) if f.role == GROUP else f.to(v) if f.to is not None else v
        out["at"] = loc_json(x.loc)
        return out

    def folded(self, scans: Sequence[FileScan]) -> list[dict[str, Any]]:
        """The classes: items with the same WHAT (and group) are one, their ranks a set."""
        what = [f for f in self.fields if f.role in (WHAT, GROUP)]
        group = next((f.get for f in self.fields if f.role == GROUP), None)
        other = next((f.get for f in self.fields if f.role == OTHER), None)

        guid = (lambda x: _guid(group(x))) if group is not None and self.count_groups else None
        lists = map(attrgetter(self.attr), scans)
        names = tuple(f.name for f in what)
        by = self.pick[0] if self.pick is not None else None
        if group is None and other is None and self.rank is _WHO_RANK and (self.keep is None or self.by_pick
                                                                            and by in names):
            classes = self._by_columns(lists, names, what)
        else:
            classes = self._by_items(list(self._items(lists)), what, guid, other)
        out = []
        for c in classes:
            x = c.first
            row = _head(c)
            for f in self.fields:
                if f.role == GROUP:
                    row[f.name] = _pg_class(f.get(x))
                    if self.count_groups:
                        row.update(_groups_of(c))
                elif f.role == OTHER:
                    row["other_ranks"] = ranks_json(c.others)
                elif f.role == WHAT:
                    v = f.get(x)
                    row[f.name] = f.to(v) if f.to is not None else v
            row["at"] = loc_json(x.loc)
            out.append(row)
        return out

    def _by_items(self, items: list[Any], what: list[_Field], guid: Callable[[Any], str | None] | None,
                  other: Callable[[Any], int | None] | None) -> list[_Class]:
        """The classes of the items, each made and keyed one by one."""
        # The keys a column at a time, each column one C-level pass (map over an attrgetter), zipped into tuples:
        # at 100,000 ranks a Python call a field and item was most of the events' JSON (issue 42).
        columns = [map(_pg_key, map(f.get, items)) if f.role == GROUP else map(f.get, items) for f in what]
        keys: Iterable[Hashable] = zip(*columns, strict=True) if columns else repeat((), len(items))
        return _fold_keyed(items, keys, self.rank, guid, other)

    def _by_columns(self, lists: Iterable[Sequence[Any]], names: tuple[str, ...], what: list[_Field]) -> list[_Class]:
        """The classes as :meth:`_by_items` makes them, a table of few values read from its columns
        (:meth:`LineTable.grouped`: a row for each value's first line alone; at 100,000 ranks as node logs, 200,000
        facts of two values), the other lists item by item; the classes in order of their first items, their ranks
        in the items' order, as one fold of every item would have them."""
        at = names.index(self.pick[0]) if self.pick is not None else 0
        wanted = _ALL if self.pick is None else (lambda k, shown=self.pick[1]: shown(k[at]))
        classes: dict[Hashable, _Class] = {}
        pending: list[Sequence[Any]] = []
        for lst in lists:
            found = lst.grouped(names, wanted) if isinstance(lst, LineTable) else None
            if found is None:
                pending.append(lst)
                continue
            if pending:
                _merged(classes, self._by_items(list(self._items(pending)), what, None, None), what)
                pending = []
            for k, first, whos in found:
                ranks = list(map(_RANK, whos))
                if None in ranks:
                    ranks = [r for r in ranks if r is not None]
                c = classes.get(k)
                if c is None:
                    classes[k] = _Class.of(first, len(whos), ranks)
                else:
                    c.count += len(whos)
                    c.ranks += ranks
        if pending:
            _merged(classes, self._by_items(list(self._items(pending)), what, None, None), what)
        return list(classes.values())


def _ALL(_: Any) -> bool:
    return True


def _picked(get: Callable[[Any], Any], shown: Callable[[Any], bool], x: Any) -> bool:
    return shown(get(x))


_RANK = attrgetter("rank")


def _merged(classes: dict[Hashable, _Class], more: list[_Class], what: list[_Field]) -> None:
    """``more``'s classes (of later items, no groups or other ranks) added to ``classes``: a class of the same key
    counts their items and ranks after its own."""
    for m in more:
        key = tuple(f.get(m.first) for f in what)
        c = classes.get(key)
        if c is None:
            classes[key] = m
        else:
            c.count += m.count
            c.ranks += m.ranks


def _what(*names: str) -> list[_Field]:
    return [_Field(n, WHAT, attrgetter(n)) for n in names]


_WHO_RANK = attrgetter("who.rank")
_EVENTS = (
    _Event("dump_signals", "dump_signals", attrgetter("who.global_rank"), [
        _Field("global_rank", WHOSE, attrgetter("who.global_rank")), _Field("pg", GROUP, attrgetter("pg")),
        *_what("from_rank", "last_enqueued", "last_completed")], keep=lambda d: not d.alone),
    _Event("heartbeats", "heartbeats", _WHO_RANK, [
        _Field("rank", WHOSE, _WHO_RANK), _Field("pg", GROUP, attrgetter("pg")), *_what("kind", "seconds")],
        count_groups=False),
    _Event("desync_reports", "desync", attrgetter("reporting_rank"), [
        _Field("reporting_rank", WHOSE, attrgetter("reporting_rank")), *_what("timeout_collective", "timeout_index"),
        _Field("lagging", WHAT, attrgetter("lagging"), lambda xs: [_lagging(x) for x in xs]),
        _Field("snapshot", WHAT, attrgetter("snapshot"),
               lambda xs: [{"index": i, "state": st, "op": op, "ranks": list(rs)} for i, st, op, rs in xs])]),
    _Event("mismatches", "mismatches", attrgetter("rank_a"), [
        _Field("rank_a", WHOSE, attrgetter("rank_a")), *_what("fingerprint_a"),
        _Field("rank_b", OTHER, attrgetter("rank_b")), *_what("fingerprint_b")]),
    _Event("errors", "errors", _WHO_RANK, [
        _Field("rank", WHOSE, _WHO_RANK), _Field("kind", WHAT, attrgetter("kind"), attrgetter("value")),
        *_what("message")]),
    _Event("nccl_errors", "works", _WHO_RANK, [
        _Field("rank", WHOSE, _WHO_RANK), _Field("group_rank", WHOSE, attrgetter("rank")),
        *_what("seq", "op_type", "error")], keep=lambda w: w.evidence == "async_exception",
           pick=("evidence", "async_exception".__eq__)),
    _Event("group_inits", "group_inits", attrgetter("global_rank"), [
        _Field("global_rank", WHOSE, attrgetter("global_rank")), _Field("pg", GROUP, attrgetter("pg")),
        _Field("group_rank", WHOSE, attrgetter("group_rank")), *_what("size", "timeout_ms")]),
    _Event("elastic_failures", "elastic", attrgetter("rank"), [
        _Field("rank", WHOSE, attrgetter("rank")), _Field("local_rank", WHOSE, attrgetter("local_rank")),
        *_what("exitcode"), _Field("pid", WHOSE, attrgetter("pid")), *_what("signal"),
        _Field("host", WHOSE, attrgetter("host")), _Field("time", WHOSE, attrgetter("time")), *_what("root_cause")]),
    _Event("stacks", "stacks", _WHO_RANK, [
        _Field("rank", WHOSE, _WHO_RANK), _Field("frames", WHAT, attrgetter("frames"), lambda fs: [_frame(f) for f in fs])]),
    _Event("clues", "clues", _WHO_RANK, [_Field("rank", WHOSE, _WHO_RANK), *_what("kind", "text")]),
    _Event("facts", "facts", _WHO_RANK, [_Field("rank", WHOSE, _WHO_RANK), *_what("key", "value")],
           pick=("key", lambda k: k not in ncclsetup.MARKS  # where set-up lines stop: the verdict cites them
                 and k not in colltrace.FACTS)),  # each traced call and communicator: the verdict cites the ones it compares
)


def _events(a: Analysis) -> dict[str, list[dict[str, Any]]]:
    """Every event one by one."""
    return {**{e.name: [e.one(x) for x in e.items(a.scans)] for e in _EVENTS}, "system": _system(a)}


def _system(a: Analysis) -> list[dict[str, Any]]:
    """The host's and the scheduler's records, each with the ranks it was joined to and through what."""
    return [
        {"kind": e.kind, "source": e.source, "ranks": ranks_json(j.ranks), "joined_by": j.by or None,
         "caveat": j.caveat or None, "pid": e.pid, "process": e.process, "bus": e.bus, "xid": e.xid, "host": e.host,
         "pod": e.pod, "clock": e.clock, "monotonic_s": e.monotonic_s, "details": dict(e.details), "text": e.text,
         "at": loc_json(e.loc)}
        for j in join_events(a.scans) for e in (j.event,)
    ]


def _frame(f: Frame) -> dict[str, Any]:
    return {"name": f.name, "file": f.file, "line": f.line}


def _lagging(x: Lagging) -> dict[str, Any]:
    return {"ranks": list(x.ranks), "finished": x.finished, "did_not_join": x.did_not_join,
            "did_not_finish": x.did_not_finish, "never_joined": x.never_joined}


def _per_rank(a: Analysis) -> dict[str, Any]:
    """Every item one by one: the schema-3 detail, kilobytes per rank at scale."""
    return {
        "inputs": [
            {"file": s.file, "path_rank": s.path_rank, "lines": s.lines, "bytes": s.bytes_read,
             "ranks_seen": list(s.ranks_seen), "kind": _kind(s)}
            for s in a.scans
        ],
        "records": [record_json(r) for r in a.records],
        "groups": [_group(g) for g in a.job.groups],
        "ranks": [_rank(s) for s in a.job.ranks],
        "edges": [_edge(e) for e in a.job.edges],
        "events": _events(a),
        "dumps": [
            {"file": s.file, "rank": s.dump.rank, "version": s.dump.version, "entries": len(s.dump.entries),
             "pg_status": {k: dict(v) for k, v in s.dump.pg_status.items()}}
            for s in a.scans if s.dump is not None
        ],
    }


def _kind(s: FileScan) -> str:
    return "dump" if s.dump is not None else "live" if s.live else "log"


# ---------------------------------------------------------------------------------------------- folded
# Items that differ only in whose they are (rank, group rank, group GUID, file and line) are one class: the
# class says which ranks (a rank set as the report prints it), how many items, and where the first one is.
# A job of 100,000 ranks stuck in one way is then a few classes, and the JSON stays the size of the story.

def ranks_json(ranks: Iterable[int]) -> str | None:
    """A rank set in the report's notation (``0-516, 518-1023``, ``5-509 by 8``), or null when empty."""
    text = ranges(ranks)
    return None if text == "none" else text


class _Class:
    """Items with one key: the first stands for them all; the rest tell whose they are."""

    __slots__ = ("first", "ranks", "count", "guids", "others", "spread")

    @classmethod
    def of(cls, first: Any, count: int, ranks: list[int]) -> _Class:
        """A class of ``count`` items, no groups or other ranks, read from a table's columns (_Event._by_columns)."""
        c = cls.__new__(cls)
        c.first, c.count, c.ranks, c.guids, c.others, c.spread = first, count, ranks, set(), [], []
        return c

    def __init__(self, items: list[Any], rank: Callable[[Any], int | None], guid: Callable[[Any], str | None] | None,
                 other: Callable[[Any], int | None] | None, spread: Callable[[Any], int | None] | None) -> None:
        self.first = items[0]
        self.count = len(items)
        self.ranks = [r for r in map(rank, items) if r is not None]
        self.guids = set(map(guid, items)) if guid is not None else set()
        self.others = [o for o in map(other, items) if o is not None] if other is not None else []
        # a measurement that differs from rank to rank (how long each waited)
        self.spread = [v for v in map(spread, items) if v is not None] if spread is not None else []


def _fold(items: Iterable[Any], key: Callable[[Any], Hashable], rank: Callable[[Any], int | None],
          guid: Callable[[Any], str | None] | None = None,
          other: Callable[[Any], int | None] | None = None,
          spread: Callable[[Any], int | None] | None = None) -> list[_Class]:
    """The classes of ``items`` under ``key``, in order of first appearance."""
    items = list(items)
    return _fold_keyed(items, map(key, items), rank, guid, other, spread)


def _fold_keyed(items: Sequence[Any], keys: Iterable[Hashable], rank: Callable[[Any], int | None],
                guid: Callable[[Any], str | None] | None = None,
                other: Callable[[Any], int | None] | None = None,
                spread: Callable[[Any], int | None] | None = None) -> list[_Class]:
    """:func:`_fold` with each item's key given, in the items' order."""
    classes: defaultdict[Hashable, list[Any]] = defaultdict(list)  # a list made in C on a key's first item
    for x, k in zip(items, keys, strict=True):
        classes[k].append(x)
    return [_Class(xs, rank, guid, other, spread) for xs in classes.values()]


def _head(c: _Class) -> dict[str, Any]:
    return {"ranks": ranks_json(c.ranks), "count": c.count}


def _pg_class(pg: PG | GroupId | None) -> dict[str, Any] | None:
    """A group as a class sees it: ID and description (the GUIDs are in the per-rank detail)."""
    return None if pg is None else {"id": pg.id, "desc": pg.desc}


def _pg_key(pg: PG | GroupId | None) -> tuple[str | None, str | None] | None:
    return None if pg is None else (pg.id, pg.desc)


def _guid(pg: PG | GroupId | None) -> str | None:
    return None if pg is None else pg.guid


def _work_key(w: Work | None) -> Hashable:
    if w is None:
        return None
    return (_pg_key(w.group), w.seq, w.op, w.numel_in, w.numel_out, w.sizes, w.dtypes, w.p2p, w.state,
            w.timeout_ms, w.frame)


def _work_class(w: Work | None) -> dict[str, Any] | None:
    if w is None:
        return None
    return {"group": _pg_class(w.group), "seq": w.seq, "op": w.op, "numel_in": w.numel_in,
            "numel_out": w.numel_out, "sizes": [list(s) for s in w.sizes], "dtypes": list(w.dtypes), "p2p": w.p2p,
            "state": w.state, "timeout_ms": w.timeout_ms, "frame": None if w.frame is None else _frame(w.frame)}


def _groups_of(c: _Class) -> dict[str, Any]:
    return {"groups": len(c.guids)}


def _span(values: list[int]) -> list[int] | None:
    """``[least, most]``: each rank waited its own few milliseconds past the timeout."""
    return [min(values), max(values)] if values else None


def _records(records: Sequence[Record]) -> list[dict[str, Any]]:
    def key(r: Record) -> Hashable:
        return (r.global_rank is None and r.path_rank is None, _pg_key(r.pg), r.seq, r.op_type, r.numel_in,
                r.numel_out, r.tensor_shape, r.timeout_ms, r.last_enqueued, r.last_completed, r.evidence,
                r.occurrences)

    def rank(r: Record) -> int | None:
        return r.global_rank if r.global_rank is not None else r.path_rank

    out = []
    for c in _fold(records, key, rank, lambda r: _guid(r.pg), lambda r: r.rank, lambda r: r.ran_for_ms):
        r = c.first
        out.append({**_head(c), "group_ranks": ranks_json(c.others), "pg": _pg_class(r.pg), **_groups_of(c),
                    "seq": r.seq, "op_type": r.op_type, "numel_in": r.numel_in, "numel_out": r.numel_out,
                    "tensor_shape": r.tensor_shape, "timeout_ms": r.timeout_ms, "ran_for_ms": _span(c.spread),
                    "last_enqueued": r.last_enqueued, "last_completed": r.last_completed,
                    "evidence": list(r.evidence), "occurrences": r.occurrences, "at": loc_json(r.loc)})
    return out


def _groups(groups: Sequence[Group]) -> list[dict[str, Any]]:
    classes: dict[Hashable, list[Group]] = {}
    for g in groups:
        classes.setdefault((g.id.id, g.id.desc, g.size, g.source, len(g.members)), []).append(g)
    out = []
    for gs in classes.values():
        g = gs[0]
        out.append({"id": g.id.id, "desc": g.id.desc, "guid": g.id.guid if len(gs) == 1 else None, "groups": len(gs),
                    "size": g.size, "members_source": g.source.value,
                    "members": ranks_json(gs[0].members if len(gs) == 1 else (m for x in gs for m in x.members))})
    return out


def _ranks(states: Sequence[RankState]) -> list[dict[str, Any]]:
    def position_key(p: Position) -> Hashable:
        return (_pg_key(p.group), p.last_enqueued, p.last_started, p.last_completed, _work_key(p.stuck), p.source)

    def key(s: RankState) -> Hashable:
        e = s.first_error
        return (s.ending.kind, s.ending.detail, _work_key(s.stuck), tuple(map(position_key, s.positions)),
                None if e is None else (e.kind, e.message))

    out = []
    for c in _fold(states, key, attrgetter("rank")):
        s = c.first
        e = s.first_error
        out.append({
            **_head(c),
            "ending": {"kind": s.ending.kind.value, "detail": s.ending.detail},
            "stuck": _work_class(s.stuck),
            "positions": [{"group": _pg_class(p.group), "last_enqueued": p.last_enqueued,
                           "last_started": p.last_started, "last_completed": p.last_completed,
                           "stuck": _work_class(p.stuck), "source": p.source} for p in s.positions],
            "first_error": None if e is None else {"kind": e.kind.value, "message": e.message},
            "at": None if s.ending.loc is None else loc_json(s.ending.loc),
        })
    return out


def _edges(edges: Sequence[Edge]) -> list[dict[str, Any]]:
    out = []
    for c in _fold(edges, lambda e: (e.reason, _work_key(e.work)), lambda e: e.waiter, None, lambda e: e.target):
        e = c.first
        out.append({"waiters": ranks_json(c.ranks), "count": c.count, "targets": ranks_json(c.others),
                    "reason": e.reason.value, "work": _work_class(e.work), "example": e.detail})
    return out


def _folded_events(a: Analysis) -> dict[str, list[dict[str, Any]]]:
    """Every event list as classes; a host's records are few: one by one."""
    return {**{e.name: e.folded(a.scans) for e in _EVENTS}, "system": _system(a)}


def _inputs(scans: Sequence[FileScan]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for s in scans:
        kinds[_kind(s)] = kinds.get(_kind(s), 0) + 1
    return {"files": len(scans), "lines": sum(s.lines for s in scans), "bytes": sum(s.bytes_read for s in scans),
            "kinds": kinds, "ranks_seen": ranks_json(r for s in scans for r in s.ranks_seen)}


def _dumps(scans: Sequence[FileScan]) -> dict[str, Any]:
    dumps = [s.dump for s in scans if s.dump is not None]
    return {"dumps": len(dumps), "ranks": ranks_json(d.rank for d in dumps if d.rank is not None),
            "versions": sorted({d.version for d in dumps if d.version is not None}),
            "entries": sum(len(d.entries) for d in dumps)}


def verdict_json(v: Verdict) -> dict[str, Any]:
    """The verdict object, the same in analyze-log's and snapshot's JSON."""
    return {
        "kind": v.kind.value,
        "summary": v.summary,
        "culprit_ranks": list(v.culprit_ranks),
        "waiting_ranks": list(v.waiting_ranks),
        "unknown_ranks": list(v.unknown_ranks),
        "stopped_ranks": list(v.stopped_ranks),
        "pg": pg_json(v.pg),
        "seq": v.seq,
        "chain": list(v.chain),
        "findings": [finding_json(f) for f in v.findings],
        "next_steps": list(v.next_steps),
        "cause": cause_json(v.cause),
        "cycle": list(v.cycle),
        "action": action_json(v.action),
        "stated": stated_json(v.stated),
    }


def action_json(a: Action | None) -> dict[str, Any] | None:
    """What to do next (version 7): the class, the code a script switches on, why, and the node to drain."""
    if a is None:
        return None
    node = None if a.node is None else {"host": a.node.host, "gpu_bus_id": a.node.gpu_bus_id,
                                        "ranks": list(a.node.ranks)}
    return {"kind": a.kind, "reason": a.reason, "why": a.why, "node": node}


def no_input_json(a: Analysis) -> dict[str, Any]:
    """The result when no input held a line: the same object, with the problems that say why and nothing decided."""
    return {"schema_version": SCHEMA_VERSION, "inputs": _inputs(a.scans),
            "problems": [{"file": p.file, "message": p.message, "fatal": p.fatal} for p in a.problems],
            "dtype_assumed": a.dtype, "records": [], "verdict": None, "job": None, "events": None,
            "flight_recorder": None, "per_rank": None}


def _world_source(job: Job) -> dict[str, Any] | None:
    """The line the world size comes from (``exact``: it states the size; else it only shows ranks up to it)."""
    w = job.world_stated
    if w is None:
        return None
    return {"size": w.size, "exact": w.exact, "kind": w.kind, "says": w.words(),
            "at": str(w.loc) if w.loc is not None else None}


def analysis_json(a: Analysis, per_rank: bool = False) -> dict[str, Any]:
    """The whole result: folded classes at any scale; ``per_rank`` adds every item one by one."""
    v = a.verdict
    job = a.job
    return {
        "schema_version": SCHEMA_VERSION,
        "inputs": _inputs(a.scans),
        "problems": [{"file": p.file, "message": p.message, "fatal": p.fatal} for p in a.problems],
        "dtype_assumed": a.dtype,
        "records": _records(a.records),
        "verdict": verdict_json(v),
        "job": {
            "world_size": job.world,
            "world_source": _world_source(job),
            "world_stated_at": None if job.world_at is None else loc_json(job.world_at),
            # ranks of a stated world far beyond the inputs: no input and no entry in "ranks" (never expanded)
            "unlisted_ranks": ranges_of(job.unlisted) if job.unlisted else None,
            "groups": _groups(job.groups),
            "ranks": _ranks(job.ranks),
            "edges": _edges(job.edges),
            "roots": [r for r in job.roots if r >= 0],
            "trail_leaves_inputs": any(r < 0 for r in job.roots),
            "versions": versions_json(job.facts.versions),
        },
        "events": _folded_events(a),
        "flight_recorder": _dumps(a.scans),
        "per_rank": _per_rank(a) if per_rank else None,
        "attempt": {"index": a.attempt, "of": a.attempt_count} if a.attempt is not None else None,
        "attempts": [analysis_json(x, per_rank) for x in a.attempts] if a.attempts else None,
    }
