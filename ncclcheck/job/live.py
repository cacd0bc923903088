"""Where each rank of a live job is: from its stack (``snapshot``) and its flight-recorder dump.

A rank *waits* when its main thread is inside a torch.distributed call, or when its dump holds a collective that
has not completed (with NCCL a rank blocks later, e.g. in ``torch.cuda.synchronize()``, while the collective runs on
the GPU). Without a dump, a rank blocked in a CUDA synchronisation *waits on the GPU*. A rank is *in host code*
otherwise. These positions are part of the job model (``Job.live``), beside the ranks' endings and the wait-for
graph; the verdict says them in words where the live evidence is what decides (:func:`live_summary`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence.frdump import Dump, Entry, Frame, user_frame
from ncclcheck.evidence.types import FileScan, LiveStack
from ncclcheck.ranks import rank_phrase

WAITING, GPU_WAIT, HOST_CODE, UNKNOWN = "waiting", "gpu_wait", "host_code", "unknown"


@dataclass(frozen=True)
class LivePosition:
    """Where one rank is."""

    rank: int
    state: str  # waiting | gpu_wait | host_code | unknown
    collective: str | None
    seq: int | None
    pg: str | None
    where: Frame | None  # the user-code line: of the collective call when waiting, else of the main thread
    host_where: Frame | None  # the main thread's user-code line, from the stack
    gpu_util: int | None
    evidence: str  # stack | dump | stack+dump | none
    native: str | None = None  # with --native: the C function the main thread's Python code is in (time_sleep)
    detail: str | None = None  # what a dump says of a rank without a stack; the CUDA call of a gpu_wait
    text: str | None = None  # the source line at ``where``, where the snapshot could read it
    blocked: tuple[str, Frame] | None = None  # in host code: what its main thread waits for (blocked_on)
    worker: tuple[str, Frame] | None = None  # waiting for data: a child process dumped with it and its code's line


@dataclass(frozen=True)
class StackGroup:
    """Ranks whose main threads show the same stack (and are in the same state)."""

    ranks: tuple[int, ...]
    state: str  # as LivePosition.state
    collective: str | None  # the torch.distributed call on the stack
    pending: str | None  # a collective not completed according to the dumps, when the stack shows none
    frames: tuple[Frame, ...]  # innermost first
    threads: int  # threads per rank (the most among the group)


def library(path: str) -> bool:
    """Whether a frame's file is torch's own or the standard library's, in a full path or as py-spy shortens it
    (relative to its ``sys.path`` entry: ``torch/utils/data/dataloader.py``, ``threading.py``,
    ``multiprocessing/queues.py``): never the line the user's code is at."""
    p = path.replace("\\", "/")
    if "/torch/" in p or p.startswith("torch/"):
        return True
    if p.startswith("/"):
        return "/lib/python3" in p and "-packages/" not in p
    return p.split("/", 1)[0].removesuffix(".py") in sys.stdlib_module_names


def code_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost Python frame outside torch and the standard library (native frames from --native are skipped),
    else the innermost outside torch."""
    py = tuple(f for f in frames if f.file.endswith(".py"))
    return next((f for f in py if not library(f.file)), None) or (user_frame(py) if py else user_frame(tuple(frames)))


# What a main thread outside any collective blocks on, from its innermost frames: a data loader's next batch (torch's
# DataLoader iterator, torch/utils/data/dataloader.py, or any iterator's __next__ that waits on a queue's get: its
# producer, a worker process or thread, gave it nothing), else a lock or a condition (threading.py), else a socket or
# a file.
DATA, LOCK, IO = "data", "lock", "io"
_QUEUE_FILES = ("queue.py", "multiprocessing/queues.py", "multiprocessing/connection.py")
_IO_NAMES = ("recv", "recv_into", "read", "readinto", "readline", "accept", "connect", "select", "poll", "open")


def blocked_on(frames: Sequence[Frame]) -> tuple[str, Frame] | None:
    """What the thread waits for (:data:`DATA`, :data:`LOCK`, :data:`IO`) and the frame that says so."""
    py = [f for f in frames if f.file.endswith(".py")]
    for f in py:
        path = f.file.replace("\\", "/")
        if path.endswith("torch/utils/data/dataloader.py"):
            return DATA, f
    for inner, outer in zip(py, py[1:], strict=False):
        if inner.file.replace("\\", "/").endswith(_QUEUE_FILES) and inner.name.rsplit(".", 1)[-1] == "get" \
                and outer.name.rsplit(".", 1)[-1] == "__next__":
            return DATA, outer
    if not py or not library(py[0].file):
        return None
    first = py[0]
    leaf, base = first.name.rsplit(".", 1)[-1], first.file.replace("\\", "/").rsplit("/", 1)[-1]
    caller = code_frame(py) or first
    if base == "threading.py" and leaf in ("wait", "acquire", "join", "_wait_for_tstate_lock"):
        return LOCK, caller
    if leaf in _IO_NAMES:
        return IO, caller
    return None


def native_call(frames: Sequence[Frame]) -> str | None:
    """The native frame just inside the innermost Python frame, when the stack has native frames."""
    for inner, outer in zip(frames, frames[1:], strict=False):
        if outer.file.endswith(".py") and not inner.file.endswith(".py"):
            return inner.name
    return None


CUDA_WAITS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
              "cuStreamSynchronize", "cuEventSynchronize", "cudaMemcpy", "cuMemcpyDtoH")


def cuda_wait(frames: Sequence[Frame]) -> str | None:
    """The CUDA synchronisation the thread blocks in: a torch.cuda Python frame, or with --native a driver call."""
    for f in frames:
        path = f.file.replace("\\", "/")
        if "/torch/cuda/" in path and f.name.rsplit(".", 1)[-1] == "synchronize":
            return "torch.cuda." + f.name if "." not in f.name and path.endswith("__init__.py") else f.name
        if not f.file.endswith(".py") and f.name.startswith(CUDA_WAITS) and not f.name.startswith("cudaMemcpyAsync"):
            return f.name
    return None


def pending(d: Dump) -> Entry | None:
    """The first collective in the dump that has not completed."""
    return next((e for e in d.entries if e.state != "completed" and not e.is_p2p), None) or next(
        (e for e in d.entries if e.state != "completed"), None)


def position(rank: int, stack: LiveStack | None, dump: Dump | None) -> LivePosition:
    """One rank's position from its stack and its dump, either of which may be missing."""
    main = stack.threads[0].frames if stack and stack.threads else ()
    host = code_frame(main) if main else None
    util = stack.gpu_util if stack else None
    entry = pending(dump) if dump else None
    evidence = "+".join(x for x, v in (("stack", main), ("dump", dump)) if v) or "none"
    if stack and stack.collective:
        p = LivePosition(rank, WAITING, stack.collective, entry.seq if entry else None, entry.pg if entry else None,
                         host, host, util, evidence)
    elif entry is not None:
        p = LivePosition(rank, WAITING, entry.op, entry.seq, entry.pg, entry.user_frame() or host, host, util,
                         evidence)
    elif main and (sync := cuda_wait(main)):
        p = LivePosition(rank, GPU_WAIT, None, None, None, host, host, util, evidence, None, sync)
    elif main:
        blocked = blocked_on(main)
        worker = next(((c.name, f) for c in stack.children if (f := code_frame(c.frames)) is not None), None) \
            if stack is not None and blocked is not None and blocked[0] == DATA else None
        p = LivePosition(rank, HOST_CODE, None, None, None, host, host, util, evidence, native_call(main),
                         blocked=blocked, worker=worker)
    elif dump is not None:
        last = dump.entries[-1] if dump.entries else None
        detail = (f"no stack; its dump's last collective, {last.op} #{last.seq}, completed" if last
                  else "no stack; its dump records no collective")
        p = LivePosition(rank, HOST_CODE, None, None, None, None, None, util, evidence, None, detail)
    else:
        p = LivePosition(rank, UNKNOWN, None, None, None, None, None, util, evidence)
    if stack and p.where is not None:
        text = next((t for f, n, t in stack.sources if (f, n) == (p.where.file, p.where.line)), None)
        p = replace(p, text=text)
    return p


def live_state(scans: Sequence[FileScan]) -> tuple[tuple[LivePosition, ...], tuple[StackGroup, ...]]:
    """Every rank with a live stack, positioned (its dump read with it), and their stacks grouped; nothing for
    inputs with no live stack (logs and dumps alone are read by the rest of the job model)."""
    stacks: dict[int, LiveStack] = {st.global_rank: st for s in scans for st in s.live}
    if not stacks:
        return (), ()
    dumps: dict[int, Dump] = {}
    for s in scans:
        if s.dump is not None:
            r = s.dump.rank if s.dump.rank is not None else s.path_rank
            if r is not None:
                dumps[r] = s.dump
    positions = tuple(position(r, stacks.get(r), dumps.get(r)) for r in sorted(set(stacks) | set(dumps)))
    return positions, _groups(stacks, positions)


def _groups(stacks: Mapping[int, LiveStack], positions: Sequence[LivePosition]) -> tuple[StackGroup, ...]:
    groups: dict[tuple[str, str | None, str | None, tuple[Frame, ...]], list[int]] = {}
    threads: dict[tuple[str, str | None, str | None, tuple[Frame, ...]], int] = {}
    for p in positions:
        st = stacks.get(p.rank)
        if not st or not st.threads:
            continue
        # native frames that are bare addresses differ between processes running the same code
        frames = tuple(f for f in st.threads[0].frames if not f.name.startswith("0x"))
        pend = None if st.collective or p.state != WAITING else _what(p)
        key = (p.state, st.collective, pend, frames)
        groups.setdefault(key, []).append(p.rank)
        threads[key] = max(threads.get(key, 0), len(st.threads))
    out = [StackGroup(tuple(sorted(rs)), *key, threads[key]) for key, rs in groups.items()]
    return tuple(sorted(out, key=lambda g: (-len(g.ranks), g.ranks)))


# --- in words ------------------------------------------------------------------------------------------------
def _who(ranks: Iterable[int]) -> str:
    return rank_phrase(ranks)


def _what(p: LivePosition) -> str:
    return f"{p.collective}" + (f" #{p.seq}" if p.seq is not None else "")


def _gpu(util: int | None) -> str:
    return "" if util is None else ", GPU idle" if util == 0 else f", GPU {util}% busy"


def _said(p: LivePosition) -> str:
    if p.where is None:
        return f"an unknown line ({p.detail})" if p.detail else "a line its stack does not show"
    at = f"{p.where.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{p.where.line}"
    if p.text:
        return f"{at} `{p.text}`"
    return at if p.where.name in ("main", "<module>") else f"{at} ({p.where.name})"  # the function, when it says more


def live_summary(positions: Sequence[LivePosition]) -> str | None:
    """Where the ranks are, in one paragraph: those in host code first, with the line and the GPU's state, then
    those waiting and where; None when no rank is in host code (the job model's own words say more then)."""
    waiting = [p for p in positions if p.state == WAITING]
    on_gpu = [p for p in positions if p.state == GPU_WAIT]
    host = [p for p in positions if p.state == HOST_CODE]
    if not host:
        if on_gpu and not waiting:
            where = "; ".join(f"{_who(p.rank for p in ps)} wait{'s' if len(ps) == 1 else ''} on the GPU in "
                              f"{ps[0].detail} ({_said(ps[0])}){_gpu(ps[0].gpu_util)}"
                              for ps in _by_place(on_gpu).values())
            return (f"No rank is inside a torch.distributed call: {where}. That is normal work, or a collective every "
                    "rank has joined; a flight-recorder dump would tell.")
        return None
    by_what: dict[tuple[str | None, int | None], list[LivePosition]] = {}
    for p in waiting:
        by_what.setdefault((p.collective, p.seq), []).append(p)
    for op, seq in list(by_what):  # a rank seen without its dump joins the one numbered twin
        twins = [k for k in by_what if k[0] == op and k[1] is not None]
        if seq is None and len(twins) == 1:
            by_what[twins[0]] += by_what.pop((op, seq))
    wait_text = "; ".join(
        f"{_who(p.rank for p in ps)} wait{'s' if len(ps) == 1 else ''} in {_what(ps[0])} ({_said(ps[0])})"
        for _, ps in sorted(by_what.items(), key=lambda kv: -len(kv[1])))
    gpu_text = "; ".join(
        f"{_who(p.rank for p in ps)} wait{'s' if len(ps) == 1 else ''} on the GPU in {ps[0].detail} "
        f"({_said(ps[0])}){_gpu(ps[0].gpu_util)}" for ps in _by_place(on_gpu).values())
    at: dict[tuple[Frame | None, bool], list[LivePosition]] = {}
    for p in host:
        at.setdefault((p.where, p.gpu_util == 0), []).append(p)
    host_text = "; ".join(f"{_who(p.rank for p in ps)} {'is' if len(ps) == 1 else 'are'} in host code at "
                          f"{_said(ps[0])}{f', inside {ps[0].native}' if ps[0].native else ''}{_blocked(ps[0])}"
                          f"{_gpu(ps[0].gpu_util)}" for ps in at.values())
    if not waiting and not on_gpu:
        busy = [p.rank for p in host if p.gpu_util]
        tail = (f" {_who(busy).capitalize()} show{'s' if len(busy) == 1 else ''} a busy GPU: with NCCL a collective "
                "can be running while the host waits in a later call; a flight-recorder dump would tell."
                if busy else "")
        return f"No rank is inside a torch.distributed call: {host_text}.{tail}"
    tail = ("" if waiting else
            f": with NCCL, likely inside a collective that {_who(p.rank for p in host)} "
            f"{'has' if len(host) == 1 else 'have'} not joined (a flight-recorder dump would tell)")
    text = "; ".join(x for x in (host_text, wait_text, gpu_text) if x)
    return text[:1].upper() + text[1:] + tail + "."


def blocked_summary(positions: Sequence[LivePosition]) -> str | None:
    """What the main threads of the ranks in host code wait for, one sentence (for a verdict whose own words already
    say where they are); None where no stack says."""
    said = "; ".join(f"{_who([p.rank])}'s main thread is{_blocked(p)[1:]}" for p in positions
                     if p.state == HOST_CODE and p.blocked is not None)
    return f"{said[:1].upper()}{said[1:]}." if said else None


_WAITS = {DATA: "waiting for its data loader's next batch", LOCK: "waiting on a lock or a condition",
          IO: "waiting on a socket or a file"}


def _blocked(p: LivePosition) -> str:
    if p.blocked is None:
        return ""
    kind, f = p.blocked
    return f", {_WAITS[kind]} (in {f.name} at {f.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{f.line}){_worker(p)}"


def _worker(p: LivePosition) -> str:
    """Where the data loader's worker the rank's dump holds is (py-spy --subprocesses)."""
    if p.worker is None:
        return ""
    pid, f = p.worker
    return f", while its worker process (PID {pid}) is in {f.name} at {f.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{f.line}"


def live_steps(positions: Sequence[LivePosition], culprits: Sequence[int]) -> tuple[str, ...]:
    """The step for what a culprit in host code waits for, where its stack says (a data loader's batch)."""
    fed = sorted(p.rank for p in positions if p.rank in culprits and p.blocked is not None and p.blocked[0] == DATA)
    if not fed:
        return ()
    return (f"{_who(fed).capitalize()}'s main thread waits for its data loader's next batch: the loader's workers "
            "(or its thread) give it none while the other ranks wait in the collective. Take the workers' stacks "
            "(`py-spy dump --subprocesses --pid PID` of the rank's process shows them under it) and look for a worker "
            "that died or hangs (an exception or an OOM kill in a worker, a read from a network file system that "
            "stalls, a deadlock after fork in the dataset's code); run once with `num_workers=0` (the data loaded in "
            "the main process): if the hang goes, the workers are the cause; `pin_memory=False` and a smaller "
            "`prefetch_factor` rule out the pin-memory thread and the workers' queue, and `DataLoader(timeout=...)` "
            "makes a stuck worker an error instead of a hang.",)


def _by_place(positions: Sequence[LivePosition]) -> dict[tuple[Frame | None, str | None], list[LivePosition]]:
    at: dict[tuple[Frame | None, str | None], list[LivePosition]] = {}
    for p in positions:
        at.setdefault((p.where, p.detail), []).append(p)
    return at
