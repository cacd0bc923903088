"""A gloo job whose workers reach for the rendezvous store somewhere it is not, for recording what the store's client
prints (tools/launchers/torchrun_store.sh).

usage: store_job.py   STORE_PORT=N: the port every worker connects to instead of the one torchrun gave it (MASTER_PORT),
as when the nodes of a job are given different ports; the workers meet through env:// with a 8 s timeout.
"""

from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist


def main() -> None:
    if "STORE_PORT" in os.environ:
        os.environ["MASTER_PORT"] = os.environ["STORE_PORT"]
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=8))
    t = torch.ones(1 << 10)
    dist.all_reduce(t)
    print(f"rank {dist.get_rank()} finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
