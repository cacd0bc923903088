"""DeepSpeed ZeRO: gradient buckets (stages 1/2), partition gathers (1/2), per-module parameter gathers (3).

Stages 1/2 fill a gradient bucket in gradient-ready order and flush it before a tensor would overflow
reduce_bucket_size (5e8 elements by default); with reduce_scatter false the bucket is all-reduced. After the step
each rank's partition of the flat parameters is all-gathered (the flat buffer padded to a multiple of 2 x world;
the Hugging Face Trainer makes two groups, with and without weight decay). Stage 3 partitions every parameter
flat, ceil(numel / world) elements per rank, and gathers the parameters of one module per fetch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, REDUCESCATTER
from ncclcheck.explain.params import Param, describe, modules

REDUCE_BUCKET = 500_000_000
ALIGN = 2  # DeepSpeed's NCCL start-alignment factor


def buckets(order: Sequence[Param], cap: int = REDUCE_BUCKET) -> list[list[Param]]:
    """DeepSpeed's rule: flush the bucket before adding a tensor that would overflow it."""
    out: list[list[Param]] = []
    cur: list[Param] = []
    size = 0
    for p in order:
        if cur and size + p.numel > cap:
            out.append(cur)
            cur, size = [], 0
        cur.append(p)
        size += p.numel
    if cur:
        out.append(cur)
    return out


def _no_decay(p: Param) -> bool:
    return p.name.endswith(".bias") or "norm" in p.name.rpartition(".")[0].rpartition(".")[2]


def shapes(s: Setting) -> list[Shape]:
    params = list(s.params)
    if not params:
        return []
    out: list[Shape] = []
    found = buckets(s.table.ready_order())
    for k, b in enumerate(found):
        out.append(Shape("zero_bucket", ALLREDUCE, sum(p.numel for p in b), None,
                         f"DeepSpeed ZeRO-1/2 gradient bucket {k + 1} of {len(found)} (reduce_bucket_size 5e8, "
                         f"gradient-ready order): {describe(params, b)}", 0, tuple(p.name for p in b)))
    w = s.world
    if not w:
        return out
    groups = [("all parameters in one group", params),
              ("the weight-decay group (Trainer)", [p for p in params if not _no_decay(p)]),
              ("the no-decay group (biases, norms; Trainer)", [p for p in params if _no_decay(p)])]
    for label, ps in groups:
        if not ps:
            continue
        part = ceil_div(sum(p.numel for p in ps), ALIGN * w) * ALIGN
        out.append(Shape("zero_partition", ALLGATHER, part, part * w,
                         f"DeepSpeed ZeRO-1/2 updated-parameter partition of {label}: 1/{w} of the flat buffer",
                         0, tuple(p.name for p in ps)))
    for name, ps in modules(params):
        shard = sum(ceil_div(p.numel, w) for p in ps)
        out.append(Shape("zero3_gather", ALLGATHER, shard, shard * w,
                         f"DeepSpeed ZeRO-3 gather of module {name} ({len(ps)} parameter{'s' if len(ps) > 1 else ''},"
                         f" each partitioned flat, ceil(numel/{w}) per rank)", 0, tuple(p.name for p in ps)))
    for k, b in enumerate(found):
        padded = sum(ceil_div(p.numel, w) * w for p in b)
        out.append(Shape("zero3_bucket", REDUCESCATTER, padded, padded // w,
                         f"DeepSpeed ZeRO-3 gradient bucket {k + 1} of {len(found)} reduce-scattered "
                         f"(each gradient padded to a multiple of {w}): {describe(params, b)}", 0,
                         tuple(p.name for p in b)))
    return out
