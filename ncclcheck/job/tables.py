"""torchrun's failure tables asked about one rank at a time, each question answered without going through them all.

Each node's agent prints its own table of the ranks that failed there, so a job has up to one table a node, and
every rank with no ending of its own asks them two things (job/build.py): is it left out of any table (then, while
the launcher stopped processes no input ties to a rank, it may be one of those), and is it the one rank that a
table's ranks leave out of an unbroken run (``0-2, 4-7``: rank 3 exited with status 0 while the others needed it).
Going through every table for every rank was quadratic in the nodes; both answers are built once here (issue 42).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from ncclcheck.evidence.types import ElasticFailure

# One table: its ranks as sorted inclusive intervals, merged where they touch, and its first entry.
Table = tuple[list[tuple[int, int]], ElasticFailure]


def _common(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranks in both of two sorted lists of disjoint inclusive intervals."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _gap(listed: Sequence[tuple[int, int]]) -> list[int]:
    """The ranks that would make a table's ranks one unbroken run: either end of a single run, or the one rank
    between two runs. A third run or a wider gap leaves two runs whatever one rank is added."""
    if len(listed) == 1:
        return [listed[0][0] - 1, listed[0][1] + 1]
    if len(listed) == 2 and listed[1][0] == listed[0][1] + 2:
        return [listed[0][1] + 1]
    return []


class Tables:
    """The failure tables of a job, in input order."""

    def __init__(self, tables: Sequence[Table]) -> None:
        self.any = bool(tables)
        everywhere = tables[0][0] if tables else []
        for listed, _ in tables[1:]:
            everywhere = _common(everywhere, listed)  # shrinks: the work is the tables' intervals, once
        self._everywhere = everywhere
        self._starts = [lo for lo, _ in everywhere]
        self._completes: dict[int, ElasticFailure] = {}
        for listed, first in tables:
            for rank in _gap(listed):
                self._completes.setdefault(rank, first)  # the first table in input order, as a scan would find

    def left_out(self, rank: int) -> bool:
        """Whether some table does not list the rank."""
        if not self.any:
            return False
        i = bisect_right(self._starts, rank) - 1
        return i < 0 or self._everywhere[i][1] < rank

    def completed_by(self, rank: int) -> ElasticFailure | None:
        """The first entry of the first table whose ranks and this one make one unbroken run (the rank is not in it)."""
        return self._completes.get(rank)
