"""Bandwidth arithmetic as nccl-tests defines it (doc/PERFORMANCE.md), and the summary of a run.

algbw = S / t with GB/s = 1e9 B/s.  S is the whole array: each rank's buffer for
all_reduce and broadcast, the input for reduce_scatter (which is already the whole
array), and n x the input for all_gather.  busbw = algbw x factor: 2(n-1)/n for all_reduce, (n-1)/n for
all_gather and reduce_scatter, 1 for broadcast.  With one rank busbw is not defined.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.bench.fmt import duration


def bus_factor(op: str, world: int) -> float | None:
    """nccl-tests' bus factor; None with a single rank (no traffic to measure)."""
    if world <= 1:
        return None
    if op == "all_reduce":
        return 2 * (world - 1) / world
    if op in ("all_gather", "reduce_scatter"):
        return (world - 1) / world
    return 1.0


def algbw_bytes(op: str, input_bytes: int, world: int) -> int:
    """The S of nccl-tests for this op, from the bytes of each rank's input buffer.

    all_gather's input is one rank's share, so S = n x input; reduce_scatter's input is
    already the whole array (S = recvcount x n), as are all_reduce's and broadcast's.
    """
    return input_bytes * world if op == "all_gather" else input_bytes


@dataclass(frozen=True)
class ModeResult:
    """One mode (unchunked or one chunk size), summarised over iterations and ranks."""

    chunk: int | None  # elements per chunk; None = unchunked
    chunks: int
    median_s: float
    min_s: float
    max_s: float
    algbw: float  # GB/s
    busbw: float | None  # GB/s; None with one rank
    slowdown: float  # median vs unchunked median
    rank_medians: tuple[float, ...]  # each rank's own median, for the straggler signal

    @property
    def rank_spread(self) -> float:
        """(slowest rank - fastest rank) / median: near 0 when ranks agree."""
        return (max(self.rank_medians) - min(self.rank_medians)) / self.median_s if self.median_s else 0.0


def summarise(op: str, per_rank_bytes: int, world: int, chunk: int | None, chunks: int,
              times_by_rank: Sequence[Sequence[float]], unchunked_median: float | None) -> ModeResult:
    """Median/min/max over iterations of the slowest rank (a collective ends when its last rank does)."""
    per_iter = [max(ts) for ts in zip(*times_by_rank, strict=True)]
    med = statistics.median(per_iter)
    s = algbw_bytes(op, per_rank_bytes, world)
    algbw = s / med / 1e9
    f = bus_factor(op, world)
    return ModeResult(chunk, chunks, med, min(per_iter), max(per_iter), algbw, algbw * f if f else None,
                      med / unchunked_median if unchunked_median else 1.0,
                      tuple(statistics.median(ts) for ts in times_by_rank))


WATCHDOG_DEFAULT_S = 600.0  # PyTorch's default NCCL collective timeout (ProcessGroupNCCL, 10 minutes)
GLOO_DEFAULT_S = 1800.0  # PyTorch's default process-group timeout for other backends, gloo's (30 minutes)


def conclusion(results: Sequence[ModeResult], timeout_s: float | None = None, world: int | None = None,
               backend: str = "nccl") -> str:
    """One sentence: what chunking costs, and what the backend's default timeout (NCCL's watchdog, or gloo's) is
    compared with that; with one rank, that nothing was measured over a link."""
    if world == 1:
        return ("One rank: nothing crossed a link, so these are the times of a local copy, not of NVLink or a network, "
                "and they say nothing about chunking; run it on N >= 2 ranks: torchrun --nproc-per-node N -m "
                "ncclcheck.bench ...")
    base = results[0]
    nccl = backend == "nccl"
    default = WATCHDOG_DEFAULT_S if nccl else GLOO_DEFAULT_S
    timeout_s = default if timeout_s is None else timeout_s
    if timeout_s != default:
        whose = f"a {'watchdog ' if nccl else ''}timeout of {duration(timeout_s)}"
    elif nccl:
        whose = f"PyTorch's default NCCL watchdog timeout ({timeout_s / 60:g} min, Timeout(ms)={timeout_s * 1000:.0f})"
    else:
        whose = f"PyTorch's default {backend} timeout ({timeout_s / 60:g} min)"
    chunked = list(results[1:])
    if not chunked:
        return f"One transfer takes {duration(base.median_s)}; against {whose} the size is never the problem."
    best = min(chunked, key=lambda r: r.slowdown)
    worst = max(chunked, key=lambda r: r.slowdown)
    text = f"Chunks of {best.chunk:.0e} elements cost {best.slowdown:.2f}x the unchunked time"
    if worst is not best:
        text += f" and chunks of {worst.chunk:.0e} cost {worst.slowdown:.2f}x"
    verb = "does not help" if best.slowdown >= 1 else "saves little on"
    text += f"; chunking {verb} a transfer that completes in {duration(base.median_s)} against {whose}."
    return text.replace("e+0", "e")


@dataclass(frozen=True)
class SweepPoint:
    """One size of a sweep, in nccl-tests' columns (time is the mean over ranks, as all_reduce_perf's default)."""

    size: int  # bytes per rank
    count: int  # elements per rank
    time_s: float
    algbw: float  # GB/s
    busbw: float | None  # GB/s; None with one rank
    timing: str  # how it was timed: "graph", "queued" or "host clock" (runner's GRAPH, QUEUED, HOST)
    correct: bool | None  # --check at this size; None when not checked

    @property
    def graph(self) -> bool:
        """Timed as replays of a CUDA graph."""
        return self.timing == "graph"


def sweep_point(size: int, count: int, world: int, rank_times: Sequence[float], timing: str,
                correct: bool | None) -> SweepPoint:
    """algbw = size / time and busbw = algbw x 2(n-1)/n, from each rank's time per all_reduce."""
    t = statistics.fmean(rank_times)
    algbw = size / t / 1e9
    f = bus_factor("all_reduce", world)
    return SweepPoint(size, count, t, algbw, algbw * f if f else None, timing, correct)


def below_threshold(points: Sequence[SweepPoint], min_busbw: float | None) -> bool:
    """True when --min-busbw is given and the largest size's busbw (algbw with one rank) is below it."""
    if min_busbw is None or not points:
        return False
    last = points[-1]
    return (last.busbw if last.busbw is not None else last.algbw) < min_busbw
