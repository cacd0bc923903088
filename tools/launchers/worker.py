"""A small gloo job that fails on purpose, for recording what each launcher prints (tools/launchers/*.sh).

usage: worker.py MODE [CULPRIT]   MODE: clean | raise | kill | hang | oom | timelimit | early_exit | slow
(early_exit: the culprit leaves with status 0 before step 3 while the others go on; slow: every rank runs 60 steps a
second apart, for a signal sent from outside, tools/launchers/torchrun_signals.sh)
The rank comes from whichever launcher started the process (torchrun's RANK, Slurm's SLURM_PROCID, Open MPI's
OMPI_COMM_WORLD_RANK, or WORKER_RANK given by hand under pdsh); the job meets on 127.0.0.1:$MASTER_PORT.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "WORKER_RANK")
SIZE_VARS = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORKER_WORLD_SIZE")


def first(names: tuple[str, ...]) -> int:
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise SystemExit(f"worker.py: none of {', '.join(names)} is set")


def misbehave(mode: str, rank: int, culprit: int, step: int) -> None:
    """At step 3, the culprit rank fails as ``mode`` says (every rank, for ``timelimit``)."""
    if step != 3:
        return
    if mode == "timelimit":
        time.sleep(3600)
    if mode == "early_exit" and rank == culprit:
        print(f"rank {rank} has no more batches, leaving", flush=True)
        sys.exit(0)  # without destroy_process_group: as a rank whose loop ended early
    if rank != culprit:
        return
    if mode == "raise":
        raise RuntimeError(f"rank {rank}: a bad batch at step {step}")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(int(os.environ.get("WORKER_SLEEP", "40")))
    if mode == "oom":
        hog = []
        while True:  # grows until the launcher's memory limit (or the kernel) stops it
            hog.append(bytearray(64 << 20))
            hog[-1][::4096] = b"x" * len(range(0, 64 << 20, 4096))
            time.sleep(0.05)


def main() -> None:
    argv = [a for a in sys.argv[1:] if not a.startswith("--local_rank")]  # DeepSpeed's launcher adds it
    mode = argv[0]
    culprit = int(argv[1]) if len(argv) > 1 else 1
    rank, world = first(RANK_VARS), first(SIZE_VARS)
    port = os.environ.get("MASTER_PORT", "29611")
    # WORKER_INIT=env: torchrun's own store (env://), which its restarts give a fresh prefix each attempt
    init = "env://" if os.environ.get("WORKER_INIT") == "env" else f"tcp://127.0.0.1:{port}"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=int(os.environ.get("WORKER_TIMEOUT", "10"))))
    print(f"rank {rank} of {world} joined (pid {os.getpid()})", flush=True)
    t = torch.ones(1 << 16)
    for step in range(60 if mode == "slow" else 6):
        misbehave(mode, rank, culprit, step)
        dist.all_reduce(t)
        if mode == "slow":
            time.sleep(1)
        print(f"rank {rank} step {step} done, loss {1.0 / (step + 1):.4f}", flush=True)
    dist.destroy_process_group()
    print(f"rank {rank} finished", flush=True)


if __name__ == "__main__":
    main()
