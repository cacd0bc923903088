"""Writing the snapshot archive: one ``.tar.gz`` per node that ``analyze-log`` reads back (``evidence/archive.py``).

Members: ``snapshot.json`` (job, ranks, stacks, settings, lint findings, GPU state, source lines, problems; schema
below), ``dumps/<name>`` (each flight-recorder dump as the rank wrote it) and ``kernel.log``. A live snapshot is
turned into FileScans through the same document the archive holds, so a verdict from the archive equals the verdict
printed when it was taken.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Mapping
from typing import Any

from ncclcheck.evidence.archive import DOC, FORMAT, KERNEL, scans
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import FileScan
from ncclcheck.schemas import SNAPSHOT as SCHEMA_VERSION  # 2 had ``culprit_ranks``, ``cycle``; 1 ``root_ranks``
from ncclcheck.snapshot.collect import Snapshot


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


def snapshot_scans(s: Snapshot) -> list[FileScan]:
    """A live snapshot as FileScans, through the same document the archive holds."""
    return scans(to_doc(s), dump_members(s), s.host)


