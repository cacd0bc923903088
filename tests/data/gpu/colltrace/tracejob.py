"""A 2-rank torchrun worker recording NCCL's collective trace (NCCL_DEBUG_SUBSYS=INIT,COLL) for ncclcheck issue 41.

argv[1]: mismatch  three all_reduces on the world, then rank 0 all_reduces where rank 1 all_gathers (one opCount,
                   two ops), then both all_reduce again
         order     two groups of both ranks set up in the same order; one all_reduce on each (same order); then
                   rank 0 all_reduces on group A and waits for it before group B, rank 1 on B then A: an order
                   deadlock across communicators (each process blocks in its first op's synchronize)
Env: JOB_TIMEOUT_S, JOB_DIR (pid files and the 'entered' marks).
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

mode = sys.argv[1]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
dev = torch.device("cuda", min(local, torch.cuda.device_count() - 1))
torch.cuda.set_device(dev)
jobdir = os.environ.get("JOB_DIR", "/tmp")
print(f"job rank={rank} pid={os.getpid()} torch={torch.__version__} mode={mode}", file=sys.stderr, flush=True)
with open(os.path.join(jobdir, f"pid.{rank}"), "w") as f:
    f.write(str(os.getpid()))
timeout = datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT_S", "30")))
dist.init_process_group("nccl", timeout=timeout, device_id=dev)
x = torch.ones(1 << 20, device=dev)


def step(n, t=x, group=None):
    for _ in range(n):
        dist.all_reduce(t, group=group)
    torch.cuda.synchronize()


if mode == "mismatch":
    step(3)
    if rank == 0:
        dist.all_reduce(x)
    else:
        out = torch.zeros(2 * 4096, device=dev)
        dist.all_gather_into_tensor(out, torch.ones(4096, device=dev))
    print(f"rank {rank} issued its fourth collective", flush=True)
    torch.cuda.synchronize()
    step(1)
elif mode == "order":
    ga = dist.new_group([0, 1])
    gb = dist.new_group([0, 1])
    a = torch.ones(1000, device=dev)
    b = torch.ones(3000, device=dev)
    step(2)
    step(1, a, ga)
    step(1, b, gb)
    first, second = ((a, ga), (b, gb)) if rank == 0 else ((b, gb), (a, ga))
    open(os.path.join(jobdir, f"entered.{rank}"), "w").close()
    print(f"rank {rank} issues its group {'A' if rank == 0 else 'B'} all_reduce first", flush=True)
    step(1, *first)
    step(1, *second)
print(f"job rank={rank} done", file=sys.stderr, flush=True)
dist.destroy_process_group()
