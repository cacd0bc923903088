"""How likely an exact hit is to be chance: the density of candidate sums near the count.

An unrelated count in the window [n/2, 2n] lands exactly on one of k distinct candidate sums there with
probability about k / (window width). That figure, not the exactness alone, says whether a match explains anything:
a search over thousands of runs of small tensors hits small counts by chance.
"""

from __future__ import annotations

LIKELY = 1e-3  # above this chance an arbitrary run is called a likely coincidence


def window(n: int) -> tuple[int, int]:
    """The counts of about the same size: [n/2, 2n]."""
    return max(1, n // 2), 2 * n


def chance(hits_in_window: int, n: int) -> float:
    """Probability that an unrelated count near n equals one of ``hits_in_window`` candidate sums."""
    lo, hi = window(n)
    return min(1.0, hits_in_window / (hi - lo + 1))
