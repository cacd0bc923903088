"""Provoke one of torch.distributed's own argument/env errors on CPU (gloo): CASE names which."""
import os  # noqa: F401 (kept as recorded: the tracebacks' line numbers count this line)
import sys

import torch
import torch.distributed as dist

case = sys.argv[1]
if case == "env_unset":
    dist.init_process_group("gloo", init_method="env://")
elif case == "init_twice":
    dist.init_process_group("gloo")
    dist.init_process_group("gloo")
elif case == "no_default_pg":
    t = torch.ones(4)
    dist.all_reduce(t)
elif case == "cpu_on_cuda_group":
    dist.init_process_group("cuda:gloo")
    t = torch.ones(4)
    dist.all_reduce(t)
elif case == "noncontig":
    dist.init_process_group("gloo")
    t = torch.ones(4, 4).t()
    dist.all_reduce(t)
elif case == "dtype":
    dist.init_process_group("gloo")
    out = torch.zeros(8, dtype=torch.float16)
    dist.all_gather_into_tensor(out, torch.ones(4))
elif case == "device_id":
    dist.init_process_group("gloo", device_id=torch.device("cpu"))
elif case == "src_not_in_group":
    dist.init_process_group("gloo")
    g = dist.new_group([0])
    if dist.get_rank() == 0:
        dist.broadcast(torch.ones(4), src=1, group=g)
elif case == "list_length":
    dist.init_process_group("gloo")
    out = [torch.zeros(4) for _ in range(3)]
    dist.all_gather(out, torch.ones(4))
elif case == "gather_length":
    dist.init_process_group("gloo")
    out = [torch.zeros(4) for _ in range(3)] if dist.get_rank() == 0 else None
    dist.gather(torch.ones(4), out, dst=0)
print("done", case)
