"""The snapshot archive: one ``.tar.gz`` per node that ``analyze-log`` can read back as FileScans.

Members: ``snapshot.json`` (job, ranks, stacks, settings, lint findings, GPU state,
source lines, problems; schema below) and ``dumps/<name>`` (each flight-recorder dump as the
rank wrote it).  Reading never extracts to disk, never follows links, bounds every
member's size, and decodes dumps with the code-free reader.  A live snapshot is turned
into FileScans through the same document, so a verdict from the archive equals the
verdict printed when it was taken.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
import zlib
from collections.abc import Mapping
from typing import Any

from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, DumpError, Frame, parse_dump
from ncclcheck.evidence.logparse import LogParser
from ncclcheck.evidence.types import Fact, FileScan, InputProblem, LiveStack, LiveThread, Loc, Who
from ncclcheck.snapshot.collect import Snapshot

FORMAT = "ncclcheck-snapshot"
SCHEMA_VERSION = 2  # 2: the verdict names its culprits ``culprit_ranks`` (as analyze-log does) and its ``cycle``
READABLE = (1, 2)  # what the archive's reader takes: the collected data is the same, only the verdict differs
DOC = "snapshot.json"
MAX_DOC_BYTES = 64 << 20


def _frames(frames: tuple[Frame, ...]) -> list[dict[str, Any]]:
    return [{"name": f.name, "file": f.file, "line": f.line} for f in frames]


def to_doc(s: Snapshot) -> dict[str, Any]:
    """Everything collected, as plain JSON (no verdict: that is derived)."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "host": s.host,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.taken_at)),
        "seconds": round(s.seconds, 3),
        "job": {"label": s.job.label, "key": list(s.job.key), "world_size": s.job.world_size},
        "py_spy": s.py_spy, "native": s.native,
        "ranks": [{
            "rank": r.proc.rank, "pid": r.proc.pid, "local_rank": r.proc.local_rank, "world_size": r.proc.world_size,
            "user": r.proc.user, "cwd": r.proc.cwd, "cmdline": list(r.proc.cmdline),
            "gpu_util": r.gpu_util, "gpus": [g.index for g in s.gpu.of_pid(r.proc.pid)],
            "collective": r.collective,
            "threads": [{"name": t.name, "frames": _frames(t.frames)} for t in r.threads],
            "stack_error": r.stack_error, "ptrace_refused": r.ptrace_refused,
            "dump": f"dumps/{os.path.basename(r.dump.path)}" if r.dump else None, "dump_note": r.dump_note,
            "settings": dict(sorted(r.proc.env.items())),
        } for r in s.ranks],
        "gpu": {"error": s.gpu.error,
                "gpus": [{"index": g.index, "uuid": g.uuid, "util": g.util, "mem_used_mib": g.mem_used,
                          "mem_total_mib": g.mem_total} for g in s.gpu.gpus],
                "apps": [{"pid": p, "gpu_uuid": u, "mem_mib": m} for p, u, m in s.gpu.apps]},
        "findings": [{"severity": f.severity.value, "code": f.code, "message": f.message, "fix": f.fix,
                      "evidence": [str(e) for e in f.evidence], "ranks": list(rs)} for f, rs in s.findings],
        "sources": [{"file": f, "line": n, "text": t} for (f, n), t in sorted(s.sources.items())],
        "problems": list(s.problems),
    }


KERNEL = "kernel.log"


def dump_members(s: Snapshot) -> dict[str, bytes]:
    """The members beside the document: each rank's dump, and the node's kernel log where it was read."""
    members = {f"dumps/{os.path.basename(r.dump.path)}": r.dump.data for r in s.ranks if r.dump}
    if s.kernel_log is not None:
        members[KERNEL] = s.kernel_log.encode()
    return members


def write(path: str, s: Snapshot, extra: Mapping[str, Any] | None = None) -> None:
    """Write the archive; ``extra`` (the verdict, for people reading the JSON) is stored beside the data."""
    doc = to_doc(s) | dict(extra or {})
    members = {DOC: json.dumps(doc, indent=1).encode()} | dump_members(s)
    tmp = f"{path}.part"
    with tarfile.open(tmp, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(s.taken_at), 0o644
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)


def scans(doc: Mapping[str, Any], dumps: Mapping[str, bytes], label: str) -> list[FileScan]:
    """FileScans from a snapshot document: one per rank (live stack; settings and ``world_size`` as facts) and one
    per dump."""
    out: list[FileScan] = []
    host = doc.get("host") if isinstance(doc.get("host"), str) else None
    for r in doc.get("ranks") or ():
        if not isinstance(r, dict) or not isinstance(r.get("rank"), int):
            continue
        rank = r["rank"]
        name = f"{label}:rank{rank}"
        loc = Loc(name, 0)
        threads = tuple(LiveThread(str(t.get("name", "?")), tuple(
            Frame(str(f.get("name", "?")), str(f.get("file", "?")), f["line"] if isinstance(f.get("line"), int) else 0)
            for f in t.get("frames") or () if isinstance(f, dict))) for t in r.get("threads") or () if isinstance(t, dict))
        stack = LiveStack(rank, r["pid"] if isinstance(r.get("pid"), int) else 0, host, threads,
                          r.get("collective") if isinstance(r.get("collective"), str) else None,
                          r.get("gpu_util") if isinstance(r.get("gpu_util"), int) else None, loc)
        settings = r.get("settings") if isinstance(r.get("settings"), dict) else {}
        facts = tuple(Fact(Who(global_rank=rank), str(k), str(v)[:300], loc) for k, v in settings.items()
                      if str(k).startswith(("NCCL_", "TORCH_")))
        if isinstance(r.get("world_size"), int):
            facts += (Fact(Who(global_rank=rank), "world_size", str(r["world_size"]), loc),)
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


def snapshot_scans(s: Snapshot) -> list[FileScan]:
    """A live snapshot as FileScans, through the same document the archive holds."""
    return scans(to_doc(s), dump_members(s), s.host)


class ArchiveError(Exception):
    """An archive that cannot be read."""


def load(path: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The document and dump members of an archive; ArchiveError says what is wrong, in one line."""
    doc: dict[str, Any] | None = None
    dumps: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
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
