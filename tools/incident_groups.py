"""Provoke multi-process-group NCCL incidents on purpose, for golden test fixtures.

Run under torchrun with 4 GPUs:  torchrun --nproc-per-node 4 tools/incident_groups.py SCENARIO

The 4 ranks form a 2 x 2 mesh: tensor-parallel groups {0,1} and {2,3}, data-parallel groups
{0,2} and {1,3}.  Each rank creates only the groups it belongs to (``split_group``), so the two
tp groups share one PG ID and differ in their GUID, as in a DeviceMesh.  Every sub-group is
given the world's timeout explicitly: ``new_group()`` without ``timeout=`` would wait ten minutes.

Scenarios:
  tp_straggler  rank 3 sleeps in host code before a tp all_reduce; rank 2 waits for it in tp,
                rank 1 in dp; rank 0 waits in dp for rank 2 (chain 0 -> 2 -> 3).
  pp_recv       a 4-stage pipeline (0 -> 1 -> 2 -> 3); stage 1 sleeps before its send: rank 2
                waits in RECV from 1, rank 3 in RECV from 2, rank 0 in SEND to 1.
  killed        rank 2 is killed by SIGKILL before a dp all_reduce (no traceback).
  clean_exit    rank 1 leaves the training loop early and exits with status 0.
  exception     rank 1 raises a Python exception between a tp and a dp collective.
  net_killed    like killed, but NCCL may only use sockets (no P2P, no SHM): a network-level error.
  detail        TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 2 all_reduces a metric of another shape on the world group.
  uneven_ddp    a tiny Llama under DDP on the world group; rank 3 has one batch fewer.
  uneven_fsdp   the same model under FSDP2 (fully_shard); rank 3 has one batch fewer.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=int(os.environ.get("INCIDENT_TIMEOUT_S", "15")))
STEPS = 5
BAD_STEP = 3


def mesh_groups(rank: int) -> tuple[dist.ProcessGroup, dist.ProcessGroup]:
    """This rank's (tp, dp) groups of the 2 x 2 mesh."""
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL":  # its wrapper cannot split: every rank makes every group
        tps = [dist.new_group(r, timeout=TIMEOUT, group_desc="tp") for r in ([0, 1], [2, 3])]
        dps = [dist.new_group(r, timeout=TIMEOUT, group_desc="dp") for r in ([0, 2], [1, 3])]
        return tps[rank // 2], dps[rank % 2]
    tp = dist.split_group(split_ranks=[[0, 1], [2, 3]], timeout=TIMEOUT, group_desc="tp")
    dp = dist.split_group(split_ranks=[[0, 2], [1, 3]], timeout=TIMEOUT, group_desc="dp")
    assert tp is not None and dp is not None
    return tp, dp


def mesh_step(scenario: str, rank: int, step: int, tp: dist.ProcessGroup, dp: dist.ProcessGroup) -> None:
    act = torch.ones(4096, device="cuda")
    grad = torch.ones(1_048_576, device="cuda")
    if step == BAD_STEP:
        if scenario == "tp_straggler" and rank == 3:
            time.sleep(TIMEOUT.total_seconds() * 4)
        if scenario in ("killed", "net_killed") and rank == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        if scenario == "clean_exit" and rank == 1:
            sys.exit(0)
    dist.all_reduce(act, group=tp)
    if step == BAD_STEP and scenario == "exception" and rank == 1:
        raise RuntimeError("simulated bad batch on rank 1 at step 3")
    dist.all_reduce(grad, group=dp)
    if scenario == "detail":  # the DETAIL checks wrap the world group
        metric = torch.ones(16 if (step == BAD_STEP and rank == 2) else 8, device="cuda")
        dist.all_reduce(metric)
    torch.cuda.synchronize()


def pipeline(rank: int) -> None:
    x = torch.ones(8192, device="cuda")
    for step in range(STEPS):
        if rank > 0:
            dist.recv(x, src=rank - 1)
        if rank == 1 and step == BAD_STEP:
            time.sleep(TIMEOUT.total_seconds() * 4)
        if rank < 3:
            dist.send(x, dst=rank + 1)
        torch.cuda.synchronize()


def tiny_llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).cuda()


def uneven(scenario: str, rank: int) -> None:
    model = tiny_llama()
    if scenario == "uneven_ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = STEPS - 1 if rank == 3 else STEPS
    for _ in range(batches):
        ids = torch.randint(0, 1024, (2, 64), device="cuda")
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    done = torch.tensor([1.0], device="cuda")
    dist.all_reduce(done)  # an end-of-epoch metric: the rank with fewer batches arrives here early
    torch.cuda.synchronize()


def main(scenario: str) -> None:
    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=TIMEOUT, device_id=torch.device("cuda", local))
    if scenario == "pp_recv":
        pipeline(rank)
    elif scenario.startswith("uneven"):
        uneven(scenario, rank)
    else:
        tp, dp = mesh_groups(rank)
        for step in range(STEPS):
            mesh_step(scenario, rank, step, tp, dp)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
