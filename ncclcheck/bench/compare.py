"""Set a sweep beside NVIDIA nccl-tests' ``all_reduce_perf`` output, size by size.

``ncclcheck bench-compare SWEEP.json ALL_REDUCE_PERF.txt [--plot FILE.svg]`` (the CLI reads the options, one help
system): SWEEP.json is what ``--sweep ... --output`` wrote; the text is all_reduce_perf's standard output (any
version: the last eight fields of a data row are out-of-place time, algbw, busbw, #wrong, then the same in place).
Our all_reduce is in place, so it is compared with the in-place columns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.bench import fmt
from ncclcheck.bench.metrics import SweepPoint
from ncclcheck.bench.report import Column, fitted


@dataclass(frozen=True)
class PerfRow:
    """One data row of all_reduce_perf (times in microseconds, bandwidths in GB/s)."""

    size: int
    count: int
    oop_time_us: float
    oop_busbw: float
    ip_time_us: float
    ip_busbw: float


def parse_all_reduce_perf(text: str) -> list[PerfRow]:
    """The data rows; comment lines (``#``) and anything else are skipped."""
    rows = []
    for line in text.splitlines():
        tok = line.split()
        if len(tok) < 10 or not (tok[0].isdigit() and tok[1].isdigit()):
            continue
        try:
            oop_t, _, oop_bus, _, ip_t, _, ip_bus, _ = tok[-8:]
            rows.append(PerfRow(int(tok[0]), int(tok[1]), float(oop_t), float(oop_bus), float(ip_t), float(ip_bus)))
        except ValueError:
            continue
    return rows


def points_from_json(doc: dict) -> list[SweepPoint]:
    """The points of a sweep's JSON result."""
    return [SweepPoint(p["size_bytes"], p["count"], p["time_us"] / 1e6, p["algbw_gbps"], p["busbw_gbps"],
                       p.get("timing") or ("graph" if p["cuda_graph"] else "host clock"), p["check"])
            for p in doc["sweep"]]  # sweeps before "timing" timed eager calls by a host clock


@dataclass(frozen=True)
class Match:
    """One size measured by both."""

    size: int
    time_s: float
    ref_time_s: float
    busbw: float
    ref_busbw: float
    timing: str

    @property
    def time_ratio(self) -> float:
        return self.time_s / self.ref_time_s

    @property
    def busbw_ratio(self) -> float:
        """Ours / theirs, from the times (same size, same rank count): nccl-tests prints busbw with two decimals only."""
        return self.ref_time_s / self.time_s


def match(points: Sequence[SweepPoint], rows: Sequence[PerfRow]) -> list[Match]:
    """Sizes present in both, against the in-place columns."""
    ref = {r.size: r for r in rows if r.ip_time_us > 0}
    return [Match(p.size, p.time_s, ref[p.size].ip_time_us / 1e6, p.busbw or 0.0, ref[p.size].ip_busbw, p.timing)
            for p in points if p.size in ref and p.time_s > 0]


def table(matches: Sequence[Match], width: int):
    """ncclcheck.bench beside nccl-tests, fitted to the terminal."""
    cols = [Column("size"), Column("time", keep=2), Column("nccl-tests time", keep=3), Column("time ratio"),
            Column("busbw GB/s"), Column("nccl-tests busbw", keep=4), Column("busbw ratio"), Column("timed", keep=1)]
    rows = [[fmt.size(m.size), fmt.duration(m.time_s), fmt.duration(m.ref_time_s), f"{m.time_ratio:.2f}x",
             fmt.gbps(m.busbw), fmt.gbps(m.ref_busbw), f"{m.busbw_ratio * 100:.1f}%", m.timing]
            for m in matches]
    return fitted("ncclcheck.bench against nccl-tests all_reduce_perf (in place), per size", cols, rows, width)


@dataclass(frozen=True)
class Compared:
    """Both inputs read and matched: the sizes in common, and the sweep's points and environment for the plot."""

    matches: list[Match]
    points: list[SweepPoint]
    environment: dict
    rows: list[PerfRow]

    def plot(self) -> str:
        """Both busbw curves as one standalone SVG."""
        from ncclcheck.bench.plot import busbw_svg

        return busbw_svg(self.points, self.environment,
                         ("nccl-tests all_reduce_perf", [(r.size, r.ip_busbw) for r in self.rows]), standalone=True)


class CompareError(ValueError):
    """An input that cannot be read, or no size in common: the one line the CLI prints."""


def compare_files(sweep: str, nccl_tests: str) -> Compared:
    """Read a sweep's JSON and all_reduce_perf's output and match them size by size."""
    try:
        with open(sweep, encoding="utf-8") as f:
            doc = json.load(f)
        with open(nccl_tests, encoding="utf-8", errors="replace") as f:
            rows = parse_all_reduce_perf(f.read())
        points = points_from_json(doc)
    except OSError as exc:
        raise CompareError(f"cannot read {exc.filename}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CompareError(f"{sweep} is not a sweep's JSON result (--sweep ... --output): {exc}") from None
    matches = match(points, rows)
    if not matches:
        raise CompareError(f"no size in common between {sweep} and {nccl_tests}")
    return Compared(matches, points, doc.get("environment", {}), rows)
