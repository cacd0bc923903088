"""A worker that loads NCCL by its soname with ctypes, as vLLM's pynccl wrapper does, on a host without libnccl."""
import ctypes

import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: loading libnccl.so.2", flush=True)
ctypes.CDLL("libnccl.so.2")
dist.barrier()
dist.destroy_process_group()
