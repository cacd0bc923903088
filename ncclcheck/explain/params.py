"""A model's parameters as transformers registers them (names, shapes, order), and the units frameworks wrap.

The order matters: FSDP flattens and DDP buckets parameters in it. Shapes matter: FSDP2 pads dim 0 and tensor
parallelism splits one dimension. The layouts follow transformers 5 (fused expert tensors in MoE blocks); the tests
compare them with models that transformers built.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.explain.models import Model, Vision


@dataclass(frozen=True)
class Param:
    """One parameter tensor in registration order."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"  # as built; the training dtype (--dtype) decides DDP's bytes
    trainable: bool = True  # requires_grad: frozen parameters are in no gradient bucket

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _attention(m: Model, p: str) -> list[Param]:
    h = m.hidden or 0
    if m.kv_lora_rank and m.qk_rope_dim and m.qk_nope_dim and m.v_head_dim and m.heads:
        qk = m.qk_nope_dim + m.qk_rope_dim
        out = []
        if m.q_lora_rank:
            out += [Param(p + "q_a_proj.weight", (m.q_lora_rank, h)), Param(p + "q_a_layernorm.weight", (m.q_lora_rank,)),
                    Param(p + "q_b_proj.weight", (m.heads * qk, m.q_lora_rank))]
        else:
            out.append(Param(p + "q_proj.weight", (m.heads * qk, h)))
        return out + [Param(p + "kv_a_proj_with_mqa.weight", (m.kv_lora_rank + m.qk_rope_dim, h)),
                      Param(p + "kv_a_layernorm.weight", (m.kv_lora_rank,)),
                      Param(p + "kv_b_proj.weight", (m.heads * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank)),
                      Param(p + "o_proj.weight", (h, m.heads * m.v_head_dim))]
    q, kv = m.q_dim or h, m.kv_dim or h
    out = []
    for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
        out.append(Param(p + f"{name}.weight", (rows, h)))
        if m.qkv_bias:
            out.append(Param(p + f"{name}.bias", (rows,)))
    out.append(Param(p + "o_proj.weight", (h, q)))
    if m.qk_norm:
        hd = m.head_dim or (h // m.heads if m.heads else h)
        out += [Param(p + "q_norm.weight", (hd,)), Param(p + "k_norm.weight", (hd,))]
    return out


def _dense_mlp(p: str, h: int, i: int) -> list[Param]:
    return [Param(p + "gate_proj.weight", (i, h)), Param(p + "up_proj.weight", (i, h)),
            Param(p + "down_proj.weight", (h, i))]


def _moe(m: Model, p: str) -> list[Param]:
    h, e, i = m.hidden or 0, m.experts or 0, m.moe_intermediate or m.intermediate or 0
    gate = [Param(p + "gate.weight", (e, h))]
    experts = [Param(p + "experts.gate_up_proj", (e, 2 * i, h)), Param(p + "experts.down_proj", (e, h, i))]
    style = m.moe_style
    if style == "mixtral":
        return gate + experts
    if style == "qwen2_moe":
        shared = _dense_mlp(p + "shared_expert.", h, m.shared_intermediate) if m.shared_intermediate else []
        tail = [Param(p + "shared_expert_gate.weight", (1, h))] if m.shared_intermediate else []
        return gate + experts + shared + tail
    shared = _dense_mlp(p + "shared_experts.", h, m.shared_intermediate) if m.shared_intermediate else []
    return experts + gate + shared


def _vision(v: Vision, forward: list[Param]) -> list[Param]:
    """The vision tower in registration order; ``forward`` gets it in the order its forward uses it (each block
    runs norm1, attention, norm2, MLP, though it registers both norms first)."""
    p, h, i = "model.visual.", v.hidden, v.intermediate
    out = [Param(p + "patch_embed.proj.weight", (h, v.in_chans, v.temporal_patch, v.patch, v.patch))]
    forward += out
    for n in range(v.depth):
        b = f"{p}blocks.{n}."
        norm1, norm2 = Param(b + "norm1.weight", (h,)), Param(b + "norm2.weight", (h,))
        attn = [Param(b + "attn.qkv.weight", (3 * h, h)), Param(b + "attn.qkv.bias", (3 * h,)),
                Param(b + "attn.proj.weight", (h, h)), Param(b + "attn.proj.bias", (h,))]
        mlp = []
        for name in ("gate_proj", "up_proj"):
            mlp += [Param(b + f"mlp.{name}.weight", (i, h)), Param(b + f"mlp.{name}.bias", (i,))]
        mlp += [Param(b + "mlp.down_proj.weight", (h, i)), Param(b + "mlp.down_proj.bias", (h,))]
        out += [norm1, norm2, *attn, *mlp]
        forward += [norm1, *attn, norm2, *mlp]
    merged = h * v.merge**2
    merger = [Param(p + "merger.ln_q.weight", (h,)), Param(p + "merger.mlp.0.weight", (merged, merged)),
                  Param(p + "merger.mlp.0.bias", (merged,)), Param(p + "merger.mlp.2.weight", (v.out_hidden, merged)),
                  Param(p + "merger.mlp.2.bias", (v.out_hidden,))]
    forward += merger
    return out + merger


# The families whose layout is written here (Llama-style decoders: attention, gated MLP, two RMS norms per layer);
# any other model type needs its table from the model itself (transformers, a checkpoint or a module).
BUILTIN_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "mixtral", "deepseek_v2",
                           "deepseek_v3", "qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_text"})


def built_in(m: Model) -> bool:
    """Whether the built-in layout describes this model: a family above, or a shape given by flags alone."""
    return m.model_type is None or m.model_type in BUILTIN_TYPES


def parameters(m: Model) -> list[Param]:
    """The model's parameters in registration order; empty when the shape is not known well enough or the family
    is not one the built-in layout describes."""
    return _layout(m)[0]


def forward_order(m: Model) -> list[Param]:
    """The parameters in the order the family's forward uses them (transformers' modeling code: the vision tower,
    the embedding, each decoder layer's input_layernorm, attention, post_attention_layernorm and MLP, the final norm,
    the head); their gradients become ready in the reverse. Each layer registers its norms last, so this is not the
    registration order."""
    return _layout(m)[1]


def _layout(m: Model) -> tuple[list[Param], list[Param]]:
    if not (m.hidden and m.layers and (m.intermediate or m.experts) and m.q_dim and m.kv_dim) or not built_in(m):
        return [], []
    h = m.hidden
    forward: list[Param] = []
    out = _vision(m.vision, forward) if m.vision else []
    base = "model.language_model." if m.vision else "model."
    if m.vocab:
        out.append(Param(base + "embed_tokens.weight", (m.vocab, h)))
        forward.append(out[-1])
    for n in range(m.layers):
        p = f"{base}layers.{n}."
        attn = _attention(m, p + "self_attn.")
        mlp = _moe(m, p + "mlp.") if m.is_sparse(n) else _dense_mlp(p + "mlp.", h, m.intermediate or 0)
        norms = [Param(p + "input_layernorm.weight", (h,)), Param(p + "post_attention_layernorm.weight", (h,))]
        out += attn + mlp + norms
        forward += [norms[0], *attn, norms[1], *mlp]
    tail = [Param(base + "norm.weight", (h,))]
    if m.num_labels:
        tail.append(Param("score.weight", (m.num_labels, h)))
        if m.head_bias:
            tail.append(Param("score.bias", (m.num_labels,)))
    elif m.vocab and not m.tie_word_embeddings:
        tail.append(Param("lm_head.weight", (m.vocab, h)))
    return out + tail, forward + tail


def buffers(m: Model) -> list[Param]:
    """The rotary-embedding buffers (inv_freq and original_inv_freq, half the rotary dimension each): DDP
    broadcasts them with the parameters at start and before every forward."""
    if not parameters(m):
        return []
    out: list[Param] = []
    if m.vision and m.vision.heads:
        half = m.vision.hidden // m.vision.heads // 4
        out += [Param("model.visual.rotary_pos_emb.inv_freq", (half,)),
                Param("model.visual.rotary_pos_emb.original_inv_freq", (half,))]
    rope = m.qk_rope_dim if m.kv_lora_rank else (m.head_dim or (m.hidden // m.heads if m.hidden and m.heads else 0))
    base = "model.language_model." if m.vision else "model."
    if rope:
        out += [Param(base + "rotary_emb.inv_freq", (rope // 2,)),
                Param(base + "rotary_emb.original_inv_freq", (rope // 2,))]
    return out


_BLOCK = re.compile(r"^(.*\.(?:layers|blocks)\.\d+)\.")


@functools.lru_cache(maxsize=1 << 16)
def block_of(name: str) -> str | None:
    """The repeated block (``model.layers.3``, ``model.visual.blocks.0``) a parameter belongs to, if any (asked
    for every tensor of every candidate: remembered per name)."""
    mt = _BLOCK.match(name)
    return mt[1] if mt else None


def units(params: Sequence[Param]) -> list[tuple[str, list[Param]]]:
    """The units FSDP wraps when every repeated block is wrapped: each block, then the root holding the rest."""
    blocks: dict[str, list[Param]] = {}
    root: list[Param] = []
    for p in params:
        b = block_of(p.name)
        (blocks.setdefault(b, []) if b else root).append(p)
    return [*blocks.items(), ("", root)]


def modules(params: Sequence[Param]) -> list[tuple[str, list[Param]]]:
    """Parameters grouped by the module that holds them directly (what ZeRO-3 gathers per fetch)."""
    out: dict[str, list[Param]] = {}
    for p in params:
        out.setdefault(p.name.rpartition(".")[0], []).append(p)
    return list(out.items())


def describe(params: Sequence[Param], members: Sequence[Param]) -> str:
    """Name a set of parameters by the whole blocks it holds and what is left over."""
    names = {p.name for p in members}
    by_block = Counter(b for p in params if (b := block_of(p.name)))
    held = Counter(block_of(p.name) for p in members)
    whole = [b for b, count in by_block.items() if held[b] == count]
    kept = set(whole)
    extra = [p.name for p in members if block_of(p.name) not in kept]
    parts = []
    if whole:
        idx = ", ".join(b.rpartition(".")[2] for b in whole)
        kind = "vision block" if "visual" in whole[0] else "decoder layer"
        parts.append(f"{len(whole)} whole {kind}{'s' if len(whole) > 1 else ''} ({idx})")
    if extra:
        parts.append(" + ".join(extra[:3]) + (f" + {len(extra) - 3} more" if len(extra) > 3 else ""))
    return f"{len(names)} tensor{'s' if len(names) > 1 else ''}: " + " + ".join(parts)
