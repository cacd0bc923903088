"""Scan inputs into :class:`FileScan` results, in parallel when there is a lot to read."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO

from ncclcheck.evidence import frdump, rasjson, types
from ncclcheck.evidence.crossing import every_dataclass
from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, DumpError, looks_like_dump, parse_dump
from ncclcheck.evidence.gcpause import paused
from ncclcheck.evidence.packed import Packed, packed_kind
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.reader import InputError, Source, before_fork, open_source, read_lines
from ncclcheck.evidence.types import FileScan, InputProblem

# Forking the workers costs tens of milliseconds; a dense log (a rank's creation and timeout lines, five a rank)
# costs about half a second of parsing a MiB, a chatty one under a millisecond. At 64 MiB a 32,768-rank job's node
# logs (38 MB) were read in one process at three times the cost a rank of the larger jobs (issue 42).
PARALLEL_MIN_BYTES = 4 << 20
# Many small files (one per rank) are worth the workers too: the cost is per file (a parser, a scan, its trip back),
# not per byte. Files go to the workers in chunks of consecutive inputs, so the trip is per chunk, not per file.
PARALLEL_MIN_FILES = 512
CHUNK_BYTES = 16 << 20
CHUNKS_PER_WORKER = 8  # enough chunks that a slow one does not leave the other workers idle at the end
# Fewer timeout mentions than this in an input: no part is made of it in the worker (job/records.py's ``file_part``,
# and its module is then not imported there: the deciding side stays out of the workers, job/analyze.py), and its
# mentions are merged in the main process. A part's trip back (pickled in the worker, unpickled by the main process)
# costs about what merging its mentions does: 0.9 ms against 1.3 ms for a node log of 100 ranks (2-core VM), and more
# than the merge for a file of one rank (~20 us a file against ~15 us, on top of a fixed cost; 100,000 files took
# 18.5 s against 15.9 s on a 16-core host with a part for every file).
PART_MIN_MENTIONS = 16
# A scan crosses from a worker as its objects' constructors' arguments: made so, they keep their attributes in place
# in the main process, which reads them many times over (evidence/crossing.py)
every_dataclass(vars(types))
every_dataclass(vars(frdump))


def cores() -> int:
    """The cores this process may run on (taskset, a container's or a Slurm step's CPU set), not the machine's: more
    workers than cores only take turns."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _read_upto(stream: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes, read in pieces: ``read(limit)`` sets aside the whole limit before reading a byte."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (piece := stream.read(min(1 << 20, limit - size))):
        parts.append(piece)
        size += len(piece)
    return b"".join(parts)


def _whole(source: Source, stream: BinaryIO) -> bytes | FileScan:
    """An input read to the end, bounded (a dump or a report is parsed whole), or the scan saying it could not be."""
    try:
        data = _read_upto(stream, MAX_DUMP_BYTES + 1)
    except OSError as exc:
        return FileScan(source.name, source.path_rank, 0, 0, (),
                        problems=(InputProblem(source.name, f"read failed ({exc.strerror or exc})", True),))
    finally:
        if source.path is not None:
            stream.close()
    return data


def _dump_scan(source: Source, stream: BinaryIO) -> FileScan:
    """Read a flight-recorder dump to the end, bounded."""
    if isinstance(data := _whole(source, stream), FileScan):
        return data
    try:
        dump = parse_dump(data, source.name)
    except DumpError as exc:
        return FileScan(source.name, source.path_rank, 0, len(data), (),
                        problems=(InputProblem(source.name, str(exc), True),))
    ranks = (dump.rank,) if dump.rank is not None else ()
    return FileScan(source.name, dump.rank, 0, len(data), ranks, dump=dump)


def _ras_scan(source: Source, stream: BinaryIO, parser: LogParser) -> FileScan:
    """Read an ncclras JSON report to the end, bounded, and feed the text report it holds (evidence/rasjson.py)."""
    if isinstance(data := _whole(source, stream), FileScan):
        return data
    try:
        found = rasjson.lines(data)
    except rasjson.ReportError as exc:
        return FileScan(source.name, source.path_rank, 0, len(data), (),
                        problems=(InputProblem(source.name, str(exc), True),))
    for lineno, text in found:
        parser.feed(lineno, text)
    return parser.finish(data.count(b"\n") + 1, len(data))


def scan_source(source: Source) -> FileScan:
    """Parse one input completely; reading problems end up in ``FileScan.problems``.

    The input is opened once and sniffed from its first bytes: a pipe cannot be read twice.
    """
    parser = LogParser(source.name, source.path_rank)
    try:
        stream, head = open_source(source)
        if looks_like_dump(head):
            return _dump_scan(source, stream)
        if rasjson.looks_like(head):
            return _ras_scan(source, stream, parser)
        lines = read_lines(source, parser.problem, (stream, head))
        while True:
            lineno, raw = next(lines)
            parser.feed(lineno, raw)
    except StopIteration as stop:
        count, nbytes = stop.value
    except InputError as exc:
        return FileScan(source.name, source.path_rank, 0, 0, (), problems=(InputProblem(source.name, exc.message, True),))
    return parser.finish(count, nbytes)


def workers_for(sources: Sequence[Source], workers: int | None = None) -> int:
    """How many worker processes read these sources (1: none, this process reads them)."""
    n = workers if workers is not None else min(cores(), len(sources))
    if n <= 1 or (sum(s.size() for s in sources) < PARALLEL_MIN_BYTES and len(sources) < PARALLEL_MIN_FILES):
        return 1
    return n


def scan_all(
    sources: list[Source],
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
    meanwhile: Callable[[], None] | None = None,
    part: Callable[[FileScan], Any] | None = None,
    on_part: Callable[[FileScan, Any], None] | None = None,
    look: bool = False,
) -> Iterator[FileScan | Packed]:
    """Yield one scan per source, in input order; use worker processes for large inputs or many files.

    Streams (pipes, FIFOs, stdin) are always read in this process: a worker could not reopen them. ``meanwhile`` is
    called once in this process after the workers have started, before it waits for them (with no workers: before
    reading), for work of its own the workers do not need (the caller's imports). ``part``, a module's function
    (the workers are handed it by name), is run on each scan in the worker that read it, and ``on_part`` is given
    the scan and its answer here before ``on_done``: work the caller would otherwise do on every scan in this process
    after the reading (job/records.py's ``file_part``). Read in this process, no scan gets one. ``look``: each
    worker looks at its inputs' heads first (evidence/packed.py) and hands back an input that is not a log unread, as
    :class:`Packed`, for the caller to read; read in this process, every source is read as a log.
    """
    n = workers_for(sources, workers)
    if n <= 1:
        if meanwhile is not None:
            meanwhile()
        for s in sources:
            scan = scan_source(s)
            if on_done:
                on_done(scan)
            yield scan
        return
    from concurrent.futures import ProcessPoolExecutor  # only needed for large inputs

    method = multiprocessing.get_start_method()
    if method == "fork":  # a spawned worker imports afresh: nothing to share
        before_fork()
    elif method == "forkserver":  # Python 3.14's default on Linux: the server imports the reader once, and each
        multiprocessing.set_forkserver_preload([__name__])  # worker it forks shares it instead of importing its own
    with ProcessPoolExecutor(max_workers=n) as pool:
        # Inputs by their index: a Source's hash is recomputed from its fields at every lookup, four a file
        files = [i for i, s in enumerate(sources) if not s.stream]
        futures = {}
        at = 0
        for chunk in _chunks([sources[i] for i in files], n):
            members = files[at:at + len(chunk)]
            at += len(chunk)
            futures[members[0]] = (members, pool.submit(_scan_chunk, chunk, part, look))
        if meanwhile is not None:
            meanwhile()
        done: dict[int, tuple[FileScan | Packed, Any]] = {}
        for i, s in enumerate(sources):
            if s.stream:
                result: FileScan | Packed = scan_source(s)
            else:
                if i in futures:  # the first of its chunk: the whole chunk's scans arrive together
                    members, future = futures.pop(i)
                    done.update(zip(members, future.result(), strict=True))
                result, its = done.pop(i)
                if on_part is not None and part is not None and isinstance(result, FileScan):
                    on_part(result, its)
            if on_done and isinstance(result, FileScan):
                on_done(result)
            yield result


def _scan_chunk(sources: list[Source], part: Callable[[FileScan], Any] | None = None, look: bool = False
                ) -> list[tuple[FileScan | Packed, Any]]:
    """Scan consecutive inputs in one worker: one trip to and from it for all of them; each scan with ``part`` of
    it; ``look``: an input that is not a log handed back unread."""
    with paused():  # the chunk's scans are kept to the end: the collector would walk them again and again
        out: list[tuple[FileScan | Packed, Any]] = []
        for s in sources:
            kind = packed_kind(s.path) if look and s.path is not None else None
            if kind is not None:
                out.append((Packed(kind), None))
            else:
                scan = scan_source(s)
                many = len(scan.works) + len(scan.statuses) >= PART_MIN_MENTIONS  # at most its mentions
                out.append((scan, part(scan) if part is not None and many else None))
        return out


def _chunks(sources: list[Source], workers: int) -> list[list[Source]]:
    """Consecutive inputs grouped so that each group is at most CHUNK_BYTES (a larger file alone) and there are
    about CHUNKS_PER_WORKER groups a worker."""
    per = max(1, len(sources) // (workers * CHUNKS_PER_WORKER))
    chunks: list[list[Source]] = []
    size = 0
    for s in sources:
        b = s.size()
        if not chunks or len(chunks[-1]) >= per or size + b > CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(s)
        size += b
    return chunks
