"""Pieces of the verdict's sentences that several rules share: a collective, its place, a rank's ranges.

The rules (job/hang.py, job/rules.py) decide; these only say a work or a rank set in the words every summary uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.evidence.frdump import Frame
from ncclcheck.job.causes import HOST
from ncclcheck.job.graph import gaps
from ncclcheck.job.model import Job, Work
from ncclcheck.ranks import ranges_of, rank_phrase


def sig(w: Work) -> str:
    """``ALLREDUCE 4,096x1,024 Float``: a collective by what its members must agree on."""
    s = w.op.upper() if w.op else "an unnamed collective"
    if w.sizes:
        s += " " + ",".join("x".join(f"{d:,}" for d in sz) or "scalar" for sz in w.sizes)
    elif w.numel_in is not None:
        s += f" NumelIn={w.numel_in:,}"
    return s + (f" {'/'.join(w.dtypes)}" if w.dtypes else "")


def place(w: Work) -> str:
    """``ALLREDUCE NumelIn=4,096 (#4, PG 1 (dp))``, naming only what is known (a live stack has no number)."""
    parts = ([w.number] if w.seq is not None else []) + ([w.group.label()] if w.group.id is not None else [])
    return sig(w) + (f" ({', '.join(parts)})" if parts else "")


def frame_line(f: Frame) -> str:
    """``train.py:49``: where a rank issued a work, short enough for a sentence."""
    return f"{f.file.rsplit('/', 1)[-1]}:{f.line}"


def cap(text: str) -> str:
    """The sentence's first letter capitalised, the rest (a rank range, a quoted line) left as it is."""
    return text[:1].upper() + text[1:]


def short(w: Work, frame: bool = True) -> str:
    """``dp #4 (train.py:49)``: a work by its group's name and number, and the line that issued it."""
    name = w.group.desc if w.group.desc and w.group.desc != "default_pg" else w.group.label()
    where = f" ({frame_line(w.frame)})" if frame and w.frame is not None else ""
    return f"{name} {w.number}{where}"


def absent_phrase(job: Job, listed: Sequence[int]) -> str:
    """The ranks without input: those with a state, and the ranges of a stated world that have none."""
    if not job.unlisted:
        return rank_phrase(listed, job.world)
    spans = gaps(sorted(s.rank for s in job.ranks if s.present), range(job.world or 0))
    return f"ranks {ranges_of(spans)}"


def nobody(family: str) -> str:
    """Who failed, where no rank is named: a node's fate is the job's, a crash is one process's."""
    return "The job failed" if family == HOST else "A process failed"
