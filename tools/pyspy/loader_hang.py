"""A gloo job whose rank 1 waits on its DataLoader's worker while rank 0 waits in all_reduce (py-spy recordings).

Rank 1's dataset sleeps for a long time in its worker process from step 3 on, so its main thread blocks in the
DataLoader's queue get; rank 0 enters the step's all_reduce and waits there. tools/pyspy/record.sh takes
``py-spy dump`` of each rank while it hangs.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    """Items are instant, except on rank 1 from item 3 on, where the worker sleeps (a stuck read)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank

    def __len__(self) -> int:
        return 100

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.rank == 1 and i >= 3:
            time.sleep(3600)
        return torch.ones(4)


def main() -> None:
    dist.init_process_group("gloo", timeout=timedelta(seconds=int(os.environ.get("HANG_TIMEOUT", "600"))))
    rank = dist.get_rank()
    loader = DataLoader(Slow(rank), batch_size=1, num_workers=1)
    for step, batch in enumerate(loader):
        t = batch.sum().reshape(1)
        dist.all_reduce(t)
        print(f"rank {rank} step {step} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
