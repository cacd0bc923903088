"""A sweep as one self-contained HTML page: the curve (inline SVG), the table, the environment. No network."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ncclcheck.bench import fmt
from ncclcheck.bench.config import BenchConfig
from ncclcheck.bench.metrics import SweepPoint, below_threshold
from ncclcheck.bench.plot import busbw_svg

_STYLE = """body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}
table{border-collapse:collapse}th,td{padding:.25em .8em;text-align:right;border-bottom:1px solid #ddd}
th{background:#f4f4f4}td.l,th.l{text-align:left}.bad{color:#b00;font-weight:bold}.ok{color:#070}
svg{width:100%;height:auto}code{background:#f4f4f4;padding:0 .2em}"""


def sweep_page(cfg: BenchConfig, env: dict[str, Any], points: Sequence[SweepPoint]) -> str:
    """The HTML text."""
    e = html.escape
    rows = []
    for p in points:
        check = "" if p.correct is None else ("<td class=ok>ok</td>" if p.correct else "<td class=bad>WRONG</td>")
        rows.append(f"<tr><td>{e(fmt.size(p.size))}</td><td>{p.size:,}</td><td>{p.count:,}</td>"
                    f"<td>{p.time_s * 1e6:.2f}</td><td>{fmt.gbps(p.algbw)}</td><td>{fmt.gbps(p.busbw)}</td>"
                    f"<td class=l>{e(p.timing)}</td>{check}</tr>")
    verdict = ""
    if cfg.min_busbw is not None:
        low = below_threshold(points, cfg.min_busbw)
        last = points[-1]
        got = last.busbw if last.busbw is not None else last.algbw
        verdict = (f"<p class={'bad' if low else 'ok'}>{'FAIL' if low else 'PASS'}: busbw at "
                   f"{e(fmt.size(last.size))} is {fmt.gbps(got)} GB/s, {'below' if low else 'at or above'} "
                   f"--min-busbw {cfg.min_busbw:g} GB/s</p>")
    facts = ", ".join(f"{k} {e(str(v))}" for k, v in env.items() if v not in (None, ""))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ncclcheck all_reduce sweep</title>
<style>{_STYLE}</style></head><body>
<h1>all_reduce sweep</h1>
<p>{facts}. {cfg.iters} iterations per size after {cfg.warmup} warm-up; time is the mean over ranks of the time
per all_reduce; algbw = size / time, busbw = algbw &times; 2(n&minus;1)/n (GB/s = 10<sup>9</sup> B/s, as
nccl-tests).</p>
{verdict}
{busbw_svg(points, env)}
<table><thead><tr><th>size</th><th>bytes</th><th>count</th><th>time (&micro;s)</th><th>algbw (GB/s)</th>
<th>busbw (GB/s)</th><th class=l>timed</th>{'<th>check</th>' if cfg.check else ''}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
</body></html>
"""
