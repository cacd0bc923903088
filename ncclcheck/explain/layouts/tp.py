"""Tensor parallelism (torch.distributed.tensor.parallel, Megatron-style): activations and parameter shards.

Row-parallel layers all-reduce their B x S x H output in the forward pass, column-parallel layers all-reduce the
input gradient in the backward pass; with sequence parallelism those become an all-gather of B x S/tp x H and a
reduce-scatter of B x S x H. When the model is distributed, column-wise layers scatter weight and bias on dim 0,
row-wise layers scatter the weight on dim 1 and broadcast the bias whole (it is replicated); a shard is ceil(dim /
tp) of the split dimension (torch/distributed/tensor/parallel/style.py). Which layer is which comes from the model's
own plan (a transformers config's base_model_tp_plan) where the table has one, else from Llama-style names. The
plan's other styles: ``colwise_gather_output`` gathers the layer's output (an all-gather of B x S x out/tp, as
ColwiseParallel(output_layouts=Replicate())), ``rowwise_split_input`` takes a whole input and splits it locally, so
its backward gathers the input gradient (B x S x in/tp; RowwiseParallel(input_layouts=Replicate())),
``packed_colwise`` splits a fused tensor (gate and up) column-wise, ``replicated_with_grad_allreduce`` keeps the
parameter whole and all-reduces its gradient; styles that keep a parameter local (``moe_tp_experts``,
``local_*``, sequence parallel norms) move no shard of it.
"""

from __future__ import annotations

import re

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, BROADCAST, REDUCESCATTER, SCATTER

_ROWWISE = ("o_proj", "down_proj", "attn.proj")


def _style(s: Setting, name: str, shape: tuple[int, ...]) -> str | None:
    """The plan's style for one parameter (colwise, rowwise, colwise_gather_output, ...) or None (not split)."""
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
        full = _style(s, p.name, p.shape)
        if full == "replicated_with_grad_allreduce" and p.trainable:
            generic = _generic(p.name)
            if ("grad", generic, p.numel) not in seen:
                seen.add(("grad", generic, p.numel))
                out.append(Shape("tp_replicated", ALLREDUCE, p.numel, None,
                                 f"tensor-parallel replicated parameter {generic} {list(p.shape)}: its gradient "
                                 f"all-reduced over the {tp} ranks (replicated_with_grad_allreduce)", 0, (p.name,)))
            continue
        style = _base_style(full)
        if style is None or not p.shape or len(p.shape) > 2:
            continue
        generic = _generic(p.name)
        out += _gathered(s, full, p, tp, seen)
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


def _base_style(style: str | None) -> str | None:
    """colwise or rowwise for the styles that shard a parameter, None for those that keep it whole or local."""
    if style in ("colwise", "colwise_gather_output", "packed_colwise"):
        return "colwise"
    if style in ("rowwise", "rowwise_split_input"):
        return "rowwise"
    return None


def _gathered(s: Setting, style: str | None, p, tp: int, seen: set) -> list[Shape]:
    """The activation all-gather a plan style adds: a gathered output (forward) or a gathered input gradient
    (backward), B x S x d/tp per rank."""
    m = s.model
    if not (m.batch and m.seq) or len(p.shape) != 2 or not p.name.endswith("weight"):
        return []
    if style == "colwise_gather_output":
        d, what = p.shape[0], "output gathered (colwise_gather_output), forward"
    elif style == "rowwise_split_input":
        d, what = p.shape[1], "input gradient gathered (rowwise_split_input), backward"
    else:
        return []
    if d % tp or ("gather", _generic(p.name), d) in seen:
        return []
    seen.add(("gather", _generic(p.name), d))
    bs = m.batch * m.seq
    return [Shape("tp_activation", ALLGATHER, bs * d // tp, bs * d,
                  f"tensor-parallel activation of {_generic(p.name).rpartition('.')[0]}: B×S×{d}/tp = "
                  f"{m.batch}×{m.seq}×{d}/{tp}, {what}", 0, (p.name,))]
