"""Merge the printings of a timeout into one record per (rank, PG, SeqNum).

PyTorch prints the same timeout several times (the watchdog line, "watchdog
thread terminated with exception: ...", ``what(): ...``, a RuntimeError) and the
PG counters on a separate status line.  Mentions are merged when every identity
field they both carry agrees; a missing field never blocks a merge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ncclcheck.evidence.crossing import by_constructor, every_dataclass
from ncclcheck.evidence.scan import PART_MIN_MENTIONS
from ncclcheck.evidence.types import PG, FileScan, Loc, StatusMention, WorkMention
from ncclcheck.job.model import Record


@dataclass
class _Builder:
    rank: int | None
    global_rank: int | None
    path_rank: int | None
    pg: PG | None
    seq: int | None
    op_type: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    tensor_shape: str | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    evidence: list[str] = field(default_factory=list)
    occurrences: int = 0
    locs: list[Loc] = field(default_factory=list)
    started_s: float | None = None
    group_rank: int | None = None
    idx: int = 0

    def build(self) -> Record:
        return Record(
            rank=self.rank,
            global_rank=self.global_rank,
            pg=self.pg,
            seq=self.seq,
            op_type=self.op_type,
            numel_in=self.numel_in,
            numel_out=self.numel_out,
            tensor_shape=self.tensor_shape,
            timeout_ms=self.timeout_ms,
            ran_for_ms=self.ran_for_ms,
            last_enqueued=self.last_enqueued,
            last_completed=self.last_completed,
            evidence=tuple(self.evidence),
            occurrences=max(self.occurrences, 1),
            loc=self.locs[0],
            path_rank=self.path_rank,
            locs=tuple(self.locs),
            started_s=self.started_s,
            group_rank=self.group_rank if self.group_rank is not None else self.rank,
        )


def _idx(b: _Builder) -> int:
    return b.idx


def _agree(a: object, b: object) -> bool:
    return a is None or b is None or a == b


def _same_process(b: _Builder, global_rank: int | None, path_rank: int | None) -> bool:
    return _agree(b.global_rank, global_rank) and _agree(b.path_rank, path_rank)


class _Pool:
    """Builders indexed by the process that printed them (global rank, and the rank a file's name gives), so that a
    job of thousands of ranks merges in linear time whether its lines carry a ``[rankN]:`` prefix or only their
    file's name does (torchrun's ``--log-dir``)."""

    def __init__(self) -> None:
        self.all: list[_Builder] = []
        # None holds the builders that do not know that rank yet; a dict keeps them in creation order and lets one
        # leave in constant time when it learns its rank.
        self.by_global: dict[int | None, dict[int, _Builder]] = {}
        self.by_path: dict[int | None, dict[int, _Builder]] = {}

    def candidates(self, global_rank: int | None, path_rank: int | None) -> list[_Builder]:
        """Builders a mention of this process may merge into (those whose process agrees), in creation order."""
        if global_rank is None and path_rank is None:
            return self.all
        if path_rank is None:  # the common case (a ``[rankN]:`` prefix, no rank in the file's name): every builder
            # of that rank or of none agrees on the path's rank; no filter to run
            mine, unranked = self.by_global.get(global_rank), self.by_global.get(None)
            found = [*mine.values()] if mine else []
            if unranked:
                found += unranked.values()
            return found if len(found) < 2 else sorted(found, key=_idx)
        empty: dict[int, _Builder] = {}
        by_global = [self.by_global.get(global_rank, empty), self.by_global.get(None, empty)] \
            if global_rank is not None else None
        by_path = [self.by_path.get(path_rank, empty), self.by_path.get(None, empty)] if path_rank is not None else None
        # Look through the smaller of the two indexes: the other identity is checked on each builder found.
        if by_path is None or (by_global is not None and sum(map(len, by_global)) <= sum(map(len, by_path))):
            found = [b for part in by_global or () for b in part.values() if _agree(b.path_rank, path_rank)]
        else:
            found = [b for part in by_path for b in part.values() if _agree(b.global_rank, global_rank)]
        return found if len(found) < 2 else sorted(found, key=_idx)

    def add(self, b: _Builder) -> _Builder:
        b.idx = len(self.all)
        self.all.append(b)
        self.by_global.setdefault(b.global_rank, {})[b.idx] = b
        self.by_path.setdefault(b.path_rank, {})[b.idx] = b
        return b

    def ranked(self, b: _Builder, global_rank: int) -> None:
        """``b`` learnt its global rank: index it there."""
        del self.by_global[None][b.idx]
        b.global_rank = global_rank
        self.by_global.setdefault(global_rank, {})[b.idx] = b

    def path_ranked(self, b: _Builder, path_rank: int) -> None:
        """``b`` learnt the rank its file's name gives: index it there."""
        del self.by_path[None][b.idx]
        b.path_rank = path_rank
        self.by_path.setdefault(path_rank, {})[b.idx] = b


def _fits_work(b: _Builder, w: WorkMention, global_rank: int | None, path_rank: int | None) -> bool:
    """Every identity field both carry agrees (:func:`_agree`, written out: it runs once a mention and candidate)."""
    return ((b.global_rank is None or global_rank is None or b.global_rank == global_rank)
            and (b.path_rank is None or path_rank is None or b.path_rank == path_rank)
            and (b.rank is None or w.rank is None or b.rank == w.rank)
            and (b.seq is None or w.seq is None or b.seq == w.seq)
            and (b.op_type is None or w.op_type is None or b.op_type == w.op_type)
            and (b.numel_in is None or w.numel_in is None or b.numel_in == w.numel_in)
            and (b.numel_out is None or w.numel_out is None or b.numel_out == w.numel_out)
            and (b.timeout_ms is None or w.timeout_ms is None or b.timeout_ms == w.timeout_ms)
            and (b.ran_for_ms is None or w.ran_for_ms is None or b.ran_for_ms == w.ran_for_ms)
            and (b.pg is None or w.pg is None or b.pg == w.pg))


def _merge_work(pool: _Pool, w: WorkMention) -> None:
    global_rank, path_rank = w.who.global_rank, w.who.path_rank
    for b in pool.candidates(global_rank, path_rank):
        if _fits_work(b, w, global_rank, path_rank):
            break
    else:
        b = pool.add(_Builder(w.rank, global_rank, path_rank, None, w.seq))
    if b.global_rank is None and global_rank is not None:
        pool.ranked(b, global_rank)
    # the fields a mention fills where the record has none yet
    if b.rank is None:
        b.rank = w.rank
    if b.seq is None:
        b.seq = w.seq
    if b.op_type is None:
        b.op_type = w.op_type
    if b.numel_in is None:
        b.numel_in = w.numel_in
    if b.numel_out is None:
        b.numel_out = w.numel_out
    if b.tensor_shape is None:
        b.tensor_shape = w.tensor_shape
    if b.timeout_ms is None:
        b.timeout_ms = w.timeout_ms
    if b.ran_for_ms is None:
        b.ran_for_ms = w.ran_for_ms
    if b.path_rank is None and path_rank is not None:
        pool.path_ranked(b, path_rank)
    if b.pg is None:
        b.pg = w.pg  # a restatement names its group even where the status line is missing
    if b.started_s is None and w.clock_s is not None and w.ran_for_ms is not None:
        b.started_s = w.clock_s - w.ran_for_ms / 1000
    if w.evidence not in b.evidence:
        b.evidence.append(w.evidence)
    b.occurrences += 1
    b.locs.append(w.loc)


def _merge_status(pool: _Pool, s: StatusMention) -> None:
    def fits(b: _Builder, same_group_rank: bool) -> bool:
        return (
            b.seq == s.seq
            and _same_process(b, s.who.global_rank, s.who.path_rank)
            and (_agree(b.rank, s.rank) if same_group_rank or b.global_rank is None or s.who.global_rank is None
                 else True)
            and (b.pg is None or b.pg == s.pg)
        )

    # One process times out in several groups at once: the group rank tells their lines apart;
    # only where it disagrees everywhere (a stale "[Rank N]") does the process identity alone decide.
    # The status line follows its own watchdog line: of the candidates, take the nearest one above it.
    builders = pool.candidates(s.who.global_rank, s.who.path_rank)
    near = [b for b in builders if fits(b, True)] if builders else []
    if not near and builders:
        near = [b for b in builders if fits(b, False)]
    above = [b for b in near if b.locs and b.locs[-1].file == s.loc.file and b.locs[-1].line <= s.loc.line]
    b = max(above, key=lambda b: b.locs[-1].line) if above else (near[0] if near else None)
    if b is None:
        b = pool.add(_Builder(s.rank, s.who.global_rank, s.who.path_rank, None, s.seq))
    b.pg = b.pg or s.pg
    if b.group_rank is None:
        b.group_rank = s.rank
    if b.rank is None:
        b.rank = s.rank  # a bare record line: its rank is only on the status line under it
    if b.last_enqueued is None:
        b.last_enqueued, b.last_completed = s.last_enqueued, s.last_completed
    if s.evidence not in b.evidence:
        b.evidence.append(s.evidence)
    b.locs.append(s.loc)


def _mentions(scan: FileScan) -> list[WorkMention | StatusMention]:
    """An input's timeout mentions in line order. An async NCCL error on a work, and the status line that restates
    it, are an error, not a timeout."""
    works = [w for w in scan.works if w.evidence != "async_exception"]
    statuses = [st for st in scan.statuses if st.error is None]
    mentions: list[WorkMention | StatusMention] = [*works, *statuses]
    mentions.sort(key=lambda m: m.loc.line)
    return mentions


@dataclass(frozen=True)
class FilePart:
    """One input's timeout records merged alone, in the worker process that read it (issue 42), with the processes
    its mentions name: ``ranks`` their global ranks, ``paths`` the ranks their file's name gives where no global rank
    is printed, ``anonymous`` whether a mention names neither. An input's mentions can merge only into records of
    those processes (:meth:`_Pool.candidates`), so where the inputs before it hold none, its records are the very
    records the merge of all inputs makes of it, and the main process appends them instead of merging again. They
    cross built (``Record``, not the builders): the main process neither indexes nor builds them. On a 2-core VM a
    chunk of 20 node logs (2,000 records) loads ~4-7 ms slower as records (a frozen class's constructor) and merges
    ~9-15 ms faster (docs/benchmarks.md, issue 42's thirteenth session)."""

    records: tuple[Record, ...]
    ranks: tuple[int, ...]
    paths: tuple[int, ...]
    anonymous: bool


def file_part(scan: FileScan) -> FilePart | None:
    """The part of the records one input makes alone (None: it holds fewer than ``PART_MIN_MENTIONS`` timeout
    mentions)."""
    mentions = _mentions(scan)
    if len(mentions) < PART_MIN_MENTIONS:
        return None
    pool = _Pool()
    ranks: set[int] = set()
    paths: set[int] = set()
    anonymous = False
    for m in mentions:
        if isinstance(m, WorkMention):
            _merge_work(pool, m)
        else:
            _merge_status(pool, m)
        if m.who.global_rank is not None:
            ranks.add(m.who.global_rank)
        elif m.who.path_rank is not None:
            paths.add(m.who.path_rank)
        else:
            anonymous = True
    return FilePart(tuple(b.build() for b in pool.all), tuple(ranks), tuple(paths), anonymous)


class Merger:
    """Timeout records merged one input at a time, in the inputs' order: :func:`merge_records`'s work, which the
    main process can do while the worker processes still read the later inputs (job/analyze.py).

    A part taken whole (``sealed``) stays records, not builders: no later input's mention may then be a candidate
    for one of them. Where one may (a rank's timeout in two inputs, both large enough for a part; or a mention of no
    global rank after a part), the merge here is given up (``stale``) and the caller merges every input again
    (:func:`merge_records`): the same records, at the old cost, for a shape the node logs and the per-rank files of
    a large job are not."""

    def __init__(self) -> None:
        self.pool = _Pool()
        self.sealed: list[tuple[int, tuple[Record, ...]]] = []  # a part's records, after the pool's first n builders
        self.sealed_ranks: set[int] = set()
        self.sealed_unranked = False  # a sealed record may have no global rank: a mention of no global rank named it
        self.stale = False

    def add(self, scan: FileScan, part: FilePart | None = None) -> None:
        """Merge one input's mentions; ``part``, :func:`file_part` of this very input, is taken as it is where no
        record merged so far belongs to a process its mentions name."""
        if self.stale:
            return
        if part is not None and self._apart(part):
            self.sealed.append((len(self.pool.all), part.records))
            self.sealed_ranks.update(part.ranks)
            self.sealed_unranked = self.sealed_unranked or bool(part.paths) or part.anonymous
            return
        mentions = _mentions(scan)
        if self.sealed and not self._clear({m.who.global_rank for m in mentions}):
            self.stale, self.pool, self.sealed = True, _Pool(), []  # merged again by the caller
            return
        pool = self.pool
        for m in mentions:
            if isinstance(m, WorkMention):
                _merge_work(pool, m)
            else:
                _merge_status(pool, m)

    def _clear(self, ranks: Iterable[int | None]) -> bool:
        """Whether no sealed record can be a candidate (:meth:`_Pool.candidates`) for a mention of these global
        ranks (None: a mention of none, for which a record of any rank may be)."""
        if not self.sealed:
            return True
        if self.sealed_unranked:
            return False
        sealed = self.sealed_ranks
        return not any(r is None or r in sealed for r in ranks)

    def _apart(self, part: FilePart) -> bool:
        """Whether no record merged so far is a candidate (:meth:`_Pool.candidates`) for any of ``part``'s
        mentions: none of their processes, none whose process is not known yet."""
        if not self._clear((*part.ranks, *((None,) if part.paths or part.anonymous else ()))):
            return False
        pool = self.pool
        if not pool.all:
            return True
        if part.anonymous or pool.by_global.get(None) or (part.paths and pool.by_path.get(None)):
            return False
        by_global, by_path = pool.by_global, pool.by_path
        return not any(by_global.get(r) for r in part.ranks) and not any(by_path.get(r) for r in part.paths)

    def records(self) -> list[Record] | None:
        """Every record in the order of first appearance; None where the merge was given up (``stale``)."""
        if self.stale:
            return None
        built = [b.build() for b in self.pool.all]
        if not self.sealed:
            return built
        out: list[Record] = []
        at = 0
        for n, records in self.sealed:
            out += built[at:n]
            out += records
            at = n
        out += built[at:]
        return out


def merge_records(scans: Iterable[FileScan]) -> list[Record]:
    """Return one record per distinct timeout event, in order of first appearance."""
    merger = Merger()
    for scan in scans:
        merger.add(scan)
    records = merger.records()
    assert records is not None  # no part given: never given up
    return records


every_dataclass(globals())  # a part crosses from a worker as the scans do (evidence/crossing.py), and its records
by_constructor(Record)  # with it
