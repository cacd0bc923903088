"""Provoke DDP's reducer errors on CPU gloo: python ddp_errors.py {unused,twice,static}."""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        self.step += 1
        if MODE == "twice":
            return self.a(x), self.b
        if MODE == "static" and self.step > 2:
            return self.a(x)
        return self.b(self.a(x)) if MODE == "static" else self.a(x)


MODE = sys.argv[1]
dist.init_process_group("gloo")
model = DDP(Two(), find_unused_parameters=MODE == "twice", static_graph=MODE == "static")
for i in range(4):
    out = model(torch.randn(2, 4))
    if MODE == "twice":
        out, b = out
        out = b(out)
    out.sum().backward()
    print(f"rank {dist.get_rank()} step {i} done", flush=True)
dist.destroy_process_group()
