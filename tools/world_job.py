"""The training step of tools/make_world_consoles.sh: gloo on CPU under torchrun, one scenario per argument.

restart  attempt 0: rank 1 raises a CUDA-out-of-memory RuntimeError before the step; attempt 1 (after torchrun's
         restart): rank 2 sleeps in host code, the others time out in all_reduce.
sleep5   rank 5 sleeps in host code before the step's all_reduce; the others time out waiting for it.
tpdp     8 ranks as tp=2 x dp=4 (new_group); rank 5 sleeps before the tp all_reduce: rank 4, its tp peer, waits in
         tp, the rest finish tp and wait in their dp all_reduce.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=10)


def main() -> None:
    mode = sys.argv[1]
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if attempt > 0:
        # The agent's store keeps the previous attempt's gloo addresses: a fresh store per attempt, on the next port.
        os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "False"
        os.environ["MASTER_PORT"] = str(int(os.environ["MASTER_PORT"]) + attempt)
    dist.init_process_group("gloo", timeout=TIMEOUT)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank} of WORLD_SIZE={world}, attempt {attempt}", flush=True)
    t = torch.ones(1000)
    for _ in range(3):
        dist.all_reduce(t)
    if mode == "restart":
        if attempt == 0 and rank == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated on CPU)")
        if attempt > 0 and rank == 2:
            time.sleep(40)
        dist.all_reduce(t)
    elif mode == "sleep5":
        if rank == 5:
            time.sleep(40)
        dist.all_reduce(t)
    elif mode == "tpdp":
        tp = dp = None
        for start in range(0, world, 2):
            g = dist.new_group(list(range(start, start + 2)), timeout=TIMEOUT)
            if rank in (start, start + 1):
                tp = g
        for first in range(2):
            g = dist.new_group(list(range(first, world, 2)), timeout=TIMEOUT)
            if rank % 2 == first:
                dp = g
        dist.all_reduce(t, group=tp)
        dist.all_reduce(t, group=dp)
        if rank == 5:
            time.sleep(40)
        dist.all_reduce(t, group=tp)
        dist.all_reduce(t, group=dp)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
