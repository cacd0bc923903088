"""DistributedDataParallel: gradient buckets, all-reduced.

With find_unused_parameters=False (the default) or static_graph, the first iteration puts every gradient in one
bucket; after it DDP rebuilds the buckets in the order gradients became ready, closing a bucket once it reaches its
cap (1 MiB for the first, bucket_cap_mb = 25 MiB after). With find_unused_parameters=True the first iteration
already uses the caps, over the parameters in reverse registration order.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.explain.layouts.base import Setting, Shape
from ncclcheck.explain.ops import ALLREDUCE, BROADCAST
from ncclcheck.explain.params import Param, backward_order, buffers, describe

FIRST_BUCKET_BYTES = 2**20
BUCKET_BYTES = 25 * 2**20
BROADCAST_BYTES = 250 * 2**20  # DDP's initial sync of module states, coalesced


def buckets(order: Sequence[Param], itemsize: int, first: int = FIRST_BUCKET_BYTES,
            cap: int = BUCKET_BYTES) -> list[list[Param]]:
    """DDP's rule: add tensors in order; close the bucket once its bytes reach the cap."""
    out: list[list[Param]] = []
    cur: list[Param] = []
    size, limit = 0, first
    for p in order:
        cur.append(p)
        size += p.numel * itemsize
        if size >= limit:
            out.append(cur)
            cur, size, limit = [], 0, cap
    if cur:
        out.append(cur)
    return out


def shapes(s: Setting) -> list[Shape]:
    params = list(s.params)
    if not params:
        return []
    total = sum(p.numel for p in params)
    out = [Shape("ddp_bucket", ALLREDUCE, total, None,
                 f"DDP bucket of the first iteration: all {len(params)} gradients in one bucket "
                 "(find_unused_parameters=False or static_graph; rebuilt after it)", 0, tuple(p.name for p in params))]
    out += _bookkeeping(s, params, len(buckets(backward_order(params), s.itemsize)))
    for label, order in (("rebuilt in gradient-ready order", backward_order(params)),
                         ("first iteration with find_unused_parameters=True, reverse registration order",
                          list(reversed(params)))):
        found = buckets(order, s.itemsize)
        for k, b in enumerate(found):
            out.append(Shape("ddp_bucket", ALLREDUCE, sum(p.numel for p in b), None,
                             f"DDP bucket {k + 1} of {len(found)} ({label}; 1 MiB first, 25 MiB after): "
                             f"{describe(params, b)}", 0, tuple(p.name for p in b)))
    return out


def _bookkeeping(s: Setting, params: list[Param], rebuilt: int) -> list[Shape]:
    """DDP's own broadcasts: the module states at construction (parameters then buffers, coalesced up to 250 MiB),
    the buffers before every forward (broadcast_buffers=True), the parameter shape check (sizes and strides,
    int64) and, when buckets are rebuilt, the bucket order (one int32 per parameter, plus one) and sizes."""
    bufs = buffers(s.model)
    states = params + bufs
    out = []
    chunks = buckets(states, s.itemsize, BROADCAST_BYTES, BROADCAST_BYTES)
    for k, c in enumerate(chunks):
        out.append(Shape("model", BROADCAST, sum(p.numel for p in c), None,
                         f"DDP's initial sync of module states, coalesced chunk {k + 1} of {len(chunks)}: "
                         f"{len(c)} tensors ({sum(1 for p in c if p in bufs)} of them buffers)", 0,
                         tuple(p.name for p in c)))
    if bufs:
        out.append(Shape("buffers", BROADCAST, sum(p.numel for p in bufs), None,
                         f"DDP's buffer sync before each forward (broadcast_buffers=True): {len(bufs)} buffers "
                         "(rotary inv_freq)", 0, tuple(p.name for p in bufs)))
    dims = sum(len(p.shape) for p in params)
    out += [Shape("metadata", BROADCAST, 2 * dims, None, f"DDP's parameter shape check at construction: sizes and "
                                                         f"strides of {len(params)} parameters (2 × {dims} dims)", 0),
            Shape("metadata", BROADCAST, len(params) + 1, None, f"DDP's bucket-order sync after the first iteration: "
                                                                f"{len(params)} parameter indices + 1", 0),
            Shape("metadata", BROADCAST, rebuilt, None, f"DDP's bucket-size sync after the first iteration: "
                                                        f"{rebuilt} rebuilt buckets", 0)]
    return out
