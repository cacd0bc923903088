"""A 2-rank torchrun worker for the recordings of issue 41 §3-§5 that earlier recorders lacked (ncclcheck).

argv[1]: first      the first collective is a one-element all_reduce (a setting rank 1 alone gets may hang it)
         scheduled  three all_reduces, then rank 1's stream runs a long kernel before its fourth: rank 1's entry
                    stays `scheduled` while rank 0's is `started` (TORCH_NCCL_ENABLE_TIMING=1)
         a2a_short  all_to_all_single where rank 1 sends rank 0 fewer elements than rank 0's output split expects
         seq_behind rank 1's fourth all_reduce is half the size of rank 0's, then each goes on to a fifth
         rs_size    reduce_scatter_tensor with an output as large as the input (it must be input / world size)
         bcast      three all_reduces, then rank 1 sleeps in host code while rank 0 waits in a broadcast
         bcast_root three all_reduces, then rank 0 (the root) sleeps in host code while rank 1 waits in a broadcast
         steps      one all_reduce a step, printing "step i/n" every STEP_S seconds (to be killed mid-run)
         early_exit three all_reduces, then rank 1 leaves (exit 0) while rank 0 goes on to a fourth
         uneven     rank 0 holds 7 batches, rank 1 6: each prints "batch i/n" and all_reduces; then a barrier
         raise      three all_reduces, then rank 1 raises (a bad batch) while rank 0 waits in the fourth
         ok         five all_reduces and a barrier
Env: JOB_BACKEND (nccl or gloo), JOB_TIMEOUT_S, HANG_S, JOB_DIR (pid files), RANK1_ENV (KEY=VALUE,... for rank 1).
"""
import datetime
import os
import sys
import time

mode = sys.argv[1]
if os.environ.get("RANK") == "1" and os.environ.get("RANK1_ENV"):
    os.environ.update(kv.split("=", 1) for kv in os.environ["RANK1_ENV"].split(","))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
backend = os.environ.get("JOB_BACKEND", "nccl")
cuda = backend == "nccl"
dev = torch.device("cuda", min(local, torch.cuda.device_count() - 1)) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(dev)
print(f"job rank={rank} pid={os.getpid()} torch={torch.__version__} mode={mode}", file=sys.stderr, flush=True)
with open(os.path.join(os.environ.get("JOB_DIR", "/tmp"), f"pid.{rank}"), "w") as f:
    f.write(str(os.getpid()))
timeout = datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT_S", "30")))
kw = {"device_id": dev} if cuda else {}
dist.init_process_group(backend, timeout=timeout, **kw)
x = torch.ones(1 << 20, device=dev)
hang_s = float(os.environ.get("HANG_S", "60"))


def sync():
    if cuda:
        torch.cuda.synchronize()


def step(n, t=x):
    for _ in range(n):
        dist.all_reduce(t)
    sync()


def rank1_sleeps(s):
    """Rank 1 away from the collectives, in host code."""
    time.sleep(s)


if mode == "first":
    step(1, torch.ones(1, device=dev))
    step(4)
elif mode == "scheduled":
    step(3)
    if rank == 1:
        torch.cuda._sleep(int(hang_s * 2e9))  # about hang_s seconds of GPU cycles on the stream NCCL waits on
    step(1)
elif mode == "a2a_short":
    step(2)
    out = torch.zeros(8, device=dev)
    sent = [4, 4] if rank == 0 else [2, 4]  # rank 1 sends rank 0 two elements where rank 0 expects four
    dist.all_to_all_single(out, torch.ones(sum(sent), device=dev), output_split_sizes=[4, 4],
                           input_split_sizes=sent)
    sync()
    step(1)
elif mode == "seq_behind":
    step(3)
    step(1, x if rank == 0 else x[: len(x) // 2])
    step(1)
elif mode == "rs_size":
    step(2)
    out = torch.zeros(1 << 20, device=dev)  # must be (1 << 20) // world
    dist.reduce_scatter_tensor(out, x)
    sync()
elif mode == "bcast":
    step(3)
    if rank == 1:
        rank1_sleeps(hang_s)
    dist.broadcast(x, src=0)
    sync()
elif mode == "bcast_root":
    step(3)
    if rank == 0:
        time.sleep(hang_s)
    dist.broadcast(x, src=0)
    sync()
elif mode == "steps":
    n = int(os.environ.get("STEPS", "200"))
    for i in range(1, n + 1):
        step(1)
        print(f"rank {rank} step {i}/{n}", flush=True)
        time.sleep(float(os.environ.get("STEP_S", "0.5")))
elif mode == "early_exit":
    step(3)
    if rank == 1:
        print("rank 1 has no more batches, leaving", flush=True)
        sys.exit(0)
    step(1)
elif mode == "uneven":
    n = 7 if rank == 0 else 6
    for i in range(1, n + 1):
        step(1)
        print(f"rank {rank} epoch 0 batch {i}/{n}", flush=True)
    dist.barrier()
elif mode == "raise":
    step(3)
    if rank == 1:
        raise RuntimeError("rank 1: a bad batch at step 4")
    step(1)
elif mode == "ok":
    step(5)
    dist.barrier()
print(f"job rank={rank} done", file=sys.stderr, flush=True)
dist.destroy_process_group()
