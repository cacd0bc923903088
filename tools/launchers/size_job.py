"""A gloo job where one rank gives a collective a buffer of the wrong size, for recording PyTorch's own size check.

usage: size_job.py CALL
  gather   all_gather_into_tensor: rank 1's output holds one input's elements, not world size times as many
  scatter  reduce_scatter_tensor: rank 1's output is as large as its input, not input / world size

ProcessGroup checks the sizes before the collective starts (ProcessGroupGloo.cpp / ProcessGroupNCCL.cpp,
_allgather_base and _reduce_scatter_base) and raises on the rank whose buffer is wrong; the others enter the
collective and wait for it until their timeout (JOB_TIMEOUT, default 10 s).
"""

from __future__ import annotations

import datetime
import os
import sys

import torch
import torch.distributed as dist


def main() -> None:
    call = sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT", "10"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.ones(1024)
    if call == "gather":
        out = torch.empty(1024 * (1 if rank == 1 else world))
        dist.all_gather_into_tensor(out, x)
    else:
        out = torch.empty(1024 if rank == 1 else 1024 // world)
        dist.reduce_scatter_tensor(out, x)
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
