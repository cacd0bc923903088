"""``analyze-log`` as a function: inputs in, :class:`Analysis` out."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from ncclcheck.evidence import bundle
from ncclcheck.evidence.reader import Source
from ncclcheck.evidence.scan import scan_all
from ncclcheck.evidence.types import FileScan, InputProblem
from ncclcheck.job.model import Analysis
from ncclcheck.job.records import merge_records
from ncclcheck.job.runs import by_file, find_restart, last_run, latest_attempts
from ncclcheck.job.verdict import TensorOf, decide

# ``ncclcheck snapshot --out`` writes these; logs compressed as .tar.gz are not a thing PyTorch or torchrun writes.
SNAPSHOT_SUFFIXES = (".tar.gz", ".tgz")


def packed_kind(path: str) -> str | None:
    """"archive" (a snapshot archive: a gzipped tar) or "evidence" (an --evidence-out file, plain or gzipped), by
    content whatever the name, with one look at the file's first bytes; None for anything else."""
    if path.endswith(SNAPSHOT_SUFFIXES):
        return "archive"  # also a damaged one: its reader says what is wrong with it
    try:
        fd = os.open(path, os.O_RDONLY)  # the cheapest look: every input of a 100,000-file job gets one
        try:
            head = os.read(fd, len(bundle.MAGIC))
        finally:
            os.close(fd)
        if head.startswith(bundle.MAGIC):
            return "evidence"
        if not head.startswith(bundle.GZIP_MAGIC):
            return None
        with gzip.open(path, "rb") as g:
            inner = g.read(len(bundle.MAGIC))
            if inner.startswith(bundle.MAGIC):
                return "evidence"  # a damaged one too: its reader says what is wrong with it
            inner += g.read(262 - len(inner))
    except (OSError, EOFError, zlib.error):
        return None
    return "archive" if inner[257:262] == b"ustar" else None


def read_all(
    sources: Sequence[Source],
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
) -> tuple[list[FileScan], list[InputProblem]]:
    """Every input as scans: logs and dumps are read, snapshot archives and evidence files unpacked.

    The problems returned are the inputs an evidence file's node could not open.
    """
    scans: list[FileScan] = []
    problems: list[InputProblem] = []
    kinds = {src.path: packed_kind(src.path) for src in sources if src.path is not None and not src.stream}
    packed = [src for src in sources if src.path is not None and kinds.get(src.path)]
    for src in packed:
        path = src.path or src.name
        if kinds[path] == "archive":
            from ncclcheck.evidence.archive import read_archive  # only when a snapshot archive is given

            found = read_archive(path)
        else:
            try:
                found, unopened = bundle.read(path)
            except bundle.BundleError as exc:
                found = [FileScan(src.name, None, 0, 0, (), problems=(InputProblem(src.name, str(exc), True),))]
            else:
                problems += unopened
        for scan in found:
            scans.append(scan)
            if on_done:
                on_done(scan)
    scans += scan_all([src for src in sources if src not in packed], on_done, workers)
    return scans, problems


def analyze(
    sources: Sequence[Source],
    dtype: str = "float32",
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
    problems: Sequence[InputProblem] = (),
    tensor_of: TensorOf | None = None,
) -> Analysis:
    """Scan every source, merge the timeout records and decide the verdict.

    ``problems`` are inputs that could not even be opened (found while resolving paths); they are
    reported with the problems found while reading, so that the result names every input.
    """
    scans, unopened = read_all(sources, on_done, workers)
    return analyze_scans(scans, dtype, (*problems, *unopened), tensor_of)


def analyze_scans(scans: Sequence[FileScan], dtype: str = "float32", problems: Sequence[InputProblem] = (),
                  tensor_of: TensorOf | None = None) -> Analysis:
    """The verdict from scans already read (here, or on the nodes and carried in evidence files).

    Scans are taken in file-name order, so that the answer does not depend on how the inputs were given or split
    among evidence files.
    """
    scans = sorted(scans, key=lambda s: s.file)
    readable, earlier_attempts = latest_attempts([s for s in scans if not any(p.fatal for p in s.problems)])
    records = merge_records(readable)
    per_file = by_file(records)
    restarts = [r for r in (find_restart(s, per_file.get(s.file, ())) for s in readable) if r is not None]
    if restarts:
        cut = {r.file: r.line for r in restarts}
        readable = [last_run(s, cut[s.file]) if s.file in cut else s for s in readable]
        records = merge_records(readable)
    a = decide(readable, records, dtype, restarts, earlier_attempts, tensor_of)
    return replace(a, problems=(*problems, *(p for s in scans for p in s.problems)))
