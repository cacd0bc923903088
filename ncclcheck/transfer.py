"""How long a collective of a given size takes on common fabrics.

Bus factors are nccl-tests' (doc/PERFORMANCE.md): the bytes each rank must move
per byte of the collective's "size", 2(n-1)/n for all_reduce, (n-1)/n for
all_gather / reduce_scatter / all_to_all, 1 for broadcast / reduce.  Bandwidths
are effective large-message bus bandwidths, not line rates.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DTYPE = "float32"  # assumed for sizes and times when nothing says: a log never prints the dtype
DTYPE_BYTES = {
    "float64": 8, "fp64": 8, "int64": 8,
    "float32": 4, "fp32": 4, "float": 4, "int32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float8": 1, "fp8": 1, "int8": 1, "uint8": 1,
}


@dataclass(frozen=True)
class Fabric:
    """An interconnect and the bus bandwidth NCCL reaches on it for large messages."""

    name: str
    busbw: float  # bytes per second


FABRICS = (
    Fabric("NVLink 4 (H100/H200, ring)", 360e9),
    Fabric("InfiniBand NDR 400 Gb/s, 1 NIC", 46e9),
    Fabric("100 GbE (TCP)", 11e9),
    Fabric("10 GbE (TCP)", 1.1e9),
)

_TWO = {"ALLREDUCE", "_ALLREDUCE_SPARSE", "_ALLREDUCE_COALESCED", "COALESCED"}
_GATHERISH = {
    "ALLGATHER", "_ALLGATHER_BASE", "ALLGATHER_COALESCED", "ALLGATHER_INTO_TENSOR_COALESCED",
    "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE", "REDUCESCATTER_TENSOR_COALESCED",
    "ALLTOALL", "ALLTOALL_BASE", "GATHER", "SCATTER",
}
# Ops whose NumelOut / NumelIn (or its inverse) is the group size.
GATHER_SCATTER_OPS = {"_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "ALLGATHER", "REDUCE_SCATTER", "COALESCED"}
# Ops whose every rank must pass the same element count.
FIXED_SIZE_OPS = {"ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST", "REDUCE", "BARRIER"}


def bus_factor(op: str | None, world: int | None) -> float:
    """nccl-tests' bus factor; with the world size unknown, its upper bound."""
    op = (op or "ALLREDUCE").upper()
    if op in _TWO:
        return 2.0 * (world - 1) / world if world else 2.0
    if op in _GATHERISH:
        return (world - 1) / world if world else 1.0
    return 1.0


def collective_bytes(op: str | None, numel_in: int | None, numel_out: int | None, itemsize: int) -> int | None:
    """The "size" S of nccl-tests for this collective: the larger of the per-rank buffers."""
    counts = [c for c in (numel_in, numel_out) if c is not None]
    return max(counts) * itemsize if counts else None


def transfer_seconds(nbytes: int, op: str | None, world: int | None, fabric: Fabric) -> float:
    """Seconds to move ``nbytes`` with this op's bus factor at the fabric's bus bandwidth."""
    return nbytes * bus_factor(op, world) / fabric.busbw


def human_bytes(n: float) -> str:
    """Decimal units, as nccl-tests reports bandwidth (1 GB = 1e9 B)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


# (seconds in the unit, its symbol, the largest value shown in it)
_DURATION_UNITS = ((1e-6, "µs", 1e3), (1e-3, "ms", 1e3), (1.0, "s", 60), (60.0, "min", 60), (3600.0, "h", 48),
                   (86400.0, "days", 365))
YEAR = 365.25 * 86400


def human_seconds(s: float) -> str:
    """A duration as people say it: three significant digits in the largest unit it fills (``1.88 s``,
    ``297 ms``, ``10 min``, ``3.5 days``); beyond a thousand years, just that."""
    if s != s or s < 0:
        return "?"
    if s < 1e-6:
        return "<1 µs"
    for size, unit, limit in _DURATION_UNITS:
        shown = _sig3(s / size)
        if float(shown) < limit:  # 59.97 s shows as "60 s": say 1 min instead
            return f"{shown} {unit}"
    years = _sig3(s / YEAR)
    return ("1 year" if years == "1" else f"{years} years") if float(years) < 1000 else "over 1,000 years"


def _sig3(v: float) -> str:
    """Three significant digits, no exponent (``1.88``, ``29.7``, ``297``)."""
    digits = 0 if v >= 99.95 else 1 if v >= 9.995 else 2
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{v:.0f}"
