"""A gloo job whose ranks stop apart, each dumped by Python's faulthandler (recorded as tests/data/faulthandler/).

Every rank arms ``faulthandler.dump_traceback_later(DELAY, exit=True)``; rank 0 runs one more all_reduce than the
others (``--extra``), so it waits there until the timer dumps every thread's stack to its stderr and ends it
(``Timeout (0:00:08)!``, then ``Thread 0x... (most recent call first):`` and its frames). With ``--register`` each
rank also arms ``faulthandler.register(SIGUSR1)``, dumped by ``kill -USR1`` from outside (no ``Timeout`` line).
With ``--segv`` rank 1 reads address 0 through ctypes instead (``Fatal Python error: Segmentation fault``).

    torchrun --nproc-per-node 2 tools/faulthandler/hang.py [--extra] [--segv] [--delay S]
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def step(t: torch.Tensor) -> None:
    dist.all_reduce(t)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--extra", action="store_true")
    p.add_argument("--segv", action="store_true")
    p.add_argument("--register", action="store_true")
    p.add_argument("--delay", type=float, default=8.0)
    a = p.parse_args()
    faulthandler.enable()
    if a.register:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=120))
    rank = dist.get_rank()
    faulthandler.dump_traceback_later(a.delay, exit=True)
    t = torch.ones(4)
    for _ in range(3):
        step(t)
    if a.segv and rank == 1:
        ctypes.string_at(0)
    if a.extra and rank == 0:
        step(t)  # the others never join: the timer dumps this rank inside all_reduce
    else:
        time.sleep(a.delay * 3)  # the others sleep past the timer: dumped in their own code
    print(f"rank {rank} done", file=sys.stderr)
    os._exit(0)


if __name__ == "__main__":
    main()
