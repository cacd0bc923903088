"""Take a snapshot of one job: dump triggers, stacks and GPU state in parallel, then the dumps and settings.

Order matters for speed: the pipes are written first so that the ranks write their dumps
while py-spy reads the stacks; nvidia-smi runs beside py-spy; the wait for dumps ends as
soon as every triggered rank has written one (about 4 s on PyTorch 2.11), or at ``dump_wait``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ncclcheck.evidence.formats.pyspy import collective_of
from ncclcheck.evidence.types import LiveThread
from ncclcheck.findings import Finding
from ncclcheck.snapshot import dumppipe, gpu, pyspy
from ncclcheck.snapshot.procs import Job, RankProc

MAX_SOURCE_BYTES = 4 << 20
KERNEL_LINES = 4000  # the end of the node's kernel log kept in a snapshot: OOM kills and Xids of the last hours


@dataclass(frozen=True)
class RankResult:
    """Everything collected from one rank."""

    proc: RankProc
    threads: tuple[LiveThread, ...]
    collective: str | None
    gpu_util: int | None
    stack_error: str | None = None
    ptrace_refused: bool = False
    dump: dumppipe.Collected | None = None
    dump_note: str | None = None  # why there is no dump


@dataclass(frozen=True)
class Snapshot:
    """One node's snapshot of one job."""

    host: str
    taken_at: float  # Unix time
    seconds: float
    job: Job
    ranks: tuple[RankResult, ...]
    gpu: gpu.GpuState
    findings: tuple[tuple[Finding, tuple[int, ...]], ...] = ()
    sources: Mapping[tuple[str, int], str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    py_spy: str | None = None
    native: bool = False
    kernel_log: str | None = None  # the end of the node's kernel log (dmesg -T), where it could be read


def kernel_log(timeout: float = 5.0) -> tuple[str | None, str | None]:
    """The end of this node's kernel log (``dmesg -T``), or why it could not be read."""
    try:
        out = subprocess.run(["dmesg", "-T"], capture_output=True, text=True, errors="replace", timeout=timeout)
    except FileNotFoundError:
        return None, "no dmesg on this node: the kernel log (OOM kills, GPU Xid errors) is not in the snapshot"
    except subprocess.TimeoutExpired:
        return None, f"dmesg did not answer in {timeout:g} s: the kernel log is not in the snapshot"
    if out.returncode != 0:
        return None, ("the kernel log is not readable by this user (kernel.dmesg_restrict): run the snapshot as root, "
                      "or keep `sudo dmesg -T` beside it")
    return "\n".join(out.stdout.splitlines()[-KERNEL_LINES:]) + "\n", None


def take(job: Job, py_spy: str | None, native: bool = False, timeout: float = 5.0, dump_wait: float = 8.0,
         dumps: bool = True, gpu_query: Callable[[], gpu.GpuState] = gpu.query,
         lint: Callable[[Sequence[RankProc]], list[tuple[Finding, tuple[int, ...]]]] | None = None,
         host: str | None = None,
         kernel: Callable[[], tuple[str | None, str | None]] = kernel_log) -> Snapshot:
    """Collect everything from the job's ranks on this node; never raises for one rank's failure."""
    start, wall = time.monotonic(), time.time()
    plans = [dumppipe.plan(r) for r in job.ranks] if dumps else []
    before = dumppipe.stamps(plans)
    triggered, notes = [], {}
    for p in plans:
        err = dumppipe.trigger(p)
        if err is None:
            triggered.append(p)
        else:
            notes[p.rank] = err
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=min(32, len(job.ranks) + 1)) as pool:
        smi = pool.submit(gpu_query)
        klog = pool.submit(kernel)
        futures = {r.pid: pool.submit(pyspy.take, py_spy, r.pid, native, timeout) for r in job.ranks} if py_spy else {}
        stacks: dict[int, tuple[tuple[LiveThread, ...], str | None, bool]] = {}
        for pid, fut in futures.items():
            try:
                stacks[pid] = (fut.result(), None, False)
            except pyspy.StackError as exc:
                stacks[pid] = ((), str(exc), exc.ptrace)
        state = smi.result()
        kernel_text, kernel_note = klog.result()
    if not py_spy:
        problems.append("py-spy is not installed, so no stacks were taken: pip install 'ncclcheck[live]'")
    if kernel_note:
        problems.append(kernel_note)
    if any(refused for _, _, refused in stacks.values()):
        problems.append("ptrace is not allowed, so py-spy could not read some ranks: " + pyspy.ptrace_help())
    got, why = dumppipe.collect(triggered, before, wall + dump_wait) if triggered else ([], {})
    notes.update(why)
    by_rank = {c.rank: c for c in got}
    results = []
    for r in job.ranks:
        threads, err, refused = stacks.get(r.pid, ((), None, False))
        main = threads[0].frames if threads else ()
        results.append(RankResult(r, threads, collective_of(main), state.util_of(r.pid), err, refused,
                                  by_rank.get(r.rank), None if r.rank in by_rank else notes.get(r.rank)))
    found = lint(job.ranks) if lint else []
    return Snapshot(host or socket.gethostname(), wall, time.monotonic() - start, job, tuple(results), state,
                    tuple(found), read_sources(results), tuple(problems), py_spy, native, kernel_text)


def read_sources(results: Sequence[RankResult]) -> dict[tuple[str, int], str]:
    """The source line of every Python frame of the main threads, read through the rank's root."""
    want: dict[str, set[int]] = {}
    pid_of: dict[str, int] = {}
    for r in results:
        for f in (r.threads[0].frames if r.threads else ()):
            if f.file.endswith(".py") and f.line > 0:
                want.setdefault(f.file, set()).add(f.line)
                pid_of.setdefault(f.file, r.proc.pid)
    out: dict[tuple[str, int], str] = {}
    for path, lines in want.items():
        text = _read(f"/proc/{pid_of[path]}/root{path}") if os.path.isabs(path) else None
        text = text if text is not None else _read(path)
        if text is None:
            continue
        all_lines = text.splitlines()
        for n in lines:
            if n <= len(all_lines) and all_lines[n - 1].strip():
                out[(path, n)] = all_lines[n - 1].strip()[:200]
    return out


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
