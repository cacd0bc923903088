"""Ground truth for `ncclcheck explain`: train tiny real models under one strategy and record every collective.

    torchrun --nproc-per-node 4 tools/explain_runs.py --strategy fsdp2 --out DIR

Models are built from transformers configs (random weights, nothing downloaded) and trained for a few steps under
DDP, FSDP1, FSDP2 (fully_shard) or tensor parallelism. Per rank and model it writes DIR/<strategy>-<model>.rank<R>.json:
the config, the parameters as registered, the layout the framework chose (DDP buckets seen by a comm hook, FSDP1
flat parameters, FSDP2 units, the TP plan) and every collective the flight recorder kept (NCCL only; gloo keeps
none, so on CPU the file holds the layout alone). `--collect DIR FIXTURE_DIR` folds the per-rank files into one
fixture per run, keeping only (op, sizes, dtypes) per collective.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import pickle
import sys
import time
import traceback

WORLD_MODELS = {
    "ddp": ("llama", "qwen2moe", "qwen25vl"),
    "fsdp1": ("llama", "qwen2moe", "qwen25vl"),
    "fsdp2": ("llama", "qwen2moe", "qwen25vl"),
    "tp": ("qwen2",),
}
STEPS = 3
BATCH, SEQ = 2, 24


def configs():
    """Small configs of real families; odd sizes so that sums coincide rarely."""
    from transformers import LlamaConfig, Qwen2Config, Qwen2MoeConfig

    out = {
        "llama": LlamaConfig(hidden_size=250, intermediate_size=689, num_hidden_layers=3, num_attention_heads=5,
                             num_key_value_heads=1, head_dim=64, vocab_size=32000, tie_word_embeddings=False),
        "qwen2": Qwen2Config(hidden_size=256, intermediate_size=704, num_hidden_layers=2, num_attention_heads=8,
                             num_key_value_heads=4, head_dim=32, vocab_size=15000, tie_word_embeddings=False),
        "qwen2moe": Qwen2MoeConfig(hidden_size=192, intermediate_size=512, moe_intermediate_size=96,
                                   shared_expert_intermediate_size=384, num_experts=6, num_experts_per_tok=2,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   vocab_size=12000, decoder_sparse_step=1, mlp_only_layers=[],
                                   tie_word_embeddings=False),
    }
    try:
        from transformers import Qwen2_5_VLConfig
    except ImportError:
        return out
    out["qwen25vl"] = Qwen2_5_VLConfig(
        text_config={"hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "vocab_size": 9000, "rope_scaling": {"type": "mrope",
                                                                                   "mrope_section": [4, 6, 6]},
                     "tie_word_embeddings": False},
        vision_config={"depth": 2, "hidden_size": 80, "intermediate_size": 176, "num_heads": 4, "out_hidden_size": 128,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
                       "fullatt_block_indexes": [1], "in_chans": 3},
        image_token_id=8990, video_token_id=8991, vision_start_token_id=8992, vision_end_token_id=8993,
        tie_word_embeddings=False)
    return out


def build(name, cfg):
    import transformers

    cls = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen2moe": "Qwen2MoeForCausalLM",
           "qwen25vl": "Qwen2_5_VLForConditionalGeneration"}[name]
    return getattr(transformers, cls)(cfg)


def batch(name, cfg, device, step, rank):
    """A batch for one step; the same on every rank under TP, per rank otherwise."""
    import torch

    g = torch.Generator().manual_seed(1000 * step + (0 if rank is None else rank))
    if name != "qwen25vl":
        ids = torch.randint(0, cfg.vocab_size, (BATCH, SEQ), generator=g)
        return {"input_ids": ids.to(device), "labels": ids.to(device)}
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


def blocks(model):
    """The repeated blocks each strategy wraps: decoder layers, and vision blocks of a VL model."""
    out = []
    for name, mod in model.named_modules():
        parent, _, last = name.rpartition(".")
        if last.isdigit() and (parent.endswith("layers") or parent.endswith("blocks")):
            out.append((name, mod))
    return out


def raw_dump():
    """This rank's flight-recorder dump (pickle bytes) taken on demand, or None without NCCL."""
    import torch

    dump = getattr(torch._C._distributed_c10d, "_dump_nccl_trace", None)
    if dump is None:
        return None
    try:
        return dump(includeCollectives=True, includeStackTraces=False, onlyActive=False)
    except TypeError:
        return dump()


def flight_recorder():
    """This rank's flight-recorder entries, or None where the backend keeps none (gloo)."""
    try:
        raw = raw_dump()
    except RuntimeError as exc:
        return {"error": str(exc)}
    if raw is None:
        return list(HOOKED) if HOOKED else None
    data = pickle.loads(raw)
    keep = ("record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
            "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state", "is_p2p", "timeout_ms")
    return [{k: e.get(k) for k in keep} for e in data.get("entries", [])]


def flat_params(wrapped):
    """FSDP1's FlatParameter per wrapped unit; its padded sizes exist only once a forward has run."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    units = []
    for m in FSDP.fsdp_modules(wrapped):
        handle = getattr(m, "_handle", None)
        if handle is None:
            continue
        fp = handle.flat_param
        units.append({"fqns": list(fp._fqns), "numels": list(fp._numels),
                      "unpadded": int(fp._unpadded_unsharded_size.numel()),
                      "padded": int(fp._padded_unsharded_size.numel()), "sharded": int(fp._sharded_size.numel())})
    return units


HOOKED: list = []


def hook_collectives():
    """Where the backend keeps no flight recorder (gloo), record the Python-level collectives instead.

    DDP's buckets reach dist.all_reduce through the comm hook; FSDP and DTensor call these functions by module
    attribute, so replacing them records every call. The record mimics a flight-recorder entry.
    """
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    def wrap(module, fname, inputs, outputs):
        real = getattr(module, fname)

        def recorded(*a, **k):
            ins, outs = inputs(a, k), outputs(a, k)
            HOOKED.append({"record_id": len(HOOKED), "pg_id": None, "process_group": None, "collective_seq_id": None,
                           "profiling_name": f"hook:{fname}", "input_sizes": [list(t.shape) for t in ins],
                           "input_dtypes": [str(t.dtype).removeprefix("torch.") for t in ins],
                           "output_sizes": [list(t.shape) for t in outs],
                           "output_dtypes": [str(t.dtype).removeprefix("torch.") for t in outs]})
            return real(*a, **k)

        setattr(module, fname, recorded)

    def second(a, k):
        return [a[1] if len(a) > 1 else k.get("input", k.get("input_tensor"))]

    def first(a, k):
        return [a[0] if a else k.get("output", k.get("output_tensor", k.get("tensor")))]

    wrap(dist, "all_reduce", first, first)
    wrap(dist, "broadcast", first, first)
    for name in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_gather_single", "reduce_scatter_single"):
        if hasattr(dist, name):
            wrap(dist, name, second, first)
    wrap(dist, "scatter", lambda a, k: list(k.get("scatter_list") or (a[1] if len(a) > 1 else []) or []), first)
    wrap(funcol, "all_reduce", first, first)
    wrap(funcol, "all_gather_tensor", first, lambda a, k: [])
    wrap(funcol, "reduce_scatter_tensor", first, lambda a, k: [])


def run_one(strategy, name, cfg, out_dir, rank, world, device):
    import torch
    import torch.distributed as dist

    torch.manual_seed(0)
    model = build(name, cfg).to(device)
    names = {id(p): n for n, p in model.named_parameters()}
    params = [[n, list(p.shape), str(p.dtype).removeprefix("torch.")] for n, p in model.named_parameters()]
    bufs = [[n, list(b.shape), str(b.dtype).removeprefix("torch.")] for n, b in model.named_buffers()]
    layout: dict = {}
    before = flight_recorder()
    seen = {e["record_id"] for e in before} if isinstance(before, list) else set()
    if strategy == "ddp":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel as DDP

        wrapped = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        calls: list = []

        def hook(state, bucket):
            calls.append({"index": bucket.index(), "numel": bucket.buffer().numel(),
                          "dtype": str(bucket.buffer().dtype).removeprefix("torch."),
                          "params": [names[id(p)] for p in bucket.parameters()]})
            return default_hooks.allreduce_hook(state, bucket)

        wrapped.register_comm_hook(None, hook)
        layout["bucket_calls"] = calls
    elif strategy == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        classes = {type(m) for _, m in blocks(model)}
        wrapped = FSDP(model, auto_wrap_policy=ModuleWrapPolicy(classes),
                       device_id=device if device.type == "cuda" else torch.device("cpu"), use_orig_params=False)
    elif strategy == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        units = []
        for bname, block in blocks(model):
            fully_shard(block, mp_policy=mp)
            units.append({"module": bname, "params": [f"{bname}.{n}" for n, _ in block.named_parameters()]})
        fully_shard(model, mp_policy=mp)
        inner = {p for u in units for p in u["params"]}
        units.append({"module": "", "params": [p[0] for p in params if p[0] not in inner]})
        layout["units"] = units
        layout["mp"] = {"param_dtype": "bfloat16", "reduce_dtype": "float32"}
        wrapped = model
    elif strategy == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh(device.type, (world,))
        plan = {"self_attn.q_proj": "colwise", "self_attn.k_proj": "colwise", "self_attn.v_proj": "colwise",
                "self_attn.o_proj": "rowwise", "mlp.gate_proj": "colwise", "mlp.up_proj": "colwise",
                "mlp.down_proj": "rowwise"}
        for _, layer in blocks(model):
            parallelize_module(layer, mesh, {k: ColwiseParallel() if v == "colwise" else RowwiseParallel()
                                             for k, v in plan.items()})
        layout["plan"] = plan
        wrapped = model
    # foreach kernels refuse a mix of DTensor and plain tensors (TP leaves embeddings and norms plain)
    opt = torch.optim.AdamW(wrapped.parameters(), lr=1e-4, foreach=strategy != "tp")
    losses = []
    for step in range(STEPS):
        loss = wrapped(**batch(name, cfg, device, step, None if strategy == "tp" else rank)).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach().float().cpu()))
    if strategy == "fsdp1":
        layout["flat_params"] = flat_params(wrapped)
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    after = flight_recorder()
    colls = [e for e in after if e["record_id"] not in seen] if isinstance(after, list) else after
    record = {"strategy": strategy, "model": name, "rank": rank, "world_size": world, "batch": BATCH, "seq": SEQ,
              "class": type(model).__name__, "config": cfg.to_dict(), "params": params, "buffers": bufs,
              "layout": layout,
              "losses": losses, "collectives": colls, "torch": torch.__version__,
              "transformers": __import__("transformers").__version__,
              "backend": dist.get_backend()}
    path = os.path.join(out_dir, f"{strategy}-{name}.rank{rank}.json")
    with open(path, "w") as f:
        json.dump(record, f, default=str)
    del wrapped, model, opt


def main_run(args):
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() and args.device != "cpu"
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=90))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if not cuda:
        hook_collectives()
    cfgs = configs()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models or WORLD_MODELS[args.strategy]:
        if name not in cfgs:
            print(f"{name}: this transformers cannot build it", file=sys.stderr)
            continue
        t0 = time.time()
        try:
            run_one(args.strategy, name, cfgs[name], args.out, rank, world, device)
        except (RuntimeError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            print(f"rank {rank} {args.strategy} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            with open(os.path.join(args.out, f"{args.strategy}-{name}.rank{rank}.error"), "w") as f:
                f.write(traceback.format_exc())
            dist.barrier()
        if rank == 0:
            print(f"{args.strategy} {name}: {time.time() - t0:.1f} s", file=sys.stderr)
    raw = raw_dump()
    if raw is not None:
        with open(os.path.join(args.out, f"{args.strategy}.rank{rank}.fr.pkl"), "wb") as f:
            f.write(raw)
    dist.destroy_process_group()


def collect(src, dst):
    """One fixture per run: rank 0's record, each collective cut to (op, sizes, dtypes), the ranks compared."""
    os.makedirs(dst, exist_ok=True)
    runs: dict[str, list] = {}
    for path in sorted(glob.glob(os.path.join(src, "*.rank*.json"))):
        with open(path) as f:
            runs.setdefault(os.path.basename(path).split(".rank")[0], []).append(json.load(f))
    for key, recs in runs.items():
        recs.sort(key=lambda r: r["rank"])
        base = recs[0]

        def cut(colls):
            if not isinstance(colls, list):
                return None
            return [{"pg": c["pg_id"], "pg_desc": (c.get("process_group") or ["", ""])[-1], "seq":
                     c["collective_seq_id"], "op": c["profiling_name"], "in": c["input_sizes"],
                     "in_dtypes": c["input_dtypes"], "out": c["output_sizes"], "out_dtypes": c["output_dtypes"]}
                    for c in sorted(colls, key=lambda c: c["record_id"])]

        per_rank = [cut(r["collectives"]) for r in recs]

        def same(c):  # a scatter's output list exists on its root only
            return [{k: v for k, v in e.items() if not (k.startswith("out") and e["op"].endswith(":scatter"))}
                    for e in c or []]
        fixture = {k: base.get(k) for k in ("strategy", "model", "world_size", "batch", "seq", "class", "config",
                                            "params", "buffers", "layout", "losses", "torch", "transformers",
                                            "backend")}
        fixture["collectives"] = per_rank[0]
        fixture["ranks_agree"] = all(same(p) == same(per_rank[0]) for p in per_rank)
        with open(os.path.join(dst, f"{key}.json"), "w") as f:
            json.dump(fixture, f, indent=1)
            f.write("\n")


def param_fixtures(dst):
    """Configs and parameter lists of more families, built on CPU: the check of explain's parameter layouts."""
    import transformers as tf

    os.makedirs(dst, exist_ok=True)
    small = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 1000}
    models = {
        "mixtral": tf.MixtralConfig(**small, num_local_experts=4, num_experts_per_tok=2),
        "qwen3_moe": tf.Qwen3MoeConfig(**{**small, "head_dim": 16}, moe_intermediate_size=32, num_experts=4,
                                       num_experts_per_tok=2, mlp_only_layers=[1]),
        "qwen3": tf.Qwen3Config(**{**small, "head_dim": 24}),
        "mistral": tf.MistralConfig(**small),
        "deepseek_v3": tf.DeepseekV3Config(**{**small, "num_key_value_heads": 4}, moe_intermediate_size=32,
                                           first_k_dense_replace=1, n_routed_experts=4, n_shared_experts=2,
                                           num_experts_per_tok=2, n_group=1, topk_group=1, q_lora_rank=48,
                                           kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16),
        "deepseek_v3_no_q_lora": tf.DeepseekV3Config(**{**small, "num_key_value_heads": 4}, moe_intermediate_size=32,
                                                     first_k_dense_replace=1, n_routed_experts=4, n_shared_experts=1,
                                                     num_experts_per_tok=2, n_group=1, topk_group=1, q_lora_rank=None,
                                                     kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16,
                                                     v_head_dim=16),
        "qwen2_classifier": tf.Qwen2Config(**small, num_labels=3, architectures=["Qwen2ForSequenceClassification"]),
    }
    for name, cfg in models.items():
        if name.endswith("classifier"):
            model = tf.Qwen2ForSequenceClassification(cfg)
        else:
            model = tf.AutoModelForCausalLM.from_config(cfg)
        params = [[n, list(p.shape), str(p.dtype).removeprefix("torch.")] for n, p in model.named_parameters()]
        with open(os.path.join(dst, f"{name}.json"), "w") as f:
            json.dump({"class": type(model).__name__, "transformers": tf.__version__, "config": cfg.to_dict(),
                       "params": params}, f, indent=1)
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", choices=sorted(WORLD_MODELS))
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--out", default="explain-runs")
    ap.add_argument("--device", choices=("auto", "cpu"), default="auto")
    ap.add_argument("--collect", nargs=2, metavar=("SRC", "DST"))
    ap.add_argument("--params", metavar="DST", help="write parameter-layout fixtures of more families (CPU)")
    args = ap.parse_args()
    if args.collect:
        collect(*args.collect)
    elif args.params:
        param_fixtures(args.params)
    elif args.strategy:
        main_run(args)
    else:
        ap.error("give --strategy or --collect")


if __name__ == "__main__":
    main()
