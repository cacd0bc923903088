"""Arbitrary contiguous runs of tensors that sum to a count: what no bucketing rule forms, found by search.

Buckets that a rule forms are listed by the layouts; this finds the runs a non-default bucket size could form, and
counts how many sums it looked at so that the chance of a hit by coincidence can be stated.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, REDUCESCATTER
from ncclcheck.explain.params import Param, describe, modules

MAX_LISTED = 3  # runs listed per order; the rest are counted


@dataclass(frozen=True)
class RunSearch:
    """The runs that hit, how many sums were searched and how many of them fall near the count."""

    hits: tuple[Shape, ...]
    searched: int
    in_window: int


def _runs(sizes: Sequence[int], n: int, lo: int, hi: int) -> tuple[list[tuple[int, int]], int]:
    """Runs [i, j) summing to exactly n, and the number of runs whose sum lies in [lo, hi]."""
    prefix = [0, *accumulate(sizes)]
    index = {v: k for k, v in enumerate(prefix)}
    hits = [(i, index[v + n]) for i, v in enumerate(prefix) if v + n in index]
    near = sum(max(0, bisect_right(prefix, v + hi) - max(bisect_left(prefix, v + lo), i + 1))
               for i, v in enumerate(prefix))
    return hits, near


def search(s: Setting, family: str | None, n: int, lo: int, hi: int) -> RunSearch:
    """Contiguous runs for the op family: gradients for all-reduce and reduce-scatter, ZeRO-3 module gathers for
    all-gather."""
    params = list(s.params)
    if not params:
        return RunSearch((), 0, 0)
    w = s.world
    trainable = [p for p in params if p.trainable]  # a frozen tensor has no gradient: no run of gradients holds it
    orders: list[tuple[str, str, str, list[list[Param]], list[int]]] = []
    ready = s.table.ready_order()  # observed where a pass ran, else the reverse of registration order
    reverse = list(reversed(trainable))
    if family in (None, ALLREDUCE):
        ways = [("gradient-ready order", ready)] if s.table.ready else []
        for label, order in (*ways, ("reverse registration order", reverse)):
            orders.append(("gradient_run", ALLREDUCE, label, [[p] for p in order], [p.numel for p in order]))
    if w and family in (None, REDUCESCATTER):
        order = ready
        orders.append(("gradient_run", REDUCESCATTER, "gradient-ready order, each padded to a multiple of the world",
                       [[p] for p in order], [ceil_div(p.numel, w) * w for p in order]))
    if w and family in (None, ALLGATHER):
        mods = modules(params)
        orders.append(("gather_run", ALLGATHER, "ZeRO-3 prefetch of consecutive modules in forward order",
                       [ps for _, ps in mods], [sum(ceil_div(p.numel, w) for p in ps) for _, ps in mods]))
    hits: list[Shape] = []
    searched = in_window = 0
    for kind, fam, label, groups, sizes in orders:
        found, near = _runs(sizes, n, lo, hi)
        searched += len(sizes) * (len(sizes) + 1) // 2
        in_window += near
        for i, j in found[:MAX_LISTED]:
            members = [p for g in groups[i:j] for p in g]
            out = None
            if fam == ALLGATHER and w:
                out = n * w
            elif fam == REDUCESCATTER and w:
                out = n // w
            what = "gradients" if kind == "gradient_run" else "parameter shards"
            hits.append(Shape(kind, fam, n, out, f"a run of {what} ({label}) that no default bucket forms: "
                                                 f"{describe(params, members)}", 2, tuple(p.name for p in members)))
    return RunSearch(tuple(hits), searched, in_window)
