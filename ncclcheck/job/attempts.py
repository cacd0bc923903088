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

from ncclcheck.evidence.types import FileScan
from ncclcheck.job.world import WORLD_FACTS

_ATTEMPT_DIR = re.compile(r"^(.*)attempt_(\d+)[/\\]")
RESTART_WORDS = ("will restart worker group", "Restarting worker group")


class AttemptError(ValueError):
    """``--attempt N`` names an attempt the inputs do not hold."""


def dir_attempt(file: str) -> int | None:
    """The N of a torchrun ``attempt_N/`` folder in a file's path."""
    m = _ATTEMPT_DIR.match(file)
    return int(m[2]) if m else None


def _located(scan: FileScan) -> list[object]:
    return [v for f in fields(scan) if f.name != "problems" and isinstance(value := getattr(scan, f.name), tuple)
            for v in value if hasattr(v, "loc")]


def _worker_lines(scan: FileScan) -> list[int]:
    """Lines a worker printed (they carry its rank), in order."""
    out = []
    for v in _located(scan):
        who = getattr(v, "who", None)
        if who is not None and who.rank is not None:
            out.append(v.loc.line)  # type: ignore[attr-defined]
    return sorted(out)


def console_starts(scan: FileScan) -> list[int]:
    """The first line of each attempt after the first in one console; empty when it holds one attempt."""
    said = sorted(c.loc.line for c in scan.clues if c.kind == "launcher" and any(w in c.text for w in RESTART_WORDS))
    failed: list[tuple[str, int]] = []
    for f in scan.facts:
        if f.key == "agent_failed":
            agent, _, line = f.value.partition("@")
            failed.append((agent, int(line)))
    failed.sort(key=lambda x: x[1])
    worker = _worker_lines(scan)
    if not worker:
        return []
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
    changes = {}
    for f in fields(scan):
        value = getattr(scan, f.name)
        if isinstance(value, tuple) and value and hasattr(value[0], "loc") and f.name != "problems":
            changes[f.name] = tuple(v for v in value if v.loc.line >= lo and (hi is None or v.loc.line < hi))
    # A statement of the world holds for every attempt of a job of fixed size; the parser keeps each one once per
    # rank, so a later attempt's own echo of it is not there to keep.
    kept = changes.get("facts", ())
    changes["facts"] = (*kept, *(f for f in scan.facts if f.key in WORLD_FACTS and f not in kept))
    return replace(scan, **changes)


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
