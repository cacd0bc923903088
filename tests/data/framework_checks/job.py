"""Provoke the training frameworks' own checks on CPU gloo: torchrun --nproc-per-node 2 job.py CASE
(DCP's cases save to and load from the folder CKPT names)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CASE = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
if CASE == "no_trainable":
    model = nn.Linear(4, 4).requires_grad_(False)
    DDP(model)
elif CASE == "lazy":
    DDP(nn.Sequential(nn.LazyLinear(4), nn.ReLU()))
elif CASE == "device_ids_cpu":
    DDP(nn.Linear(4, 4), device_ids=[rank])
elif CASE in ("dcp_missing_key", "dcp_size"):
    folder = os.environ["CKPT"]
    dcp.save({"w": torch.zeros(8, 4)}, checkpoint_id=folder)
    dist.barrier()
    wanted = {"w": torch.zeros(8, 4), "b": torch.zeros(4)} if CASE == "dcp_missing_key" else {"w": torch.zeros(16, 4)}
    dcp.load(wanted, checkpoint_id=folder)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
