"""Benchmark options: parsed into a frozen :class:`BenchConfig` before any work starts."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from ncclcheck.explain.counts import ExplainError, parse_count

DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


class ConfigError(ValueError):
    """A bad option; the message is shown as is."""


@dataclass(frozen=True)
class BenchConfig:
    """Everything a run needs, validated."""

    size: int  # elements per rank
    dtype: str
    chunks: tuple[int, ...]  # chunk sizes in elements; unchunked is always measured too
    iters: int
    warmup: int
    op: str
    backend: str  # auto | nccl | gloo
    timeout: float
    sync_per_chunk: bool
    check: bool
    json: bool
    output: str | None
    from_log: str | None = None
    log_op: str | None = None  # the OpType taken from --from-log
    exit_early_rank: int | None = None  # testing aid: this rank leaves before the first collective

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize


def parse_bytes(text: str) -> int:
    """``2GB`` (1e9), ``2GiB`` (2^30), ``500000000``."""
    m = re.fullmatch(r"\s*([\d.]+(?:e\d+)?)\s*([kmgt]i?b|b)?\s*", text.lower())
    if not m:
        raise ConfigError(f"--bytes: {text!r} is not a size such as 2GB or 2GiB")
    return int(float(m[1]) * _UNITS[m[2] or ""])


def _count(text: str, flag: str) -> int:
    try:
        return parse_count(text)
    except ExplainError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m ncclcheck.bench``."""
    p = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node N -m ncclcheck.bench",
        description="all_reduce benchmark: unchunked vs chunked, nccl-tests-compatible algbw/busbw.",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--size", default="5e8", help="elements per rank: 5e8, 500000000 (default 5e8)")
    size.add_argument("--bytes", help="bytes per rank instead: 2GB (1e9 B) or 2GiB (2^30 B)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32")
    p.add_argument("--chunks", default="1e8,1e7,1e6", help="chunk sizes in elements, comma-separated ('' for none)")
    p.add_argument("--iters", type=int, default=10, help="timed transfers per mode (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed transfers per mode (default 3)")
    p.add_argument("--op", choices=OPS, default="all_reduce")
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                   help="auto: nccl with CUDA, gloo on CPU")
    p.add_argument("--timeout", type=float, default=120.0, help="process-group timeout in seconds (default 120)")
    p.add_argument("--sync-per-chunk", action="store_true",
                   help="synchronise after every chunk (what changes the watchdog's view)")
    p.add_argument("--check", action="store_true", help="verify the reduced values")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--output", help="also write the JSON result to this file")
    p.add_argument("--from-log", help="replay the OpType and NumelIn of the watchdog line in this log")
    p.add_argument("--exit-early-rank", type=int, default=None, help=argparse.SUPPRESS)
    return p


_LOG_OPS = {"ALLREDUCE": "all_reduce", "_ALLGATHER_BASE": "all_gather", "ALLGATHER": "all_gather",
            "_REDUCE_SCATTER_BASE": "reduce_scatter", "REDUCE_SCATTER": "reduce_scatter", "BROADCAST": "broadcast"}


def parse_args(argv: list[str] | None) -> BenchConfig:
    """Validate the command line into a config (raises :class:`ConfigError`)."""
    a = parser().parse_args(argv)
    op, log_op = a.op, None
    if a.from_log:
        from ncclcheck.evidence.reader import resolve
        from ncclcheck.job.analyze import analyze

        errors: list[str] = []
        records = analyze(resolve([a.from_log], lambda e: errors.append(str(e))), workers=1).records
        if errors:
            raise ConfigError(errors[0])
        rec = next((r for r in records if r.numel_in), None)
        if rec is None:
            raise ConfigError(f"--from-log: no watchdog line with NumelIn in {a.from_log}")
        size, log_op = rec.numel_in, rec.op_type
        op = _LOG_OPS.get(rec.op_type or "", "all_reduce")
    elif a.bytes:
        size = parse_bytes(a.bytes) // DTYPES[a.dtype]
    else:
        size = _count(a.size, "--size")
    chunks = tuple(sorted({_count(c, "--chunks") for c in a.chunks.split(",") if c.strip()}, reverse=True))
    if size <= 0:
        raise ConfigError("--size: must be at least one element")
    if a.iters < 1 or a.warmup < 0:
        raise ConfigError("--iters must be >= 1 and --warmup >= 0")
    if a.timeout <= 0:
        raise ConfigError("--timeout must be positive")
    return BenchConfig(size=size, dtype=a.dtype, chunks=tuple(c for c in chunks if c < size), iters=a.iters,
                       warmup=a.warmup, op=op, backend=a.backend, timeout=a.timeout,
                       sync_per_chunk=a.sync_per_chunk, check=a.check, json=a.json, output=a.output,
                       from_log=a.from_log, log_op=log_op, exit_early_rank=a.exit_early_rank)
