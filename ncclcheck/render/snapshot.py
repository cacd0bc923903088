"""Output of ``snapshot``: the job model's verdict, a rank table of its live positions, grouped stacks, dumps,
settings and lint; or JSON (the collected document, and analyze-log's verdict object with the positions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from ncclcheck.console import Fit, Unbroken, fit_table
from ncclcheck.evidence.frdump import Frame
from ncclcheck.findings import Severity
from ncclcheck.job.live import LivePosition
from ncclcheck.job.model import Analysis, VerdictKind
from ncclcheck.ranks import compact, rank_phrase
from ncclcheck.render.json_out import verdict_json
from ncclcheck.snapshot.archive import to_doc
from ncclcheck.snapshot.collect import Snapshot
from ncclcheck.snapshot.dumppipe import ADVICE, ADVICE_EXPORT

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _frame(f: Frame | None) -> dict[str, Any] | None:
    return None if f is None else {"name": f.name, "file": f.file, "line": f.line}


def live_json(a: Analysis) -> dict[str, Any]:
    """analyze-log's verdict object, with where each rank is and the stacks grouped (the job model's live state)."""
    return verdict_json(a.verdict) | {
        "positions": [{"rank": p.rank, "state": p.state, "collective": p.collective, "seq": p.seq, "pg": p.pg,
                       "where": _frame(p.where), "host_where": _frame(p.host_where), "native": p.native,
                       "gpu_util": p.gpu_util, "evidence": p.evidence} for p in a.job.live],
        "groups": [{"ranks": list(g.ranks), "state": g.state, "collective": g.collective, "pending": g.pending,
                    "threads": g.threads, "frames": [_frame(f) for f in g.frames]} for g in a.job.stack_groups],
    }


def snapshot_json(s: Snapshot, a: Analysis) -> dict[str, Any]:
    """Everything collected plus the verdict (the archive's snapshot.json holds the same)."""
    return to_doc(s) | {"verdict": live_json(a)}


def _who(ranks: Sequence[int]) -> str:
    return rank_phrase(ranks)


def _at(f: Frame | None) -> str:
    return "" if f is None else f"{f.file.rsplit('/', 1)[-1]}:{f.line}"


def _state(p: LivePosition) -> str:
    if p.state == "waiting":
        return f"waits in {p.collective}" + (f" #{p.seq}" if p.seq is not None else "")
    return {"host_code": "host code", "gpu_wait": "waits on the GPU", "unknown": "unknown"}.get(p.state, p.state)


def rank_table(s: Snapshot, a: Analysis) -> Fit:
    """One row per rank, whole: a ``file:line`` or a pid is never split across lines (narrow terminals stack rows)."""
    by_rank = {p.rank: p for p in a.job.live}
    rows = []
    for r in s.ranks:
        p = by_rank.get(r.proc.rank)
        state = _state(p) if p else "unknown"
        if r.stack_error:
            state += " (no stack)"
        rows.append((str(r.proc.rank), str(r.proc.pid), state, _at(p.where if p else None),
                     "" if r.gpu_util is None else str(r.gpu_util), str(len(r.threads)) if r.threads else "",
                     "yes" if r.dump else "no"))
    return fit_table("ranks on this node", ("rank", "pid", "state", "where", "GPU %", "threads", "dump"), rows)


def _frame_lines(frames: Sequence[Frame], s: Snapshot, indent: str = "    ") -> list[Text]:
    """One unwrapped line per frame; native frames that are bare addresses are left out, long C++ names cut."""
    out = []
    for f in frames:
        if f.name.startswith("0x"):
            continue
        name = f.name if len(f.name) <= 100 else f.name[:97] + "..."
        line = Text(f"{indent}{name}  ", style="bold" if f.file.endswith(".py") and "/torch/" not in f.file else "",
                    no_wrap=True, overflow="ignore")
        line.append(f"{f.file}:{f.line}" if f.line else f.file, style="dim")
        src = s.sources.get((f.file, f.line))
        if src:
            line.append(f"  {src}")
        out.append(line)
    return out


def stacks(s: Snapshot, a: Analysis, all_threads: bool) -> list[RenderableType]:
    out: list[RenderableType] = [Text("stacks (main thread, innermost frame first; identical stacks once)",
                                      style="bold underline")]
    by_rank = {r.proc.rank: r for r in s.ranks}
    for g in a.job.stack_groups:
        head = f"{_who(g.ranks)}: " + (f"in {g.collective}" if g.collective else
                                       f"the host thread is here; the dump holds {g.pending}, not completed"
                                       if g.pending else "waits on the GPU" if g.state == "gpu_wait" else "host code")
        head += f" ({g.threads} thread{'s' if g.threads != 1 else ''})"
        out.append(Text(head, style="bold"))
        out += _frame_lines(g.frames, s)
        if all_threads:
            for rank in g.ranks:
                for t in by_rank[rank].threads[1:]:
                    out.append(Text(f"  rank {rank}, thread {t.name}:", style="dim"))
                    out += _frame_lines(t.frames, s, "      ")
    return out


def dumps_section(s: Snapshot) -> list[RenderableType]:
    got = [r.proc.rank for r in s.ranks if r.dump]
    notes: dict[str, list[int]] = {}
    for r in s.ranks:
        if not r.dump and r.dump_note:
            notes.setdefault(r.dump_note, []).append(r.proc.rank)
    if not got and not notes:
        return []
    out: list[RenderableType] = [Text("flight-recorder dumps", style="bold underline")]
    if got:
        out.append(Text(f"collected from {_who(got)} through the dump pipes"))
    for note, ranks in notes.items():
        out.append(Text(f"{_who(ranks)}: {note}"))
    if notes and any(r.dump_note and "no dump pipe" in r.dump_note for r in s.ranks):
        out.append(Text(ADVICE, style="dim"))
        out.append(Text(ADVICE_EXPORT, no_wrap=True, overflow="ignore"))
    return out


def settings_section(s: Snapshot) -> list[RenderableType]:
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for r in s.ranks:
        key = tuple(sorted((k, v) for k, v in r.proc.env.items() if k.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_FR_",
                                                                                      "TORCH_DISTRIBUTED_"))))
        groups.setdefault(key, []).append(r.proc.rank)
    out: list[RenderableType] = [Text("settings in force (the ranks' environments)", style="bold underline")]
    for key, ranks in groups.items():
        text = " ".join(f"{k}={v}" for k, v in key) or "no NCCL_ / TORCH_NCCL_ / TORCH_FR_ variables set"
        out.append(Text(f"{_who(ranks)}: {text}"))
    for f, found_on in s.findings:
        line = Text()
        line.append(f"{f.severity.value:<8}", style=_STYLE[f.severity])
        line.append(f"{f.code}: ", style="bold")
        line.append(f"{f.message} ({_who(found_on)})")
        if f.fix:
            line.append("\n        fix: " + f.fix)
        out.append(line)
    return out


def report(s: Snapshot, a: Analysis, quiet: bool = False, all_threads: bool = False) -> RenderableType:
    """The verdict first, then the ranks, the stacks, dumps, settings and problems."""
    v = a.verdict
    ranks = [r.proc.rank for r in s.ranks]
    head = Text(f"snapshot of {s.job.label} on {s.host}: {_who(ranks)}"
                + (f" of {s.job.world_size}" if s.job.world_size else "") + f", taken in {s.seconds:.1f} s",
                style="dim")
    body = Text(v.summary)
    for label, rs in (("culprit", v.culprit_ranks), ("waiting", v.waiting_ranks), ("not seen here", v.unknown_ranks)):
        if rs:
            body.append(f"\n{label}: ", style="bold")
            body.append(compact(rs, a.job.world))
    panel = Panel(Unbroken(body, boxed=True), title=f"verdict: {v.kind.value}", title_align="left",
                  border_style="green" if v.kind is VerdictKind.NO_FAILURE else "red")
    if quiet:
        return Group(head, panel)
    chain: list[RenderableType] = [Text("who waits for whom", style="bold underline")] if v.chain else []
    chain += [Text(f"  {line}") for line in v.chain]
    parts: list[RenderableType] = [head, panel, *chain, rank_table(s, a), *stacks(s, a, all_threads),
                                   *dumps_section(s), *settings_section(s)]
    if s.problems:
        parts.append(Text("problems", style="bold underline"))
        parts += [Text(p) for p in s.problems]
    return Group(*parts)
