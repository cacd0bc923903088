"""A 2-rank gloo worker for the h-hang recordings (ncclcheck issue 41): DDP's construction-time model check and
ranks whose own progress counters stop apart.

argv[1]: ddp_count  rank 1's model has one more layer: DDP's check of the parameter counts fails on both ranks
         ddp_shape  the same number of parameters, rank 1's Linear one output wider: the sizes check fails
         apart      one all_reduce a step, each rank printing "Rank r batch b start" and "Rank r batch b loss x";
                    rank 1's loop holds STEPS - 2 batches, rank 0's STEPS; rank 1 then sleeps (work of its own after
                    the loop) while rank 0 waits in its next all_reduce; the recorder kills the job with no timeout
Env: JOB_DIR (pid files), STEPS (default 8).
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
with open(os.path.join(os.environ.get("JOB_DIR", "/tmp"), f"pid.{rank}"), "w") as f:
    f.write(str(os.getpid()))
if mode == "ddp_count":
    layers = [nn.Linear(4, 4)] + ([nn.Linear(4, 4)] if rank == 1 else [])
    nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
elif mode == "ddp_shape":
    nn.parallel.DistributedDataParallel(nn.Linear(4, 4 + rank))
elif mode == "apart":
    steps = int(os.environ.get("STEPS", "8"))
    mine = steps if rank == 0 else steps - 2
    for b in range(1, mine + 1):
        print(f"Rank {rank} batch {b} start", flush=True)
        t = torch.ones(4) * b
        dist.all_reduce(t)
        print(f"Rank {rank} batch {b} loss {float(t[0]) / (b + 1):.4f}", flush=True)
        time.sleep(0.3)
    time.sleep(600)
dist.destroy_process_group()
