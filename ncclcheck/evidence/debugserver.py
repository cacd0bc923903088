"""PyTorch's distributed debug server's periodic stack dumps, read as each rank's live stack.

``torch.distributed.debug.start_debug_server(dump_dir=..., dump_interval=...)`` (PyTorch 2.10 and later,
torch/distributed/debug/_frontend.py's ``PeriodicDumper``) has rank 0 fetch every rank's state over HTTP and write
one file per kind and time: ``stacks_20261127_145555.txt`` (``StacksHandler.dump``: every rank's Python stacks, from
the worker's ``dump_traceback`` handler, in faulthandler's layout), ``fr_trace_*`` (the flight recorder's tables),
``tcpstore_*``, ``wait_counters_*``. A stacks file is told by its content: its first line is ``=== Rank N:
http://host:port/handler/dump_traceback? ===``, or ``PARTIAL DATA: k/n workers responded`` when some rank did not
answer (each such rank's section then says ``Error: 503``). ``Rank N`` is the global rank (the worker servers register
under the ``RANK`` of their process). Of several stacks files, the newest (by the time in its name) is where the job
is: older ones are named as read and left. Recorded: tests/data/gpu/nccl232/hang/debug/ (NCCL, 2 x H200) and
tests/data/debug_server/ (gloo, CPU).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import Fact, FileScan, InputProblem, LiveStack, LiveThread, Loc, Who

HEAD = re.compile(r"^=== Rank (?P<rank>\d+): https?://(?P<host>[^:/\s]+|\[[^\]]+\])(?::\d+)?/handler/dump_traceback")
PARTIAL = "PARTIAL DATA:"
THREAD = re.compile(r"^(?:Current thread|Thread) (?P<id>0x[0-9a-f]+) \(most recent call first\):")
FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')
STAMP = re.compile(r"_(?P<stamp>\d{8}_\d{6})\.txt$")
# The module every torch.distributed collective is defined in: the outermost frame there is the call user code made.
C10D = "torch/distributed/distributed_c10d.py"


def is_stacks(head: bytes) -> bool:
    """Whether a file's first bytes are a debug server's stacks dump."""
    text = head.decode("utf-8", "replace")
    first = text.split("\n", 1)[0]
    if first.startswith(PARTIAL):
        return "/handler/dump_traceback" in text
    return bool(HEAD.match(first))


def read_stacks(paths: Sequence[str]) -> list[FileScan]:
    """One scan per rank of the newest stacks dump (its stacks as live stacks, its host as a fact); a scan with a
    note for each older one and one for each rank the dump could not fetch."""
    newest = max(paths, key=lambda p: (m["stamp"] if (m := STAMP.search(p)) else "", p))
    out = [FileScan(p, None, 0, 0, (), problems=(InputProblem(p, f"an earlier debug-server stack dump than "
                                                                  f"{os.path.basename(newest)}, which is read", False),))
           for p in paths if p != newest]
    try:
        with open(newest, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        return [*out, FileScan(newest, None, 0, 0, (), problems=(InputProblem(newest, exc.strerror or str(exc), True),))]
    return out + _ranks(newest, lines)


def _ranks(path: str, lines: list[str]) -> list[FileScan]:
    """Each ``=== Rank N`` section of a stacks dump as that rank's scan."""
    heads = [(i, m) for i, text in enumerate(lines) if (m := HEAD.match(text))]
    scans = []
    for k, (i, m) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        rank, host, loc = int(m["rank"]), m["host"].strip("[]"), Loc(path, i + 1)
        body = lines[i + 1:end]
        facts = (Fact(Who(global_rank=rank), "host", host, loc),)
        if any(t.startswith("Error: ") for t in body[:2]):
            said = next(t for t in body if t.startswith("Error: "))
            scans.append(FileScan(path, rank, len(lines), 0, (rank,), facts=facts, problems=(InputProblem(
                path, f"the debug server could not fetch rank {rank}'s stacks ({said})", False),)))
            continue
        threads = _threads(body)
        main = next((t for t in threads if t.frames), None)
        ordered = (main, *(t for t in threads if t is not main)) if main else threads
        stack = LiveStack(rank, 0, host, ordered, _collective(main.frames) if main else None, None, loc)
        scans.append(FileScan(path, rank, len(lines), 0, (rank,), facts=facts, live=(stack,)))
    return scans


def _threads(body: list[str]) -> tuple[LiveThread, ...]:
    """faulthandler's threads, frames innermost first; the thread serving the dump has no Python frame."""
    threads: list[tuple[str, list[Frame]]] = []
    for text in body:
        if m := THREAD.match(text):
            threads.append((m["id"], []))
        elif threads and (m := FRAME.match(text)):
            threads[-1][1].append(Frame(m["name"], m["file"], int(m["line"])))
    return tuple(LiveThread(name, tuple(frames)) for name, frames in threads)


def _collective(frames: tuple[Frame, ...]) -> str | None:
    """The torch.distributed call the rank is in: the outermost frame in distributed_c10d.py (public names only)."""
    for f in reversed(frames):
        if f.file.replace("\\", "/").endswith(C10D) and not f.name.startswith("_"):
            return f.name
    return None
