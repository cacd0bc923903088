"""Inputs that are not logs, told by their first bytes: snapshot archives, evidence files, the debug server's dumps.

Which an input is costs one look at its head. A 100,000-file job gave every file that look in the main process before
any worker started (~11 us a file on the 2-core VM, issue 42), and each worker then opened the file again to read it:
where the workers read, each looks at its own inputs and hands back the few that are not logs as :class:`Packed`.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass

from ncclcheck.evidence import bundle, debugserver
from ncclcheck.evidence.types import FileScan, InputProblem

# ``ncclcheck snapshot --out`` writes these; logs compressed as .tar.gz are not a thing PyTorch or torchrun writes.
SNAPSHOT_SUFFIXES = (".tar.gz", ".tgz")


def packed_kind(path: str) -> str | None:
    """"archive" (a snapshot archive: a gzipped tar), "evidence" (an --evidence-out file, plain or gzipped),
    "debug_stacks", "debug_fr_trace" or "debug_ranks" (PyTorch's debug server's stacks, flight-recorder tables, store
    keys or wait counters), by content whatever the name, with one look at the file's first bytes; None for anything
    else."""
    if path.endswith(SNAPSHOT_SUFFIXES):
        return "archive"  # also a damaged one: its reader says what is wrong with it
    try:
        fd = os.open(path, os.O_RDONLY)  # the cheapest look: every input of a 100,000-file job gets one
        try:
            head = os.read(fd, 1024)
        finally:
            os.close(fd)
        if head.startswith(bundle.MAGIC):
            return "evidence"
        if debugserver.is_stacks(head):
            return "debug_stacks"
        if debugserver.is_fr_trace(head):
            return "debug_fr_trace"
        if debugserver.is_rank_addresses(head):
            return "debug_ranks"
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


@dataclass(frozen=True)
class Packed:
    """An input that is not a log, told by its ``kind`` (:func:`packed_kind`) in the worker that was to read it and
    handed back unread: the main process reads it as it reads such inputs alone. (Decoded in the workers, the 2,048
    evidence files of a 262,144-rank job cost the main process as much to unpickle as to decode, twice the CPU and
    270 MB more: 21.70-24.07 s against 22.61-23.17 s, 16-core host.)"""

    kind: str


def read_packed(name: str, path: str, kind: str) -> tuple[list[FileScan], list[InputProblem]]:
    """An archive's or an evidence file's scans, and the inputs its node could not open; an unreadable one as a scan
    with one fatal problem."""
    if kind == "archive":
        from ncclcheck.evidence.archive import read_archive  # only when a snapshot archive is given

        return read_archive(path), []
    try:
        return bundle.read(path)
    except bundle.BundleError as exc:
        return [FileScan(name, None, 0, 0, (), problems=(InputProblem(name, str(exc), True),))], []

