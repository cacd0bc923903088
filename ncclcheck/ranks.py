"""Rank sets as people read them: ``0-516, 518-1023`` at any scale."""

from __future__ import annotations

from collections.abc import Iterable


def ranges(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2, 5, 7-8``; empty -> ``none``."""
    rs = sorted(set(ranks))
    if not rs:
        return "none"
    out: list[str] = []
    start = prev = rs[0]
    for r in rs[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ", ".join(out)


def rank_phrase(ranks: Iterable[int], world: int | None = None, exclude: Iterable[int] = ()) -> str:
    """``rank 3``, ``ranks 0-2, 5``, or ``all 1023 other ranks`` when the set is everyone but ``exclude``."""
    rs = sorted(set(ranks))
    others = set(exclude)
    if world and others and len(rs) > 2 and set(rs) == set(range(world)) - others:
        return f"all {len(rs)} other ranks"
    if world and len(rs) == world and len(rs) > 2:
        return f"all {world} ranks"
    return ("rank " if len(rs) == 1 else "ranks ") + ranges(rs)
