"""Several runs of one job in one file, which no launcher line separates: a restart appending to the same file.

A process times out at most once per process group and run (the watchdog then takes it down), so
two distinct timeouts of the same rank in the same group within one file mean the job ran again.
(torchrun's own restarts are attempts: :mod:`ncclcheck.job.attempts`.) Runs are separate incidents: the
last one is analysed, and the earlier ones are mentioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ncclcheck.evidence.tables import LineTable
from ncclcheck.evidence.types import FileScan
from ncclcheck.job.model import Record


@dataclass(frozen=True)
class Restart:
    """Where the last run of a file begins, and what the earlier runs' timeouts were."""

    file: str
    line: int
    earlier: tuple[Record, ...]


def _same_event(a: Record, b: Record) -> bool:
    return (a.seq, a.op_type, a.numel_in, a.ran_for_ms) == (b.seq, b.op_type, b.numel_in, b.ran_for_ms)


def _repeats(first: Record, later: Record) -> bool:
    """Without a group printed, only the same collective again at the same or an earlier number is a new run."""
    return ((first.op_type, first.numel_in) == (later.op_type, later.numel_in) and first.seq is not None
            and later.seq is not None and later.seq <= first.seq)


def by_file(records: Sequence[Record]) -> dict[str, list[Record]]:
    """Each file's records in line order: one pass, so that looking for restarts stays linear in files."""
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r.loc.file, []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r.loc.line)
    return out


def find_restart(scan: FileScan, mine: Sequence[Record]) -> Restart | None:
    """The first line of the last run in ``scan``, when its records (``mine``, in line order) show the job ran
    more than once."""
    seen: dict[tuple[int | None, str | None, str | None], Record] = {}
    boundary: Record | None = None
    prior: Record | None = None
    for r in mine:
        grouped = r.pg is not None and (r.pg.id is not None or r.pg.guid is not None)
        key = (r.who, r.pg.id, r.pg.guid) if grouped and r.pg is not None else (r.who, None, None)
        first = seen.get(key)
        if first is not None and not _same_event(first, r) and (key[1] is not None or key[2] is not None
                                                                 or _repeats(first, r)):
            boundary, prior = r, first
        seen[key] = r
    if boundary is None:
        return None
    before = [r for r in mine if r.loc.line < boundary.loc.line]
    last_before = max(loc.line for r in before for loc in (r.locs or (r.loc,)) if loc.line < boundary.loc.line)
    starts = [g.loc.line for g in scan.group_inits if last_before < g.loc.line < boundary.loc.line]
    starts += [f.loc.line for f in scan.facts if f.key == "nccl_version" and last_before < f.loc.line < boundary.loc.line]
    said = [c.loc.line for c in scan.clues if c.kind == "launcher" and "restart" in c.text
            and last_before < c.loc.line < boundary.loc.line]
    # A process's watchdog times out once per run: two of its own timeout lines are two runs. Otherwise something
    # must say the job started again (set-up lines, the launcher's restart, a counter back near its start): two
    # records that disagree are more likely one restatement attributed to the wrong process. Keep them all.
    twice = prior is not None and "watchdog_timeout" in prior.evidence and "watchdog_timeout" in boundary.evidence
    if not (starts or said or twice or _renumbered(before, boundary)):
        return None
    line = min(starts) if starts else last_before + 1
    return Restart(scan.file, line, tuple(r for r in before))


def _renumbered(before: Sequence[Record], boundary: Record) -> bool:
    """A counter that started over: the later record's sequence number is far below the earlier ones (a new run
    counts from 1), not one or two behind (a different rank's, or a restatement of an earlier work)."""
    seqs = [r.seq for r in before if r.seq is not None and r.who == boundary.who]
    return boundary.seq is not None and bool(seqs) and boundary.seq * 2 < min(seqs)


def last_run(scan: FileScan, line: int) -> FileScan:
    """``scan`` without the evidence printed before ``line``."""
    changes: dict[str, Any] = {}
    for f in fields(scan):
        value = getattr(scan, f.name)
        if isinstance(value, (tuple, LineTable)) and value and hasattr(value[0], "loc") and f.name != "problems":
            changes[f.name] = tuple(v for v in value if v.loc.line >= line)
    return replace(scan, **changes)
