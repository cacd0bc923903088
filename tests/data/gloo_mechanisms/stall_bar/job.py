"""A gloo job whose rank 1 stops calling all_reduce at step 12 (it sleeps): rank 0's tqdm bar stops mid-epoch."""
import time

import torch
import torch.distributed as dist
from tqdm import tqdm

dist.init_process_group("gloo")
rank = dist.get_rank()
bar = tqdm(range(400), desc="Epoch 0", disable=rank != 0, mininterval=0)
for step in bar:
    if rank == 1 and step == 12:
        time.sleep(3600)
    dist.all_reduce(torch.ones(4))
