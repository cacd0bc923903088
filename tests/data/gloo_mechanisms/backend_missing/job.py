"""A worker that asks for the NCCL backend from a PyTorch build without it (this host's CPU-only wheel)."""
import torch.distributed as dist

dist.init_process_group("nccl")
dist.barrier()
dist.destroy_process_group()
