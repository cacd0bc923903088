"""DistributedDataParallel: gradient buckets, all-reduced, and the collectives DDP makes for its own bookkeeping.

Rules from torch/nn/parallel/distributed.py and the C++ reducer (torch 2.4-2.13). Only parameters that require
gradients are bucketed. With find_unused_parameters=False (the default) or static_graph the first iteration puts
every gradient of one dtype in one bucket (static_graph: the first two, as its first backward only counts hooks and
the order is learnt in the second; recorded); after it DDP rebuilds the buckets in the order gradients became ready,
closing a bucket once its bytes reach the limit: 1 MiB for the first when bucket_cap_mb is left at its default (an
explicit bucket_cap_mb applies to the first bucket too), 25 MiB or bucket_cap_mb after. With
find_unused_parameters=True (and no static_graph) the buckets are formed once, at construction, over the
parameters in registration order with the same caps (so the 1 MiB bucket holds the first registered parameters);
the list is reversed for the reducer and never rebuilt (Reducer::should_rebuild_buckets), so no bucket-order sync
follows either. In that mode every backward pass, and static_graph's first one, also all-reduces the reducer's map
of used parameters: one int32 per parameter that requires a gradient (Reducer::initialize_local_used_map).
"""

from __future__ import annotations

from collections.abc import Sequence

from ncclcheck.explain.layouts.base import Setting, Shape
from ncclcheck.explain.ops import ALLREDUCE, BROADCAST
from ncclcheck.explain.params import Param, describe
from ncclcheck.transfer import DTYPE_BYTES

FIRST_BUCKET_BYTES = 2**20
BUCKET_MB = 25
BROADCAST_BYTES = 250 * 2**20  # DDP's sync of module states, coalesced per dtype


def buckets(order: Sequence[Param], itemsize: int, first: int = FIRST_BUCKET_BYTES,
            cap: int = BUCKET_MB * 2**20) -> list[list[Param]]:
    """DDP's rule: add tensors in order; close the bucket once its bytes reach the limit."""
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


def caps(s: Setting) -> tuple[int, int, str]:
    """(first bucket bytes, later bucket bytes, how to say it) for the cap the user gave, or the defaults."""
    if s.bucket_cap_mb is None:
        return FIRST_BUCKET_BYTES, BUCKET_MB * 2**20, f"1 MiB first, {BUCKET_MB} MiB after"
    cap = int(s.bucket_cap_mb * 2**20)
    return cap, cap, f"bucket_cap_mb={s.bucket_cap_mb:g} for every bucket"


def shapes(s: Setting) -> list[Shape]:
    t = s.table
    params = list(t.trainable)
    if not params:
        return []
    if s.find_unused:
        return _find_unused(s, params) + _bookkeeping(s, params, 0)
    total = sum(p.numel for p in params)
    out = [Shape("ddp_bucket", ALLREDUCE, total, None,
                 f"DDP bucket of the first iteration: all {len(params)} gradients in one bucket "
                 "(find_unused_parameters=False, rebuilt after it; static_graph, the first two iterations)", 0,
                 tuple(p.name for p in params))]
    first, cap, said = caps(s)
    rebuilt = buckets(t.ready_order(), s.itemsize, first, cap)
    out += _bookkeeping(s, params, len(rebuilt))
    how = ("gradient-ready order observed in a forward and backward pass" if t.ready_observed else
           "the reverse of the family's forward, the gradient-ready order not being observed" if t.ready else
           "the reverse of registration order, the gradient-ready order not being observed")
    orders = [(f"rebuilt in {how}", said, rebuilt)]
    if s.bucket_cap_mb is not None and first != FIRST_BUCKET_BYTES:
        # Releases before the first bucket followed an explicit cap closed it at 1 MiB regardless.
        orders.append((f"rebuilt in {how}", f"1 MiB first as in older torch releases, bucket_cap_mb="
                                            f"{s.bucket_cap_mb:g} after",
                       buckets(t.ready_order(), s.itemsize, FIRST_BUCKET_BYTES, cap)))
    for label, how_capped, found in orders:
        for k, b in enumerate(found):
            out.append(Shape("ddp_bucket", ALLREDUCE, sum(p.numel for p in b), None,
                             f"DDP bucket {k + 1} of {len(found)} ({label}; {how_capped}): {describe(t.params, b)}", 0,
                             tuple(p.name for p in b)))
    return out + _find_unused(s, params)


def _find_unused(s: Setting, params: list[Param]) -> list[Shape]:
    """find_unused_parameters=True: the used-parameter map, and the buckets formed once in registration order."""
    first, cap, said = caps(s)
    out = [Shape("metadata", ALLREDUCE, len(params), None,
                 f"DDP's used-parameter map (find_unused_parameters=True, every iteration; static_graph, the first): "
                 f"one int32 per parameter that requires a gradient ({len(params)})", 0)]
    found = list(reversed(buckets(params, s.itemsize, first, cap)))
    for k, b in enumerate(found):
        out.append(Shape("ddp_bucket", ALLREDUCE, sum(p.numel for p in b), None,
                         f"DDP bucket {k + 1} of {len(found)} with find_unused_parameters=True (formed at "
                         f"construction in registration order, {said}, list reversed, never rebuilt): "
                         f"{describe(s.table.params, b)}", 0, tuple(p.name for p in b)))
    return out


def _dtype_groups(s: Setting) -> dict[str, tuple[list[Param], list[Param]]]:
    """Parameters and buffers by the dtype they are broadcast in: floating ones in the training dtype (a model cast
    to it casts its floating buffers too), integer buffers in their own."""
    out: dict[str, tuple[list[Param], list[Param]]] = {}
    for p in s.table.params:
        out.setdefault("float", ([], []))[0].append(p)
    for b in s.table.buffers:
        key = b.dtype if b.dtype.startswith(("int", "uint", "bool")) else "float"
        out.setdefault(key, ([], []))[1].append(b)
    return out


def _bookkeeping(s: Setting, params: list[Param], rebuilt: int) -> list[Shape]:
    """DDP's own broadcasts: the module states at construction (parameters then buffers, coalesced per dtype up to
    250 MiB), the buffers before every forward (broadcast_buffers=True), the parameter shape check (sizes and
    strides, int64) and, when buckets are rebuilt, the bucket order (one int32 per parameter, plus one) and the
    bucket count."""
    out = []
    for key, (ps, bufs) in _dtype_groups(s).items():
        size = s.itemsize if key == "float" else DTYPE_BYTES.get(key, 8)
        dtype = "the training dtype" if key == "float" else key
        chunks = buckets(ps + bufs, size, BROADCAST_BYTES, BROADCAST_BYTES)
        for k, c in enumerate(chunks):
            nb = sum(1 for p in c if p in bufs)
            part = f"chunk {k + 1} of {len(chunks)}, " if len(chunks) > 1 else ""
            out.append(Shape("model", BROADCAST, sum(p.numel for p in c), None,
                             f"DDP's initial sync of module states in {dtype} ({part}{len(c) - nb} parameters and {nb} "
                             "buffers, coalesced)", 0, tuple(p.name for p in c)))
        if bufs:
            names = ", ".join(sorted({b.name.rpartition(".")[2] for b in bufs}))
            out.append(Shape("buffers", BROADCAST, sum(b.numel for b in bufs), None,
                             f"DDP's buffer sync before each forward (broadcast_buffers=True): {len(bufs)} buffers in "
                             f"{dtype} ({names})", 0, tuple(b.name for b in bufs)))
    dims = sum(len(p.shape) for p in params)
    out.append(Shape("metadata", BROADCAST, 2 * dims, None, f"DDP's parameter shape check at construction: sizes and "
                                                            f"strides of {len(params)} parameters (2 × {dims} dims, "
                                                            "int64)", 0))
    if rebuilt:  # none with find_unused_parameters=True: its buckets are never rebuilt
        out += [Shape("metadata", BROADCAST, len(params) + 1, None, f"DDP's bucket-order sync after the first "
                                                                    f"iteration: {len(params)} parameter indices + 1 "
                                                                    "(int32)", 0),
                Shape("metadata", BROADCAST, rebuilt, None, f"DDP's bucket-sizes sync after the first iteration: one "
                                                            f"int32 per rebuilt bucket ({rebuilt} buckets)", 0)]
    return out


def bucket_sizes(s: Setting, n: int) -> Shape | None:
    """DDP's bucket-sizes sync for a rebuild into ``n`` buckets, whatever rebuild explain computes.

    After the first iteration the reducer broadcasts the rebuilt buckets from rank 0 (Reducer::sync_bucket_indices):
    first every parameter index and the bucket count (int32, trainable parameters + 1), then one int32 per bucket,
    its number of parameters. The number of buckets follows from the job's bucket_cap_mb and the order gradients
    became ready, so a count from 1 to the number of trainable parameters is this sync for some rebuild; the one
    explain computes (``_bookkeeping``) is the rule-formed candidate, any other a weaker one that says so."""
    params = s.table.trainable
    if s.find_unused or not 1 <= n <= len(params):
        return None
    first, cap, said = caps(s)
    computed = len(buckets(s.table.ready_order(), s.itemsize, first, cap))
    if n == computed:
        return None  # the rule-formed candidate of _bookkeeping
    return Shape("metadata", BROADCAST, n, None,
                 f"DDP's bucket-sizes sync after the first iteration, for a rebuild into {n} buckets: one int32 per "
                 f"bucket (with {said} the rebuild gives {computed}; another bucket_cap_mb, dtype or gradient-ready "
                 "order gives another count)", 1)
