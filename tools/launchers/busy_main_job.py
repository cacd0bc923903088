"""A gloo job whose main process does work alone (tokenising a dataset, evaluating) while the others wait, for recording
what a busy rank -- slow, not dead -- prints.

usage: busy_main_job.py WORK [SECONDS]
  WORK     tokenize: rank 0 draws a tqdm bar "Running tokenizer on dataset" (the HF datasets map's) while the others
           wait in dist.barrier(), as under the HF Trainer's main_process_first; eval: rank 0 draws "Evaluating"
           while the others wait in the next step's all_reduce, as an evaluation on the main process alone does;
           loop: rank 0 draws a bar with no description and no room for the bar (tqdm's ncols=0: the counts alone)
           while the others wait in a broadcast from rank 0, as a metric pass on the main process alone does
  SECONDS  how long rank 0 works (default 25): longer than the group's timeout (JOB_TIMEOUT, default 10 s)

Every rank then meets in the collective; the others' timeout fires first, so rank 0, which would have arrived, is the
one they waited for. The barrier on gloo is an all_reduce of one element; its timeout names no op.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    work = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 25.0
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT", "10"))))
    rank = dist.get_rank()
    if rank == 0:
        from tqdm import tqdm

        desc = {"tokenize": "Running tokenizer on dataset", "eval": "Evaluating"}.get(work)
        steps = 50
        for _ in tqdm(range(steps), desc=desc, mininterval=1.0, unit=" examples" if work == "tokenize" else "it",
                      ncols=0 if work == "loop" else None):
            time.sleep(seconds / steps)
    if work == "tokenize":
        dist.barrier()
    elif work == "loop":
        dist.broadcast(torch.zeros(1 << 10), src=0)
    else:
        dist.all_reduce(torch.ones(1 << 10))
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
