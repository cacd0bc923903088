"""A job that deadlocks on purpose across two groups: rank 0 issues dp then cp, rank 1 cp then dp.

torchrun --nproc-per-node 2 cycle_job.py READY_DIR

gloo's collectives block the calling thread, so each rank's stack stops in its first call of the bad step: rank 0
in the dp line, rank 1 in the cp line, each waiting for the other to join.  Each rank creates READY_DIR/rank<N>
just before that step.  The lines marked DP and CP are what a snapshot must point at.
"""

import datetime
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> None:
    ready = Path(sys.argv[1])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    dp = dist.new_group([0, 1], group_desc="dp")
    cp = dist.new_group([0, 1], group_desc="cp")
    t = torch.ones(1024)
    dist.all_reduce(t, group=dp)
    dist.all_reduce(t, group=cp)
    (ready / f"rank{rank}").touch()
    if rank == 0:
        dist.all_reduce(t, group=dp)  # DP
        dist.all_reduce(t, group=cp)
    else:
        dist.all_reduce(t, group=cp)  # CP
        dist.all_reduce(t, group=dp)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
