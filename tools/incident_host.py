"""Provoke the deaths only the host explains (for issue 27's fixtures): a rank killed by the kernel's OOM killer
inside a memory-limited cgroup, and a rank that segfaults in native code.

Run under torchrun on CPU (gloo):  torchrun --nproc-per-node 2 tools/incident_host.py SCENARIO
(tools/make_incidents_host.sh runs both as root on a GPU machine and keeps the kernel log it wrote).

  oom       every rank all_reduces in a loop; at step 5 rank 1 grows its host memory, 256 MiB at a time,
            until the cgroup's memory.max ends it (SIGKILL from the OOM killer).
  segfault  at step 5 rank 1 reads address 0 through ctypes (SIGSEGV; the kernel logs "segfault at 0").
"""

from __future__ import annotations

import ctypes
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main(scenario: str) -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    print(f"rank {rank} pid {os.getpid()} host {os.uname().nodename}", flush=True)
    x = torch.ones(1 << 16)
    hoard = []
    for step in range(40):
        if step == 5 and rank == 1:
            if scenario == "oom":
                while True:  # touched, so the pages are really taken
                    hoard.append(bytearray(256 << 20))
                    hoard[-1][:: 4096] = b"\x01" * len(range(0, 256 << 20, 4096))
            elif scenario == "segfault":
                ctypes.string_at(0)
        dist.all_reduce(x)
        print(f"rank {rank} step {step}", flush=True)
        time.sleep(0.2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
