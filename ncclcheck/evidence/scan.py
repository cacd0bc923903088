"""Scan inputs into :class:`FileScan` results, in parallel when there is a lot to read."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, DumpError, looks_like_dump, parse_dump
from ncclcheck.evidence.logparse import LogParser
from ncclcheck.evidence.reader import InputError, Source, read_lines
from ncclcheck.evidence.types import FileScan, InputProblem

PARALLEL_MIN_BYTES = 64 << 20


def _dump_scan(source: Source) -> FileScan | None:
    """Read the input as a flight-recorder dump if its content says it is one."""
    if source.path is None:
        return None
    try:
        with open(source.path, "rb") as f:
            head = f.read(4096)
            if not looks_like_dump(head):
                return None
            data = head + f.read(MAX_DUMP_BYTES + 1 - len(head))
    except OSError:
        return None  # the text reader reports the problem
    try:
        dump = parse_dump(data, source.name)
    except DumpError as exc:
        return FileScan(source.name, source.path_rank, 0, len(data), (),
                        problems=(InputProblem(source.name, str(exc), True),))
    ranks = (dump.rank,) if dump.rank is not None else ()
    return FileScan(source.name, dump.rank, 0, len(data), ranks, dump=dump)


def scan_source(source: Source) -> FileScan:
    """Parse one input completely; reading problems end up in ``FileScan.problems``."""
    dumped = _dump_scan(source)
    if dumped is not None:
        return dumped
    parser = LogParser(source.name, source.path_rank)
    lines = read_lines(source, parser.problem)
    try:
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
    """Yield one scan per source, in input order; use worker processes for large inputs."""
    total = sum(s.size() for s in sources)
    n = workers if workers is not None else min(os.cpu_count() or 1, len(sources))
    if n <= 1 or total < PARALLEL_MIN_BYTES or any(s.path is None for s in sources):
        for s in sources:
            result = scan_source(s)
            if on_done:
                on_done(result)
            yield result
        return
    from concurrent.futures import ProcessPoolExecutor  # only needed for large inputs

    with ProcessPoolExecutor(max_workers=n) as pool:
        for result in pool.map(scan_source, sources, chunksize=1):
            if on_done:
                on_done(result)
            yield result
