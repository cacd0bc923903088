"""Each worker tells init_process_group a world of 4 while torchrun started 2: both wait in the store for ranks
that were never launched (the world size taken from a count of devices, not from torchrun's WORLD_SIZE)."""
import datetime
import os

import torch.distributed as dist

dist.init_process_group("gloo", world_size=4, rank=int(os.environ["RANK"]), timeout=datetime.timedelta(seconds=600))
print("initialised", flush=True)
