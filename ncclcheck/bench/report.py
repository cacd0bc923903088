"""What rank 0 prints: a table, a bar chart of busbw per chunk size, the conclusion; or one JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ncclcheck.bench.config import BenchConfig
from ncclcheck.bench.metrics import ModeResult, conclusion

SCHEMA_VERSION = 1


def _label(r: ModeResult) -> str:
    return "unchunked" if r.chunk is None else f"chunks of {r.chunk:.0e}".replace("e+0", "e")


def result_json(cfg: BenchConfig, env: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable result."""
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
        "conclusion": conclusion(results),
    }


def report(cfg: BenchConfig, env: dict[str, Any], run: dict[str, Any]) -> RenderableType:
    """Table, bar chart and conclusion for people."""
    results: Sequence[ModeResult] = run["results"]
    t = Table(title=f"{cfg.op} of {cfg.size:,} {cfg.dtype} elements per rank ({cfg.nbytes / 1e9:.2f} GB), "
                    f"{env['world_size']} rank(s), {env['backend']}, {cfg.iters} iterations", title_justify="left")
    for col in ("mode", "chunks", "median ms", "min ms", "max ms", "algbw GB/s", "busbw GB/s", "vs unchunked",
                "rank spread"):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for r in results:
        t.add_row(_label(r), f"{r.chunks:,}", f"{r.median_s * 1e3:.2f}", f"{r.min_s * 1e3:.2f}",
                  f"{r.max_s * 1e3:.2f}", f"{r.algbw:.1f}", "n/a" if r.busbw is None else f"{r.busbw:.1f}",
                  f"{r.slowdown:.2f}x", f"{r.rank_spread * 100:.1f}%")
    parts: list[RenderableType] = [t]
    values = [(r.busbw if r.busbw is not None else r.algbw) for r in results]
    top = max(values) or 1.0
    parts.append(Text("busbw" if results[0].busbw is not None else "algbw (busbw is n/a with one rank)",
                      style="bold"))
    for r, v in zip(results, values, strict=True):
        bar = "█" * max(1, round(40 * v / top))
        parts.append(Text(f"{_label(r):>16} {bar} {v:.1f} GB/s"))
    mem = run["memory"]
    if mem.get("torch_peak_allocated_bytes") is not None:
        parts.append(Text(f"memory: PyTorch allocator peak {mem['torch_peak_allocated_bytes'] / 1e9:.2f} GB; device "
                          f"free memory dropped by {(mem['device_free_drop_bytes'] or 0) / 1e9:.2f} GB (NCCL "
                          "allocates outside PyTorch)"))
    if run["check"] is not None:
        parts.append(Text(f"check: {'values correct' if run['check'] else 'WRONG VALUES'}",
                          style="green" if run["check"] else "bold red"))
    parts.append(Text(conclusion(results), style="bold"))
    return Group(*parts)
