"""Snapshot archives read back as evidence: one ``.tar.gz`` per node that ``snapshot --out`` wrote.

Members: ``snapshot.json`` (job, ranks, stacks, settings, lint findings, GPU state, source lines, problems),
``dumps/<name>`` (each flight-recorder dump as the rank wrote it) and ``kernel.log`` (the end of the node's kernel
log, where it could be read). Reading never extracts to disk, never follows links, bounds every member's size, and
decodes dumps with the code-free reader. Each rank becomes a FileScan with its live stack, settings, PID and host;
each dump one more; the kernel log one more, read as any input is. ``snapshot/archive.py`` writes the archive; a
live snapshot is turned into FileScans through the same document, so a verdict from the archive equals the verdict
printed when it was taken.
"""

from __future__ import annotations

import json
import os
import tarfile
import zlib
from collections.abc import Mapping
from typing import Any

from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, DumpError, Frame, parse_dump
from ncclcheck.evidence.inflate import GZIP_MAGIC, InflateLimit, bounded
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.types import Fact, FileScan, InputProblem, LiveStack, LiveThread, Loc, Who

FORMAT = "ncclcheck-snapshot"
READABLE = (1, 2, 3, 4)  # what the reader takes: the collected data is the same, only the stored verdict differs
DOC = "snapshot.json"
KERNEL = "kernel.log"
MAX_DOC_BYTES = 64 << 20


def scans(doc: Mapping[str, Any], dumps: Mapping[str, bytes], label: str) -> list[FileScan]:
    """FileScans from a snapshot document: one per rank (live stack; settings and ``world_size`` as facts) and one
    per dump."""
    out: list[FileScan] = []
    host = doc.get("host") if isinstance(doc.get("host"), str) else None
    sources = {(x["file"], x["line"]): x["text"] for x in doc.get("sources") or ()
               if isinstance(x, dict) and isinstance(x.get("file"), str) and isinstance(x.get("line"), int)
               and isinstance(x.get("text"), str)}
    for r in doc.get("ranks") or ():
        if not isinstance(r, dict) or not isinstance(r.get("rank"), int):
            continue
        rank = r["rank"]
        name = f"{label}:rank{rank}"
        loc = Loc(name, 0)
        threads = tuple(LiveThread(str(t.get("name", "?")), tuple(
            Frame(str(f.get("name", "?")), str(f.get("file", "?")), f["line"] if isinstance(f.get("line"), int) else 0)
            for f in t.get("frames") or () if isinstance(f, dict))) for t in r.get("threads") or () if isinstance(t, dict))
        mine = {(f.file, f.line) for t in threads for f in t.frames}
        stack = LiveStack(rank, r["pid"] if isinstance(r.get("pid"), int) else 0, host, threads,
                          r.get("collective") if isinstance(r.get("collective"), str) else None,
                          r.get("gpu_util") if isinstance(r.get("gpu_util"), int) else None, loc,
                          tuple((f, n, t) for (f, n), t in sources.items() if (f, n) in mine))
        settings = s if isinstance(s := r.get("settings"), dict) else {}
        facts = tuple(Fact(Who(global_rank=rank), str(k), str(v)[:300], loc) for k, v in settings.items()
                      if str(k).startswith(("NCCL_", "TORCH_")))
        if isinstance(r.get("world_size"), int):
            facts += (Fact(Who(global_rank=rank), "launcher_world", str(r["world_size"]), loc),)
        err = r.get("stack_error")
        problems = (InputProblem(name, f"no stack: {err}", False),) if isinstance(err, str) else ()
        if isinstance(r.get("pid"), int):  # what joins the kernel's records (an OOM kill's PID) to the rank
            facts += (Fact(Who(global_rank=rank), "pid", str(r["pid"]), loc),)
        if host:
            facts += (Fact(Who(global_rank=rank), "host", host, loc),)
        out.append(FileScan(file=name, path_rank=rank, lines=0, bytes_read=0, ranks_seen=(rank,), facts=facts,
                            live=(stack,), problems=problems))
        member = r.get("dump")
        if isinstance(member, str) and member in dumps:
            dname = f"{label}:{member}"
            try:
                dump = parse_dump(dumps[member], os.path.basename(member))
            except DumpError as exc:
                out.append(FileScan(file=dname, path_rank=rank, lines=0, bytes_read=len(dumps[member]),
                                    ranks_seen=(rank,), problems=(InputProblem(dname, str(exc), True),)))
                continue
            out.append(FileScan(file=dname, path_rank=rank, lines=0, bytes_read=len(dumps[member]),
                                ranks_seen=(rank,), dump=dump))
    if KERNEL in dumps:
        out.append(_kernel_scan(dumps[KERNEL], f"{label}:{KERNEL}"))
    return out


def _kernel_scan(data: bytes, name: str) -> FileScan:
    """The node's kernel log, read as any input is: its OOM kills, Xids and segfaults become host records."""
    parser = LogParser(name, None)
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        parser.feed(n, line)
    return parser.finish(len(lines), len(data))


class ArchiveError(Exception):
    """An archive that cannot be read."""


def load(path: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The document and dump members of an archive; ArchiveError says what is wrong, in one line."""
    doc: dict[str, Any] | None = None
    dumps: dict[str, bytes] = {}
    try:
        # Streamed through evidence/inflate.py's limits: a member skipped is still inflated to be passed over.
        with open(path, "rb") as raw, tarfile.open(fileobj=bounded(raw, GZIP_MAGIC) or raw, mode="r|") as tar:
            for m in tar:
                if not m.isfile():
                    continue
                limit = MAX_DOC_BYTES if m.name == DOC else MAX_DUMP_BYTES
                if m.size > limit:
                    raise ArchiveError(f"member {m.name} is larger than {limit >> 20} MiB")
                if m.name not in (DOC, KERNEL) and not m.name.startswith("dumps/"):
                    continue
                f = tar.extractfile(m)
                data = f.read() if f else b""
                if m.name == DOC:
                    raw = json.loads(data.decode("utf-8"))
                    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
                        raise ArchiveError(f"{DOC} is not an ncclcheck snapshot")
                    if raw.get("schema_version") not in READABLE:
                        raise ArchiveError(f"snapshot schema_version {raw.get('schema_version')!r} is not one of "
                                           f"{', '.join(map(str, READABLE))}: written by another ncclcheck release")
                    doc = raw
                else:
                    dumps[m.name] = data
    except InflateLimit as exc:
        raise ArchiveError(str(exc)) from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"not a readable .tar.gz ({getattr(exc, 'strerror', None) or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"{DOC} is not valid JSON ({exc})") from None
    if doc is None:
        raise ArchiveError(f"no {DOC}: not an ncclcheck snapshot archive")
    return doc, dumps


def read_archive(path: str) -> list[FileScan]:
    """An archive written by ``snapshot --out`` as FileScans; an unreadable one as one fatal InputProblem."""
    label = os.path.basename(path)
    try:
        doc, dumps = load(path)
    except ArchiveError as exc:
        return [FileScan(file=label, path_rank=None, lines=0, bytes_read=0, ranks_seen=(),
                         problems=(InputProblem(label, str(exc), True),))]
    return scans(doc, dumps, label)
