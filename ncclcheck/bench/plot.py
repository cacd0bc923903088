"""The busbw curve of a sweep, as a PNG (written here with zlib and struct: no plotting library) or as SVG.

Both drawings share one layout: message size on a log-2 x axis, bandwidth on a linear y axis from 0.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ncclcheck.bench import fmt
from ncclcheck.bench.metrics import SweepPoint

# 5x7 bitmap glyphs, one byte per row, bit 4 = leftmost pixel.
_GLYPHS = {
    "0": "0E1113151911 0E", "1": "040C04040404 0E", "2": "0E1101020408 1F", "3": "1F0204020111 0E",
    "4": "02060A121F02 02", "5": "1F101E010111 0E", "6": "0608101E1111 0E", "7": "1F0102040808 08",
    "8": "0E11110E1111 0E", "9": "0E11110F0102 0C",
    "A": "0E11111F1111 11", "B": "1E11111E1111 1E", "C": "0E1110101011 0E", "D": "1C1211111112 1C",
    "E": "1F10101E1010 1F", "F": "1F10101E1010 10", "G": "0E1110171111 0F", "H": "1111111F1111 11",
    "I": "0E0404040404 0E", "J": "070202020212 0C", "K": "111214181412 11", "L": "101010101010 1F",
    "M": "111B15151111 11", "N": "111119151311 11", "O": "0E1111111111 0E", "P": "1E11111E1010 10",
    "Q": "0E1111111512 0D", "R": "1E11111E1412 11", "S": "0F10100E0101 1E", "T": "1F0404040404 04",
    "U": "111111111111 0E", "V": "11111111110A 04", "W": "111111151515 0A", "X": "11110A040A11 11",
    "Y": "1111110A0404 04", "Z": "1F0102040810 1F",
    "a": "00000E010F11 0F", "b": "101016191111 1E", "c": "00000E101011 0E", "d": "01010D131111 0F",
    "e": "00000E111F10 0E", "f": "0609081C0808 08", "g": "00000F110F01 0E", "h": "101016191111 11",
    "i": "04000C040404 0E", "j": "020006020212 0C", "k": "101012141814 12", "l": "0C0404040404 0E",
    "m": "00001A151511 11", "n": "000016191111 11", "o": "00000E111111 0E", "p": "00001E111E10 10",
    "q": "00000D130F01 01", "r": "000016191010 10", "s": "00000E100E01 1E", "t": "08081C080809 06",
    "u": "000011111113 0D", "v": "00001111110A 04", "w": "000011111515 0A", "x": "0000110A040A 11",
    "y": "000011110F01 0E", "z": "00001F020408 1F",
    " ": "000000000000 00", ".": "00000000000C 0C", ",": "000000000C04 08", "/": "000102040810 00",
    "(": "020408080804 02", ")": "080402020204 08", "-": "0000001F0000 00", "_": "000000000000 1F",
    ":": "000C0C000C0C 00", "%": "181902040813 03", "=": "00001F001F00 00", "+": "0004041F0404 00",
    "µ": "000011111313 1D", "×": "0000110A040A 11",
}
_FONT = {c: [int(h.replace(" ", "")[i:i + 2], 16) for i in range(0, 14, 2)] for c, h in _GLYPHS.items()}
SCALE = 2  # pixels per font pixel
ADVANCE = 6 * SCALE


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


class _Canvas:
    """An RGB raster with the few drawing operations the chart needs."""

    def __init__(self, width: int, height: int) -> None:
        self.w, self.h = width, height
        self.px = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x: int, y: int, rgb: tuple[int, int, int]) -> None:
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(rgb)

    def rect(self, x0: int, y0: int, x1: int, y1: int, rgb: tuple[int, int, int]) -> None:
        for yy in range(max(0, y0), min(self.h, y1 + 1)):
            for xx in range(max(0, x0), min(self.w, x1 + 1)):
                self.dot(xx, yy, rgb)

    def line(self, x0: float, y0: float, x1: float, y1: float, rgb: tuple[int, int, int], thick: int = 1) -> None:
        n = max(1, int(max(abs(x1 - x0), abs(y1 - y0))))
        r = thick // 2
        for i in range(n + 1):
            cx, cy = round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n)
            self.rect(cx - r, cy - r, cx + r, cy + r, rgb)

    def text(self, x: int, y: int, s: str, rgb: tuple[int, int, int] = (0, 0, 0)) -> None:
        for k, ch in enumerate(s):
            rows = _FONT.get(ch, _FONT[" "])
            for ry, bits in enumerate(rows):
                for rx in range(5):
                    if bits & (16 >> rx):
                        gx, gy = x + k * ADVANCE + rx * SCALE, y + ry * SCALE
                        self.rect(gx, gy, gx + SCALE - 1, gy + SCALE - 1, rgb)

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(self.px[r * self.w * 3:(r + 1) * self.w * 3]) for r in range(self.h))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def text_width(s: str) -> int:
    return len(s) * ADVANCE


GRID, AXIS, CURVE, REF = (225, 225, 225), (60, 60, 60), (31, 119, 180), (230, 110, 0)


def busbw_png(points: Sequence[SweepPoint], env: dict[str, Any], reference: Reference | None = None) -> bytes:
    """The curve as PNG bytes; with ``reference``, a second curve and a legend."""
    lay = layout(points, env, reference)
    c = _Canvas(lay.width, lay.height)
    for ty, label in lay.yticks:
        c.line(lay.left, ty, lay.right, ty, GRID)
        c.text(lay.left - 10 - text_width(label), round(ty) - 7, label, AXIS)
    for tx, label in lay.xticks:
        c.line(tx, lay.bottom, tx, lay.bottom + 6, AXIS)
        c.text(round(tx - text_width(label) / 2), lay.bottom + 12, label, AXIS)
    c.line(lay.left, lay.top, lay.left, lay.bottom, AXIS, 2)
    c.line(lay.left, lay.bottom, lay.right, lay.bottom, AXIS, 2)
    curves = [(lay.xs, lay.ys, CURVE, 4)]
    if lay.ref_xs:
        curves.insert(0, (lay.ref_xs, lay.ref_ys, REF, 6))
    for xs, ys, rgb, r in curves:
        for (x0, y0), (x1, y1) in pairwise(zip(xs, ys, strict=True)):
            c.line(x0, y0, x1, y1, rgb, 3)
        for px, py in zip(xs, ys, strict=True):
            c.rect(round(px) - r, round(py) - r, round(px) + r, round(py) + r, rgb)
            if r > 4:  # hollow markers for the reference, so both curves show where they overlap
                c.rect(round(px) - r + 2, round(py) - r + 2, round(px) + r - 2, round(py) + r - 2, (255, 255, 255))
    if lay.ref_xs:
        lx = lay.left + 24  # top left: bandwidth curves rise to the right, so this corner stays empty
        for i, (label, rgb) in enumerate(zip(lay.labels, (CURVE, REF), strict=True)):
            ly = lay.top + 16 + 22 * i
            c.rect(lx, ly + 4, lx + 24, ly + 8, rgb)
            c.text(lx + 32, ly, label, AXIS)
    c.text(lay.left, 16, lay.title[: (lay.width - lay.left) // ADVANCE])
    c.text(lay.left - 72, lay.top - 26, lay.ylabel, AXIS)
    c.text(round((lay.left + lay.right - text_width(lay.xlabel)) / 2), lay.height - 30, lay.xlabel, AXIS)
    return c.png()


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def busbw_svg(points: Sequence[SweepPoint], env: dict[str, Any]) -> str:
    """The same curve as an inline SVG element, each point with a tooltip."""
    lay = layout(points, env, None)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {lay.width} {lay.height}" role="img" '
           f'aria-label="{_esc(lay.title)}" font-family="sans-serif" font-size="14">']
    for ty, label in lay.yticks:
        out.append(f'<line x1="{lay.left}" y1="{ty:.1f}" x2="{lay.right}" y2="{ty:.1f}" stroke="#e1e1e1"/>'
                   f'<text x="{lay.left - 10}" y="{ty + 5:.1f}" text-anchor="end">{label}</text>')
    for tx, label in lay.xticks:
        out.append(f'<line x1="{tx:.1f}" y1="{lay.bottom}" x2="{tx:.1f}" y2="{lay.bottom + 6}" stroke="#3c3c3c"/>'
                   f'<text x="{tx:.1f}" y="{lay.bottom + 24}" text-anchor="middle">{_esc(label)}</text>')
    out.append(f'<path d="M{lay.left} {lay.top}V{lay.bottom}H{lay.right}" fill="none" stroke="#3c3c3c" '
               'stroke-width="2"/>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f} {y:.1f}" for i, (x, y) in enumerate(zip(lay.xs, lay.ys, strict=True)))
    out.append(f'<path d="{path}" fill="none" stroke="#1f77b4" stroke-width="3"/>')
    for p, x, y in zip(points, lay.xs, lay.ys, strict=True):
        tip = f"{fmt.size(p.size)}: {fmt.duration(p.time_s)}, algbw {fmt.gbps(p.algbw)}, busbw {fmt.gbps(p.busbw)} GB/s"
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#1f77b4"><title>{_esc(tip)}</title></circle>')
    out.append(f'<text x="{lay.left}" y="30" font-size="16" font-weight="bold">{_esc(lay.title)}</text>'
               f'<text x="{lay.left - 70}" y="{lay.top - 14}">{_esc(lay.ylabel)}</text>'
               f'<text x="{(lay.left + lay.right) / 2:.0f}" y="{lay.height - 18}" text-anchor="middle">'
               f'{_esc(lay.xlabel)}</text></svg>')
    return "\n".join(out)
