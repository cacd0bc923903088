"""DeepSpeed ZeRO: gradient buckets (stages 1/2), partition gathers (1/2), per-module parameter gathers (3).

Rules from DeepSpeed 0.19.8's source, checked on recorded runs (tools/explain_layout_runs.py, CPU with gloo):

- deepspeed.initialize broadcasts every parameter from rank 0, one call each, viewed as uint8
  (runtime/engine.py DeepSpeedEngine._broadcast_model; stage 3's partitioning does it again,
  zero/partition_parameters.py Init._convert_to_zero_parameters): NumelIn = numel x element size.
- Stages 1/2 (zero/stage_1_and_2.py): gradients fill a bucket in gradient-ready order, flushed before a tensor would
  overflow reduce_bucket_size (5e8 elements; reduce_independent_p_g_buckets_and_remove_grads); the bucket is
  all-reduced whole (average_tensor: use_multi_rank_bucket_allreduce, the default, or reduce_scatter false;
  contiguous_gradients changes where the bucket lives, not its size). After the step each rank's partition of the
  flat parameters is all-gathered (all_gather_into_tensor_dp_groups; the flat buffer padded to a multiple of
  nccl_start_alignment_factor 2 x world; the Hugging Face Trainer makes two groups, with and without weight decay).
- Stage 3 (zero/partition_parameters.py, partitioned_param_coordinator.py, parameter_offload.py) partitions every
  parameter flat, ceil(numel / world) per rank. Until the first step has recorded the trace, each module's own
  parameters are gathered when it runs (fetch_sub_module). Parameters of at most param_persistence_threshold
  (1e5) elements are persistent (mark_persistent_parameters): never released, and gathered again one by one after
  every step. Once the trace is complete, the first fetch also prefetches the parameters next in the trace until
  prefetch_bucket_size (5e7 elements) is reached: for a model whose non-persistent parameters fit, one gather of
  all of them. The gradients are reduce-scattered per bucket, each padded to a multiple of the world (gloo: an
  all_reduce of the whole). The coordinator checks its trace is the same on every rank by broadcasting it (int64;
  zero/utils.py assert_ints_same_as_other_ranks): the parameters' ids and last-use steps, one per parameter use
  (twice the parameters, a forward and a backward use each), and the submodules' ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, BROADCAST, REDUCESCATTER
from ncclcheck.explain.params import Param, describe, modules

REDUCE_BUCKET = 500_000_000
ALIGN = 2  # DeepSpeed's NCCL start-alignment factor
PERSISTENCE = 100_000  # stage 3's param_persistence_threshold (elements)
PREFETCH = 50_000_000  # stage 3's prefetch_bucket_size (elements)


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


def broadcasts(s: Setting) -> list[Shape]:
    """DeepSpeedEngine._broadcast_model (runtime/engine.py): at initialize, every parameter still whole on the rank
    (all of them under stage 1 and 2) is broadcast from rank 0 on its own, viewed as uint8, so NumelIn is its numel
    times the element size. Given a byte dtype the training dtype is unknown: 4- and 2-byte elements are tried."""
    sizes = (4, 2) if s.itemsize == 1 else (s.itemsize,)
    out: list[Shape] = []
    seen: set[tuple[str, int]] = set()
    for size in sizes:  # 4-byte elements first: the same count may be another tensor in 2-byte ones
        for p in s.params:
            generic = re.sub(r"\.(\d+)\.", ".N.", p.name)
            if (generic, p.numel * size) in seen:
                continue
            seen.add((generic, p.numel * size))
            out.append(Shape("zero_broadcast", BROADCAST, p.numel * size, None,
                             f"DeepSpeed's initial broadcast of {generic} {list(p.shape)} as bytes ({p.numel:,} "
                             f"elements × {size} bytes; engine._broadcast_model, one parameter per call)", 0,
                             (p.name,)))
    return out


def shapes(s: Setting) -> list[Shape]:
    params = list(s.params)
    if not params:
        return []
    out: list[Shape] = broadcasts(s)
    cap = s.reduce_bucket_size or REDUCE_BUCKET
    found = buckets(s.table.ready_order(), cap)
    for k, b in enumerate(found):
        out.append(Shape("zero_bucket", ALLREDUCE, sum(p.numel for p in b), None,
                         f"DeepSpeed ZeRO-1/2 gradient bucket {k + 1} of {len(found)} (reduce_bucket_size {cap:g}, "
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
    out += _stage3_trace(s, params, w)
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


def _stage3_trace(s: Setting, params: list[Param], w: int) -> list[Shape]:
    """Stage 3 once its trace is complete: the persistent parameters re-gathered one by one after each step, the
    first fetch's prefetch of the non-persistent ones (in forward order, up to prefetch_bucket_size), and the trace
    check's broadcast of one int64 per parameter use."""
    out: list[Shape] = []
    seen: set[tuple[str, int]] = set()
    for p in params:
        generic = re.sub(r"\.(\d+)\.", ".N.", p.name)
        if p.numel > PERSISTENCE or (generic, p.numel) in seen:
            continue
        seen.add((generic, p.numel))
        shard = ceil_div(p.numel, w)
        out.append(Shape("zero3_gather", ALLGATHER, shard, shard * w,
                         f"DeepSpeed ZeRO-3 persistent parameter {generic} {list(p.shape)} (at most "
                         f"param_persistence_threshold 1e5 elements), gathered alone after each step: ceil(numel/{w})",
                         0, (p.name,)))
    fetched: list[Param] = []
    numel = 0
    for p in params:  # registration order: the forward's fetch order for the models explain builds
        if p.numel <= PERSISTENCE:
            continue
        if numel >= PREFETCH:
            break
        fetched.append(p)
        numel += p.numel
    if len(fetched) > 1:
        shard = sum(ceil_div(p.numel, w) for p in fetched)
        out.append(Shape("zero3_gather", ALLGATHER, shard, shard * w,
                         f"DeepSpeed ZeRO-3 prefetch once the trace is complete: the {len(fetched)} non-persistent "
                         f"parameters (over 1e5 elements) next in the forward, up to prefetch_bucket_size 5e7, in one "
                         f"gather: {describe(params, fetched)}", 0, tuple(p.name for p in fetched)))
    if s.table.trainable:
        trainable = {p.name for p in s.table.trainable}
        shared = sum(1 for _, listed in s.table.tied if listed in trainable)  # a tied weight: one use per module
        uses = 2 * (len(trainable) + shared)
        tied = f" (a tied weight counts once for each module using it: {shared} more)" if shared else ""
        out.append(Shape("zero_metadata", BROADCAST, uses, None,
                         f"DeepSpeed ZeRO-3's trace check: one int64 per parameter use, {len(trainable)} parameters "
                         f"fetched in the forward and again in the backward{tied} (ids, then last-use steps)", 0))
    return out


def submodule_trace(s: Setting, n: int) -> Shape | None:
    """Stage 3's trace check of the submodule order (partitioned_param_coordinator.py record_module, called from
    parameter_offload.py's pre-forward and pre-backward hooks): one int64 per module fetch of a step. Every module
    that holds parameters runs in the forward, and runs again in the backward where its output carries a gradient;
    modules without parameters (activations, rotary embeddings) are hooked too, and the table does not list them.
    So the count lies between M, the modules holding parameters (their ancestors included), and 3M: any count in
    that range is this broadcast for some forward, a weaker candidate that says so."""
    names = {""}
    for p in s.params:
        parts = p.name.split(".")[:-1]
        names.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    m = len(names)
    if not s.params or not m <= n <= 3 * m:
        return None
    return Shape("zero_metadata", BROADCAST, n, None,
                 f"DeepSpeed ZeRO-3's trace check of the submodule order: one int64 per module fetch in a step; "
                 f"{m} modules hold parameters, each fetched in the forward and again in the backward where its "
                 f"output carries a gradient, with the parameterless modules besides: {m} to {3 * m} for this model",
                 1)
