"""Tensors of any strategy: activations, whole parameters, layers, the model, scalars, MoE token exchanges."""

from __future__ import annotations

import re

from ncclcheck.explain.layouts.base import Setting, Shape
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, ALLTOALL, BROADCAST, P2P
from ncclcheck.explain.params import block_of


def activations(s: Setting) -> list[tuple[str, int]]:
    """The common activation tensors the shape allows (the size table lists them too)."""
    m = s.model
    out: list[tuple[str, int]] = []
    b, sq, h = m.batch, m.seq, m.hidden
    if b and sq and h:
        out.append((f"one hidden state B×S×H = {b}×{sq}×{h}", b * sq * h))
        if m.layers:
            out.append((f"output_hidden_states tuple (L+1)×B×S×H = {m.layers + 1}×{b}×{sq}×{h}",
                        (m.layers + 1) * b * sq * h))
    if b and sq and m.vocab:
        out.append((f"logits B×S×V = {b}×{sq}×{m.vocab}", b * sq * m.vocab))
    if b and sq and m.heads:
        out.append((f"attention maps B×heads×S×S = {b}×{m.heads}×{sq}×{sq}", b * m.heads * sq * sq))
        if m.layers:
            out.append((f"output_attentions tuple L×B×heads×S×S = {m.layers}×{b}×{m.heads}×{sq}×{sq}",
                        m.layers * b * m.heads * sq * sq))
    return out


def shapes(s: Setting) -> list[Shape]:
    m, w = s.model, s.world
    out: list[Shape] = []
    for desc, n in activations(s):
        out += [Shape("activation", ALLREDUCE, n, None, desc, 1), Shape("activation", BROADCAST, n, None, desc, 1),
                Shape("activation", P2P, n, None, f"{desc} (pipeline stage hand-off)", 1)]
        if w and w > 1:
            out.append(Shape("activation", ALLGATHER, n, n * w, f"{desc}, one per rank gathered over {w}", 1))
    if m.batch and m.seq and m.hidden and m.experts_per_token and m.experts:
        k = m.experts_per_token
        n = m.batch * m.seq * k * m.hidden
        out.append(Shape("expert_tokens", ALLTOALL, n, None, f"MoE token dispatch B×S×top_k×H = {m.batch}×{m.seq}×"
                                                             f"{k}×{m.hidden} (expert parallelism)", 1))
    out.append(Shape("scalar", ALLREDUCE, 1, None, "barrier (PyTorch runs barrier() as a 1-element all_reduce), a "
                                                   "loss or metric sync, an early-stopping or 'done' flag", 0))
    out.append(Shape("scalar", BROADCAST, 1, None, "one value broadcast: a flag, a seed, an object size", 1))
    if w and w > 1:
        out.append(Shape("scalar", ALLGATHER, 1, w, f"one value per rank gathered over {w}: the size exchange of "
                                                    "all_gather_object / gather_object, or a per-rank flag", 0))
        out.append(Shape("scalar", ALLREDUCE, w, None, f"one value per rank (world size {w}): a per-rank flag or "
                                                       "count vector", 1))
    params = list(s.params)
    seen: set[tuple[str, str, int]] = set()
    for p in params:
        generic = re.sub(r"\.(layers|blocks)\.\d+\.", r".\1.N.", p.name)
        if p.trainable and ("grad", generic, p.numel) not in seen:  # a frozen tensor has no gradient to reduce
            seen.add(("grad", generic, p.numel))
            out.append(Shape("parameter", ALLREDUCE, p.numel, None, f"the gradient of {generic} {list(p.shape)} "
                             "alone", 1, (p.name,)))
        if ("value", generic, p.numel) not in seen:
            seen.add(("value", generic, p.numel))
            out.append(Shape("parameter", BROADCAST, p.numel, None, f"{generic} {list(p.shape)} broadcast", 1,
                             (p.name,)))
    blocks: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for p in params:
        b = block_of(p.name)
        if b:
            blocks.setdefault(b, []).append(p.name)
            sizes[b] = sizes.get(b, 0) + p.numel
    shown: set[int] = set()
    for b, names in blocks.items():
        if sizes[b] in shown:
            continue
        shown.add(sizes[b])
        kind = "vision block" if ".visual." in f".{b}" else "decoder layer"
        out.append(Shape("layer", ALLREDUCE, sizes[b], None, f"the gradients of one whole {kind} ({b}; "
                                                             f"{len(names)} tensors)", 1, tuple(names)))
    if params:
        total = sum(p.numel for p in params)
        every = tuple(p.name for p in params)
        out.append(Shape("model", BROADCAST, total, None, f"the whole model's {len(params)} parameters broadcast "
                                                          "(DDP's initial sync of module states, one buffer)", 1,
                         every))
        out.append(Shape("model", ALLREDUCE, total, None, f"all {len(params)} gradients in one all_reduce", 1, every))
    return out
