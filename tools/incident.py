"""Provoke a classic NCCL timeout on purpose, for golden test fixtures.

Run under torchrun with 2 GPUs:  torchrun --nproc-per-node 2 tools/incident.py SCENARIO
Scenarios: sleep (rank 1 sleeps past the timeout), mismatch (different collectives at the
same step), uneven (rank 1 has one batch fewer), barrier (rank 0 alone enters a barrier),
exception (rank 1 raises before the collective).
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT_S = int(os.environ.get("INCIDENT_TIMEOUT_S", "10"))


def main(scenario: str) -> None:
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=TIMEOUT_S), device_id=torch.device("cuda", rank))
    grad = torch.ones(1_048_576, device="cuda")
    batches = 4 if (scenario == "uneven" and rank == 1) else 5
    for step in range(batches):
        if scenario == "sleep" and rank == 1 and step == 3:
            time.sleep(TIMEOUT_S * 4)
        if scenario == "exception" and rank == 1 and step == 3:
            raise RuntimeError("simulated data error on rank 1 at step 3")
        if scenario == "mismatch" and step == 3:
            if rank == 0:
                dist.all_reduce(grad)
            else:
                out = torch.empty(2 * 4096, device="cuda")
                dist.all_gather_into_tensor(out, torch.ones(4096, device="cuda"))
            torch.cuda.synchronize()
            continue
        if scenario == "barrier" and step == 3 and rank == 0:
            dist.barrier()
        dist.all_reduce(grad)
        torch.cuda.synchronize()
    metric = torch.tensor([1.0], device="cuda")
    dist.all_reduce(metric)
    torch.cuda.synchronize()
    if scenario == "barrier" and rank == 1:
        time.sleep(TIMEOUT_S * 4)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
