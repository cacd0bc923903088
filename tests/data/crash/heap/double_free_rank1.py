"""Rank 1 frees one heap chunk twice through ctypes after the process group's start: glibc's allocator finds it
(malloc.c, malloc_printerr) and aborts the process."""
import ctypes
import os

import torch.distributed as dist

dist.init_process_group("gloo")
dist.barrier()
if dist.get_rank() == 1:
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    chunk = libc.malloc(48)
    libc.free(chunk)
    libc.free(chunk)
dist.barrier()
print(f"rank {dist.get_rank()} pid {os.getpid()} done", flush=True)
