"""Model shapes: the dataclass, presets from public config numbers, and a bounded reader for Hugging Face configs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any

from ncclcheck.explain.counts import ExplainError

MAX_DIM = 2**40  # no size, layer or vocabulary count of a real model comes near it; a bigger one is a broken config
CONFIG_LIMIT = 4 * 2**20  # bytes; real config.json files are a few kB, tokenizer-sized ones under 1 MiB


@dataclass(frozen=True)
class Vision:
    """A Qwen2.5-VL style vision tower: patch embedding, ``depth`` blocks, a patch merger into the text width."""

    depth: int
    hidden: int
    intermediate: int
    out_hidden: int
    heads: int = 16
    patch: int = 14
    temporal_patch: int = 2
    merge: int = 2
    in_chans: int = 3


@dataclass(frozen=True)
class Model:
    """The shape facts a count can be matched against; every field may be unknown."""

    name: str | None = None
    model_type: str | None = None
    batch: int | None = None
    seq: int | None = None
    hidden: int | None = None
    layers: int | None = None
    vocab: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    world_size: int | None = None
    tp: int | None = None
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    # Mixture of experts: routed experts, their width, shared experts, which layers stay dense.
    experts: int | None = None
    moe_intermediate: int | None = None
    shared_intermediate: int | None = None
    first_dense: int = 0
    dense_layers: tuple[int, ...] = ()
    sparse_step: int = 1
    experts_per_token: int | None = None
    # Multi-head latent attention (DeepSeek V2/V3).
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_dim: int | None = None
    qk_nope_dim: int | None = None
    v_head_dim: int | None = None
    vision: Vision | None = None
    num_labels: int | None = None  # a sequence-classification head replaces the LM head
    head_bias: bool = False
    dtype: str | None = None  # the config's torch_dtype: what the weights are trained in, unless the user says
    unbuilt: str | None = None  # why the config's own model could not be built (the built-in layouts answer)

    @property
    def kv_dim(self) -> int | None:
        hd = self.head_dim or (self.hidden // self.heads if self.hidden and self.heads else None)
        kv = self.kv_heads or self.heads
        return kv * hd if kv and hd else None

    @property
    def q_dim(self) -> int | None:
        if self.head_dim and self.heads:
            return self.heads * self.head_dim
        return self.hidden

    @property
    def moe_style(self) -> str | None:
        """Which family's MoE block layout applies (parameter names and order differ)."""
        if not self.experts:
            return None
        t = self.model_type or ""
        for family in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek"):
            if t.startswith(family):
                return family
        return "qwen3_moe"

    def is_sparse(self, layer: int) -> bool:
        """Whether decoder layer ``layer`` holds experts (the families' own rules)."""
        if not self.experts or layer in self.dense_layers or layer < self.first_dense:
            return False
        return (layer + 1) % max(self.sparse_step, 1) == 0


def merge(base: Model, **overrides: Any) -> Model:
    """Flags override the config: only the values given replace the base's."""
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


_QWEN25VL_7B_VISION = Vision(depth=32, hidden=1280, intermediate=3420, out_hidden=3584)

# Public configs (config.json on the Hugging Face Hub).
PRESETS = {
    "qwen2.5-7b": Model("Qwen2.5-7B", "qwen2", hidden=3584, layers=28, vocab=152064, heads=28, kv_heads=4,
                        head_dim=128, intermediate=18944, qkv_bias=True),
    "qwen2.5-vl-7b": Model("Qwen2.5-VL-7B", "qwen2_5_vl", hidden=3584, layers=28, vocab=152064, heads=28, kv_heads=4,
                           head_dim=128, intermediate=18944, qkv_bias=True, vision=_QWEN25VL_7B_VISION),
    "qwen3-8b": Model("Qwen3-8B", "qwen3", hidden=4096, layers=36, vocab=151936, heads=32, kv_heads=8, head_dim=128,
                      intermediate=12288, qk_norm=True),
    "qwen3-30b-a3b": Model("Qwen3-30B-A3B", "qwen3_moe", hidden=2048, layers=48, vocab=151936, heads=32, kv_heads=4,
                           head_dim=128, intermediate=6144, qk_norm=True, experts=128, moe_intermediate=768,
                           experts_per_token=8),
    "llama-3-8b": Model("Llama-3-8B", "llama", hidden=4096, layers=32, vocab=128256, heads=32, kv_heads=8,
                        head_dim=128, intermediate=14336),
    "llama-3-70b": Model("Llama-3-70B", "llama", hidden=8192, layers=80, vocab=128256, heads=64, kv_heads=8,
                         head_dim=128, intermediate=28672),
    "mistral-7b": Model("Mistral-7B-v0.1", "mistral", hidden=4096, layers=32, vocab=32000, heads=32, kv_heads=8,
                        head_dim=128, intermediate=14336),
    "mixtral-8x7b": Model("Mixtral-8x7B", "mixtral", hidden=4096, layers=32, vocab=32000, heads=32, kv_heads=8,
                          head_dim=128, intermediate=14336, experts=8, moe_intermediate=14336, experts_per_token=2),
    "deepseek-v3": Model("DeepSeek-V3", "deepseek_v3", hidden=7168, layers=61, vocab=129280, heads=128, kv_heads=128,
                         intermediate=18432, experts=256, moe_intermediate=2048, shared_intermediate=2048,
                         first_dense=3, experts_per_token=8, q_lora_rank=1536, kv_lora_rank=512, qk_rope_dim=64,
                         qk_nope_dim=128, v_head_dim=128),
}

_BIAS_MODEL_TYPES = {"qwen2", "qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_moe"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe"}


def _read_bounded(path: str) -> str:
    """The config's text, refusing anything larger than a config can be (devices, FIFOs and huge files included)."""
    try:
        with open(path, "rb") as f:
            data = f.read(CONFIG_LIMIT + 1)
    except OSError as exc:
        raise ExplainError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > CONFIG_LIMIT:
        raise ExplainError(f"{path}: larger than {CONFIG_LIMIT // 2**20} MiB, not a model config")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ExplainError(f"{path}: not UTF-8 text, not a model config") from None


def read_config(path: str) -> tuple[dict, str]:
    """A Hugging Face ``config.json`` (or the folder holding one), parsed, with the file's path."""
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        cfg = json.loads(_read_bounded(path))
    except json.JSONDecodeError as exc:
        raise ExplainError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ExplainError(f"{path}: expected a JSON object")
    return cfg, path


def model_from_config(path: str) -> Model:
    """Read a Hugging Face ``config.json``; VL configs keep the language model under ``text_config``."""
    cfg, path = read_config(path)
    return model_from_dict(cfg, path)


_DTYPES = {"bfloat16", "float16", "float32", "float64"}


def _config_dtype(*dicts: dict) -> str | None:
    """The config's ``torch_dtype`` (``dtype`` since transformers 4.56), where it names a floating-point type."""
    for d in dicts:
        for k in ("torch_dtype", "dtype"):
            v = d.get(k)
            if isinstance(v, str) and v.removeprefix("torch.") in _DTYPES:
                return v.removeprefix("torch.")
    return None


def model_from_dict(cfg: dict, source: str) -> Model:
    """The shape facts of a parsed config; ``source`` names it in errors."""
    text = cfg.get("text_config") or cfg.get("llm_config") or cfg.get("language_config") or {}
    merged = {**cfg, **text} if isinstance(text, dict) else cfg

    def num(key: str, d: dict = merged) -> int | None:
        v = d.get(key)
        if v is None or isinstance(v, (list, dict)):
            return None  # a value per stage (Swin's num_heads, depths) or one of transformers' own JSON objects
        if v == 0 and type(v) is int:
            return None  # unset, for transformers to derive (GLM-5 Next's head_dim 0 builds)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ExplainError(f"{source}: {key} must be a positive integer, not {v!r}")
        if v > MAX_DIM:
            raise ExplainError(f"{source}: {key} = {v} is larger than any model's dimension (at most 2^40)")
        return v

    model_type = str(cfg.get("model_type") or merged.get("model_type") or "")
    bias = merged.get("attention_bias")
    archs = cfg.get("architectures") or []
    classify = any(isinstance(a, str) and a.endswith("ForSequenceClassification") for a in archs)
    labels = num("num_labels") or (len(cfg["id2label"]) if isinstance(cfg.get("id2label"), dict) else None)
    experts = num("num_local_experts") or num("num_experts") or num("n_routed_experts")
    shared = num("shared_expert_intermediate_size")
    if shared is None and (n_shared := num("n_shared_experts")) and (moe := num("moe_intermediate_size")):
        shared = n_shared * moe
    dense = merged.get("mlp_only_layers") or []
    vision = None
    vc = cfg.get("vision_config")
    if isinstance(vc, dict) and model_type.startswith("qwen2_5_vl"):
        vision = Vision(depth=num("depth", vc) or 0, hidden=num("hidden_size", vc) or 0,
                        intermediate=num("intermediate_size", vc) or 0, heads=num("num_heads", vc) or 16,
                        out_hidden=num("out_hidden_size", vc) or num("hidden_size") or 0,
                        patch=num("patch_size", vc) or 14, temporal_patch=num("temporal_patch_size", vc) or 2,
                        merge=num("spatial_merge_size", vc) or 2,
                        in_chans=num("in_chans", vc) or num("in_channels", vc) or 3)
        if not (vision.depth and vision.hidden and vision.intermediate):
            vision = None
    return Model(
        name=merged.get("_name_or_path") or model_type or source,
        model_type=model_type or None,
        hidden=num("hidden_size") or num("n_embd") or num("d_model"),  # GPT-2 and T5 spellings too
        layers=num("num_hidden_layers") or num("n_layer") or num("num_layers"),
        vocab=num("vocab_size"),
        heads=num("num_attention_heads") or num("n_head") or num("num_heads"),
        kv_heads=num("num_key_value_heads"),
        head_dim=num("head_dim") or num("d_kv"),
        intermediate=num("intermediate_size") or num("n_inner") or num("d_ff"),
        tie_word_embeddings=bool(merged.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))),
        qkv_bias=bool(bias) if bias is not None else model_type in _BIAS_MODEL_TYPES,
        qk_norm=model_type in _QK_NORM_TYPES,
        experts=experts,
        moe_intermediate=num("moe_intermediate_size") or (num("intermediate_size") if experts else None),
        shared_intermediate=shared,
        first_dense=merged.get("first_k_dense_replace") or 0,
        dense_layers=tuple(x for x in dense if isinstance(x, int)),
        sparse_step=merged.get("decoder_sparse_step") or 1,
        experts_per_token=num("num_experts_per_tok"),
        q_lora_rank=num("q_lora_rank"),
        kv_lora_rank=num("kv_lora_rank"),
        qk_rope_dim=num("qk_rope_head_dim"),
        qk_nope_dim=num("qk_nope_head_dim"),
        v_head_dim=num("v_head_dim"),
        vision=vision,
        num_labels=labels if classify else None,
        dtype=_config_dtype(cfg, text if isinstance(text, dict) else {}),
    )
