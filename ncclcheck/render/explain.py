"""Rendering for ``explain``: text that keeps every digit at any width, and a versioned JSON object for scripts.

Candidates print as stacked lines (a number never shares a narrow column); the size table prints as a table when
it fits the width whole and row by row otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from ncclcheck.console import Indented
from ncclcheck.explain.core import COINCIDENCE, MATCH, Candidate, Explanation, SizeRow
from ncclcheck.explain.counts import format_factors
from ncclcheck.explain.models import Model
from ncclcheck.explain.table import Table as ParamTable
from ncclcheck.schemas import EXPLAIN as SCHEMA_VERSION
from ncclcheck.transfer import human_bytes, human_seconds


def _candidate_json(c: Candidate) -> dict[str, Any]:
    return {"kind": c.kind, "kinds": list(c.kinds), "strategy": c.strategy, "description": c.description,
            "numel": c.numel, "numel_out": c.numel_out, "exact": c.exact, "verdict": c.verdict, "delta": c.delta,
            "tier": c.tier, "params": list(c.params)}


def explanation_json(e: Explanation) -> dict[str, Any]:
    """One element count's result."""
    return {
        "numel": e.numel,
        "numel_out": e.numel_out,
        "op": e.op,
        "op_family": e.family,
        "world_size": e.world,
        "strategy": e.strategy,
        "factorization": list(e.factors),
        "facts": list(e.facts),
        "candidates": [_candidate_json(c) for c in e.candidates],
        "ruled_out": list(e.ruled_out),
        "searched": e.searched,
        "coincidence_chance": e.chance,
        "advice": list(e.advice),
        "dtype_assumed": e.dtype,
        "dtype_source": e.dtype_from,
        "transfer_seconds": {name: t for name, t in e.transfer},
        "table_source": e.source,
        "table_notes": list(e.source_notes),
        "ready_order": {"observed": e.ready_observed, "how": e.ready_how},
    }


def explain_json(model: Model, explanations: Sequence[Explanation], sizes: Sequence[SizeRow],
                 gather_world: int | None, table: ParamTable) -> dict[str, Any]:
    """The whole ``--json`` object."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": asdict(model),
        "table": {"origin": table.origin, "source": table.source if table.params else None,
                  "notes": list(table.notes),
                  "ready_order": {"observed": table.ready_observed, "how": table.ready_how},
                  "parameters": len(table.params),
                  "numel": sum(p.numel for p in table.params), "buffers": len(table.buffers)},
        "explanations": [explanation_json(e) for e in explanations],
        "sizes": [
            {"description": r.description, "numel": r.numel, "bytes": dict(r.bytes_by_dtype),
             "allreduce_seconds": dict(r.allreduce), "allgather_seconds": dict(r.allgather)}
            for r in sizes
        ],
        "allgather_world_size": gather_world if sizes else None,
    }


def _verdict(c: Candidate) -> Text:
    if c.exact:
        return Text(c.verdict, style="bold green" if c.verdict == MATCH else "yellow")
    sign = "+" if c.delta > 0 else ""
    return Text(f"not a match (off by {sign}{c.delta:,}, {c.delta_pct:+.3g}%)", style="yellow")


def _candidate(i: int, c: Candidate) -> RenderableType:
    counts = f"NumelIn {c.numel:,}" + (f", NumelOut {c.numel_out:,}" if c.numel_out is not None else "")
    head = Text(f"{i}. ")
    head.append(f"{c.kind}: ", style="bold")
    head.append_text(_verdict(c))
    body = Indented(Text(f"{counts}\n{c.description}"), 3)
    return Indented(Group(head, body), 2)


def explanation_view(e: Explanation) -> RenderableType:
    """One count: what it is (the candidates, or why there are none), then the factorisation and facts behind
    them, the table they come from, the chance of a coincidence, timing and advice."""
    head = f"NumelIn = {e.numel:,}" + (f", NumelOut = {e.numel_out:,}" if e.numel_out is not None else "")
    head += f" ({e.op})" if e.op else ""
    parts: list[RenderableType] = [Text(head, style="bold")]
    if e.matches:
        parts.append(Text("exact matches, most structural first:", style="bold"))
        parts += [_candidate(i, c) for i, c in enumerate(e.matches, 1)]
    elif e.source_known:
        parts.append(Text("No exact match: no tensor of this model has this count.", style="bold yellow"))
    elif e.unbuilt:
        parts.append(Text(f"No exact match, and no tensor of the model was tested: it could not be built "
                          f"({e.unbuilt}).", style="bold yellow"))
    else:
        parts.append(Text("No exact match, and no tensor of the model was tested: its parameters are not known "
                          "(below).", style="bold yellow"))
    near = [c for c in e.candidates if not c.exact]
    if near:
        parts.append(Text("near misses (not matches):", style="bold"))
        parts += [_candidate(i, c) for i, c in enumerate(near, 1)]
    parts.append(Text(f"factors: {format_factors(e.factors)}"))
    parts += [Indented(Text(f"- {f}"), 2) for f in e.facts[1:]]
    parts.append(Text(f"parameter table: {e.source}"))
    parts += [Indented(Text(f"- inferred: {n}"), 2) for n in e.source_notes]
    if e.ready_observed:  # an inferred order is among the notes, with what it makes approximate
        parts.append(Indented(Text(f"- gradient-ready order {e.ready_how}"), 2))
    parts += [Text(f"ruled out: {r}") for r in e.ruled_out]
    flagged = sum(1 for c in e.matches if c.verdict == COINCIDENCE)
    if e.chance > 0:
        chance = f"an unrelated count of this size would equal one of them with probability about {e.chance:.2g}"
    else:
        chance = "none of them lies within a factor of 2 of this count, so no match here can be a coincidence"
    parts.append(Text(f"searched {e.searched:,} candidate sums; {chance}" +
                      (f"; {flagged} match(es) flagged as likely coincidence" if flagged else "")))
    times = "; ".join(f"{name} {human_seconds(s)}" for name, s in e.transfer)
    ranks = f" over {e.world} ranks" if e.world else ""
    how = {"config": "from the config's torch_dtype", "--dtype": "as given"}.get(e.dtype_from, "assumed")
    parts.append(Text(f"one {e.op or 'ALLREDUCE'} of it{ranks} ({e.dtype} {how}): {times}"))
    parts += [Text(f"advice: {a}") for a in e.advice]
    return Indented(Group(*parts), 0)  # no line ends in the spaces a wrap leaves


class _Fit:
    """A table when every number fits its column whole at this width, else the same cells row by row."""

    def __init__(self, table: Table, needed: int, rows: Sequence[Text]) -> None:
        self.table, self.needed, self.rows = table, needed, rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.needed <= options.max_width:
            yield self.table
        else:
            yield from self.rows


_DESCRIPTION_MIN = 16


def _needed(cells: Sequence[Sequence[str]], headers: Sequence[str]) -> int:
    """Width of the table with every numeric column unbroken (rows: description first); borders and padding
    are 3 cells per column and 1."""
    widths = [_DESCRIPTION_MIN]
    for k in range(1, len(headers)):
        words = max((len(w) for w in headers[k].split()), default=0)
        widths.append(max([words] + [len(row[k]) for row in cells]))
    return sum(widths) + 3 * len(widths) + 1


def sizes_view(rows: Sequence[SizeRow], gather_world: int, world_given: bool) -> RenderableType:
    """The table of common tensors, their bytes and collective times (one definition of all_gather, stated)."""
    assumed = "" if world_given else ", assumed: give --world-size"
    title = (f"what the common tensors weigh; times for one collective at each fabric's bus bandwidth. all_gather: "
             f"each of {gather_world} ranks contributes this tensor, {gather_world}× it is gathered{assumed}")
    dtypes = [d for d, _ in rows[0].bytes_by_dtype] if rows else []
    fabrics = [name for name, _ in rows[0].allreduce] if rows else []
    headers = ["tensor", "elements", *dtypes, *(f"{name}: all_reduce / all_gather" for name in fabrics)]
    stacked: list[Text] = [Text(title, style="italic")]
    cells = []
    for r in rows:
        b = dict(r.bytes_by_dtype)
        pairs = list(zip(r.allreduce, r.allgather, strict=True))
        cells.append([r.description, f"{r.numel:,}", *(human_bytes(b[d]) for d in dtypes),
                      *(f"{human_seconds(a)} / {human_seconds(g)}" for (_, a), (_, g) in pairs)])
        block = Text(f"{r.description}\n", style="bold")
        block.append(f"  {r.numel:,} elements; " + ", ".join(f"{d} {human_bytes(b[d])}" for d in dtypes))
        for (name, a), (_, g) in pairs:
            block.append(f"\n  {name}: all_reduce {human_seconds(a)}, all_gather {human_seconds(g)}")
        stacked.append(block)
    t = Table(title=title, title_justify="left")
    t.add_column(headers[0], overflow="fold", min_width=_DESCRIPTION_MIN)
    for k, h in enumerate(headers[1:], 1):
        t.add_column(h, justify="right", min_width=max(len(row[k]) for row in cells) if cells else None)
    for row in cells:
        t.add_row(*row)
    return _Fit(t, _needed(cells, headers), stacked)
