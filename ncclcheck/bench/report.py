"""What rank 0 prints: tables that fit the terminal, bar charts of busbw, the conclusion; or one JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ncclcheck.bench import fmt
from ncclcheck.bench.config import BenchConfig
from ncclcheck.bench.metrics import ModeResult, SweepPoint, below_threshold, conclusion

SCHEMA_VERSION = 1

# What each value of the sweep's "timed" column means (runner.GRAPH, QUEUED, HOST).
TIMINGS = {
    "graph": "replays of one CUDA graph holding the iterations' all_reduces, timed by CUDA events",
    "queued": "one dist.all_reduce call each, queued while the GPU waits, then timed by CUDA events (PyTorch's "
              "per-call cost left out)",
    "host clock": "one dist.all_reduce call each, a host clock around them",
}


@dataclass(frozen=True)
class Column:
    """A table column; ``keep`` orders what goes first when the terminal is narrow (0 = never dropped)."""

    header: str
    right: bool = True
    keep: int = 0


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: Sequence[int]) -> list[int]:
    """Each shown column as narrow as its longest cell or header word (headers wrap at spaces)."""
    return [max([len(w) for w in columns[c].header.split()] + [len(r[c]) for r in rows]) for c in shown]


def _table(columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: Sequence[int]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for c, w in zip(shown, _widths(columns, rows, shown), strict=True):
        t.add_column(columns[c].header, justify="right" if columns[c].right else "left", width=w)
    for r in rows:
        t.add_row(*(r[c] for c in shown))
    return t


def _fits(columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: Sequence[int], width: int) -> bool:
    """One space of edge each side and three between columns (padding, rule, padding): SIMPLE_HEAD, pad_edge off."""
    return sum(_widths(columns, rows, shown)) + 3 * len(shown) - 1 <= width


def fitted(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> RenderableType:
    """A table whose cells are never cut: drop the least needed columns until it fits, else one block per row."""
    shown = list(range(len(columns)))
    droppable = sorted((c for c in shown if columns[c].keep), key=lambda c: -columns[c].keep)
    while not _fits(columns, rows, shown, width) and droppable:
        shown.remove(droppable.pop(0))
    if not _fits(columns, rows, shown, width):  # even the essential columns do not fit: stack each row
        key_w = max(len(c.header) for c in columns)
        lines = [Text(title, style="bold")]
        for r in rows:
            lines.append(Text(""))
            lines.extend(Text(f"{columns[c].header:<{key_w}}  {r[c]}") for c in range(len(columns)))
        return Group(*lines)
    return Group(Text(title, style="bold"), _table(columns, rows, shown))


def bars(labels: Sequence[str], values: Sequence[float], unit: str, width: int) -> list[Text]:
    """One line per value: label, a bar scaled to the largest value, the value; never wider than ``width``."""
    lab_w = max(len(s) for s in labels)
    texts = [f"{fmt.gbps(v)} {unit}" for v in values]
    val_w = max(len(s) for s in texts)
    room = max(1, width - lab_w - val_w - 3)
    top = max(values) or 1.0
    return [Text(f"{lab:>{lab_w}} {'█' * max(1, round(room * v / top)):<{room}} {txt:>{val_w}}")
            for lab, v, txt in zip(labels, values, texts, strict=True)]


def _label(r: ModeResult) -> str:
    return "unchunked" if r.chunk is None else f"chunks of {r.chunk:.0e}".replace("e+0", "e")


def result_json(cfg: BenchConfig, env: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable result of the chunked-vs-unchunked mode."""
    results: Sequence[ModeResult] = run["results"]
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": env,
        "config": {"op": cfg.op, "size_elements": cfg.size, "dtype": cfg.dtype, "bytes_per_rank": cfg.nbytes,
                   "chunks": list(cfg.chunks), "iters": cfg.iters, "warmup": cfg.warmup,
                   "sync_per_chunk": cfg.sync_per_chunk, "timeout_s": cfg.timeout, "from_log": cfg.from_log,
                   "log_op": cfg.log_op},
        "results": [
            {"mode": _label(r), "chunk_elements": r.chunk, "chunks": r.chunks, "median_s": r.median_s,
             "min_s": r.min_s, "max_s": r.max_s, "algbw_gbps": r.algbw, "busbw_gbps": r.busbw,
             "slowdown_vs_unchunked": r.slowdown, "rank_medians_s": list(r.rank_medians),
             "rank_spread": r.rank_spread}
            for r in results
        ],
        "check": run["check"],
        "memory": run["memory"],
        "conclusion": conclusion(results, world=env.get("world_size"), backend=env.get("backend", "nccl")),
    }


def report(cfg: BenchConfig, env: dict[str, Any], run: dict[str, Any], width: int = 80) -> RenderableType:
    """Table, bar chart and conclusion for people, fitted to ``width`` columns."""
    results: Sequence[ModeResult] = run["results"]
    title = (f"{cfg.op} of {cfg.size:,} {cfg.dtype} elements per rank ({fmt.size(cfg.nbytes)}), "
             f"{env['world_size']} rank(s), {env['backend']}, {cfg.iters} iterations")
    cols = [Column("mode", right=False), Column("median"), Column("busbw GB/s"), Column("vs unchunked"),
            Column("algbw GB/s", keep=2), Column("chunks", keep=3), Column("min", keep=5), Column("max", keep=4),
            Column("rank spread", keep=1)]
    rows = [[_label(r), fmt.duration(r.median_s), fmt.gbps(r.busbw), f"{r.slowdown:.2f}x", fmt.gbps(r.algbw),
             f"{r.chunks:,}", fmt.duration(r.min_s), fmt.duration(r.max_s), f"{r.rank_spread * 100:.1f}%"]
            for r in results]
    parts: list[RenderableType] = [fitted(title, cols, rows, width)]
    one_rank = results[0].busbw is None
    parts.append(Text("algbw (busbw is n/a with one rank)" if one_rank else "busbw", style="bold"))
    values = [r.algbw if one_rank else (r.busbw or 0.0) for r in results]
    parts.extend(bars([_label(r) for r in results], values, "GB/s", width))
    mem = run["memory"]
    if mem.get("torch_peak_allocated_bytes") is not None:
        parts.append(Text(f"memory: PyTorch allocator peak {mem['torch_peak_allocated_bytes'] / 1e9:.2f} GB; device "
                          f"free memory dropped by {(mem['device_free_drop_bytes'] or 0) / 1e9:.2f} GB (NCCL "
                          "allocates outside PyTorch)"))
    if run["check"] is not None:
        parts.append(Text(f"check: {'values correct' if run['check'] else 'WRONG VALUES'}",
                          style="green" if run["check"] else "bold red"))
    parts.append(Text(conclusion(results, world=env.get("world_size"), backend=env.get("backend", "nccl")), style="bold"))
    return Group(*parts)


def sweep_json(cfg: BenchConfig, env: dict[str, Any], points: Sequence[SweepPoint]) -> dict[str, Any]:
    """The machine-readable result of a sweep: nccl-tests' columns, one object per size."""
    assert cfg.sweep is not None
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": env,
        "config": {"op": "all_reduce", "dtype": cfg.dtype, "sweep": {"min_bytes": cfg.sweep[0],
                   "max_bytes": cfg.sweep[1], "factor": cfg.sweep[2]}, "iters": cfg.iters, "warmup": cfg.warmup,
                   "graph": cfg.graph, "min_busbw_gbps": cfg.min_busbw, "timeout_s": cfg.timeout},
        "sweep": [{"size_bytes": p.size, "count": p.count, "time_us": p.time_s * 1e6, "algbw_gbps": p.algbw,
                   "busbw_gbps": p.busbw, "cuda_graph": p.graph, "timing": p.timing, "check": p.correct}
                  for p in points],
        "check": None if not cfg.check else all(p.correct for p in points),
        "below_min_busbw": below_threshold(points, cfg.min_busbw) if cfg.min_busbw is not None else None,
    }


def sweep_report(cfg: BenchConfig, env: dict[str, Any], points: Sequence[SweepPoint], width: int = 80
                 ) -> RenderableType:
    """nccl-tests-style table (one row per size), a busbw bar per size, and the threshold verdict."""
    one_rank = points[0].busbw is None
    title = (f"all_reduce sweep, {cfg.dtype}, {env['world_size']} rank(s), {env['backend']}, {cfg.iters} iterations "
             "per size (time: mean over ranks of the time per all_reduce)")
    cols = [Column("size", right=True), Column("time"), Column("busbw GB/s", keep=0 if not one_rank else 9),
            Column("algbw GB/s", keep=9 if not one_rank else 0), Column("count", keep=3), Column("timed", keep=2)]
    rows = [[fmt.size(p.size), fmt.duration(p.time_s), fmt.gbps(p.busbw), fmt.gbps(p.algbw), f"{p.count:,}",
             p.timing] for p in points]
    if cfg.check:
        cols.append(Column("check"))
        for row, p in zip(rows, points, strict=True):
            row.append("ok" if p.correct else "WRONG")
    parts: list[RenderableType] = [fitted(title, cols, rows, width)]
    used = {p.timing for p in points}
    parts.append(Text("timed: " + "; ".join(f"{k}: {TIMINGS[k]}" for k in TIMINGS if k in used)))
    parts.append(Text("algbw (busbw is n/a with one rank)" if one_rank else "busbw", style="bold"))
    parts.extend(bars([fmt.size(p.size) for p in points],
                      [p.algbw if one_rank else (p.busbw or 0.0) for p in points], "GB/s", width))
    if cfg.check:
        ok = all(p.correct for p in points)
        parts.append(Text(f"check: {'values correct at every size' if ok else 'WRONG VALUES'}",
                          style="green" if ok else "bold red"))
    if cfg.min_busbw is not None:
        last = points[-1]
        got = last.algbw if one_rank else (last.busbw or 0.0)
        low = below_threshold(points, cfg.min_busbw)
        parts.append(Text(f"{'FAIL' if low else 'PASS'}: {'algbw' if one_rank else 'busbw'} at "
                          f"{fmt.size(last.size)} is {fmt.gbps(got)} GB/s, "
                          f"{'below' if low else 'at or above'} --min-busbw {cfg.min_busbw:g} GB/s",
                          style="bold red" if low else "bold green"))
    return Group(*parts)
