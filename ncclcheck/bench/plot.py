"""The busbw curve of a sweep as SVG: text any browser draws and a test can read, no plotting library.

Message size on a log-2 x axis, bandwidth on a linear y axis from 0; optionally a reference curve (nccl-tests').
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ncclcheck.bench import fmt
from ncclcheck.bench.metrics import SweepPoint


@dataclass(frozen=True)
class Layout:
    """Where everything goes, in pixels from the top-left corner."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    ymax: float
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    yticks: tuple[tuple[float, str], ...]
    xticks: tuple[tuple[float, str], ...]
    title: str
    ylabel: str
    xlabel: str
    ref_xs: tuple[float, ...] = ()
    ref_ys: tuple[float, ...] = ()
    labels: tuple[str, str] = ("ncclcheck.bench", "reference")


def _nice_step(top: float) -> tuple[float, int]:
    """A round tick step (1, 2, 2.5 or 5 x 10^e) giving about five ticks up to ``top``, and its decimals."""
    e = math.floor(math.log10(top / 5))
    m = next(m for m in (1, 2, 2.5, 5, 10) if m * 10**e >= top / 5)
    if m == 10:
        m, e = 1, e + 1
    return m * 10**e, max(0, -e) + (1 if m == 2.5 else 0)


Reference = tuple[str, Sequence[tuple[int, float]]]  # a label and (size, busbw) pairs, e.g. nccl-tests'


def layout(points: Sequence[SweepPoint], env: dict[str, Any], reference: Reference | None = None,
           width: int = 960, height: int = 560) -> Layout:
    """Axes, ticks and the curves' pixel coordinates for these points (and a reference curve, if given)."""
    one_rank = points[0].busbw is None
    values = [p.algbw if one_rank else (p.busbw or 0.0) for p in points]
    ref = list(reference[1]) if reference else []
    top = max(max(values + [v for _, v in ref]), 1e-9) * 1.05
    step, digits = _nice_step(top)
    ymax = step * math.ceil(top / step)
    left, right, top, bottom = 96, width - 32, 64, height - 72
    sizes = [p.size for p in points] + [sz for sz, _ in ref]
    lo, hi = math.log2(min(sizes)), math.log2(max(sizes))
    span = (hi - lo) or 1.0

    def x(size: float) -> float:
        return left + (math.log2(size) - lo) / span * (right - left) if hi > lo else (left + right) / 2

    def y(v: float) -> float:
        return bottom - v / ymax * (bottom - top)

    yticks = tuple((y(i * step), f"{i * step:.{digits}f}") for i in range(round(ymax / step) + 1))
    every = max(1, math.ceil(len(points) / 9))
    xticks = tuple((x(p.size), fmt.size(p.size)) for p in points[::every])
    who = f"{env.get('world_size', '?')} ranks, {env.get('device', '')}, {env.get('backend', '')}"
    if env.get("nccl"):
        who += f" {env['nccl']}"
    return Layout(width, height, left, right, top, bottom, ymax, tuple(x(p.size) for p in points),
                  tuple(y(v) for v in values), yticks, xticks,
                  f"all_reduce {'algbw' if one_rank else 'busbw'} by message size: {who}",
                  "algbw (GB/s)" if one_rank else "busbw (GB/s)", "message size per rank (bytes, log scale)",
                  tuple(x(sz) for sz, _ in ref), tuple(y(v) for _, v in ref),
                  ("ncclcheck.bench", reference[0] if reference else ""))


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _path(xs: Sequence[float], ys: Sequence[float]) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{x:.1f} {y:.1f}" for i, (x, y) in enumerate(zip(xs, ys, strict=True)))


CURVE, REF = "#1f77b4", "#e66e00"


def busbw_svg(points: Sequence[SweepPoint], env: dict[str, Any], reference: Reference | None = None,
              standalone: bool = False) -> str:
    """The curve as an SVG element, each point with a tooltip; with ``reference``, a second curve (hollow markers)
    and a legend; ``standalone`` adds the XML declaration, for a file of its own."""
    lay = layout(points, env, reference)
    out = ['<?xml version="1.0" encoding="UTF-8"?>'] if standalone else []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {lay.width} {lay.height}" width="{lay.width}" '
               f'height="{lay.height}" role="img" aria-label="{_esc(lay.title)}" font-family="sans-serif" '
               'font-size="14">')
    out.append(f'<rect width="{lay.width}" height="{lay.height}" fill="#fff"/>')
    for ty, label in lay.yticks:
        out.append(f'<line x1="{lay.left}" y1="{ty:.1f}" x2="{lay.right}" y2="{ty:.1f}" stroke="#e1e1e1"/>'
                   f'<text x="{lay.left - 10}" y="{ty + 5:.1f}" text-anchor="end">{label}</text>')
    for tx, label in lay.xticks:
        out.append(f'<line x1="{tx:.1f}" y1="{lay.bottom}" x2="{tx:.1f}" y2="{lay.bottom + 6}" stroke="#3c3c3c"/>'
                   f'<text x="{tx:.1f}" y="{lay.bottom + 24}" text-anchor="middle">{_esc(label)}</text>')
    out.append(f'<path d="M{lay.left} {lay.top}V{lay.bottom}H{lay.right}" fill="none" stroke="#3c3c3c" '
               'stroke-width="2"/>')
    if reference:
        out.append(f'<path class="reference" d="{_path(lay.ref_xs, lay.ref_ys)}" fill="none" stroke="{REF}" '
                   'stroke-width="3"/>')
        for (size, value), x, y in zip(reference[1], lay.ref_xs, lay.ref_ys, strict=True):
            tip = f"{reference[0]}, {fmt.size(size)}: busbw {fmt.gbps(value)} GB/s"
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="#fff" stroke="{REF}" stroke-width="2">'
                       f'<title>{_esc(tip)}</title></circle>')
    out.append(f'<path class="curve" d="{_path(lay.xs, lay.ys)}" fill="none" stroke="{CURVE}" stroke-width="3"/>')
    for p, x, y in zip(points, lay.xs, lay.ys, strict=True):
        tip = (f"{fmt.size(p.size)}: {fmt.duration(p.time_s)}, algbw {fmt.gbps(p.algbw)}, busbw {fmt.gbps(p.busbw)} "
               f"GB/s, {p.timing}")
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{CURVE}"><title>{_esc(tip)}</title></circle>')
    if reference:  # top left: bandwidth curves rise to the right, so this corner stays empty
        for i, (label, colour) in enumerate(zip(lay.labels, (CURVE, REF), strict=True)):
            y = lay.top + 16 + 22 * i
            out.append(f'<rect x="{lay.left + 24}" y="{y}" width="24" height="4" fill="{colour}"/>'
                       f'<text x="{lay.left + 56}" y="{y + 6}">{_esc(label)}</text>')
    out.append(f'<text x="{lay.left}" y="30" font-size="16" font-weight="bold">{_esc(lay.title)}</text>'
               f'<text x="{lay.left - 70}" y="{lay.top - 14}">{_esc(lay.ylabel)}</text>'
               f'<text x="{(lay.left + lay.right) / 2:.0f}" y="{lay.height - 18}" text-anchor="middle">'
               f'{_esc(lay.xlabel)}</text></svg>')
    return "\n".join(out) + ("\n" if standalone else "")
