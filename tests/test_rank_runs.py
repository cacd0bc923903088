"""Rank sets are written as the longest runs from the left, found by doubling (ranks.py ``_run_end``): the same text
as walking the ranks one by one, which the reference below does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_scale import parse_ranks

from ncclcheck.ranks import ranges


def _walked(ranks: list[int]) -> str:
    """The notation by its definition: from the lowest rank, the longest run of one step; a step of 1 from two
    ranks, a larger step from four, else the rank alone."""
    rs = sorted(set(ranks))
    out: list[str] = []
    i = 0
    while i < len(rs):
        j = i + 1
        if j < len(rs):
            step = rs[j] - rs[i]
            while j + 1 < len(rs) and rs[j + 1] - rs[j] == step:
                j += 1
            if step == 1 or j - i + 1 >= 4:
                out.append(f"{rs[i]}-{rs[j]}" + (f" by {step}" if step > 1 else ""))
                i = j + 1
                continue
        out.append(str(rs[i]))
        i += 1
    return ", ".join(out) or "none"


runs = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 9), st.integers(1, 40)), max_size=6).map(
    lambda parts: [r for a, step, n in parts for r in range(a, a + step * n, step)])


@given(st.one_of(runs, st.lists(st.integers(0, 120), max_size=60)), st.lists(st.integers(0, 500), max_size=4))
def test_runs_found_by_doubling_are_the_runs_walked(ranks: list[int], loose: list[int]) -> None:
    text = ranges(ranks + loose)
    assert text == _walked(ranks + loose)
    assert parse_ranks(None if text == "none" else text) == set(ranks + loose)


def test_a_large_job_s_sets() -> None:
    assert ranges(range(0, 131_072)) == ranges(list(range(131_072))) == "0-131071"
    assert ranges([r for r in range(131_072) if r != 65_541]) == "0-65540, 65542-131071"
    assert ranges(list(range(5, 131_072, 8)) + [6]) == "5-6, 13-131069 by 8"
