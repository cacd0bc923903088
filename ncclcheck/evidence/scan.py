"""Scan inputs into :class:`FileScan` results, in parallel when there is a lot to read."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, DumpError, looks_like_dump, parse_dump
from ncclcheck.evidence.logparse import LogParser
from ncclcheck.evidence.reader import InputError, Source, open_source, read_lines
from ncclcheck.evidence.types import FileScan, InputProblem

PARALLEL_MIN_BYTES = 64 << 20


def _read_upto(stream: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes, read in pieces: ``read(limit)`` sets aside the whole limit before reading a byte."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (piece := stream.read(min(1 << 20, limit - size))):
        parts.append(piece)
        size += len(piece)
    return b"".join(parts)


def _dump_scan(source: Source, stream: BinaryIO) -> FileScan:
    """Read a flight-recorder dump to the end, bounded."""
    try:
        data = _read_upto(stream, MAX_DUMP_BYTES + 1)
    except OSError as exc:
        return FileScan(source.name, source.path_rank, 0, 0, (),
                        problems=(InputProblem(source.name, f"read failed ({exc.strerror or exc})", True),))
    finally:
        if source.path is not None:
            stream.close()
    try:
        dump = parse_dump(data, source.name)
    except DumpError as exc:
        return FileScan(source.name, source.path_rank, 0, len(data), (),
                        problems=(InputProblem(source.name, str(exc), True),))
    ranks = (dump.rank,) if dump.rank is not None else ()
    return FileScan(source.name, dump.rank, 0, len(data), ranks, dump=dump)


def scan_source(source: Source) -> FileScan:
    """Parse one input completely; reading problems end up in ``FileScan.problems``.

    The input is opened once and sniffed from its first bytes: a pipe cannot be read twice.
    """
    parser = LogParser(source.name, source.path_rank)
    try:
        stream, head = open_source(source)
        if looks_like_dump(head):
            return _dump_scan(source, stream)
        lines = read_lines(source, parser.problem, (stream, head))
        while True:
            lineno, raw = next(lines)
            parser.feed(lineno, raw)
    except StopIteration as stop:
        count, nbytes = stop.value
    except InputError as exc:
        return FileScan(source.name, source.path_rank, 0, 0, (), problems=(InputProblem(source.name, exc.message, True),))
    return parser.finish(count, nbytes)


def scan_all(
    sources: list[Source],
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
) -> Iterator[FileScan]:
    """Yield one scan per source, in input order; use worker processes for large inputs.

    Streams (pipes, FIFOs, stdin) are always read in this process: a worker could not reopen them.
    """
    total = sum(s.size() for s in sources)
    n = workers if workers is not None else min(os.cpu_count() or 1, len(sources))
    if n <= 1 or total < PARALLEL_MIN_BYTES:
        for s in sources:
            result = scan_source(s)
            if on_done:
                on_done(result)
            yield result
        return
    from concurrent.futures import ProcessPoolExecutor  # only needed for large inputs

    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = {i: pool.submit(scan_source, s) for i, s in enumerate(sources) if not s.stream}
        for i, s in enumerate(sources):
            result = futures[i].result() if i in futures else scan_source(s)
            if on_done:
                on_done(result)
            yield result
