"""Tensor parallelism (torch.distributed.tensor.parallel, Megatron-style): activations and parameter shards.

Row-parallel layers all-reduce their B x S x H output in the forward pass, column-parallel layers all-reduce the
input gradient in the backward pass; with sequence parallelism those become an all-gather of B x S/tp x H and a
reduce-scatter of B x S x H. Parameters are split on dim 0 (column-wise) or dim 1 (row-wise) and scattered from
rank 0 when the model is distributed.
"""

from __future__ import annotations

import re

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, REDUCESCATTER, SCATTER

_ROWWISE = ("o_proj.weight", "down_proj.weight", "attn.proj.weight")


def shapes(s: Setting) -> list[Shape]:
    m = s.model
    tp = m.tp or s.world
    out: list[Shape] = []
    if m.batch and m.seq and m.hidden:
        bsh = m.batch * m.seq * m.hidden
        dims = f"{m.batch}×{m.seq}×{m.hidden}"
        out.append(Shape("tp_activation", ALLREDUCE, bsh, None,
                         f"tensor-parallel activation B×S×H = {dims}: a row-parallel layer's output (forward) or a "
                         "column-parallel layer's input gradient (backward)", 0))
        if tp and tp > 1 and m.seq % tp == 0:
            out += [Shape("tp_activation", ALLGATHER, bsh // tp, bsh,
                          f"sequence-parallel activation B×S/tp×H = {m.batch}×{m.seq}/{tp}×{m.hidden}, gathered", 0),
                    Shape("tp_activation", REDUCESCATTER, bsh, bsh // tp,
                          f"sequence-parallel activation B×S×H = {dims}, reduce-scattered over {tp}", 0)]
    if tp and tp > 1:
        seen: set[tuple[str, int]] = set()
        for p in s.params:
            if len(p.shape) not in (1, 2) or "norm" in p.name:
                continue
            rowwise = p.name.endswith(_ROWWISE)
            if rowwise and len(p.shape) == 1:
                continue  # a row-parallel bias is replicated (broadcast whole)
            dim = 1 if rowwise else 0
            shard = ceil_div(p.shape[dim], tp) * (p.shape[1 - dim] if len(p.shape) == 2 else 1)
            generic = _generic(p.name)
            if (generic, shard) in seen:
                continue
            seen.add((generic, shard))
            how = "row-wise (dim 1)" if rowwise else "column-wise (dim 0)"
            out.append(Shape("tp_shard", SCATTER, shard, shard * tp,
                             f"tensor-parallel shard of {generic} {list(p.shape)}, {how} over {tp}", 0, (p.name,)))
    return out


def _generic(name: str) -> str:
    return re.sub(r"\.(\d+)\.", ".N.", name)
