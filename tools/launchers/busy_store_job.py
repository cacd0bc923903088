"""A gloo job whose main process evaluates alone after training while the others wait for it in the store, for
recording what a store's wait for a busy rank prints (job/storewait.py).

usage: busy_store_job.py [SECONDS]
  SECONDS  how long rank 0 evaluates (default 8): longer than the store's timeout (JOB_TIMEOUT, default 4 s), which
           init_process_group gives the store torchrun's env:// rendezvous made

Every rank runs two training steps (an all_reduce each, then a "step N loss" line of the script's own); rank 0 then
prints "epoch 1 valid, step N" lines while the others wait in the default store for the key rank 0 sets when its
evaluation ends (a store-based barrier, as a script that keeps the others back while the main process evaluates
does). The store's wait (TCPStore::doWait) gives up first: ``wait timeout after 4000ms, keys: ...``.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT", "4"))))
    rank = dist.get_rank()
    for step in range(2):
        dist.all_reduce(torch.ones(4))
        print(f"epoch 1 step {step} loss 0.5", flush=True)
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:
        steps = 8
        for i in range(steps):
            print(f"epoch 1 valid, step {i}, acc 0.9", flush=True)
            time.sleep(seconds / steps)
        store.set("eval_done", b"1")
    else:
        store.wait(["eval_done"])
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
