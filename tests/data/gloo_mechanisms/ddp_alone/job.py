"""A rank-dependent exit from the epoch loop: rank 0 alone decides to stop (a patience check on its own metric) and
goes on to wrap a model in DDP, whose constructor checks the parameters across the processes (a collective); rank 1
trains on and then exits without joining."""

import datetime
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
rank = dist.get_rank()
t = torch.ones(1000)
for epoch in range(6):
    dist.all_reduce(t)
    print(f"epoch {epoch} done", flush=True)
    if rank == 0 and epoch == 2:  # patience exceeded on rank 0 alone
        break
if rank == 0:
    model = DistributedDataParallel(torch.nn.Linear(4, 4))
else:
    time.sleep(15)
dist.destroy_process_group()
