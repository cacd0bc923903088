"""Tensor parallelism (torch.distributed.tensor.parallel, Megatron-style): activations and parameter shards.

Row-parallel layers all-reduce their B x S x H output in the forward pass, column-parallel layers all-reduce the
input gradient in the backward pass; with sequence parallelism those become an all-gather of B x S/tp x H and a
reduce-scatter of B x S x H. When the model is distributed, column-wise layers scatter weight and bias on dim 0,
row-wise layers scatter the weight on dim 1 and broadcast the bias whole (it is replicated); a shard is ceil(dim /
tp) of the split dimension (torch/distributed/tensor/parallel/style.py). Which layer is which comes from the model's
own plan (a transformers config's base_model_tp_plan) where the table has one, else from Llama-style names.
"""

from __future__ import annotations

import re

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, BROADCAST, REDUCESCATTER, SCATTER

_ROWWISE = ("o_proj", "down_proj", "attn.proj")


def _style(s: Setting, name: str, shape: tuple[int, ...]) -> str | None:
    """colwise, rowwise or None (not split) for one parameter."""
    if s.table.tp_plan:
        return s.table.style(name)
    if len(shape) not in (1, 2) or "norm" in name:
        return None
    return "rowwise" if name.rpartition(".")[0].endswith(_ROWWISE) else "colwise"


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
    if not tp or tp < 2:
        return out
    seen: set[tuple[str, str, int]] = set()
    for p in s.params:
        style = _style(s, p.name, p.shape)
        if style is None or not p.shape or len(p.shape) > 2:
            continue
        generic = _generic(p.name)
        if style == "rowwise" and len(p.shape) == 1:
            if ("replicated", generic, p.numel) not in seen:
                seen.add(("replicated", generic, p.numel))
                out.append(Shape("tp_replicated", BROADCAST, p.numel, None,
                                 f"tensor-parallel replicated bias {generic} {list(p.shape)} of a row-wise layer, "
                                 f"broadcast whole to the {tp} ranks", 0, (p.name,)))
            continue
        dim = 1 if style == "rowwise" else 0
        shard = ceil_div(p.shape[dim], tp) * (p.shape[1 - dim] if len(p.shape) == 2 else 1)
        if ("shard", generic, shard) in seen:
            continue
        seen.add(("shard", generic, shard))
        how = "row-wise (dim 1)" if dim else "column-wise (dim 0)"
        out.append(Shape("tp_shard", SCATTER, shard, shard * tp,
                         f"tensor-parallel shard of {generic} {list(p.shape)}, {how} over {tp}", 0, (p.name,)))
    return out


def _generic(name: str) -> str:
    return re.sub(r"\.(\d+)\.", ".N.", name)
