"""Every attempt apart: torchrun's restarts (``--max-restarts``) make one console hold several jobs.

Each attempt is a job of its own: its ranks start again, its records count from 1, its failure is its own. An
earlier attempt's out-of-memory error is never the culprit of a later attempt's hang, and a row never joins the
records of two attempts. Attempts are told from what the launcher says:

* torchrun's ``--log-dir``: ``<run id>/attempt_<N>/<rank>/stderr.log`` names the attempt;
* a console: the agent's "will restart worker group" (its INFO level) or "Restarting worker group"; at its default
  level only "failed (exitcode: …) local_rank: … of binary", which ends every attempt, the last one too. Such a
  line starts a new attempt only where workers print after it and the same agent (glog's PID) reports a failure
  again later: agents of other nodes in one console print their own line at the same moment.

Inputs that name no attempt (dumps, kernel logs, a console without restarts) belong to the last attempt.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from ncclcheck.evidence.tables import LineTable, rows_with
from ncclcheck.evidence.types import FileScan
from ncclcheck.job.world import WORLD_FACTS

_ATTEMPT_DIR = re.compile(r"^.*attempt_(?P<attempt>\d+)[/\\]")
_WORKER_DIR = re.compile(r"^(?P<run>.*attempt_\d+)[/\\]\d+[/\\][^/\\]+$")
RESTART_WORDS = ("will restart worker group", "Restarting worker group")


class AttemptError(ValueError):
    """``--attempt N`` names an attempt the inputs do not hold."""


def dir_attempt(file: str) -> int | None:
    """The N of a torchrun ``attempt_N/`` folder in a file's path."""
    m = _ATTEMPT_DIR.match(file)
    return int(m["attempt"]) if m else None


def _located(scan: FileScan) -> list[object]:
    return [v for f in fields(scan) if f.name != "problems"
            and isinstance(value := getattr(scan, f.name), (tuple, LineTable)) for v in value if hasattr(v, "loc")]


def _worker_lines(scan: FileScan) -> list[int]:
    """Lines a worker printed (they carry its rank), in order."""
    out = []
    for v in _located(scan):
        who = getattr(v, "who", None)
        if who is not None and (who.rank is not None or who.local_rank is not None):  # a local tag is a worker too
            out.append(v.loc.line)  # type: ignore[attr-defined]
    return sorted(out)


def console_starts(scan: FileScan) -> list[int]:
    """The first line of each attempt after the first in one console; empty when it holds one attempt."""
    said = sorted(c.loc.line for c in scan.clues if c.kind == "launcher" and any(w in c.text for w in RESTART_WORDS))
    failed: list[tuple[str, int]] = []
    for f in rows_with(scan.facts, "key", "agent_failed".__eq__):  # every input's: its rows (evidence/tables.py)
        if f.key == "agent_failed":
            agent, _, at = f.value.rpartition("@")
            failed.append((agent, int(at)))
    if not said and len(failed) < 2:
        return []  # one attempt: nothing to split (the common case, and the cheap one)
    failed.sort(key=lambda x: x[1])
    worker = _worker_lines(scan)
    ends = list(said)
    for i, (agent, line) in enumerate(failed):
        later = [ln for a, ln in failed[i + 1:] if a == agent]
        if later and bisect.bisect_right(worker, line) < bisect.bisect_left(worker, later[0]):
            ends.append(line)
    starts: list[int] = []
    for end in sorted(ends):
        i = bisect.bisect_right(worker, end)
        if i < len(worker) and worker[i] not in starts:
            starts.append(worker[i])
    return starts


def within(scan: FileScan, lo: int, hi: int | None) -> FileScan:
    """``scan`` with only the evidence of lines ``lo`` up to (not including) ``hi``."""
    changes: dict[str, Any] = {}  # FileScan's tuple fields, each of its own item type
    for f in fields(scan):
        value = getattr(scan, f.name)
        if isinstance(value, (tuple, LineTable)) and value and hasattr(value[0], "loc") and f.name != "problems":
            changes[f.name] = tuple(v for v in value if v.loc.line >= lo and (hi is None or v.loc.line < hi))
    # A statement of the world holds for every attempt of a job of fixed size; the parser keeps each one once per
    # rank, so a later attempt's own echo of it is not there to keep.
    kept = changes.get("facts", ())
    changes["facts"] = (*kept, *(f for f in scan.facts if f.key in WORLD_FACTS and f not in kept))
    return replace(scan, **changes)


def global_ranks(scans: Sequence[FileScan]) -> list[FileScan]:
    """torchrun's ``--log-dir`` names a worker's folder by its *local* rank: ``attempt_0/1/`` of the second node of
    4-process nodes is global rank 5. Where the ``[rankN]:`` prefixes in the folders of one attempt name global ranks
    that are their folders' numbers plus one offset (a node's ranks are consecutive), every folder of it is moved by
    that offset, those whose files carry no prefix (a quiet rank's ``stdout.log``) too."""
    offsets: dict[str, set[int]] = {}
    for s in scans:
        if s.path_rank is not None and (m := _WORKER_DIR.match(s.file)):
            found = offsets.setdefault(m["run"], set())
            found.update(w.global_rank - s.path_rank for v in _located(s) if (w := getattr(v, "who", None)) is not None
                         and w.global_rank is not None)
    out = []
    for s in scans:
        m = _WORKER_DIR.match(s.file) if s.path_rank is not None else None
        shift = offsets.get(m["run"], set()) if m else set()
        if len(shift) == 1 and (by := next(iter(shift))) != 0:
            s = _moved(s, s.path_rank + by)  # type: ignore[operator]
        out.append(s)
    return out


def _moved(scan: FileScan, rank: int) -> FileScan:
    """``scan`` with its path's rank read as global rank ``rank``."""
    old = scan.path_rank
    changes: dict[str, Any] = {}
    for f in fields(scan):
        value = getattr(scan, f.name)
        if isinstance(value, (tuple, LineTable)) and value and hasattr(value[0], "who"):
            changes[f.name] = tuple(
                replace(v, who=replace(v.who, path_rank=rank)) if v.who.path_rank == old else v for v in value)
    seen = {r for r in scan.ranks_seen if r != old} | {rank}
    return replace(scan, path_rank=rank, ranks_seen=tuple(sorted(seen)), **changes)


def split(scans: Sequence[FileScan]) -> list[list[FileScan]]:
    """The inputs as attempts, in order; one attempt (all of them) when nothing says the job restarted."""
    by: dict[int, list[FileScan]] = {}
    loose: list[FileScan] = []
    for s in scans:
        n = dir_attempt(s.file)
        if n is not None:
            by.setdefault(n, []).append(s)
            continue
        starts = console_starts(s)
        if not starts:
            loose.append(s)
            continue
        bounds = [1, *starts, None]
        for k in range(len(bounds) - 1):
            by.setdefault(k, []).append(within(s, bounds[k], bounds[k + 1]))  # type: ignore[arg-type]
    if len(by) <= 1:
        return [list(scans)]
    out = [by.get(k, []) for k in range(max(by) + 1)]
    out[-1] += loose
    return out
