"""A small gloo training loop whose ranks hold different numbers of batches, for recording what uneven data prints.

usage: uneven_job.py PRINT [END]
  PRINT  lines: each rank prints "epoch 0 batch i/n" before its step; tqdm: a tqdm bar per rank (stderr)
  END    barrier (default): after its loop a rank waits in dist.barrier() before saving; metric: it all_reduces its
         epoch's loss (one element), as an evaluation at the epoch's end does

The dataset holds 25 samples, sharded by rank (samples rank, rank + world, ...) as a hand-written sampler or an
IterableDataset split by rank does, 2 samples a batch: with two ranks, rank 0 gets 13 samples (7 batches) and rank 1
12 (6 batches). Every step all_reduces the gradient (as DDP's backward does), so rank 0's 7th all_reduce waits for a
rank that has left its loop: the hang uneven data makes. DistributedSampler pads every rank to the same count
(drop_last=False) or drops the tail (drop_last=True): with it the ranks would agree.
"""

from __future__ import annotations

import datetime
import os
import sys

import torch
import torch.distributed as dist

SAMPLES, BATCH = 25, 2


def main() -> None:
    show = sys.argv[1]
    end = sys.argv[2] if len(sys.argv) > 2 else "barrier"
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT", "10"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = list(range(rank, SAMPLES, world))
    batches = [mine[i:i + BATCH] for i in range(0, len(mine), BATCH)]
    grad = torch.ones(1 << 12)
    steps = range(len(batches))
    if show == "tqdm":
        from tqdm import tqdm

        steps = tqdm(steps, desc=f"rank {rank} epoch 0", total=len(batches), mininterval=0)
    loss = torch.zeros(1)
    for i in steps:
        if show == "lines":
            print(f"epoch 0 batch {i + 1}/{len(batches)}", flush=True)
        dist.all_reduce(grad)  # the gradient's all_reduce, as DDP's backward issues it
        loss += 1.0 / (i + 1)
    if end == "metric":
        dist.all_reduce(loss)
    else:
        dist.barrier()
    print(f"rank {rank} saved the checkpoint", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
