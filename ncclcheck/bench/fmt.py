"""How the benchmark writes sizes and durations for people: natural units, three significant digits."""

from __future__ import annotations


def size(n: float) -> str:
    """Binary units, as nccl-tests' K/M/G: ``8 B``, ``64 KiB``, ``2 GiB``, ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _three(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def duration(s: float) -> str:
    """``8.31 µs``, ``1.72 ms``, ``1.88 s``, ``5.20 min``, ``3.10 h``, ``12.0 days``."""
    for scale, unit, below in ((1e-6, "µs", 1e-3), (1e-3, "ms", 1.0), (1.0, "s", 120.0), (60.0, "min", 7200.0),
                               (3600.0, "h", 172800.0)):
        if s < below:
            return f"{_three(s / scale)} {unit}"
    return f"{_three(s / 86400)} days"


def gbps(x: float | None) -> str:
    """Bandwidth in GB/s (1e9 B/s), with enough digits at small sizes."""
    if x is None:
        return "n/a"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.01 else f"{x:.4f}"
