"""Provoke failures other than a plain straggler on 2 GPUs, for golden test fixtures.

Run under torchrun:  torchrun --nproc-per-node 2 tools/incident_failures.py SCENARIO
(tools/make_incidents_failures.sh runs them all, with the settings and mounts each one needs).

Set-up, launcher and device failures:
  setup         init and one all_reduce; the failure comes from the environment the script sets
                (a 1 MiB /dev/shm, a wrong NCCL_SOCKET_IFNAME, NCCL_NET=IB without InfiniBand).
  train         a few all_reduce steps, slowly: the node-loss run kills one agent while it trains.
  no_init       rank 1 never calls init_process_group; rank 0 waits for it at set-up.
  device_assert rank 1 looks up an index past the end of an embedding (a device-side assert).
  oom           rank 1 asks for more GPU memory than there is (CUDA out of memory).

How a hang happened:
  order_cycle   groups dp and cp with the same members; rank 1 issues them in the opposite order.
  order_cycle3  three groups a, b, c; rank 1 issues c, a, b while rank 0 issues a, b, c.
  p2p_cycle     rank 0 sends to rank 1 then all_reduces; rank 1 all_reduces then receives.
  p2p_count     rank 0 sends 1,000 elements, rank 1 receives 1,024.
  p2p_dtype     rank 0 sends 1,024 float32, rank 1 receives 1,024 bfloat16.
  uneven_gather all_gather_into_tensor with 4,096 elements on rank 0 and 4,000 on rank 1.
  rank0_only    rank 0 all_reduces a 1-element loss that rank 1 skips.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=int(os.environ.get("INCIDENT_TIMEOUT_S", "20")))


def init() -> int:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local % max(torch.cuda.device_count(), 1))
    dist.init_process_group("nccl", timeout=TIMEOUT, device_id=torch.device("cuda", torch.cuda.current_device()))
    return dist.get_rank()


def step(x: torch.Tensor) -> None:
    dist.all_reduce(x)
    torch.cuda.synchronize()


def main(scenario: str) -> None:
    if scenario == "no_init" and os.environ.get("RANK") == "1":
        time.sleep(TIMEOUT.total_seconds() * 3)
        return
    rank = init()
    x = torch.ones(1_048_576, device="cuda")
    step(x)
    if scenario == "setup":
        pass
    elif scenario == "train":
        for _ in range(120):
            step(x)
            time.sleep(1)
    elif scenario == "device_assert":
        emb = torch.nn.Embedding(1000, 64).cuda()
        ids = torch.tensor([5, 1000 + 24 * rank], device="cuda")
        if rank == 1:
            emb(ids).sum().item()
        step(x)
    elif scenario == "oom":
        if rank == 1:
            torch.empty(int(400e9), dtype=torch.uint8, device="cuda")
        step(x)
    elif scenario.startswith("order_cycle"):
        names = ["a", "b", "c"] if scenario == "order_cycle3" else ["dp", "cp"]
        groups = {n: dist.new_group([0, 1], timeout=TIMEOUT, group_desc=n) for n in names}
        for g in groups.values():  # every group's communicator exists and works before the bad step
            dist.all_reduce(torch.ones(8, device="cuda"), group=g)
        torch.cuda.synchronize()
        order = names if rank == 0 else names[-1:] + names[:-1]
        sizes = {"dp": 1_048_576, "cp": 786_432, "a": 1_048_576, "b": 786_432, "c": 524_288}
        for n in order:
            dist.all_reduce(torch.ones(sizes[n], device="cuda"), group=groups[n])
        torch.cuda.synchronize()
    elif scenario == "p2p_cycle":
        y = torch.ones(65_536, device="cuda")
        if rank == 0:
            dist.send(y, 1)
            step(x)
        else:
            step(x)
            dist.recv(y, 0)
        torch.cuda.synchronize()
    elif scenario in ("p2p_count", "p2p_dtype"):
        if rank == 0:
            dist.send(torch.ones(1000 if scenario == "p2p_count" else 1024, device="cuda"), 1)
        else:
            dtype = torch.bfloat16 if scenario == "p2p_dtype" else torch.float32
            dist.recv(torch.empty(1024, device="cuda", dtype=dtype), 0)
        torch.cuda.synchronize()
        step(x)
    elif scenario == "uneven_gather":
        n = 4096 if rank == 0 else 4000
        out = torch.empty(2 * n, device="cuda")
        dist.all_gather_into_tensor(out, torch.ones(n, device="cuda"))
        step(x)
    elif scenario == "rank0_only":
        if rank == 0:
            dist.all_reduce(torch.ones(1, device="cuda"))
        step(x)
    else:
        sys.exit(f"unknown scenario {scenario}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
