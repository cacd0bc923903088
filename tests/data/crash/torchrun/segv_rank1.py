"""Rank 1 dies of SIGSEGV in native code (a null pointer read through ctypes) after the process group's start."""
import ctypes

import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()} started", flush=True)
if dist.get_rank() == 1:
    ctypes.string_at(0)
dist.barrier()
