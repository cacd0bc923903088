"""Rank sets as people read them: ``0-516, 518-1023`` at any scale."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


def ranges(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2, 5, 7-8``; strided runs too: ``0-504 by 8``; empty -> ``none``.

    Data-parallel groups of a mesh are every n-th rank; printed one by one, 512 of them fill a screen. A ``range``
    (the world group's members) is written from its ends, never expanded.
    """
    if isinstance(ranks, range):
        return _range_text(ranks)
    rs = sorted(set(ranks))
    if not rs:
        return "none"
    out: list[str] = []
    i = 0
    while i < len(rs):
        j = i + 1
        if j < len(rs):
            step = rs[j] - rs[i]
            j = _run_end(rs, i, step)
            run = j - i + 1
            if step == 1 and run >= 2:
                out.append(f"{rs[i]}-{rs[j]}")
                i = j + 1
                continue
            if step > 1 and run >= 4:
                out.append(f"{rs[i]}-{rs[j]} by {step}")
                i = j + 1
                continue
        out.append(str(rs[i]))
        i += 1
    return ", ".join(out)


def _run_end(rs: list[int], i: int, step: int) -> int:
    """The last index of the run of ``step`` from ``rs[i]`` (sorted, distinct; ``rs[i + 1] - rs[i] == step``).

    Found by doubling and then halving its length, each guess checked at C speed (the ends alone for step 1,
    the new part against a range otherwise), not rank by rank: a job's rank sets are a few long runs, and walking
    them one by one in Python cost about 0.7 us a rank each time a set was printed (issue 42).
    """
    n = len(rs)

    def extends(end: int, j: int) -> bool:  # rs[i..end] is one run: is rs[end..j] its continuation?
        if step == 1:
            return rs[j] - rs[end] == j - end  # sorted and distinct: the ends say it
        return rs[end + 1:j + 1] == list(range(rs[end] + step, rs[end] + (j - end) * step + 1, step))

    end, d = i + 1, 1
    while end + d < n and extends(end, end + d):
        end += d
        d *= 2
    while d > 1:  # the end is in [end, end + d)
        d //= 2
        if end + d < n and extends(end, end + d):
            end += d
    return end


def _range_text(r: range) -> str:
    r = r if r.step > 0 else r[::-1]
    if len(r) == 0:
        return "none"
    if len(r) == 1:
        return str(r[0])
    if r.step == 1:
        return f"{r[0]}-{r[-1]}"
    if len(r) >= 4:
        return f"{r[0]}-{r[-1]} by {r.step}"
    return ", ".join(map(str, r))


def ranges_of(spans: Iterable[range]) -> str:
    """Ranges (sorted, apart) as one rank set: ``range(1, 5), range(9, 10)`` -> ``1-4, 9``; never expanded."""
    text = ", ".join(_range_text(r) for r in spans if len(r))
    return text or "none"


def compact(ranks: Iterable[int], world: int | None = None) -> str:
    """The ranges, or with the world size known ``all but <the rest>`` when that is shorter."""
    if isinstance(ranks, range):
        return _range_text(ranks)
    rs = sorted(set(ranks))
    direct = ranges(rs)
    if world and len(rs) > world // 2 and rs and rs[-1] < world:
        alt = f"all but {ranges(set(range(world)) - set(rs))}"
        if len(alt) < len(direct):
            return alt
    return direct


def rank_phrase(ranks: Iterable[int], world: int | None = None, exclude: Iterable[int] = ()) -> str:
    """``rank 3``, ``ranks 0-2, 5``, ``all 1023 other ranks``, or ``3577 ranks: all but 5-509 by 8, 512-519``.

    With the world size known, a set of most ranks prints as its complement when that is shorter.
    """
    if isinstance(ranks, range) and not world:
        return ("rank " if len(ranks) == 1 else "ranks ") + _range_text(ranks)
    rs = sorted(set(ranks))
    others = set(exclude)
    # "every rank but the excluded ones", told by counting: the world may be far larger than the ranks given
    if world and others and len(rs) > 2 and rs[0] >= 0 and rs[-1] < world and not others & set(rs) and \
            len(rs) == world - sum(1 for r in others if 0 <= r < world):
        return f"all {len(rs)} other ranks"
    if world and len(rs) == world and len(rs) > 2:
        return f"all {world} ranks"
    text = compact(rs, world)
    if text.startswith("all but"):
        return f"{len(rs)} ranks: {text}"
    return ("rank " if len(rs) == 1 else "ranks ") + text


class Spans(Generic[T]):
    """Inclusive rank intervals with a value each (a launcher's task ranges), asked which of them hold a rank.

    Every rank of a job asks, and the intervals can be one per node: going through all of them for each rank is
    quadratic. They are kept sorted by start, under a tree of the farthest end in each run of them, so that a question
    costs a logarithm per interval found, whatever the intervals (apart, nested, one across the job).
    """

    def __init__(self, spans: Iterable[tuple[int, int, T]]) -> None:
        self._spans = sorted(((lo, hi, i, v) for i, (lo, hi, v) in enumerate(spans)), key=lambda s: (s[0], s[2]))
        self._starts = [s[0] for s in self._spans]
        self._leaves = 1
        while self._leaves < len(self._spans):
            self._leaves *= 2
        reach = [float("-inf")] * (2 * self._leaves)
        for j, s in enumerate(self._spans):
            reach[self._leaves + j] = s[1]
        for k in range(self._leaves - 1, 0, -1):
            reach[k] = max(reach[2 * k], reach[2 * k + 1])
        self._reach = reach

    def at(self, rank: int) -> list[T]:
        """The values of the intervals that hold ``rank``, in the order the intervals were given."""
        end = bisect_right(self._starts, rank)  # the intervals that start at or before the rank
        if not end:
            return []
        found = []
        todo = [(1, 0, self._leaves)]
        while todo:
            k, lo, hi = todo.pop()
            if lo >= end or self._reach[k] < rank:
                continue
            if k >= self._leaves:
                found.append(self._spans[k - self._leaves])
            else:
                mid = (lo + hi) // 2
                todo += [(2 * k, lo, mid), (2 * k + 1, mid, hi)]
        return [s[3] for s in sorted(found, key=lambda s: s[2])]
