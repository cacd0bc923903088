"""Ground truth for `ncclcheck explain`: train small real models under one strategy and record every collective.

    torchrun --nproc-per-node 4 tools/explain_runs.py --strategy fsdp2 --out DIR        # GPUs (NCCL) or CPU (gloo)
    python tools/explain_runs.py --collect DIR FIXTURE_DIR                              # one fixture per run

Models are built from transformers configs of many families (random weights, nothing downloaded) and trained for a
few steps under DDP (default caps or ``bucket_cap_mb=1``), FSDP1 (``use_orig_params`` False or True), FSDP2
(``fully_shard``) or tensor parallelism (the config's own plan). Per rank and model it writes
DIR/<strategy>-<model>-w<W>.rank<R>.json: the config, the parameters and buffers as registered, the layout the
framework chose (DDP buckets seen by a comm hook, FSDP1 flat parameters with their padding, FSDP2 units, the TP plan)
and every collective the flight recorder kept (NCCL and, since torch 2.8, gloo). `--collect` folds the per-rank
files into one fixture per run and labels each collective with what it carried, read from the layout alone.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import pickle
import re
import sys
import time
import traceback

STRATEGIES = ("ddp", "ddp_cap1", "ddp_unused", "ddp_unused_cap1", "ddp_static", "fsdp1", "fsdp1_orig", "fsdp1_hybrid", "fsdp2",
              "fsdp2_noreshard", "hsdp", "tp")
# HSDP needs a 2-D mesh (replicate x shard): world 4 as 2 x 2.
MESH_STRATEGIES = ("hsdp", "fsdp1_hybrid")
# TP needs the config's plan to be plain column/row-wise splits that run on local shards.
TP_MODELS = ("llama", "starcoder2", "gemma3", "qwen3")
STEPS = 3  # the first recordings; --steps 2 for later ones (iteration 0 and the rebuilt buckets)
BATCH, SEQ = 2, 24
# Models that are not a bare transformers class: a PEFT LoRA adapter on a small Llama, a partly frozen Llama (whole
# units and part of one), and a user's CNN whose blocks sit in nn.Sequential stages (tests/data/explain/module).
LORA = {"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"], "lora_dropout": 0.0, "bias": "none"}
FREEZE = ["model.embed_tokens.*", "model.layers.0.*", "model.layers.1.self_attn.*"]
MODULE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "explain",
                          "module")
# A user's wrap policy as written (explain --wrap-policy reads it): FSDP1 wraps with torch's
# transformer_auto_wrap_policy through functools.partial, FSDP2 calls fully_shard on each module of those classes
# (as Accelerate does for a transformer-based policy); here the MLPs, not the decoder layers the model names.
USER_MODELS = ("ConvNet", "TwiceNet", "StageNet")  # the users' own modules: a classifier's loss on (x, y), float32 parameters
WRAP_POLICY = "functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaMLP})"
EXTRAS = {"lora": {"adapter": LORA}, "frozen": {"freeze": FREEZE},
          "convnet": {"module": "convnet:build", "block_classes": ["Bottleneck"]},
          "twice": {"module": "twicenet:build", "block_classes": ["Block"]},
          "stagenet": {"module": "stagenet:build", "block_classes": ["Block"]},
          "wrapped": {"wrap_policy": WRAP_POLICY, "block_classes": ["LlamaMLP"]}}


def configs():
    """Small configs of real families; odd sizes so that sums coincide rarely; heads divisible by 4 for TP."""
    import transformers as tf

    dec = {"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 34}
    out = {
        "llama": ("LlamaForCausalLM", tf.LlamaConfig(hidden_size=248, intermediate_size=689, vocab_size=32003,
                                                     tie_word_embeddings=False, **dec)),
        "llama_tied_bias": ("LlamaForCausalLM", tf.LlamaConfig(hidden_size=200, intermediate_size=515, vocab_size=9001,
                                                               tie_word_embeddings=True, attention_bias=True,
                                                               **{**dec, "head_dim": 26})),
        "llama_cls": ("LlamaForSequenceClassification", tf.LlamaConfig(hidden_size=152, intermediate_size=401,
                                                                       vocab_size=7001, num_labels=3, pad_token_id=0,
                                                                       **{**dec, "head_dim": 18})),
        "gemma3": ("Gemma3ForCausalLM", tf.Gemma3TextConfig(hidden_size=232, intermediate_size=611, vocab_size=8009,
                                                            sliding_window=16, **{**dec, "head_dim": 30})),
        "qwen3": ("Qwen3ForCausalLM", tf.Qwen3Config(hidden_size=160, intermediate_size=436, vocab_size=5009,
                                                     tie_word_embeddings=True, **{**dec, "head_dim": 20})),
        "olmo2": ("Olmo2ForCausalLM", tf.Olmo2Config(hidden_size=216, intermediate_size=577, vocab_size=6007,
                                                     tie_word_embeddings=False, **{**dec, "head_dim": 28})),
        "starcoder2": ("Starcoder2ForCausalLM", tf.Starcoder2Config(hidden_size=232, intermediate_size=613,
                                                                    vocab_size=5003, **{**dec, "head_dim": 30})),
        "bert": ("BertForSequenceClassification", tf.BertConfig(hidden_size=136, intermediate_size=353, vocab_size=4001,
                                                               num_hidden_layers=2, num_attention_heads=4,
                                                               max_position_embeddings=64, num_labels=5)),
        "gpt2": ("GPT2LMHeadModel", tf.GPT2Config(n_embd=128, n_inner=331, n_layer=2, n_head=4, vocab_size=3001,
                                                  n_positions=64)),
        "t5": ("T5ForConditionalGeneration", tf.T5Config(d_model=120, d_ff=317, d_kv=30, num_heads=4, num_layers=2,
                                                         num_decoder_layers=2, vocab_size=2003,
                                                         decoder_start_token_id=0)),
        "phi3": ("Phi3ForCausalLM", tf.Phi3Config(hidden_size=192, intermediate_size=509, vocab_size=32064,
                                                  num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
                                                  pad_token_id=0, tie_word_embeddings=False)),
        "qwen2moe": ("Qwen2MoeForCausalLM", tf.Qwen2MoeConfig(hidden_size=192, intermediate_size=512,
                                                              moe_intermediate_size=96, shared_expert_intermediate_size=384,
                                                              num_experts=6, num_experts_per_tok=2, num_hidden_layers=2,
                                                              num_attention_heads=4, num_key_value_heads=2,
                                                              vocab_size=12000, decoder_sparse_step=1, mlp_only_layers=[],
                                                              tie_word_embeddings=False)),
        "olmoe": ("OlmoeForCausalLM", tf.OlmoeConfig(hidden_size=176, intermediate_size=300, num_experts=5,
                                                     num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                                                     num_key_value_heads=4, vocab_size=3007)),
    }
    small = {**dec, "head_dim": 22}
    out.update({
        "jamba": ("JambaForCausalLM", tf.JambaConfig(
            hidden_size=120, intermediate_size=317, vocab_size=3001, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
            expert_layer_offset=1, num_experts=4, num_experts_per_tok=2, mamba_d_state=8, mamba_d_conv=4,
            mamba_expand=2, mamba_dt_rank=8, tie_word_embeddings=False)),
        "bart": ("BartForConditionalGeneration", tf.BartConfig(
            d_model=112, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=293, decoder_ffn_dim=293, vocab_size=2011, max_position_embeddings=64)),
        "vit": ("ViTForImageClassification", tf.ViTConfig(
            hidden_size=104, intermediate_size=277, num_hidden_layers=2, num_attention_heads=4, image_size=32,
            patch_size=8, num_labels=3)),
        "whisper": ("WhisperForConditionalGeneration", tf.WhisperConfig(
            d_model=96, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=259, decoder_ffn_dim=259, vocab_size=1009, num_mel_bins=16, max_source_positions=16,
            max_target_positions=32, decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
        "deepseekv3": ("DeepseekV3ForCausalLM", tf.DeepseekV3Config(
            hidden_size=144, intermediate_size=389, moe_intermediate_size=67, n_routed_experts=4, n_shared_experts=1,
            num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=4, q_lora_rank=48, kv_lora_rank=32, qk_rope_head_dim=8,
            qk_nope_head_dim=16, v_head_dim=16, vocab_size=2003, tie_word_embeddings=False)),
        "lora": ("LlamaForCausalLM", tf.LlamaConfig(hidden_size=176, intermediate_size=467, vocab_size=4001,
                                                    tie_word_embeddings=False, **small)),
        "frozen": ("LlamaForCausalLM", tf.LlamaConfig(hidden_size=176, intermediate_size=467, vocab_size=4001,
                                                      tie_word_embeddings=False, **small)),
        "convnet": ("ConvNet", tf.PretrainedConfig()),
        # A user's model that calls its first block twice (tests/data/explain/module/twicenet.py), issue 43.
        "twice": ("TwiceNet", tf.PretrainedConfig()),
        # A user's model whose registration order is not what its names suggest (stagenet.py), issue 43 §2.
        "stagenet": ("StageNet", tf.PretrainedConfig()),
        "wrapped": ("LlamaForCausalLM", tf.LlamaConfig(hidden_size=184, intermediate_size=503, vocab_size=5003,
                                                       tie_word_embeddings=False, **small)),
        # Issue 43's families: a soft-capped tied decoder, a Mixtral MoE, a pure state-space model.
        "gemma2": ("Gemma2ForCausalLM", tf.Gemma2Config(
            hidden_size=168, intermediate_size=445, vocab_size=4003, sliding_window=16, final_logit_softcapping=30.0,
            attn_logit_softcapping=50.0, tie_word_embeddings=True, **{**dec, "head_dim": 22})),
        "mixtral": ("MixtralForCausalLM", tf.MixtralConfig(
            hidden_size=152, intermediate_size=397, vocab_size=3011, num_local_experts=4, num_experts_per_tok=2,
            tie_word_embeddings=False, **{**dec, "head_dim": 18})),
        "mamba": ("MambaForCausalLM", tf.MambaConfig(
            hidden_size=136, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4, vocab_size=2003,
            tie_word_embeddings=True)),
        # More of issue 43's families: a classifier on an encoder with relative positions (DeBERTa-v2: a pooler and a
        # head beside the encoder layers), a parallel-residual decoder with fused QKV (GPT-NeoX), multi-query
        # attention (Falcon), a pure SSD state-space model (Mamba-2, whose config holds infinity), an MoE with
        # per-head norms (Qwen3-MoE) and a hierarchical vision model with per-stage lists (Swin).
        "deberta_v2": ("DebertaV2ForSequenceClassification", tf.DebertaV2Config(
            hidden_size=136, intermediate_size=353, vocab_size=3001, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, relative_attention=True, position_buckets=16, num_labels=3,
            pos_att_type=["p2c", "c2p"])),
        "gpt_neox": ("GPTNeoXForCausalLM", tf.GPTNeoXConfig(
            hidden_size=144, intermediate_size=389, vocab_size=3007, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, use_parallel_residual=True, tie_word_embeddings=False)),
        "falcon": ("FalconForCausalLM", tf.FalconConfig(
            hidden_size=160, vocab_size=2011, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
            new_decoder_architecture=False, parallel_attn=True, bias=False)),
        "mamba2": ("Mamba2ForCausalLM", tf.Mamba2Config(
            hidden_size=64, expand=2, num_heads=16, head_dim=8, n_groups=1, state_size=8, num_hidden_layers=2,
            vocab_size=2003, chunk_size=16, tie_word_embeddings=True)),
        "qwen3moe": ("Qwen3MoeForCausalLM", tf.Qwen3MoeConfig(
            hidden_size=144, intermediate_size=389, moe_intermediate_size=71, num_experts=4, num_experts_per_tok=2,
            decoder_sparse_step=1, mlp_only_layers=[], vocab_size=3011, tie_word_embeddings=False,
            **{**dec, "head_dim": 18})),
        "swin": ("SwinForImageClassification", tf.SwinConfig(
            image_size=32, patch_size=4, num_channels=3, embed_dim=24, depths=[1, 2], num_heads=[2, 4],
            window_size=4, num_labels=5)),
    })
    if hasattr(tf, "Qwen2_5_VLConfig"):
        out["qwen25vl"] = ("Qwen2_5_VLForConditionalGeneration", tf.Qwen2_5_VLConfig(
            text_config={"hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 9000,
                         "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]}, "tie_word_embeddings": False},
            vision_config={"depth": 2, "hidden_size": 80, "intermediate_size": 176, "num_heads": 4,
                           "out_hidden_size": 128, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                           "window_size": 56, "fullatt_block_indexes": [1], "in_chans": 3},
            image_token_id=8990, video_token_id=8991, vision_start_token_id=8992, vision_end_token_id=8993,
            tie_word_embeddings=False))
    for cls, cfg in out.values():
        cfg.architectures = [cls]
        if hasattr(cfg, "_experts_implementation"):
            cfg._experts_implementation = "eager"  # grouped_mm needs 16-byte strides, which FSDP2 shards lack
    return out


def build(name, cls, cfg):
    """The model as trained: a transformers class, with a LoRA adapter or frozen parameters where EXTRAS says, or
    the user's module."""
    import fnmatch
    import importlib

    import transformers

    extra = EXTRAS.get(name, {})
    if "module" in extra:
        sys.path.insert(0, MODULE_DIR)
        mod, _, fn = extra["module"].partition(":")
        return getattr(importlib.import_module(mod), fn)()
    model = getattr(transformers, cls)(cfg)
    if "adapter" in extra:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(**extra["adapter"]))
    for n, p in model.named_parameters():
        if any(fnmatch.fnmatchcase(n, pat) for pat in extra.get("freeze", ())):
            p.requires_grad_(False)
    return model


def batch(cls, cfg, device, step, rank):
    """A batch for one step; the same on every rank under TP, per rank otherwise."""
    import torch

    g = torch.Generator().manual_seed(1000 * step + (0 if rank is None else rank))
    if cls.startswith("Qwen2_5_VL"):
        v, t = cfg.vision_config, cfg.text_config
        grid = (1, 4, 4)  # t, h, w patches: 16 patches, 4 tokens after the 2x2 merge
        tokens = grid[0] * grid[1] * grid[2] // v.spatial_merge_size**2
        pix = torch.randn(BATCH * grid[0] * grid[1] * grid[2], v.in_chans * v.temporal_patch_size * v.patch_size**2,
                          generator=g)
        text = torch.randint(0, t.vocab_size - 16, (BATCH, SEQ - tokens - 2), generator=g)
        img = torch.tensor([cfg.vision_start_token_id] + [cfg.image_token_id] * tokens + [cfg.vision_end_token_id])
        ids = torch.cat([img.expand(BATCH, -1), text], dim=1)
        return {"input_ids": ids.to(device), "labels": ids.to(device), "pixel_values": pix.to(device),
                "image_grid_thw": torch.tensor([grid] * BATCH).to(device)}
    if cls == "ConvNet":
        return {"x": torch.randn(BATCH, 3, 16, 16, generator=g).to(device),
                "y": torch.randint(0, 7, (BATCH,), generator=g).to(device)}
    if cls in ("TwiceNet", "StageNet"):
        return {"x": torch.randint(0, 2003, (BATCH, SEQ), generator=g).to(device),
                "y": torch.randint(0, 7, (BATCH,), generator=g).to(device)}
    if cls.endswith("ForImageClassification"):
        pix = torch.randn(BATCH, cfg.num_channels, cfg.image_size, cfg.image_size, generator=g)
        return {"pixel_values": pix.to(device), "labels": torch.randint(0, cfg.num_labels, (BATCH,), generator=g)}
    if cls.startswith("Whisper"):
        feats = torch.randn(BATCH, cfg.num_mel_bins, 2 * cfg.max_source_positions, generator=g)
        labels = torch.randint(3, cfg.vocab_size, (BATCH, 8), generator=g)
        return {"input_features": feats.to(device), "labels": labels.to(device)}
    ids = torch.randint(1, cfg.vocab_size, (BATCH, SEQ), generator=g).to(device)
    if cls.endswith("ForSequenceClassification"):
        return {"input_ids": ids, "labels": torch.randint(0, cfg.num_labels, (BATCH,), generator=g).to(device)}
    return {"input_ids": ids, "labels": ids}


def blocks(model, classes=None):
    """The blocks each strategy wraps: modules of the classes given (a user's wrap policy) or the model names as not
    to be split."""
    names = set(classes or getattr(model, "_no_split_modules", None) or ())
    if names:
        return [(n, m) for n, m in model.named_modules() if type(m).__name__ in names]
    out = []
    for name, mod in model.named_modules():
        parent, _, last = name.rpartition(".")
        if last.isdigit() and parent.endswith(("layers", "layer", "blocks", "block", ".h")):
            out.append((name, mod))
    return out


def children_first(found):
    """The blocks with each after the blocks inside it, else in their order: Accelerate's FSDP2 set-up shards the
    modules bottom-up (``get_module_children_bottom_up``), and ``fully_shard`` of a module inside one already sharded
    fails (its parameters are DTensors by then); Mamba names both its block and the mixer inside it."""
    out, open_ = [], []
    for name, block in found:
        while open_ and not name.startswith(open_[-1][0] + "."):
            out.append(open_.pop())
        open_.append((name, block))
    return out + open_[::-1]


def raw_dump():
    """This rank's flight-recorder dump (pickle bytes), or None where torch keeps none."""
    import torch

    c10d = torch._C._distributed_c10d
    dump = getattr(c10d, "_dump_fr_trace", None) or getattr(c10d, "_dump_nccl_trace", None)
    if dump is None:
        return None
    try:
        return dump(includeCollectives=True, includeStackTraces=False, onlyActive=False)
    except TypeError:
        return dump()


def flight_recorder():
    """This rank's flight-recorder entries."""
    raw = raw_dump()
    if raw is None:
        return None
    data = pickle.loads(raw)
    keep = ("record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
            "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state", "is_p2p", "timeout_ms")
    return [{k: e.get(k) for k in keep} for e in data.get("entries", [])]


def flat_params(wrapped):
    """FSDP1's FlatParameter per wrapped unit, with each parameter's numel and the padding between them."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    units = []
    for m in FSDP.fsdp_modules(wrapped):
        handle = getattr(m, "_handle", None)
        if handle is None:
            continue
        fp = handle.flat_param
        units.append({"fqns": list(fp._fqns), "numels": list(fp._numels),
                      "numels_with_padding": list(fp._numels_with_padding),
                      "unpadded": int(fp._unpadded_unsharded_size.numel()),
                      "padded": int(fp._padded_unsharded_size.numel()), "sharded": int(fp._sharded_size.numel())})
    return units


TP_STYLES = ("colwise", "rowwise", "colwise_gather_output", "rowwise_split_input")


def tp_plan(cfg):
    """The config's own TP plan, the entries torch's parallel styles give: column- and row-wise, with a gathered
    output (ColwiseParallel(output_layouts=Replicate())) or a whole input (RowwiseParallel(input_layouts=
    Replicate()))."""
    plan = {}
    for pattern, style in (getattr(cfg, "base_model_tp_plan", None) or {}).items():
        if style in TP_STYLES:
            plan[pattern.split("*.", 1)[-1]] = style
    return plan


def run_one(strategy, name, cls, cfg, out_dir, rank, world, device, steps=STEPS):
    import torch
    import torch.distributed as dist

    torch.manual_seed(0)
    model = build(name, cls, cfg).to(device)
    names = {id(p): n for n, p in model.named_parameters()}
    params = [[n, list(p.shape), str(p.dtype).removeprefix("torch.")] for n, p in model.named_parameters()]
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    bufs = [[n, list(b.shape), str(b.dtype).removeprefix("torch.")] for n, b in model.named_buffers()]
    classes = EXTRAS.get(name, {}).get("block_classes")
    found = blocks(model, classes)
    layout: dict = {"blocks": [n for n, _ in found]}
    mesh2d = None
    if strategy in MESH_STRATEGIES:
        from torch.distributed.device_mesh import init_device_mesh

        layout["mesh"] = [2, world // 2]  # replicate x shard
        mesh2d = init_device_mesh(device.type, tuple(layout["mesh"]), mesh_dim_names=("replicate", "shard"))
    before = flight_recorder()
    seen = {e["record_id"] for e in before} if isinstance(before, list) else set()
    if strategy.startswith("ddp"):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel as DDP

        cap = 1 if strategy.endswith("_cap1") else None
        unused = strategy.startswith("ddp_unused")
        wrapped = DDP(model, device_ids=[device.index] if device.type == "cuda" else None, bucket_cap_mb=cap,
                      find_unused_parameters=unused, static_graph=strategy == "ddp_static")
        layout["find_unused_parameters"] = unused
        layout["static_graph"] = strategy == "ddp_static"
        calls: list = []

        def hook(state, bucket):
            calls.append({"index": bucket.index(), "numel": bucket.buffer().numel(),
                          "dtype": str(bucket.buffer().dtype).removeprefix("torch."),
                          "params": [names[id(p)] for p in bucket.parameters()]})
            return default_hooks.allreduce_hook(state, bucket)

        wrapped.register_comm_hook(None, hook)
        layout["bucket_calls"] = calls
        layout["bucket_cap_mb"] = cap
    elif strategy.startswith("fsdp1"):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import ShardingStrategy
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        kinds = {type(m) for _, m in found}
        hybrid = {"sharding_strategy": ShardingStrategy.HYBRID_SHARD, "device_mesh": mesh2d} if mesh2d else {}
        policy = ModuleWrapPolicy(kinds)
        if EXTRAS.get(name, {}).get("wrap_policy"):
            import functools

            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

            policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls=kinds)
        wrapped = FSDP(model, auto_wrap_policy=policy,
                       device_id=device if device.type == "cuda" else torch.device("cpu"),
                       use_orig_params=strategy == "fsdp1_orig" or bool(frozen), **hybrid)
        layout["use_orig_params"] = strategy == "fsdp1_orig" or bool(frozen)
    elif strategy in ("fsdp2", "fsdp2_noreshard", "hsdp"):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # bfloat16 compute as in real jobs; the CNN's batch norm on CPU takes float32 only
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if cls not in USER_MODELS else None,
                                  reduce_dtype=torch.float32)
        units = []
        inner: set[str] = set()
        how = {"mp_policy": mp, "reshard_after_forward": strategy != "fsdp2_noreshard"}
        if mesh2d is not None:
            how["mesh"] = mesh2d
        for bname, block in children_first(found):
            fully_shard(block, **how)
            mine = [f"{bname}.{n}" for n, _ in block.named_parameters()]
            units.append({"module": bname, "params": [p for p in mine if p not in inner]})
            inner.update(mine)
        fully_shard(model, **how)
        units.append({"module": "", "params": [p[0] for p in params if p[0] not in inner]})
        for u in units:
            u["grad_params"] = [p for p in u["params"] if p not in frozen]
        layout["units"] = units
        layout["reshard_after_forward"] = strategy != "fsdp2_noreshard"
        layout["mp"] = {"param_dtype": "bfloat16" if cls not in USER_MODELS else "float32", "reduce_dtype": "float32"}
        wrapped = model
    elif strategy == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh(device.type, (world,))
        plan = {k.removeprefix("layers.*."): v for k, v in tp_plan(cfg).items()}
        styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel,
                  "colwise_gather_output": lambda: ColwiseParallel(output_layouts=Replicate()),
                  "rowwise_split_input": lambda: RowwiseParallel(input_layouts=Replicate())}
        names = {n for n, _ in model.named_modules()}
        for bname, layer in blocks(model):
            parallelize_module(layer, mesh, {k: styles[v]() for k, v in plan.items() if f"{bname}.{k}" in names})
        layout["plan"] = plan
        wrapped = model
    # foreach kernels refuse a mix of DTensor and plain tensors (TP leaves embeddings and norms plain)
    opt = torch.optim.AdamW([p for p in wrapped.parameters() if p.requires_grad], lr=1e-4, foreach=strategy != "tp")
    losses = []
    for step in range(steps):
        inputs = batch(cls, cfg, device, step, None if strategy == "tp" else rank)
        if cls in USER_MODELS:
            loss = torch.nn.functional.cross_entropy(wrapped(inputs["x"]), inputs["y"])
        else:
            loss = wrapped(**inputs).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach().float().cpu()))
    if strategy.startswith("fsdp1"):
        layout["flat_params"] = flat_params(wrapped)
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    after = flight_recorder()
    colls = [e for e in after if e["record_id"] not in seen] if isinstance(after, list) else after
    record = {"strategy": strategy, "model": name, "rank": rank, "world_size": world, "batch": BATCH, "seq": SEQ,
              "class": cls, "config": cfg.to_dict(), "params": params, "buffers": bufs, "layout": layout,
              "frozen": frozen, **EXTRAS.get(name, {}),
              "losses": losses, "collectives": colls, "torch": torch.__version__,
              "transformers": __import__("transformers").__version__, "backend": dist.get_backend()}
    if cls in USER_MODELS:
        record["config"] = {}
    path = os.path.join(out_dir, f"{strategy}-{name}-w{world}.rank{rank}.json")
    with open(path, "w") as f:
        json.dump(record, f, default=str)
    del wrapped, model, opt


def main_run(args):
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "20000")  # the flight recorder is off without a buffer
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() and args.device != "cpu"
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    cfgs = configs()
    os.makedirs(args.out, exist_ok=True)
    chosen = args.models or (TP_MODELS if args.strategy == "tp" else [m for m in cfgs if m not in EXTRAS])
    if args.strategy in MESH_STRATEGIES and (world < 4 or world % 2):
        print(f"{args.strategy} needs an even world of at least 4 (a 2 x W/2 mesh)", file=sys.stderr)
        chosen = []
    for name in chosen:
        if name not in cfgs:
            print(f"{name}: this transformers cannot build it", file=sys.stderr)
            continue
        t0 = time.time()
        cls, cfg = cfgs[name]
        if args.strategy == "tp":  # DTensor's matmul needs even shards: round the MLP widths up to the world
            for key in ("intermediate_size", "moe_intermediate_size"):
                if getattr(cfg, key, None):
                    setattr(cfg, key, -(-getattr(cfg, key) // world) * world)
        try:
            run_one(args.strategy, name, cls, cfg, args.out, rank, world, device, args.steps)
        except (RuntimeError, ValueError, TypeError, AttributeError, KeyError, IndexError, AssertionError) as exc:
            print(f"rank {rank} {args.strategy} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            with open(os.path.join(args.out, f"{args.strategy}-{name}-w{world}.rank{rank}.error"), "w") as f:
                f.write(traceback.format_exc())
            dist.barrier()
        if rank == 0:
            print(f"{args.strategy} {name} w{world}: {time.time() - t0:.1f} s", file=sys.stderr)
    dist.destroy_process_group()


# --- labelling: what each recorded collective carried, from the layout alone (no ncclcheck code) ---

FR_DTYPES = {"Float": "float32", "BFloat16": "bfloat16", "Half": "float16", "Long": "int64", "Int": "int32",
             "Byte": "uint8", "Double": "float64", "Char": "int8", "Bool": "bool"}


def family(op: str) -> str:
    name = op.rpartition(":")[2].lower().replace("_", "")
    for key, fam in (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
                     ("broadcast", "broadcast"), ("scatter", "scatter"), ("alltoall", "all_to_all"),
                     ("barrier", "all_reduce")):
        if key in name:
            return fam
    return name


def numel(sizes) -> int:
    return sum(math.prod(s) for s in sizes or [])


def label(fx: dict, c: dict) -> dict | None:
    """What the collective carried: {kind, params (names), what}; None where the layout does not say."""
    fam, ws, layout = family(c["op"]), fx["world_size"], fx["layout"]
    n_in, n_out = c["numel_in"], c["numel_out"]
    shapes = {name: shape for name, shape, _ in fx["params"]}
    bufs = fx.get("buffers") or []
    dt = c["dtype"]
    if fam == "all_reduce" and n_in in (0, 1) or (fam, n_in, n_out) == ("all_gather", 1, ws):
        return {"kind": "scalar", "params": None, "what": "barrier or one value per rank"}
    strat = fx["strategy"]
    frozen = set(fx.get("frozen") or ())
    trainable = {n: s for n, s in shapes.items() if n not in frozen}
    if strat.startswith("ddp") and fam == "all_reduce":
        for call in layout["bucket_calls"]:
            if call["numel"] == n_in and call["dtype"] == dt:
                return {"kind": "ddp_bucket", "params": call["params"], "what": f"DDP bucket {call['index']}"}
        if dt == "int32" and n_in == len(trainable):  # the reducer's local_used_map_, one int32 per parameter
            return {"kind": "metadata", "params": None, "what": "used-parameter map"}
    if strat.startswith("ddp") and fam == "broadcast":
        by_dtype_p = {}
        for _n, s, d in fx["params"]:
            by_dtype_p[d] = by_dtype_p.get(d, 0) + math.prod(s)
        by_dtype_b = {}
        for _n, s, d in bufs:
            by_dtype_b[d] = by_dtype_b.get(d, 0) + math.prod(s)
        if n_in == by_dtype_p.get(dt, 0) + by_dtype_b.get(dt, 0):
            return {"kind": "model", "params": None, "what": f"module states of dtype {dt}"}
        if n_in == by_dtype_b.get(dt):
            return {"kind": "buffers", "params": None, "what": f"buffers of dtype {dt}"}
        calls = layout["bucket_calls"]
        rebuilt = 1 + max(call["index"] for call in calls) if calls else 0
        if dt == "int64" and n_in == 2 * sum(len(s) for s in trainable.values()):
            return {"kind": "metadata", "params": None, "what": "parameter shape check"}
        if dt == "int32" and n_in in (len(trainable) + 1, rebuilt):
            return {"kind": "metadata", "params": None, "what": "bucket order or sizes"}
    if strat.startswith("ddp") and (fam, dt, n_in) == ("all_gather", "int64", 1):
        return {"kind": "metadata", "params": None, "what": "parameter count check"}
    if strat.startswith("fsdp1"):
        for u in layout["flat_params"]:
            if (fam, n_in, n_out) in (("all_gather", u["sharded"], u["padded"]),
                                      ("reduce_scatter", u["padded"], u["sharded"]),
                                      ("all_reduce", u["padded"], u["padded"])):  # gloo's reduce-scatter
                return {"kind": "fsdp_unit", "params": u["fqns"], "what": "FSDP1 flat parameter"}
            if layout.get("mesh") and (fam, n_in, n_out) == ("all_reduce", u["sharded"], u["sharded"]):
                return {"kind": "fsdp_unit", "params": u["fqns"], "what": "HYBRID_SHARD replicate all-reduce"}
    if strat in ("fsdp2", "fsdp2_noreshard", "hsdp"):
        mesh = layout.get("mesh")
        sw = mesh[1] if mesh else ws  # parameters are sharded over the shard dimension only

        def shard_of(names):
            return sum(-(-shapes[p][0] // sw) * math.prod(shapes[p][1:]) for p in names)
        for u in layout["units"]:
            shard, grads = shard_of(u["params"]), shard_of(u.get("grad_params", u["params"]))
            if (fam, n_in, n_out) == ("all_gather", shard, shard * sw):
                return {"kind": "fsdp2_unit", "params": u["params"], "what": f"FSDP2 unit {u['module'] or 'root'}"}
            if grads and (fam, n_in, n_out) in (("reduce_scatter", grads * sw, grads),
                                                ("all_reduce", grads * sw, grads * sw)):
                return {"kind": "fsdp2_unit", "params": u.get("grad_params", u["params"]),
                        "what": f"FSDP2 gradients of unit {u['module'] or 'root'}"}
            if grads and mesh and (fam, n_in, n_out) == ("all_reduce", grads, grads):
                return {"kind": "fsdp2_unit", "params": u.get("grad_params", u["params"]),
                        "what": f"HSDP replicate all-reduce of unit {u['module'] or 'root'}"}
    if strat == "tp":
        hidden = fx["config"].get("hidden_size")
        if fam == "all_reduce" and hidden and n_in == fx["batch"] * fx["seq"] * hidden:
            return {"kind": "tp_activation", "params": None, "what": "B×S×H activation"}
        owners = {}
        for name, shape in shapes.items():
            style = next((v for k, v in layout["plan"].items() if re.search(rf"\.{re.escape(k)}\.", name)), None)
            bs = fx["batch"] * fx["seq"]
            if style == "colwise_gather_output" and name.endswith("weight"):
                owners.setdefault(("all_gather", bs * shape[0] // ws), []).append(name)
            if style == "rowwise_split_input" and name.endswith("weight"):
                owners.setdefault(("all_gather", bs * shape[1] // ws), []).append(name)
            style = style and style.split("_")[0]
            if style == "colwise":
                owners.setdefault(("scatter", -(-shape[0] // ws) * math.prod(shape[1:])), []).append(name)
            elif style == "rowwise" and len(shape) == 2:
                owners.setdefault(("scatter", shape[0] * -(-shape[1] // ws)), []).append(name)
            elif style == "rowwise":
                owners.setdefault(("broadcast", math.prod(shape)), []).append(name)
        # A scatter's root holds the list: gloo records it as the input (whole), NCCL as the output.
        key = (fam, n_out if fam == "scatter" and n_in == n_out * ws else n_in)
        # gloo records a DTensor (funcol) all-gather's output as [1, *input]: one part, not the world's
        if fam == "all_gather" and (fam, n_in) in owners and n_out in (n_in * ws, n_in):
            return {"kind": "tp_activation", "params": owners[(fam, n_in)], "what": "gathered activation"}
        if key in owners:
            names = owners[key]
            kind = "tp_shard" if fam == "scatter" else "tp_replicated"
            return {"kind": kind, "params": names, "what": "TP shard" if fam == "scatter" else "replicated bias"}
    return None


def runs_of(src) -> dict[str, list]:
    """Every rank's record in ``src`` (``<run>.rank<N>.json``), by run, in rank order."""
    runs: dict[str, list] = {}
    for path in sorted(glob.glob(os.path.join(src, "*.rank*.json"))):
        with open(path) as f:
            runs.setdefault(os.path.basename(path).split(".rank")[0], []).append(json.load(f))
    return {key: sorted(recs, key=lambda r: r["rank"]) for key, recs in runs.items()}


def collect(src, dst):
    """One fixture per run: rank 0's record, each collective cut to (op, sizes, dtypes) and labelled."""
    os.makedirs(dst, exist_ok=True)
    for key, recs in runs_of(src).items():
        base = recs[0]

        def cut(colls):
            if not isinstance(colls, list):
                return None
            out = []
            for c in sorted(colls, key=lambda c: c["record_id"]):
                dts = c["input_dtypes"] or c["output_dtypes"] or ["Float"]
                out.append({"pg": c["pg_id"], "pg_desc": (c.get("process_group") or ["", ""])[-1],
                            "seq": c["collective_seq_id"], "op": c["profiling_name"],
                            "numel_in": numel(c["input_sizes"]), "numel_out": numel(c["output_sizes"]),
                            "dtype": FR_DTYPES.get(dts[0], dts[0]), "in": c["input_sizes"], "out": c["output_sizes"]})
            return out

        per_rank = [cut(r["collectives"]) for r in recs]

        def same(c):  # a scatter's list exists on its root only (NCCL records it as the output, gloo as the input)
            return [{k: v for k, v in e.items() if not (k in ("in", "out", "numel_in", "numel_out") and
                                                        e["op"].endswith(":scatter"))} for e in c or []]
        fixture = {k: base.get(k) for k in ("strategy", "model", "world_size", "batch", "seq", "class", "config",
                                            "params", "buffers", "layout", "losses", "torch", "transformers",
                                            "backend")}
        fixture.update({k: base[k] for k in ("frozen", "freeze", "adapter", "module", "block_classes", "wrap_policy")
                        if base.get(k)})
        fixture["ranks_agree"] = all(same(p) == same(per_rank[0]) for p in per_rank)
        colls = per_rank[0] or []
        for c in colls:
            c["truth"] = label(fixture, c)
        fixture["collectives"] = colls
        with open(os.path.join(dst, f"{key}.json"), "w") as f:
            json.dump(fixture, f, indent=None, separators=(",", ":"))
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", choices=STRATEGIES)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--out", default="explain-runs")
    ap.add_argument("--device", choices=("auto", "cpu"), default="auto")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--collect", nargs=2, metavar=("SRC", "DST"))
    args = ap.parse_args()
    if args.collect:
        collect(*args.collect)
    elif args.strategy:
        main_run(args)
    else:
        ap.error("give --strategy or --collect")


if __name__ == "__main__":
    main()
