"""A job that hangs on purpose: one rank sleeps in host code while the others wait in all_reduce.

torchrun --nproc-per-node N hang_job.py READY_DIR [SLEEPER] [gloo|nccl]

Each rank creates READY_DIR/rank<N> just before the step that hangs.  The lines marked
SLEEP and WAIT are what a snapshot must point at.
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> None:
    ready = Path(sys.argv[1])
    sleeper = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    backend = sys.argv[3] if len(sys.argv) > 3 else "gloo"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    t = torch.ones(1 << 20, device=device)
    for _ in range(3):
        dist.all_reduce(t)
    t.sum().item()
    (ready / f"rank{rank}").touch()
    if rank == sleeper:
        time.sleep(3600)  # SLEEP
    dist.all_reduce(t)  # WAIT
    if backend == "nccl":
        torch.cuda.synchronize()  # SYNC: with NCCL the host blocks here while the collective spins on the GPU
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
