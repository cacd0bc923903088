"""Ground truth for `ncclcheck explain` under the layouts people combine: pipelines, TP x FSDP2, DeepSpeed ZeRO.

    torchrun --nproc-per-node 4 tools/explain_layout_runs.py --strategy pp_1f1b --out DIR     # CPU (gloo)
    python tools/explain_layout_runs.py --collect DIR FIXTURE_DIR

The same record as tools/explain_runs.py (config, parameters, layout, every collective the flight recorder kept),
for setups that one wrapper call does not make:

- ``pp_gpipe``, ``pp_1f1b``: torch.distributed.pipelining's ScheduleGPipe and Schedule1F1B over a transformers
  decoder cut into one stage per rank (the embedding with the first layers, the norm and head with the last), a
  batch of BATCH split into MICROBATCHES. Each rank records its own sends and receives, so the fixture keeps every
  rank's list and ``ranks_agree`` says that every send has a receive of the same size on its peer.
- ``tp_fsdp2``: a 2 x 2 DeviceMesh (dp, tp); each decoder layer's plan applied with parallelize_module over tp, then
  fully_shard over dp on each layer and the root.
- ``zero1``, ``zero2``, ``zero3``: deepspeed.initialize with the ZeRO stage on CPU (gloo); the optimizer's own groups
  and buckets are kept as the layout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import explain_runs as er  # noqa: E402

STRATEGIES = ("pp_gpipe", "pp_1f1b", "tp_fsdp2", "zero1", "zero2", "zero3", "zero2_small")
# zero2_small: stage 2 with buckets small enough that a model fills several, and contiguous_gradients off
SMALL_BUCKETS = {"reduce_bucket_size": 300_000, "allgather_bucket_size": 300_000, "contiguous_gradients": False}
PP_MODELS = ("llama", "qwen3")
BATCH, SEQ, MICROBATCHES = 8, 24, 4
LAYERS_PER_STAGE = 1


def stage_module(model, lo: int, hi: int, first: bool, last: bool):
    """Layers lo..hi of a Llama-style decoder as one pipeline stage: token ids (first) or hidden states in, hidden
    states (or logits, last) out."""
    import torch
    from torch import nn

    inner = model.model

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = inner.embed_tokens if first else None
            self.layers = nn.ModuleList(inner.layers[lo:hi])
            self.norm = inner.norm if last else None
            self.lm_head = model.lm_head if last else None
            self.rotary_emb = inner.rotary_emb

        def forward(self, x):
            h = self.embed_tokens(x) if first else x
            pos = torch.arange(h.shape[1]).unsqueeze(0).expand(h.shape[0], -1)
            pe = self.rotary_emb(h, pos)
            for layer in self.layers:
                h = layer(h, position_ids=pos, position_embeddings=pe)
            return self.lm_head(self.norm(h)) if last else h

    return Stage()


P2P: list[dict] = []  # every send and receive this rank made, as ProcessGroup.send/recv saw them


def watch_p2p():
    """Keep every point-to-point call: gloo's flight recorder keeps collectives only, so the sends and receives are
    read where every one of them passes, ProcessGroup.send and ProcessGroup.recv (torch/distributed/distributed_c10d.py
    isend/irecv/send/recv and send_object_list all end there)."""
    import torch.distributed as dist

    pg = dist.ProcessGroup
    for op in ("send", "recv"):
        orig = getattr(pg, op)

        def wrapped(self, tensors, peer, tag=0, _orig=orig, _op=op):
            P2P.append({"profiling_name": f"gloo:{_op}", "pg_id": self.group_name, "peer": peer,
                        "sizes": [list(t.shape) for t in tensors],
                        "dtypes": [str(t.dtype).removeprefix("torch.") for t in tensors], "seq": len(P2P)})
            return _orig(self, tensors, peer, tag)
        setattr(pg, op, wrapped)


def run_pp(strategy, name, cls, cfg, rank, world):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    cfg.num_hidden_layers = LAYERS_PER_STAGE * world
    if getattr(cfg, "layer_types", None):  # one entry per layer (Qwen3's full or sliding attention)
        cfg.layer_types = [cfg.layer_types[0]] * cfg.num_hidden_layers
    torch.manual_seed(0)
    model = er.build(name, cls, cfg)
    per = cfg.num_hidden_layers // world
    lo, hi = rank * per, (rank + 1) * per
    first, last = rank == 0, rank == world - 1
    stage_mod = stage_module(model, lo, hi, first, last)
    stage_params = []
    for n, _ in model.named_parameters():
        if n.startswith("model.layers."):
            if lo <= int(n.split(".")[2]) < hi:
                stage_params.append(n)
        elif (first and n.startswith("model.embed_tokens.")) or (last and not n.startswith("model.embed_tokens.")):
            stage_params.append(n)
    before = er.flight_recorder()
    seen = {e["record_id"] for e in before} if isinstance(before, list) else set()
    P2P.clear()
    stage = PipelineStage(stage_mod, rank, world, torch.device("cpu"))

    def loss_fn(out, target):
        return torch.nn.functional.cross_entropy(out.flatten(0, 1).float(), target.flatten())

    kind = ScheduleGPipe if strategy == "pp_gpipe" else Schedule1F1B
    schedule = kind(stage, MICROBATCHES, loss_fn=loss_fn)
    opt = torch.optim.AdamW(stage_mod.parameters(), lr=1e-4)
    losses = []
    for step in range(2):
        g = torch.Generator().manual_seed(1000 * step)
        ids = torch.randint(1, cfg.vocab_size, (BATCH, SEQ), generator=g)
        out: list = []
        if first:
            schedule.step(ids)
        elif last:
            schedule.step(target=ids, losses=out)
        else:
            schedule.step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(torch.stack(out).mean()) if out else None)
    dist.barrier()
    after = er.flight_recorder()
    colls = [e for e in after if e["record_id"] not in seen] if isinstance(after, list) else after
    colls = {"collectives": colls, "p2p": list(P2P)}
    P2P.clear()
    layout = {"schedule": strategy.removeprefix("pp_"), "stages": world, "microbatches": MICROBATCHES,
              "stage_params": stage_params, "stage_layers": [lo, hi]}
    return model, layout, losses, colls


def run_tp_fsdp2(name, cls, cfg, rank, world):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    for key in ("intermediate_size", "moe_intermediate_size"):
        if getattr(cfg, key, None):
            setattr(cfg, key, -(-getattr(cfg, key) // 2) * 2)
    torch.manual_seed(0)
    model = er.build(name, cls, cfg)
    before = er.flight_recorder()
    seen = {e["record_id"] for e in before} if isinstance(before, list) else set()
    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
    plan = {k.removeprefix("layers.*."): v for k, v in er.tp_plan(cfg).items()}
    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel,
              "colwise_gather_output": lambda: ColwiseParallel(output_layouts=Replicate()),
              "rowwise_split_input": lambda: RowwiseParallel(input_layouts=Replicate())}
    names = {n for n, _ in model.named_modules()}
    found = er.blocks(model)
    units, inner = [], set()
    for bname, layer in found:
        parallelize_module(layer, mesh["tp"], {k: styles[v]() for k, v in plan.items() if f"{bname}.{k}" in names})
    for bname, layer in found:
        fully_shard(layer, mesh=mesh["dp"])
        mine = [f"{bname}.{n}" for n, _ in layer.named_parameters()]
        units.append({"module": bname, "params": mine})
        inner.update(mine)
    fully_shard(model, mesh=mesh["dp"])
    units.append({"module": "", "params": [n for n, _ in model.named_parameters() if n not in inner]})
    # this rank's tensor of each parameter: the TP shard, sharded again over dp
    local = {n: list(p.to_local().shape) if hasattr(p, "to_local") else list(p.shape)
             for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    losses = []
    dp_rank = mesh["dp"].get_local_rank()
    for step in range(2):
        inputs = er.batch(cls, cfg, torch.device("cpu"), step, dp_rank)
        loss = model(**inputs).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    dist.barrier()
    after = er.flight_recorder()
    colls = [e for e in after if e["record_id"] not in seen] if isinstance(after, list) else after
    layout = {"blocks": [n for n, _ in found], "plan": plan, "dp_tp": [2, world // 2],
              "units": units, "local_shard_shapes": local}
    return model, layout, losses, colls


def run_zero(strategy, name, cls, cfg, rank, world):
    import deepspeed
    import torch
    import torch.distributed as dist

    stage = int(strategy[4])
    torch.manual_seed(0)
    model = er.build(name, cls, cfg)
    # as registered: stage 3 leaves every parameter an empty placeholder once partitioned
    registered = [[n, list(p.shape), str(p.dtype).removeprefix("torch.")] for n, p in model.named_parameters()]
    before = er.flight_recorder()
    seen = {e["record_id"] for e in before} if isinstance(before, list) else set()
    ds_cfg = {"train_micro_batch_size_per_gpu": er.BATCH, "gradient_accumulation_steps": 1,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
              "zero_optimization": {"stage": stage, **(SMALL_BUCKETS if strategy.endswith("_small") else {})},
              "steps_per_print": 10**9}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_cfg,
                                      dist_init_required=False)
    names = {id(p): n for n, p in model.named_parameters()}
    bucket_calls: list = []
    opt = engine.optimizer
    if stage < 3:  # each gradient bucket as DeepSpeed flushes it (stage_1_and_2.py reduce_ipg_grads)
        flush = opt.reduce_ipg_grads

        def reduce_ipg_grads(*a, **k):
            for bucket in opt.ipg_buckets.values():
                if bucket.params:
                    bucket_calls.append([names[id(opt.bit16_groups[i][j])] for i, j, _ in bucket.params])
            return flush(*a, **k)
        opt.reduce_ipg_grads = reduce_ipg_grads
    losses = []
    for step in range(2):
        inputs = er.batch(cls, cfg, torch.device("cpu"), step, rank)
        loss = engine(**inputs).loss
        engine.backward(loss)
        engine.step()
        losses.append(float(loss.detach()))
    dist.barrier()
    after = er.flight_recorder()
    colls = [e for e in after if e["record_id"] not in seen] if isinstance(after, list) else after
    layout = {"stage": stage, "zero_config": json.loads(engine._config.zero_config.model_dump_json()),
              "registered": registered, "bucket_calls": bucket_calls}
    return model, layout, losses, colls


def main_run(args):
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "20000")
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    cfgs = er.configs()
    watch_p2p()
    os.makedirs(args.out, exist_ok=True)
    default = PP_MODELS if args.strategy.startswith("pp") else ("llama", "qwen3")
    for name in args.models or default:
        t0 = time.time()
        cls, cfg = cfgs[name]
        try:
            if args.strategy.startswith("pp"):
                model, layout, losses, colls = run_pp(args.strategy, name, cls, cfg, rank, world)
            elif args.strategy == "tp_fsdp2":
                model, layout, losses, colls = run_tp_fsdp2(name, cls, cfg, rank, world)
            else:
                model, layout, losses, colls = run_zero(args.strategy, name, cls, cfg, rank, world)
        except (RuntimeError, ValueError, TypeError, AttributeError, KeyError, IndexError, AssertionError) as exc:
            print(f"rank {rank} {args.strategy} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            with open(os.path.join(args.out, f"{args.strategy}-{name}-w{world}.rank{rank}.error"), "w") as f:
                f.write(traceback.format_exc())
            continue
        params = layout.pop("registered", None) or [[n, list(p.shape), str(p.dtype).removeprefix("torch.")]
                                                     for n, p in model.named_parameters()]
        bufs = [[n, list(b.shape), str(b.dtype).removeprefix("torch.")] for n, b in model.named_buffers()]
        batch = BATCH if args.strategy.startswith("pp") else er.BATCH
        record = {"strategy": args.strategy, "model": name, "rank": rank, "world_size": world, "batch": batch,
                  "seq": SEQ, "class": cls, "config": cfg.to_dict(), "params": params, "buffers": bufs,
                  "layout": layout, "frozen": [], "losses": losses, "collectives": colls, "torch": torch.__version__,
                  "transformers": __import__("transformers").__version__, "backend": dist.get_backend()}
        with open(os.path.join(args.out, f"{args.strategy}-{name}-w{world}.rank{rank}.json"), "w") as f:
            json.dump(record, f, default=str)
        if rank == 0:
            print(f"{args.strategy} {name} w{world}: {time.time() - t0:.1f} s", file=sys.stderr)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", choices=STRATEGIES)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--out", default="explain-layout-runs")
    ap.add_argument("--collect", nargs=2, metavar=("SRC", "DST"))
    args = ap.parse_args()
    if args.collect:
        collect(*args.collect)
    elif args.strategy:
        main_run(args)
    else:
        ap.error("give --strategy or --collect")


def cut_p2p(rank: int, calls: list[dict]) -> list[dict]:
    """A rank's sends and receives in the fixture's form, with the rank and its peer."""
    return [{"pg": c["pg_id"], "pg_desc": "default_pg", "seq": c["seq"], "op": c["profiling_name"],
             "numel_in": er.numel(c["sizes"]), "numel_out": er.numel(c["sizes"]), "dtype": c["dtypes"][0],
             "in": c["sizes"], "out": c["sizes"], "rank": rank, "peer": c["peer"]} for c in calls]


def cut(colls: list[dict]) -> list[dict]:
    """Flight-recorder entries in the fixture's form (as tools/explain_runs.py writes them)."""
    out = []
    for c in sorted(colls, key=lambda c: c["record_id"]):
        dts = c["input_dtypes"] or c["output_dtypes"] or ["Float"]
        out.append({"pg": c["pg_id"], "pg_desc": (c.get("process_group") or ["", ""])[-1],
                    "seq": c["collective_seq_id"], "op": c["profiling_name"],
                    "numel_in": er.numel(c["input_sizes"]), "numel_out": er.numel(c["output_sizes"]),
                    "dtype": er.FR_DTYPES.get(dts[0], dts[0]), "in": c["input_sizes"], "out": c["output_sizes"]})
    return out


def sends_meet_receives(per_rank: list[list[dict]]) -> bool:
    """Every send from rank r to p has a receive on p from r of the same sizes and dtype, in the same order."""
    def pairs(op, src_key):
        out: dict = {}
        for calls in per_rank:
            for c in calls:
                if c["op"].endswith(op):
                    a, b = (c["rank"], c["peer"]) if src_key else (c["peer"], c["rank"])
                    out.setdefault((a, b), []).append((c["in"], c["dtype"]))
        return out
    return pairs(":send", True) == pairs(":recv", False)


def label(fx: dict, c: dict) -> dict | None:
    """What the call carried, from the layout alone (no ncclcheck code)."""
    fam, strat, layout = er.family(c["op"]), fx["strategy"], fx["layout"]
    n_in, n_out, dt = c["numel_in"], c["numel_out"], c["dtype"]
    if fam == "all_reduce" and n_in in (0, 1):
        return {"kind": "scalar", "params": None, "what": "barrier or one value per rank"}
    if strat.startswith("pp") and c["op"].endswith((":send", ":recv")):
        mb = fx["batch"] // layout["microbatches"]
        if dt.startswith("float") and n_in == mb * fx["seq"] * fx["config"]["hidden_size"]:
            return {"kind": "pp_activation", "params": None,
                    "what": "a stage's output (forward) or the gradient of it (backward), microbatch x seq x hidden"}
        if (dt, n_in) == ("int32", 1):
            return {"kind": "pp_metadata", "params": None, "what": "the warm-up vote (static or dynamic shapes)"}
        if (dt, n_in) == ("int64", 1):
            return {"kind": "pp_metadata", "params": None, "what": "send_object_list: the size of one pickled object"}
        if dt == "uint8":
            return {"kind": "pp_metadata", "params": None, "what": "send_object_list: the pickled stage metadata"}
        return None
    if strat == "tp_fsdp2":
        dp, tp = layout["dp_tp"]
        local = layout["local_shard_shapes"]  # rank 0's tensor of each 2-D DTensor parameter (the largest chunk)

        def shard_of(names):
            return sum(math.prod(local[p]) for p in names)
        for u in layout["units"]:
            shard = shard_of(u["params"])
            what = f"FSDP2 unit {u['module'] or 'root'} of TP-local shards"
            if (fam, n_in, n_out) == ("all_gather", shard, shard * dp):
                return {"kind": "fsdp2_unit", "params": u["params"], "what": what}
            if (fam, n_in, n_out) in (("reduce_scatter", shard * dp, shard), ("all_reduce", shard * dp, shard * dp)):
                return {"kind": "fsdp2_unit", "params": u["params"], "what": "gradients of " + what}
        return er.label({**fx, "strategy": "tp", "world_size": tp}, c)
    if strat.startswith("zero"):
        return label_zero(fx, c)
    return None


def label_zero(fx: dict, c: dict) -> dict | None:
    """DeepSpeed's collectives, from the recorded parameters and the ZeRO config DeepSpeed resolved."""
    fam, ws, zc = er.family(c["op"]), fx["world_size"], fx["layout"]["zero_config"]
    n_in, n_out, dt = c["numel_in"], c["numel_out"], c["dtype"]
    params = [(n, math.prod(s), s) for n, s, _ in fx["params"]]
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2}[fx["params"][0][2]]
    if fam == "broadcast" and dt == "uint8":
        names = [n for n, k, _ in params if k * itemsize == n_in]
        if names:
            return {"kind": "zero_broadcast", "params": names, "what": "one parameter broadcast as bytes"}
    total = sum(k for _, k, _ in params)
    if fx["layout"]["stage"] < 3:
        sizes = {n: k for n, k, _ in params}
        for call in fx["layout"].get("bucket_calls") or []:
            if fam == "all_reduce" and n_in == sum(sizes[n] for n in call):
                return {"kind": "zero_bucket", "params": call, "what": "a gradient bucket as DeepSpeed flushed it"}
        if fam == "all_reduce" and n_in == total and total <= zc["reduce_bucket_size"]:
            return {"kind": "zero_bucket", "params": [n for n, _, _ in params], "what": "the one gradient bucket"}
        part = -(-total // (2 * ws)) * 2
        if (fam, n_in, n_out) == ("all_gather", part, part * ws):
            return {"kind": "zero_partition", "params": [n for n, _, _ in params], "what": "updated partition"}
        return None
    # stage 3: every parameter partitioned flat, ceil(numel / world) per rank (partition_parameters.py)
    shard = [(n, -(-k // ws)) for n, k, _ in params]
    if fam == "all_gather" and n_out == n_in * ws:
        one = [n for n, k in shard if k == n_in]
        if one:
            return {"kind": "zero3_gather", "params": one[:1], "what": "one parameter fetched"}
        kept = {n for n, k, _ in params if k <= zc["param_persistence_threshold"]}  # persistent: never released
        if n_in == sum(k for n, k in shard if n not in kept):
            return {"kind": "zero3_gather", "params": [n for n, _ in shard if n not in kept],
                    "what": "every non-persistent parameter, fetched at once (trace complete)"}
        for i in range(len(shard)):  # one parameter, or a run of them in registration order fetched together
            acc = 0
            for j in range(i, len(shard)):
                acc += shard[j][1]
                if acc == n_in:
                    return {"kind": "zero3_gather", "params": [n for n, _ in shard[i:j + 1]],
                            "what": "parameters fetched together" if j > i else "one parameter fetched"}
                if acc > n_in:
                    break
    padded = sum(k * ws for _, k in shard)
    if (fam, n_in, n_out) in (("reduce_scatter", padded, padded // ws), ("all_reduce", padded, padded)):
        return {"kind": "zero3_bucket", "params": [n for n, _, _ in params], "what": "the one gradient bucket"}
    if fam == "broadcast" and dt == "int64":  # the coordinator's trace, checked the same on every rank
        if n_in == 1:
            return {"kind": "scalar", "params": None, "what": "the trace's length, one int64"}
        # one entry per parameter use: a tied weight (Qwen3's embedding and head) is used by two modules
        uses = len(params) + (1 if fx["config"].get("tie_word_embeddings") else 0)
        what = ("the fetch order of parameters (forward and backward)" if n_in == 2 * uses else
                "the fetch order of submodules (forward and backward)")
        return {"kind": "zero_metadata", "params": None, "what": what}
    return None


def collect(src, dst):
    """One fixture per run: rank 0's record; a pipeline's sends and receives of every rank."""
    os.makedirs(dst, exist_ok=True)
    for key, recs in er.runs_of(src).items():
        base = recs[0]
        fixture = {k: base.get(k) for k in ("strategy", "model", "world_size", "batch", "seq", "class", "config",
                                            "params", "buffers", "layout", "losses", "torch", "transformers",
                                            "backend")}
        if base["strategy"].startswith("pp"):
            per_rank = [cut_p2p(r["rank"], r["collectives"]["p2p"]) for r in recs]
            fixture["ranks_agree"] = sends_meet_receives(per_rank)
            fixture["stage_params"] = [r["layout"]["stage_params"] for r in recs]
            colls = cut(base["collectives"]["collectives"]) + [c for p in per_rank for c in p]
        else:
            per_rank = [cut(r["collectives"]) for r in recs]
            def same(calls):  # a scatter's list exists on its root only
                return [(c["op"], c["numel_in"], c["numel_out"]) if not c["op"].endswith(":scatter") else c["op"]
                        for c in calls]
            fixture["ranks_agree"] = all(same(p) == same(per_rank[0]) for p in per_rank)
            colls = per_rank[0]
        for c in colls:
            c["truth"] = label(fixture, c)
        fixture["collectives"] = colls
        with open(os.path.join(dst, f"{key}.json"), "w") as f:
            json.dump(fixture, f, indent=None, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
