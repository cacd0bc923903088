"""Launchers' and schedulers' own lines, one module per source, registered here with the one parser.

Each module holds a table of what its launcher prints about its workers: the tag it puts before a rank's lines
(:data:`RANK_TAGS`), the per-rank file names it writes (:data:`PATH_RANKS`), and the lines in which it reports a
worker's end or the job's stop (:class:`LineFormat`, one cheap literal word tested before its pattern). The parser
(``logparse.py``) asks :func:`rank_tag`, :func:`path_rank` and :class:`LauncherLines`; the block reader keeps every
line that holds one of :data:`WORDS`, so a launcher's line is found wherever it stands in a long console. Adding a
launcher is one module here and its fixtures (docs/layout.md).
"""

from __future__ import annotations

import re

from ncclcheck.evidence.formats import deepspeed, mpi, ray, slurm
from ncclcheck.evidence.formats.deepspeed import Spawns
from ncclcheck.evidence.formats.lines import LauncherLines, LineFormat, TaskEnd
from ncclcheck.evidence.formats.ray import Deaths

__all__ = ["Deaths", "LINE_FORMATS", "rankless_signal", "PATH_RANKS", "RANK_TAGS", "WORDS", "LauncherLines", "LineFormat",
           "Spawns", "TaskEnd", "is_stop", "path_rank", "pid_rank", "pid_tag", "rank_tag"]

LINE_FORMATS: tuple[LineFormat, ...] = mpi.LINES + slurm.LINES + deepspeed.LINES
RANK_TAGS: tuple[re.Pattern[str], ...] = mpi.RANK_TAGS
PATH_RANKS: tuple[re.Pattern[str], ...] = mpi.PATH_RANKS + slurm.PATH_RANKS
# The literal words the block reader must keep whole, wherever they stand.
WORDS: tuple[bytes, ...] = tuple(dict.fromkeys([*(f.word.encode() for f in LINE_FORMATS),
                                                *(w.encode() for w in ray.WORDS),
                                                *(w.encode() for w in deepspeed.WORDS)]))


def rank_tag(text: str) -> int | None:
    """The global rank a launcher's tag at the start of a line names (Open MPI's ``[1,3]<stderr>:``)."""
    for tag in RANK_TAGS:
        if m := tag.match(text):
            return int(m[1])
    return None


def path_rank(path: str) -> int | None:
    """The rank a launcher's per-rank output path names (``rank.3/stderr``, Slurm's ``%t`` in ``3.log``)."""
    for pattern in PATH_RANKS:
        if m := pattern.search(path):
            return int(m[1])
    return None


def is_stop(text: str) -> bool:
    """Whether a launcher's line says it stopped the whole job (a time limit, a cancellation), naming no rank."""
    return any(f.stop and f.word in text and f.pattern.search(text) for f in LINE_FORMATS)


def pid_rank(text: str) -> tuple[int, int] | None:
    """(PID, global rank) where a launcher's line pairs them (Ray Train's worker table)."""
    if "rank=" not in text:
        return None
    for pattern, pid, rank in ray.PID_RANKS:
        if m := pattern.search(text):
            return int(m[pid]), int(m[rank])
    return None


def pid_tag(text: str) -> int | None:
    """The PID a launcher's prefix names as the line's process (Ray's "(RayTrainWorker pid=5665)"); -1 for a
    line the launcher merged across processes (it is no one process's), None for a line without such a prefix."""
    if m := ray.PID_TAG.match(text):
        return -1 if text.rstrip().endswith(ray.MERGED) else int(m[1])
    return None


def rankless_signal(text: str) -> str | None:
    """The fatal signal a launcher's line says one of its workers died of, where the line cannot say which worker
    (DeepSpeed's "exits with return code = -9")."""
    for fmt in LINE_FORMATS:
        if fmt.rankless and fmt.read is not None and fmt.word in text and (m := fmt.pattern.search(text)):
            return fmt.read(m).signal
    return None
