"""A small job under HF Accelerate that fails on purpose.

`accelerate launch --multi_gpu --num_processes 4` runs it on the CPU with gloo where no GPU is.

usage: accelerate_job.py MODE [CULPRIT]   (modes as worker.py's)
"""

from __future__ import annotations

import datetime
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from worker import misbehave


def main() -> None:
    mode = sys.argv[1]
    culprit = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=10))])
    accelerator.print(accelerator.state)
    rank = accelerator.process_index
    model = accelerator.prepare(torch.nn.Linear(256, 256))
    for step in range(6):
        misbehave(mode, rank, culprit, step)
        loss = model(torch.randn(8, 256)).pow(2).mean()
        accelerator.backward(loss)
        mean = accelerator.reduce(loss.detach(), reduction="mean")
        accelerator.print(f"step {step} loss {mean.item():.4f}")
    accelerator.wait_for_everyone()
    accelerator.print("finished")


if __name__ == "__main__":
    main()
