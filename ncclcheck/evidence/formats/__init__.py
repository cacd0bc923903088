"""Every source of lines ncclcheck reads, one module each, registered in :data:`FORMATS`.

Each module exports one :class:`~ncclcheck.evidence.formats.source.LineSource`: the words that gate it, the tags
and file names that name a rank or a process, real sample lines, and a reader whose ``feed(text, loc)`` yields
typed events. Everything else here is derived from the one list: the words the block reader keeps wherever they
stand (:data:`WORDS`), the tags the parser strips and reads, the per-rank file names. Adding a source is one module
and its fixtures (docs/layout.md).
"""

from __future__ import annotations

import re

from ncclcheck.evidence.formats import (
    accelerate,
    composer,
    deepspeed,
    gloo,
    lightning,
    mpi,
    nccldiag,
    ncclras,
    ray,
    slurm,
    torchrun,
)
from ncclcheck.evidence.formats.source import AT, LineSource, Reader, Sample, unnamed
from ncclcheck.evidence.types import JobStop, WorkerEnd

__all__ = ["FORMATS", "GATE", "HEAD_WORDS", "PATH_RANKS", "PID_TAGS", "RANK_MARKS", "RANK_TAGS", "RANK_TAG_TEXT", "WORDS",
           "LineSource", "Reader", "Sample", "is_stop", "launcher_signal", "path_rank", "pid_tag", "rank_mark",
           "rank_tag", "readers"]

FORMATS: tuple[LineSource, ...] = (torchrun.FORMAT, slurm.FORMAT, accelerate.FORMAT, composer.FORMAT, gloo.FORMAT,
                                   mpi.FORMAT, deepspeed.FORMAT, ray.FORMAT, lightning.FORMAT, nccldiag.FORMAT,
                                   ncclras.FORMAT)

RANK_TAGS: tuple[re.Pattern[str], ...] = tuple(t for f in FORMATS for t in f.rank_tags)
RANK_MARKS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(m for f in FORMATS for m in f.rank_marks)
PID_TAGS: tuple[re.Pattern[str], ...] = tuple(t for f in FORMATS for t in f.pid_tags)
PATH_RANKS: tuple[re.Pattern[str], ...] = tuple(p for f in FORMATS for p in f.path_ranks)
# The rank tags as one alternation's text (their groups unnamed), for a prefix pattern to take them in.
RANK_TAG_TEXT = "|".join(unnamed(t) for t in RANK_TAGS)
# The literal words the block reader must keep whole, wherever they stand; and those it hands over in a head only.
WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for f in FORMATS for w in f.words))
HEAD_WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for f in FORMATS for w in f.head_words))
# What a line must hold to be fed to some source's reader.
GATE: tuple[str, ...] = tuple(dict.fromkeys((*WORDS, *HEAD_WORDS)))


def readers() -> list[tuple[tuple[str, ...], Reader]]:
    """A fresh reader of every source for one input, each with the words a line must hold to be fed to it."""
    return [((*f.words, *f.head_words), f.reader()) for f in FORMATS]


def rank_tag(text: str) -> int | None:
    """The global rank a launcher's tag at the start of a line names (Open MPI's ``[1,3]<stderr>:``)."""
    for tag in RANK_TAGS:
        if m := tag.match(text):
            return int(m["rank"])
    return None


def rank_mark(text: str) -> int | None:
    """The global rank a framework's tag further along a line names (Lightning's ``[rank: 3] ``)."""
    for word, mark in RANK_MARKS:
        if word in text[:200] and (m := mark.search(text, 0, 200)):
            return int(m["rank"])
    return None


def path_rank(path: str) -> int | None:
    """The rank a launcher's per-rank output path names (``rank.3/stderr``, Slurm's ``%t`` in ``3.log``)."""
    for pattern in PATH_RANKS:
        if m := pattern.search(path):
            return int(m["rank"])
    return None


def pid_tag(text: str) -> int | None:
    """The PID a launcher's prefix names as the line's process (Ray's "(RayTrainWorker pid=5665)"); -1 for a
    line the launcher merged across processes (it is no one process's), None for a line without such a prefix."""
    for tag in PID_TAGS:
        if m := tag.match(text):
            return -1 if m["merged"] else int(m["pid"])
    return None


def _said(text: str) -> list[object]:
    """What a fresh reader of each source reads from one line alone."""
    return [e for f in FORMATS if any(w in text for w in f.words) for e in f.reader().feed(text, AT)]


def is_stop(text: str) -> bool:
    """Whether a launcher's line says it stopped the whole job (a time limit, a cancellation), naming no rank."""
    return any(isinstance(e, JobStop) for e in _said(text))


def launcher_signal(text: str) -> str | None:
    """The signal a launcher's line says a child died of, where the line names no rank: a CalledProcessError's
    ``died with <Signals.SIGKILL: 9>``, DeepSpeed's ``exits with return code = -9``."""
    return accelerate.died_of(text) or next(
        (e.signal for e in _said(text) if isinstance(e, WorkerEnd) and e.rank is None), None)
