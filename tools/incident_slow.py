"""A slow rank, not a dead one: rank 0 busy with legitimate work past a short timeout while the others wait.

Run under torchrun on CPU (gloo):  torchrun --nproc-per-node 4 tools/incident_slow.py SCENARIO
(tools/make_incidents_slow.sh runs them all and keeps each console and per-rank log directory).

  eval      rank 0 alone runs an "Evaluating" loop (a tqdm bar) between two steps; the others all_reduce.
  save      rank 0 alone saves a checkpoint ("Saving checkpoint to ...") while the others all_reduce.
  tokenize  rank 0 tokenises the dataset first (a datasets-style "Running tokenizer on dataset" map bar) while the
            others wait for it in a barrier, as `main_process_first` does, before the first step.

Every rank sets the same timeout (INCIDENT_TIMEOUT_S, default 5 s); rank 0's work takes INCIDENT_BUSY_S (default
15 s). Nothing fails on rank 0: it is only slower than the timeout.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from tqdm import tqdm

TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("INCIDENT_TIMEOUT_S", "5")))
BUSY_S = float(os.environ.get("INCIDENT_BUSY_S", "15"))
STEPS = 50


def busy(desc: str, unit: str, total: int) -> None:
    """A loop of ``total`` items taking BUSY_S seconds, with the progress bar the libraries draw."""
    for _ in tqdm(range(total), desc=desc, unit=unit, mininterval=0.5):
        time.sleep(BUSY_S / total)


def main(scenario: str) -> None:
    dist.init_process_group("gloo", timeout=TIMEOUT)
    rank = dist.get_rank()
    x = torch.ones(4096)
    if scenario == "tokenize":
        if rank == 0:
            busy("Running tokenizer on dataset", " examples", 200)
        dist.barrier()
    for step in range(1, 4):
        dist.all_reduce(x)
        print(f"step {step} done", flush=True)
    if scenario == "eval" and rank == 0:
        print("rank 0: running evaluation", flush=True)
        busy("Evaluating", "it", STEPS)
    if scenario == "save" and rank == 0:
        print("Saving checkpoint to /tmp/incident_slow/checkpoint-3", flush=True)
        time.sleep(BUSY_S)
        print("Checkpoint saved", flush=True)
    dist.all_reduce(x)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
