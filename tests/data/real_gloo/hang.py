import datetime, os, sys, time
import torch, torch.distributed as dist
mode = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
rank = dist.get_rank()
t = torch.ones(1000)
for step in range(3):
    dist.all_reduce(t)
if rank == 2:
    time.sleep(30)  # stuck in host code
if mode == "monitored":
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=8))
else:
    dist.all_reduce(t)
dist.destroy_process_group()
