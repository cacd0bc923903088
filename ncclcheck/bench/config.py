"""Benchmark options: parsed into a frozen :class:`BenchConfig` before any work starts."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
BACKENDS = ("auto", "nccl", "gloo")  # auto: nccl with CUDA, gloo on CPU
GRAPHS = ("off", "on")  # --graph: CUDA-graph replays in a sweep
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
    exit_early_rank: int | None = None  # testing aid: this rank leaves after one barrier, before the measured ones
    sweep: tuple[int, int, int] | None = None  # (min bytes, max bytes, factor): the size-sweep mode
    graph: str = "off"  # off | on: CUDA-graph replay in the sweep
    min_busbw: float | None = None  # GB/s at the largest swept size; below it the exit code is 3
    plot: str | None = None  # SVG of the busbw curve
    html: str | None = None  # self-contained HTML page of the curve and table
    default_size: bool = False  # no --size/--bytes/--from-log: the backend's default (for_backend) is used
    default_chunks: bool = False  # no --chunks: the backend's default

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


_SWEEP_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, **_UNITS}


def parse_sweep_size(text: str) -> int:
    """One end of ``--sweep``: bytes, with nccl-tests' binary ``K/M/G`` (``2G`` = 2^30 x 2); ``2GB`` is 2e9."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmgt]?i?b?)\s*", text.lower())
    if not m or m[2] not in _SWEEP_UNITS:
        raise ConfigError(f"--sweep: {text!r} is not a size such as 8, 64K, 2G or 2GB")
    return int(float(m[1]) * _SWEEP_UNITS[m[2]])


def parse_sweep(text: str) -> tuple[int, int, int]:
    """``MIN:MAX[:FACTOR]`` as nccl-tests' ``-b MIN -e MAX -f FACTOR`` (factor 2 when left out)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ConfigError(f"--sweep: {text!r} is not MIN:MAX or MIN:MAX:FACTOR (for example 8:2G:4)")
    lo, hi = parse_sweep_size(parts[0]), parse_sweep_size(parts[1])
    try:
        factor = int(parts[2]) if len(parts) == 3 else 2
    except ValueError:
        raise ConfigError(f"--sweep: the factor {parts[2]!r} is not a whole number") from None
    if factor < 2:
        raise ConfigError("--sweep: the factor must be at least 2")
    if lo < 1 or hi < lo:
        raise ConfigError(f"--sweep: need 1 <= MIN <= MAX, got {lo} and {hi} bytes")
    return lo, hi, factor


def sweep_sizes(lo: int, hi: int, factor: int, itemsize: int) -> list[int]:
    """The byte sizes of a sweep, each a whole number of elements (as nccl-tests: count = size / type size)."""
    sizes: list[int] = []
    s = lo
    while s <= hi:
        b = s // itemsize * itemsize
        if b and (not sizes or b != sizes[-1]):
            sizes.append(b)
        s *= factor
    return sizes


def _count(text: str, flag: str) -> int:
    from ncclcheck.explain.counts import ExplainError, parse_count

    try:
        return parse_count(text)
    except ExplainError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


# Sizes when --size, --bytes and --chunks are left out, by backend: what NCCL on GPUs moves in milliseconds would
# keep gloo on CPU busy for minutes.
DEFAULT_SIZE = {"nccl": "5e8", "gloo": "1e7"}  # elements per rank: 2 GB and 40 MB of float32
DEFAULT_CHUNKS = {"nccl": "1e8,1e7,1e6", "gloo": "1e6,1e5"}

_LOG_OPS = {"ALLREDUCE": "all_reduce", "_ALLGATHER_BASE": "all_gather", "ALLGATHER": "all_gather",
            "_REDUCE_SCATTER_BASE": "reduce_scatter", "REDUCE_SCATTER": "reduce_scatter", "BROADCAST": "broadcast"}


def make_config(*, size: str | None = None, nbytes: str | None = None, dtype: str = "float32",
                chunks: str | None = None, sweep: str | None = None, graph: str = "off",
                min_busbw: float | None = None, plot: str | None = None, html: str | None = None, iters: int | None = None,
                warmup: int | None = None, op: str = "all_reduce", backend: str = "auto", timeout: float = 120.0,
                sync_per_chunk: bool = False, check: bool = False, json: bool = False, output: str | None = None,
                from_log: str | None = None, exit_early_rank: int | None = None) -> BenchConfig:
    """Validate the options (as the command line gives them) into a config; raises :class:`ConfigError`."""
    if size is not None and nbytes is not None:
        raise ConfigError("give --size or --bytes, not both")
    swept = parse_sweep(sweep) if sweep else None
    if not swept:
        for flag, value in (("--min-busbw", min_busbw), ("--plot", plot), ("--html", html)):
            if value is not None:
                raise ConfigError(f"{flag} needs --sweep MIN:MAX[:FACTOR]")
        if graph != "off":
            raise ConfigError("--graph needs --sweep MIN:MAX[:FACTOR]")
    elif op != "all_reduce" or from_log:
        raise ConfigError("--sweep measures all_reduce; leave out --op and --from-log")
    elif size is not None or nbytes is not None or chunks is not None:
        raise ConfigError("--sweep sets the sizes itself; leave out --size, --bytes and --chunks")
    if min_busbw is not None and not min_busbw > 0:
        raise ConfigError("--min-busbw must be a positive number of GB/s")
    iters = iters if iters is not None else (20 if swept else 10)
    warmup = warmup if warmup is not None else (5 if swept else 3)
    log_op = None
    elements: int | None = None
    if from_log:
        from ncclcheck.evidence.reader import resolve
        from ncclcheck.job.analyze import analyze

        errors: list[str] = []
        records = analyze(resolve([from_log], lambda e: errors.append(str(e))), workers=1).records
        if errors:
            raise ConfigError(errors[0])
        rec = next((r for r in records if r.numel_in), None)
        if rec is None or rec.numel_in is None:  # the second never holds: it tells the type checker
            raise ConfigError(f"--from-log: no watchdog line with NumelIn in {from_log}")
        elements, log_op = rec.numel_in, rec.op_type
        op = _LOG_OPS.get(rec.op_type or "", "all_reduce")
    elif nbytes:
        elements = parse_bytes(nbytes) // DTYPES[dtype]
    elif size is not None:
        elements = _count(size, "--size")
    if elements is not None and elements <= 0:
        raise ConfigError("--size: must be at least one element")
    chunk_sizes = None if chunks is None else _chunks(chunks)
    if swept:
        elements = swept[1] // DTYPES[dtype]
        chunk_sizes = ()
        if swept[0] < DTYPES[dtype]:
            raise ConfigError(f"--sweep: MIN must hold one {dtype} element ({DTYPES[dtype]} bytes)")
    if iters < 1 or warmup < 0:
        raise ConfigError("--iters must be >= 1 and --warmup >= 0")
    if timeout <= 0:
        raise ConfigError("--timeout must be positive")
    cfg = BenchConfig(size=elements or 0, dtype=dtype, chunks=chunk_sizes or (), iters=iters, warmup=warmup, op=op,
                      backend=backend, timeout=timeout, sync_per_chunk=sync_per_chunk, check=check, json=json,
                      output=output, from_log=from_log, log_op=log_op, exit_early_rank=exit_early_rank, sweep=swept,
                      graph=graph, min_busbw=min_busbw, plot=plot, html=html, default_size=elements is None,
                      default_chunks=chunk_sizes is None)
    return cfg if cfg.default_size or cfg.default_chunks else _fitted_chunks(cfg)


def _chunks(text: str) -> tuple[int, ...]:
    return tuple(sorted({_count(c, "--chunks") for c in text.split(",") if c.strip()}, reverse=True))


def _fitted_chunks(cfg: BenchConfig) -> BenchConfig:
    """Chunk sizes below the transfer's size only (a chunk as large as the whole is the unchunked transfer)."""
    return replace(cfg, chunks=tuple(c for c in cfg.chunks if c < cfg.size))


def for_backend(cfg: BenchConfig, backend: str) -> BenchConfig:
    """The config with the backend's default size and chunks where the command line gave none."""
    if cfg.default_size:
        cfg = replace(cfg, size=_count(DEFAULT_SIZE[backend], "--size"))
    if cfg.default_chunks:
        cfg = replace(cfg, chunks=_chunks(DEFAULT_CHUNKS[backend]))
    return _fitted_chunks(cfg)


