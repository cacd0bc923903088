"""One rank held before a new group's creation while the others wait in c10d's store-based barrier.

Run under torchrun (gloo on CPU) with TORCH_DIST_INIT_BARRIER=1, which makes init_process_group and new_group wait in
_store_based_barrier (torch/distributed/distributed_c10d.py) until every process has reached them; the barrier logs
its wait through the `torch.distributed.distributed_c10d` logger (INFO up to 2.1, DEBUG since), set to DEBUG here.
The last rank sleeps HOLD_S seconds before new_group (as a process held in its own set-up would), longer than the
group's timeout (GROUP_TIMEOUT_S); the group is made of the other ranks, so their backend's own set-up completes and
they wait in the barrier, which counts every process of the world (new_group must be entered by all of them), until
it gives up. tools/launchers/store_barrier.sh records it.
"""

import logging
import os
import time
from datetime import timedelta

import torch.distributed as dist

logging.basicConfig(format="%(levelname).1s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s")
logging.getLogger("torch.distributed.distributed_c10d").setLevel(logging.DEBUG)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
if rank == world - 1:
    time.sleep(float(os.environ.get("HOLD_S", "40")))
dist.new_group(list(range(world - 1)), timeout=timedelta(seconds=float(os.environ.get("GROUP_TIMEOUT_S", "25"))))
print(f"rank {rank}: group made", flush=True)
dist.destroy_process_group()
