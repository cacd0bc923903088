"""Ask each rank for a flight-recorder dump through the pipe PyTorch opened for it, and collect the dumps.

With ``TORCH_NCCL_DEBUG_INFO_PIPE_FILE=<prefix>`` (the name PyTorch 2.11 reads; the XCCL
backend reads ``TORCH_FR_DEBUG_INFO_PIPE_FILE``) and a trace buffer (``TORCH_FR_BUFFER_SIZE``,
formerly ``TORCH_NCCL_TRACE_BUFFER_SIZE``) each rank's default process group makes a named pipe
``<prefix><rank>.pipe``; writing anything to it makes the rank write its dump to
``<dump prefix><rank>`` (``TORCH_FR_DUMP_TEMP_FILE``, formerly ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``,
default ``~/.cache/torch/comm_lib_trace_rank_``) and carry on: about 4 s on PyTorch 2.11.
This is the only thing ``snapshot`` ever sends to a job.  A new dump replaces the rank's
previous dump file.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncclcheck.evidence.frdump import MAX_DUMP_BYTES, Dump, DumpError, parse_dump
from ncclcheck.frsettings import PIPE, export
from ncclcheck.snapshot.procs import RankProc

PIPE_VARS = ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_FR_DEBUG_INFO_PIPE_FILE")
BUFFER_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
DUMP_VARS = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
ADVICE = "to let snapshot collect flight-recorder dumps next time, start the job with:"
ADVICE_EXPORT = export((PIPE,))


@dataclass(frozen=True)
class PipePlan:
    """Where to ask one rank for a dump, and where the dump will appear (paths as this process sees them)."""

    rank: int
    pid: int
    pipe: str | None
    dumps: tuple[str, ...]
    reason: str | None = None  # why there is no pipe to write to


@dataclass(frozen=True)
class Collected:
    """One dump file a rank wrote after the trigger."""

    rank: int
    path: str
    data: bytes
    dump: Dump


def _first(env: Mapping[str, str], names: Sequence[str]) -> tuple[str, str] | None:
    return next(((n, env[n]) for n in names if env.get(n)), None)


def _view(pid: int, path: str, cwd: str | None) -> str:
    """``path`` as the rank sees it, reached through /proc/<pid>/root (so containers work) when we may."""
    full = path if os.path.isabs(path) else os.path.join(cwd or "/", path)
    via = f"/proc/{pid}/root{full}"
    try:
        os.stat(os.path.dirname(via))
    except OSError:
        return full
    return via


def plan(r: RankProc) -> PipePlan:
    """The pipe and dump paths of one rank, or why it has none."""
    env = r.env
    named = _first(env, DUMP_VARS)
    prefixes = [named[1]] if named else []
    if not prefixes:
        home = env.get("HOME", "/root")
        cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        prefixes = sorted({os.path.join(home, ".cache", "torch", "comm_lib_trace_rank_"),
                           os.path.join(cache, "torch", "comm_lib_trace_rank_"), "/tmp/nccl_trace_rank_"})
    dumps = tuple(_view(r.pid, f"{p}{r.rank}", r.cwd) for p in prefixes)
    found = _first(env, PIPE_VARS)
    if found is None:
        return PipePlan(r.rank, r.pid, None, dumps, "no dump pipe (neither " + " nor ".join(PIPE_VARS) + " is set)")
    buf = _first(env, BUFFER_VARS)
    if buf is None or not buf[1].strip().isdigit() or int(buf[1]) <= 0:
        return PipePlan(r.rank, r.pid, None, dumps,
                        f"{found[0]} is set but the trace buffer is off ({' / '.join(BUFFER_VARS)} > 0 is needed), "
                        "so PyTorch opened no pipe")
    return PipePlan(r.rank, r.pid, _view(r.pid, f"{found[1]}{r.rank}.pipe", r.cwd), dumps)


def trigger(p: PipePlan) -> str | None:
    """Write one byte to the rank's pipe; the reason on failure."""
    if p.pipe is None:
        return p.reason
    try:
        if not stat.S_ISFIFO(os.stat(p.pipe).st_mode):
            return f"{p.pipe} is not a named pipe"
        fd = os.open(p.pipe, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return f"{p.pipe} does not exist: the NCCL process group has not started, or this PyTorch reads another name"
        if exc.errno == errno.ENXIO:
            return f"nothing reads {p.pipe}: the rank's monitor thread is not running"
        return f"cannot open {p.pipe}: {exc.strerror}"
    try:
        os.write(fd, b"1")
    except OSError as exc:
        return f"cannot write to {p.pipe}: {exc.strerror}"
    finally:
        os.close(fd)
    return None


def stamps(plans: Sequence[PipePlan]) -> dict[str, int | None]:
    """Each dump file's modification time before the trigger (None: absent), so an old dump is never taken."""
    out: dict[str, int | None] = {}
    for p in plans:
        for path in p.dumps:
            try:
                out[path] = os.stat(path).st_mtime_ns
            except OSError:
                out[path] = None
    return out


def collect(plans: Sequence[PipePlan], before: Mapping[str, int | None], deadline: float, poll: float = 0.1
            ) -> tuple[list[Collected], dict[int, str]]:
    """Wait until every triggered rank has rewritten its dump file (compared with ``before``) or ``deadline``
    (wall clock) passes.

    Returns the dumps and, per rank without one, why.
    """
    waiting = {p.rank: p for p in plans}
    got: list[Collected] = []
    why: dict[int, str] = {}
    while waiting:
        for rank, p in list(waiting.items()):
            for path in p.dumps:
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                old = before.get(path)
                if (old is not None and st.st_mtime_ns <= old) or st.st_size == 0:
                    continue
                if st.st_size > MAX_DUMP_BYTES:
                    why[rank] = f"{path}: larger than {MAX_DUMP_BYTES >> 20} MiB; not read"
                    del waiting[rank]
                    break
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                    got.append(Collected(rank, path, data, parse_dump(data, os.path.basename(path))))
                except (OSError, DumpError) as exc:
                    why[rank] = f"{path}: {exc}"  # perhaps still being written: try again
                    continue
                del waiting[rank]
                why.pop(rank, None)
                break
        if not waiting or time.time() >= deadline:
            break
        time.sleep(poll)
    for rank, p in waiting.items():
        why.setdefault(rank, "no new dump appeared in time at " + " or ".join(p.dumps))
    return sorted(got, key=lambda c: c.rank), why
