"""The human report of ``analyze-log``: verdict, chain, ranks folded by state, findings, next steps.

Ranks with the same state print as one row with their rank ranges, so a job of thousands of
ranks with one straggler reads in a few lines; ``--json`` keeps every rank.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.text import Text

from ncclcheck.console import Fit, Unbroken, fit_table, unbroken
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Analysis, EndKind, RankState, VerdictKind
from ncclcheck.ranks import compact, ranges_of
from ncclcheck.render.versions import versions_lines

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
MAX_ROWS = 12
MAX_CHAIN = 10


def _n(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def _or_unknown(v: int | None) -> str:
    """A counter the log did not print (a work read from its enqueued counter alone)."""
    return "not printed" if v is None else str(v)


def verdict_panel(a: Analysis) -> Panel:
    """The one-paragraph answer."""
    v = a.verdict
    ok = v.kind is VerdictKind.NO_FAILURE
    body = Text(v.summary)
    if v.cause is not None:
        body.append("\ncause: ", style="bold")
        body.append(f"{v.cause.cause.kind} ({v.cause.cause.title})")
    # The job's own line that says why (a layer's reason, not an error code, an exception's type or a Python line)
    # where no cause explains the failure and the summary does not quote it: the culprit's, or anyone's where no rank
    # is named (JSON: verdict.stated, whatever the cause).
    if v.stated is not None and v.cause is None and v.stated.tier <= 3 and v.stated.text not in v.summary and (
            not v.culprit_ranks or v.stated.rank in v.culprit_ranks):
        body.append("\nstated: ", style="bold")
        body.append(f"{v.stated.label} \"{v.stated.text}\" ({v.stated.loc})")
    roles = role_text(a)
    if v.culprit_ranks:  # one line with the other roles: a report of thousands of ranks stays on one screen
        body.append("\nculprit rank(s): ", style="bold")
        body.append(compact(v.culprit_ranks, a.job.world) + (f"; {roles}" if roles else ""))
    elif roles:
        body.append("\nranks: ", style="bold")
        body.append(roles)
    if v.action is not None:
        body.append("\naction: ", style="bold")
        body.append(v.action.headline())
    return Panel(Unbroken(body, boxed=True), title=f"verdict: {v.kind.value}", title_align="left",
                 border_style="green" if ok else "red")


def role_text(a: Analysis) -> str:
    """``waiting 0-2, 4-7; stopped 8; unknown 9-15``: every rank the culprits leave, by role (job/partition.py), as
    ranges; a stated world's ranks without input that were never listed join the unknown ones."""
    v, world = a.verdict, a.job.world
    unknown = [t for t in (compact(v.unknown_ranks, world) if v.unknown_ranks else "",
                           ranges_of(a.job.unlisted) if a.job.unlisted else "") if t]
    parts = [f"waiting {compact(v.waiting_ranks, world)}" if v.waiting_ranks else "",
             f"stopped {compact(v.stopped_ranks, world)}" if v.stopped_ranks else "",
             f"unknown {', '.join(unknown)}" if unknown else ""]
    return "; ".join(p for p in parts if p)


# culprit or not, how it ended, where it is stuck (group, number, op, counts), its group's counters
_StateKey = tuple[bool, str, tuple[object, ...] | None, tuple[int | None, int | None] | None]


def _state_key(s: RankState, culprits: set[int]) -> _StateKey:
    """Ranks in the same state share a row; sibling groups (same ID and description) share one too."""
    w = s.stuck
    where = None if w is None else (w.group.id, w.group.desc, w.seq, w.op, w.numel_in, w.numel_out)
    p = next((p for p in s.positions if w is not None and p.group == w.group), None)
    counters = None if p is None else (p.last_enqueued, p.last_completed)
    return (s.rank in culprits, s.ending.kind.value, where, counters)


def short_names(files: Sequence[str]) -> dict[str, str]:
    """Each input by the fewest trailing path parts that still tell it apart (``console.log``), never cut at a bare
    number: a rank's folder is named with the folder above it (``attempt_0/3/stderr.log``, not ``3/stderr.log``),
    which says whose file and which attempt it is."""
    parts = {f: f.replace("\\", "/").split("/") for f in files}
    out = {}
    for f, p in parts.items():
        for n in range(1, len(p) + 1):
            tail = p[-n:]
            if all(q[-n:] != tail for g, q in parts.items() if g != f):
                while n < len(p) and p[-n].isdigit():
                    n += 1
                out[f] = "/".join(p[-n:])
                break
        else:
            out[f] = f
    return out


def rank_table(a: Analysis) -> tuple[_FirstThatFits | None, int]:
    """Ranks folded by identical state, whole at any width; returns it and how many states did not fit."""
    job = a.job
    if not job.ranks:
        return None, 0
    culprits = set(a.verdict.culprit_ranks)
    names = short_names([s.file for s in a.scans])
    rows: dict[_StateKey, list[RankState]] = {}
    for s in job.ranks:
        rows.setdefault(_state_key(s, culprits), []).append(s)
    order = sorted(rows, key=lambda k: (not k[0], k[1] == EndKind.UNKNOWN.value, min(r.rank for r in rows[k])))
    cells = []
    for key in order[:MAX_ROWS]:
        states = rows[key]
        s = states[0]
        w = s.stuck
        state = s.ending.kind.value.replace("_", " ") + (", culprit" if key[0] else "")
        stuck = ""
        if w is not None:
            groups = {x.stuck.group for x in states if x.stuck is not None}
            what = f"{w.number} {w.op}" if w.op else f"{w.number} (an unnamed collective)"
            stuck = (f"{w.group.label()} {what}" if len(groups) == 1 else
                     f"PG {w.group.id}{f' ({w.group.desc})' if w.group.desc else ''} {what}, {len(groups)} groups")
        counters = "" if key[3] is None or key[3][0] is None else f"{key[3][0]}/{_or_unknown(key[3][1])}"
        loc = s.ending.loc or (w.loc if w is not None else None)
        evidence = "" if loc is None else f"{names.get(loc.file, loc.file)}:{loc.line}" if loc.line else loc.file
        cells.append([compact((r.rank for r in states), job.world), state, stuck, _n(w.numel_in if w else None),
                      counters, evidence])
    headers = ["ranks", "state", "stuck in", "NumelIn", "enq/done", "evidence"]
    title = "ranks, folded by state"
    full = fit_table(title, headers, cells)
    narrow = fit_table(title, headers[:-1], [c[:-1] for c in cells])  # evidence is also in the findings and JSON
    return _FirstThatFits(full, narrow), max(0, len(order) - MAX_ROWS)


class _FirstThatFits:
    """The full table where it fits, else without its evidence column, else the full rows stacked."""

    def __init__(self, full: Fit, narrow: Fit) -> None:
        self.full, self.narrow = full, narrow

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.full.width() <= options.max_width:
            yield self.full.table
        elif self.narrow.width() <= options.max_width:
            yield self.narrow.table
        else:
            yield self.full.stacked()


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


def world_line(a: Analysis) -> str:
    """The job's size and the line it comes from, or that nothing states it."""
    w = a.job.world_stated
    if w is None:
        return ("world: unknown: no line of these inputs states the job's size or names a global rank (torchrun's "
                "failure summary lists only the processes that failed)")
    return f"world: {w.words()}"


def report(a: Analysis, quiet: bool = False) -> RenderableType:
    """The full report, or only the verdict with ``quiet``."""
    parts: list[RenderableType] = [verdict_panel(a)]
    if quiet:
        return Group(*parts)
    if a.verdict.chain:
        parts.append(Text("who waits for whom", style="bold underline"))
        chain = list(a.verdict.chain)
        if a.verdict.culprit_ranks and a.verdict.waiting_ranks and chain[-1].endswith(" only waiting."):
            chain.pop()  # the verdict's box already lists them ("culprit rank(s): 5; waiting 0-4, 6-7")
        if len(chain) > MAX_CHAIN:
            chain = chain[: MAX_CHAIN - 1] + [f"... {len(chain) - MAX_CHAIN + 1} more lines in --json"]
        parts += [Text(f"  {line}") for line in chain]
    table, hidden = rank_table(a)
    if table is not None:
        parts.append(table)
        if hidden:
            parts.append(Text(f"... {hidden} more states in --json", style="dim"))
    parts.append(unbroken(Text(world_line(a))))
    parts += versions_lines(a.job.facts.versions)
    findings = [f for f in a.verdict.findings if f.code != a.verdict.kind.value.replace("_", "-")]
    if findings:
        parts.append(Text("findings", style="bold underline"))
        parts += [unbroken(line) for line in finding_lines(findings, max_evidence=6)]
    if a.verdict.next_steps:
        parts.append(Text("next steps", style="bold underline"))
        for i, step in enumerate(a.verdict.next_steps, 1):
            parts += step_lines(i, step)
    return Group(*parts)


def step_lines(i: int, step: str) -> list[Text | Unbroken]:
    """A numbered step; a command in it (``export ...``) goes on its own line, never wrapped, so it pastes whole."""
    cut = step.find("export ")
    if cut < 0:
        return [unbroken(f"{i}. {step}")]  # a `command` in it is kept on one line
    return [Text(f"{i}. {step[:cut].rstrip()}"),
            Text(f"   {step[cut:]}", no_wrap=True, overflow="ignore")]
