"""2-D tensor parallel x FSDP2: fully_shard over the data-parallel dimension of a model already split by TP.

The usual 2-D recipe (torch's tensor-parallel tutorial, torchtitan): a DeviceMesh (dp, tp), parallelize_module over
mesh["tp"] with the model's plan, then fully_shard on each block and the root over mesh["dp"]. fully_shard then
shards each parameter's TP-local tensor again, on dim 0 over the dp ranks (torch/distributed/fsdp/_fully_shard/
_fsdp_param.py, FSDPParam._init_sharded_param: a DTensor parameter's local tensor is what gets chunked, padded to
a multiple of the dp size). So one unit's all-gather in the dp group carries, per rank, the sum over its
parameters of ceil(local dim 0 / dp) x the other local dims, where the local shape is the TP shard: a column-wise
weight or bias ceil(dim 0 / tp) rows, a row-wise weight ceil(dim 1 / tp) columns, a row-wise bias and every
parameter the plan leaves alone (embeddings, norms) whole. The gradients are reduce-scattered in the dp group over
the same units; the TP activations and parameter shards move in the tp group as under TP alone (layouts/tp.py).
"""

from __future__ import annotations

import math

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.layouts.fsdp import unit_sets
from ncclcheck.explain.layouts.tp import _base_style, _style
from ncclcheck.explain.ops import ALLGATHER, REDUCESCATTER
from ncclcheck.explain.params import Param, describe


def tp_local(s: Setting, p: Param, tp: int) -> tuple[int, ...]:
    """The shape of one rank's TP shard of a parameter (rank 0's, the largest where a dimension splits unevenly)."""
    style = _base_style(_style(s, p.name, p.shape)) if p.shape and len(p.shape) <= 2 else None
    if style == "colwise":
        return (ceil_div(p.shape[0], tp), *p.shape[1:])
    if style == "rowwise" and len(p.shape) == 2:
        return (p.shape[0], ceil_div(p.shape[1], tp))
    return tuple(p.shape)


def dp_shard(local: tuple[int, ...], dp: int) -> int:
    """fully_shard's share of a TP-local tensor: dim 0 padded to a multiple of the dp size."""
    return ceil_div(local[0], dp) * math.prod(local[1:]) if local else 1


def shapes(s: Setting) -> list[Shape]:
    tp, w = s.model.tp, s.world
    if not tp or tp < 2 or not w or not s.params:
        return []
    dps = sorted({d for d in (w, w // tp if w % tp == 0 else 0) if d >= 2})
    out: list[Shape] = []
    seen: set[tuple] = set()
    for name, ps in unit_sets(s):
        if not ps:
            continue
        local = [tp_local(s, p, tp) for p in ps]
        whole = all(shape == tuple(p.shape) for p, shape in zip(ps, local, strict=True))
        what = f"block {name}" if name else f"the root unit ({describe(s.params, ps)})"
        grads = [(p, shape) for p, shape in zip(ps, local, strict=True) if p.trainable]
        for dp in dps:
            key = (tuple(p.name for p in ps), dp)
            if key in seen or whole and dp == w:  # nothing TP splits, over the op's group: FSDP2's own unit
                continue
            seen.add(key)
            shard = sum(dp_shard(shape, dp) for shape in local)
            how = ("nothing of it split by TP, sharded over" if whole else
                   "each parameter's TP shard sharded again over")
            out.append(Shape("fsdp2_unit", ALLGATHER, shard, shard * dp,
                             f"FSDP2 unit of {what} over TP (tp={tp}): {how} the {dp} data-parallel ranks, gathered "
                             "in the dp group", 0, key[0]))
            reduced = sum(dp_shard(shape, dp) for _, shape in grads)
            if reduced:
                out.append(Shape("fsdp2_unit", REDUCESCATTER, reduced * dp, reduced,
                                 f"FSDP2 gradients of {what} over TP (tp={tp}): the TP-local gradients "
                                 f"reduce-scattered over the {dp} data-parallel ranks", 0,
                                 tuple(p.name for p, _ in grads)))
    return out
