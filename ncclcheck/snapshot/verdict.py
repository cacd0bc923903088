"""Which rank is where, who waits for whom: the verdict of one snapshot.

Self-contained on purpose: it reads only FileScans (live stacks and dumps), so the job
model that analyze-log builds can replace it without touching the collectors.

A rank is *waiting* when its main thread is inside a torch.distributed call, or when its
flight-recorder dump holds a collective that has not completed (with NCCL a rank blocks
later, e.g. in ``torch.cuda.synchronize()``, while the collective runs on the GPU).  Without
a dump, a rank blocked in a CUDA synchronisation *waits on the GPU*.  A rank is *in host
code* otherwise.  When some ranks wait and others are in host code, the latter are the
root; ranks of the job not seen here are unknown, never guilty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence.frdump import Dump, Entry, Frame, user_frame
from ncclcheck.evidence.types import FileScan, LiveStack
from ncclcheck.job.model import Verdict, VerdictKind

HOST_CODE = "rank_in_host_code"
MISMATCH = "collective_mismatch"
ALL_WAITING = "all_ranks_waiting"
ELSEWHERE = "waiting_on_other_nodes"
NO_HANG = "no_hang"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Position:
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


@dataclass(frozen=True)
class StackGroup:
    """Ranks whose main threads show the same stack (and are in the same state)."""

    ranks: tuple[int, ...]
    state: str  # as Position.state
    collective: str | None  # the torch.distributed call on the stack
    pending: str | None  # a collective not completed according to the dumps, when the stack shows none
    frames: tuple[Frame, ...]  # innermost first
    threads: int  # threads per rank (the most among the group)


@dataclass(frozen=True)
class SnapshotVerdict:
    """The answer."""

    kind: str
    summary: str
    culprit_ranks: tuple[int, ...]  # the same field, and meaning, as analyze-log's verdict
    waiting_ranks: tuple[int, ...]
    unknown_ranks: tuple[int, ...]  # ranks of the job seen nowhere here (other nodes, unreadable)
    positions: tuple[Position, ...]
    groups: tuple[StackGroup, ...]
    chain: tuple[str, ...] = ()  # who waits for whom, from the job model
    cycle: tuple[int, ...] = ()  # the ranks of a deadlock across groups, as in analyze-log's verdict


def ranks_text(ranks: Iterable[int]) -> str:
    """0,1,2,3,5 -> '0-3,5' (any scale)."""
    rs = sorted(set(ranks))
    out, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}" if j > i + 1 else f"{rs[i]},{rs[j]}")
        i = j + 1
    return ",".join(out)


def _who(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


def code_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost Python frame outside torch (native frames from --native are skipped)."""
    py = tuple(f for f in frames if f.file.endswith(".py"))
    return user_frame(py) if py else user_frame(tuple(frames))


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


def _short(f: Frame | None) -> str:
    return "a line its stack does not show" if f is None else f"{f.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{f.line}"


def position(rank: int, stack: LiveStack | None, dump: Dump | None) -> Position:
    """One rank's position from its stack and its dump, either of which may be missing."""
    main = stack.threads[0].frames if stack and stack.threads else ()
    host = code_frame(main) if main else None
    util = stack.gpu_util if stack else None
    entry = pending(dump) if dump else None
    evidence = "+".join(x for x, v in (("stack", main), ("dump", dump)) if v) or "none"
    if stack and stack.collective:
        return Position(rank, "waiting", stack.collective, entry.seq if entry else None, entry.pg if entry else None,
                        host, host, util, evidence)
    if entry is not None:
        return Position(rank, "waiting", entry.op, entry.seq, entry.pg, entry.user_frame() or host, host, util,
                        evidence)
    if main and (sync := cuda_wait(main)):
        return Position(rank, "gpu_wait", None, None, None, host, host, util, evidence, None, sync)
    if main:
        return Position(rank, "host_code", None, None, None, host, host, util, evidence, native_call(main))
    if dump is not None:
        last = dump.entries[-1] if dump.entries else None
        detail = (f"no stack; its dump's last collective, {last.op} #{last.seq}, completed" if last
                  else "no stack; its dump records no collective")
        return Position(rank, "host_code", None, None, None, None, None, util, evidence, None, detail)
    return Position(rank, "unknown", None, None, None, None, None, util, evidence)


def _gpu(util: int | None) -> str:
    return "" if util is None else ", GPU idle" if util == 0 else f", GPU {util}% busy"


def _what(p: Position) -> str:
    return f"{p.collective}" + (f" #{p.seq}" if p.seq is not None else "")


def decide(scans: Sequence[FileScan], world_size: int | None = None,
           source: Callable[[Frame], str | None] | None = None) -> SnapshotVerdict:
    """The verdict over every rank the scans hold (live stacks and dumps)."""
    stacks: dict[int, LiveStack] = {}
    dumps: dict[int, Dump] = {}
    for s in scans:
        for st in s.live:
            stacks[st.global_rank] = st
        if s.dump is not None:
            r = s.dump.rank if s.dump.rank is not None else s.path_rank
            if r is not None:
                dumps[r] = s.dump
    ranks = sorted(set(stacks) | set(dumps))
    positions = tuple(position(r, stacks.get(r), dumps.get(r)) for r in ranks)
    size = world_size or max(
        [int(f.value) for s in scans for f in s.facts if f.key == "world_size" and f.value.isdigit()]
        + [len(d.pg_ranks.get(e.pg, ())) for d in dumps.values() for e in d.entries], default=0) or None
    unknown = tuple(r for r in range(size or 0) if r not in stacks and r not in dumps)
    unknown += tuple(p.rank for p in positions if p.state == "unknown")
    groups = _groups(stacks, positions)
    waiting = [p for p in positions if p.state == "waiting"]
    on_gpu = [p for p in positions if p.state == "gpu_wait"]
    host = [p for p in positions if p.state == "host_code"]

    def said(p: Position) -> str:
        if p.where is None and p.detail:
            return f"an unknown line ({p.detail})"
        text = source(p.where) if source and p.where else None
        return _short(p.where) + (f" `{text}`" if text else "")

    def verdict(kind: str, summary: str, root: Sequence[int] = (), wait: Sequence[int] = ()) -> SnapshotVerdict:
        return SnapshotVerdict(kind, summary, tuple(sorted(root)), tuple(sorted(wait)), tuple(sorted(set(unknown))),
                               positions, groups)

    if not positions or all(p.state == "unknown" for p in positions):
        return verdict(UNKNOWN, "No rank's stack or dump could be read: nothing to decide.")
    by_what: dict[tuple[str | None, int | None], list[Position]] = {}
    for p in waiting:
        by_what.setdefault((p.collective, p.seq), []).append(p)
    for op, seq in list(by_what):  # a rank seen without its dump joins the one numbered twin
        twins = [k for k in by_what if k[0] == op and k[1] is not None]
        if seq is None and len(twins) == 1:
            by_what[twins[0]] += by_what.pop((op, seq))
    wait_text = "; ".join(
        f"{_who([p.rank for p in ps])} wait{'s' if len(ps) == 1 else ''} in {_what(ps[0])} ({said(ps[0])})"
        for _, ps in sorted(by_what.items(), key=lambda kv: -len(kv[1])))
    gpu_at: dict[tuple[Frame | None, str | None], list[Position]] = {}
    for p in on_gpu:
        gpu_at.setdefault((p.where, p.detail), []).append(p)
    gpu_text = "; ".join(
        f"{_who([p.rank for p in ps])} wait{'s' if len(ps) == 1 else ''} on the GPU in {ps[0].detail} "
        f"({said(ps[0])}){_gpu(ps[0].gpu_util)}" for ps in gpu_at.values())
    if (waiting or on_gpu) and host:
        at: dict[tuple[Frame | None, bool], list[Position]] = {}
        for p in host:
            at.setdefault((p.where, p.gpu_util == 0), []).append(p)
        host_text = "; ".join(f"{_who([p.rank for p in ps])} {'is' if len(ps) == 1 else 'are'} in host code at "
                              f"{said(ps[0])}{f' (in {ps[0].native})' if ps[0].native else ''}{_gpu(ps[0].gpu_util)}"
                              for ps in at.values())
        tail = ("" if waiting or not on_gpu else
                f": with NCCL, likely inside a collective that {_who([p.rank for p in host])} "
                f"{'has' if len(host) == 1 else 'have'} not joined (a flight-recorder dump would tell)")
        return verdict(HOST_CODE, "; ".join(x for x in (host_text, wait_text, gpu_text) if x) + tail + ".",
                       [p.rank for p in host], [p.rank for p in waiting + on_gpu])
    if len(by_what) > 1:
        biggest = max(len(ps) for ps in by_what.values())
        minority = [p.rank for ps in by_what.values() if len(ps) < biggest for p in ps]
        return verdict(MISMATCH, f"The ranks wait in different collectives: {wait_text}.", minority,
                       [p.rank for p in waiting if p.rank not in minority])
    both = "; ".join(x for x in (wait_text, gpu_text) if x)
    if waiting and unknown:
        return verdict(ELSEWHERE, f"{both}; every rank seen here waits, so the rank holding them up is among "
                                  f"the ranks not seen here ({ranks_text(unknown)}): take a snapshot on their "
                                  "nodes too.", (), [p.rank for p in waiting + on_gpu])
    if waiting:
        return verdict(ALL_WAITING, f"{both}: every rank is inside the same collective, so no rank's own code "
                                    "holds it up; suspect the network, NCCL or a GPU.", (),
                       [p.rank for p in waiting + on_gpu])
    if on_gpu:
        return verdict(NO_HANG, f"No rank is inside a torch.distributed call: {gpu_text}. That is normal work, or a "
                                "collective every rank has joined; a flight-recorder dump would tell.")
    busy = [p.rank for p in host if p.gpu_util]
    tail = (f" {_who(busy)} show{'s' if len(busy) == 1 else ''} a busy GPU: with NCCL a collective can be running "
            "while the host waits in a later call; a flight-recorder dump would tell." if busy else "")
    return verdict(NO_HANG, f"No rank is inside a torch.distributed call: {_who([p.rank for p in host])} "
                            f"{'is' if len(host) == 1 else 'are'} in host code.{tail}")


def _groups(stacks: Mapping[int, LiveStack], positions: Sequence[Position]) -> tuple[StackGroup, ...]:
    groups: dict[tuple, list[int]] = {}
    threads: dict[tuple, int] = {}
    for p in positions:
        st = stacks.get(p.rank)
        if not st or not st.threads:
            continue
        # native frames that are bare addresses differ between processes running the same code
        frames = tuple(f for f in st.threads[0].frames if not f.name.startswith("0x"))
        pend = None if st.collective or p.state != "waiting" else _what(p)
        key = (p.state, st.collective, pend, frames)
        groups.setdefault(key, []).append(p.rank)
        threads[key] = max(threads.get(key, 0), len(st.threads))
    out = [StackGroup(tuple(sorted(rs)), *key, threads[key]) for key, rs in groups.items()]
    return tuple(sorted(out, key=lambda g: (-len(g.ranks), g.ranks)))


def with_job_verdict(v: SnapshotVerdict, job_verdict: Verdict) -> SnapshotVerdict:
    """The job model's verdict (the one analyze-log gives) over this snapshot's positions and stack groups."""
    if v.kind == UNKNOWN:
        return v
    kind = NO_HANG if job_verdict.kind is VerdictKind.NO_FAILURE else job_verdict.kind.value
    unknown = tuple(sorted(set(v.unknown_ranks) | set(job_verdict.unknown_ranks)))
    # The snapshot's own wording (with the source lines) where it names the same roots; else the job model's
    # (a deadlock, a mismatch with no culprit: the stacks alone would call it "every rank in one collective").
    same = bool(v.culprit_ranks) and tuple(v.culprit_ranks) == tuple(job_verdict.culprit_ranks)
    return replace(v, kind=kind, summary=v.summary if same else job_verdict.summary,
                   culprit_ranks=job_verdict.culprit_ranks, cycle=job_verdict.cycle,
                   waiting_ranks=job_verdict.waiting_ranks, unknown_ranks=unknown, chain=job_verdict.chain)
