"""Rendering for ``explain``: rich tables for people, a versioned JSON object for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ncclcheck.explain.core import Explanation, Model, SizeRow, format_factors
from ncclcheck.transfer import human_bytes, human_seconds

SCHEMA_VERSION = 1


def explanation_json(e: Explanation) -> dict[str, Any]:
    """One element count's result."""
    return {
        "numel": e.numel,
        "numel_out": e.numel_out,
        "op": e.op,
        "factorization": list(e.factors),
        "facts": list(e.facts),
        "candidates": [
            {"kind": c.kind, "description": c.description, "numel": c.numel, "exact": c.exact, "delta": c.delta}
            for c in e.candidates
        ],
        "advice": list(e.advice),
        "dtype_assumed": e.dtype,
        "transfer_seconds": {name: t for name, t in e.transfer},
    }


def explain_json(model: Model, explanations: Sequence[Explanation], sizes: Sequence[SizeRow]) -> dict[str, Any]:
    """The whole ``--json`` object."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": asdict(model),
        "explanations": [explanation_json(e) for e in explanations],
        "sizes": [
            {"description": r.description, "numel": r.numel, "bytes": r.bytes_by_dtype,
             "allreduce_seconds": dict(r.allreduce), "allgather_seconds": dict(r.allgather)}
            for r in sizes
        ],
    }


def _verdict(c) -> Text:
    if c.exact:
        return Text("match", style="bold green")
    sign = "+" if c.delta > 0 else ""
    return Text(f"not a match (off by {sign}{c.delta:,}, {c.delta_pct:+.3g}%)", style="yellow")


def explanation_view(e: Explanation) -> RenderableType:
    """Factorisation, facts, candidates, timing and advice for one count."""
    head = f"NumelIn = {e.numel:,}" + (f", NumelOut = {e.numel_out:,}" if e.numel_out is not None else "")
    head += f" ({e.op})" if e.op else ""
    parts: list[RenderableType] = [Text(head, style="bold"), Text(f"factors: {format_factors(e.factors)}")]
    parts += [Text(f"  - {f}") for f in e.facts[1:]]
    if e.candidates:
        t = Table(title="candidates", title_justify="left")
        t.add_column("kind")
        t.add_column("tensor", overflow="fold")
        t.add_column("elements", justify="right")
        t.add_column("verdict")
        for c in e.candidates:
            t.add_row(c.kind, c.description, f"{c.numel:,}", _verdict(c))
        parts.append(t)
    if not e.matches:
        parts.append(Text("No exact match.", style="bold yellow"))
    times = "; ".join(f"{name} {human_seconds(s)}" for name, s in e.transfer)
    parts.append(Text(f"one {e.op or 'ALLREDUCE'} of it ({e.dtype} assumed): {times}"))
    parts += [Text(f"advice: {a}") for a in e.advice]
    return Group(*parts)


def sizes_view(rows: Sequence[SizeRow]) -> RenderableType:
    """The table of common tensors, their bytes and collective times."""
    t = Table(title="what the common tensors weigh (time for one collective, bus bandwidth per fabric)",
              title_justify="left")
    t.add_column("tensor", overflow="fold")
    t.add_column("elements", justify="right")
    dtypes = list(rows[0].bytes_by_dtype) if rows else []
    for d in dtypes:
        t.add_column(d, justify="right")
    fabrics = [name for name, _ in rows[0].allreduce] if rows else []
    for name in fabrics:
        t.add_column(f"all_reduce / all_gather, {name}", justify="right", overflow="fold")
    for r in rows:
        t.add_row(r.description, f"{r.numel:,}", *(human_bytes(r.bytes_by_dtype[d]) for d in dtypes),
                  *(f"{human_seconds(a)} / {human_seconds(g)}" for (_, a), (_, g) in zip(r.allreduce, r.allgather,
                                                                                      strict=True)))
    return t
