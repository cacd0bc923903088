"""Benchmark options: parsed into a frozen :class:`BenchConfig` before any work starts."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import NoReturn

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
    sweep: tuple[int, int, int] | None = None  # (min bytes, max bytes, factor): the size-sweep mode
    graph: str = "auto"  # auto | on | off: CUDA-graph replay in the sweep
    min_busbw: float | None = None  # GB/s at the largest swept size; below it the exit code is 3
    plot: str | None = None  # PNG of the busbw curve
    html: str | None = None  # self-contained HTML page of the curve and table

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
    try:
        return parse_count(text)
    except ExplainError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad option as one :class:`ConfigError` line instead of usage text and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(message)


def parser(prog: str = "torchrun --nproc-per-node N -m ncclcheck.bench") -> argparse.ArgumentParser:
    """The command line of ``python -m ncclcheck.bench``."""
    p = _Parser(
        prog=prog,
        description="all_reduce benchmark: unchunked vs chunked (default), or a size sweep (--sweep) with "
                    "nccl-tests' algbw/busbw.",
        epilog="exit codes: 0 done, 1 run failed (peer lost, wrong values), 2 bad options, no torch or not enough "
               "memory, 3 busbw below --min-busbw. Under torchrun, any non-zero code becomes torchrun's 1; "
               "ncclcheck bench passes the benchmark's own code through.",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--size", help="elements per rank: 5e8, 500000000 (default 5e8)")
    size.add_argument("--bytes", help="bytes per rank instead: 2GB (1e9 B) or 2GiB (2^30 B)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32",
                   help="element type of the tensor (default float32); sizes in elements are multiplied by its bytes")
    p.add_argument("--chunks", help="chunk sizes in elements, comma-separated ('' for none; default 1e8,1e7,1e6)")
    p.add_argument("--sweep", metavar="MIN:MAX[:FACTOR]",
                   help="size sweep in bytes, like nccl-tests -b/-e/-f: 8:2G:4 (K/M/G are binary; factor 2 if left out)")
    p.add_argument("--graph", choices=("auto", "on", "off"), default="auto",
                   help="sweep: time CUDA-graph replays of the --iters collectives (auto: sizes up to 1 MiB, on GPU)")
    p.add_argument("--min-busbw", type=float, metavar="GB/S",
                   help="sweep: exit 3 when busbw at the largest size is below this (fleet acceptance)")
    p.add_argument("--plot", metavar="FILE.png", help="sweep: write the busbw curve as a PNG")
    p.add_argument("--html", metavar="FILE.html", help="sweep: write the curve and table as one self-contained page")
    p.add_argument("--iters", type=int, default=None, help="timed transfers per mode or size (default 10; sweep 20)")
    p.add_argument("--warmup", type=int, default=None, help="untimed transfers per mode or size (default 3; sweep 5)")
    p.add_argument("--op", choices=OPS, default="all_reduce",
                   help="the collective to time (default all_reduce); busbw uses that op's factor, as nccl-tests does")
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                   help="auto: nccl with CUDA, gloo on CPU")
    p.add_argument("--timeout", type=float, default=120.0, help="process-group timeout in seconds (default 120)")
    p.add_argument("--sync-per-chunk", action="store_true",
                   help="synchronise after every chunk (what changes the watchdog's view)")
    p.add_argument("--check", action="store_true", help="verify the reduced values (in a sweep: at every size)")
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
    sweep = parse_sweep(a.sweep) if a.sweep else None
    if not sweep:
        for flag, value in (("--min-busbw", a.min_busbw), ("--plot", a.plot), ("--html", a.html)):
            if value is not None:
                raise ConfigError(f"{flag} needs --sweep MIN:MAX[:FACTOR]")
    elif a.op != "all_reduce" or a.from_log:
        raise ConfigError("--sweep measures all_reduce; leave out --op and --from-log")
    elif a.size is not None or a.bytes is not None or a.chunks is not None:
        raise ConfigError("--sweep sets the sizes itself; leave out --size, --bytes and --chunks")
    if a.min_busbw is not None and not a.min_busbw > 0:
        raise ConfigError("--min-busbw must be a positive number of GB/s")
    iters = a.iters if a.iters is not None else (20 if sweep else 10)
    warmup = a.warmup if a.warmup is not None else (5 if sweep else 3)
    op, log_op = a.op, None
    if a.from_log:
        from ncclcheck.evidence.reader import resolve
        from ncclcheck.job.analyze import analyze

        errors: list[str] = []
        records = analyze(resolve([a.from_log], lambda e: errors.append(str(e))), workers=1).records
        if errors:
            raise ConfigError(errors[0])
        rec = next((r for r in records if r.numel_in), None)
        if rec is None or rec.numel_in is None:  # the second never holds: it tells the type checker
            raise ConfigError(f"--from-log: no watchdog line with NumelIn in {a.from_log}")
        size, log_op = rec.numel_in, rec.op_type
        op = _LOG_OPS.get(rec.op_type or "", "all_reduce")
    elif a.bytes:
        size = parse_bytes(a.bytes) // DTYPES[a.dtype]
    else:
        size = _count(a.size if a.size is not None else "5e8", "--size")
    chunk_list = a.chunks if a.chunks is not None else "1e8,1e7,1e6"
    chunks = tuple(sorted({_count(c, "--chunks") for c in chunk_list.split(",") if c.strip()}, reverse=True))
    if size <= 0:
        raise ConfigError("--size: must be at least one element")
    if sweep:
        size = sweep[1] // DTYPES[a.dtype]
        if sweep[0] < DTYPES[a.dtype]:
            raise ConfigError(f"--sweep: MIN must hold one {a.dtype} element ({DTYPES[a.dtype]} bytes)")
    if iters < 1 or warmup < 0:
        raise ConfigError("--iters must be >= 1 and --warmup >= 0")
    if a.timeout <= 0:
        raise ConfigError("--timeout must be positive")
    return BenchConfig(size=size, dtype=a.dtype, chunks=() if sweep else tuple(c for c in chunks if c < size),
                       iters=iters, warmup=warmup, op=op, backend=a.backend, timeout=a.timeout,
                       sync_per_chunk=a.sync_per_chunk, check=a.check, json=a.json, output=a.output,
                       from_log=a.from_log, log_op=log_op, exit_early_rank=a.exit_early_rank, sweep=sweep,
                       graph=a.graph, min_busbw=a.min_busbw, plot=a.plot, html=a.html)


_USAGE_OPTION = re.compile(r"(--[\w-]+)(?: \{([^}]*)\})?")


def complete(words: list[str], incomplete: str) -> list[str]:
    """Shell completion of the benchmark's own options (read from its usage line, so it cannot drift): the
    values of an option with choices right after it, else the option names."""
    usage = parser(prog="bench").format_usage()
    choices = {m[1]: m[2].split(",") for m in _USAGE_OPTION.finditer(usage) if m[2]}
    if words and words[-1] in choices:
        return [c for c in choices[words[-1]] if c.startswith(incomplete)]
    names = dict.fromkeys(m[1] for m in _USAGE_OPTION.finditer(usage))
    return [n for n in names if n.startswith(incomplete or "--") and n not in words]
