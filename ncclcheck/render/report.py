"""The human report of ``analyze-log``: verdict first, then the ranks, findings and next steps."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Analysis, VerdictKind

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _n(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def verdict_panel(a: Analysis) -> Panel:
    """The one-paragraph answer."""
    v = a.verdict
    ok = v.kind is VerdictKind.NO_FAILURE
    body = Text(v.summary)
    if v.culprit_ranks:
        body.append("\nculprit rank(s): ", style="bold")
        body.append(", ".join(map(str, v.culprit_ranks)))
    if v.waiting_ranks:
        body.append("\nwaiting rank(s): ", style="bold")
        body.append(", ".join(map(str, v.waiting_ranks)))
    return Panel(body, title=f"verdict: {v.kind.value}", title_align="left",
                 border_style="green" if ok else "red")


def rank_table(a: Analysis) -> Table | None:
    """One row per rank seen: state, the collective, counters and first error."""
    if not a.rows:
        return None
    pg = a.verdict.pg.label() if a.verdict.pg else "process group"
    t = Table(title=f"ranks ({pg})", title_justify="left")
    t.add_column("rank", justify="right", no_wrap=True)
    t.add_column("state")
    t.add_column("SeqNum", justify="right", no_wrap=True)
    t.add_column("op", overflow="fold")
    t.add_column("NumelIn/Out", justify="right", overflow="fold")
    t.add_column("timeout/ran (s)", justify="right", overflow="fold")
    t.add_column("enq/done", justify="right", overflow="fold")
    t.add_column("first error", overflow="fold")
    for row in a.rows:
        r = row.record
        err = "" if row.first_error is None else f"{row.first_error.kind.value}: {row.first_error.message[:50]}"
        if r is None:
            t.add_row(str(row.rank), row.state, "", "", "", "", "", err)
            continue
        numel = f"{_n(r.numel_in)}/{_n(r.numel_out)}" if r.numel_in is not None or r.numel_out is not None else ""
        secs = "/".join("" if v is None else f"{v / 1000:g}" for v in (r.timeout_ms, r.ran_for_ms))
        counters = "" if r.last_enqueued is None else f"{r.last_enqueued}/{r.last_completed}"
        t.add_row(str(row.rank), row.state, _n(r.seq), r.op_type or "", numel, secs, counters, err)
    return t


def finding_lines(findings: Sequence[Finding], max_evidence: int | None = None) -> list[Text]:
    """One block per finding: severity, code, message, then its evidence and fix (shared by every report)."""
    out = []
    for f in findings:
        line = Text()
        line.append(f"{f.severity.value:<8}", style=_STYLE[f.severity])
        line.append(f"{f.code}: ", style="bold")
        line.append(f.message)
        if f.evidence:
            line.append("\n        evidence: " + ", ".join(map(str, f.evidence[:max_evidence])), style="dim")
        if f.fix:
            line.append("\n        fix: " + f.fix)
        out.append(line)
    return out


def report(a: Analysis, quiet: bool = False) -> RenderableType:
    """The full report, or only the verdict with ``quiet``."""
    parts: list[RenderableType] = [verdict_panel(a)]
    if quiet:
        return Group(*parts)
    table = rank_table(a)
    if table is not None:
        parts.append(table)
    if a.verdict.findings:
        parts.append(Text("findings", style="bold underline"))
        parts += finding_lines(a.verdict.findings, max_evidence=6)
    if a.verdict.next_steps:
        parts.append(Text("next steps", style="bold underline"))
        for i, step in enumerate(a.verdict.next_steps, 1):
            parts.append(Text(f"{i}. {step}"))
    return Group(*parts)
