"""A small job under Ray Train (TorchTrainer, 4 CPU workers, gloo) that fails on purpose.

usage: ray_job.py MODE [CULPRIT]   (modes as worker.py's)
"""

from __future__ import annotations

import sys

import ray
import torch
import torch.distributed as dist
from ray.train import RunConfig, ScalingConfig, get_context
from ray.train.torch import TorchConfig, TorchTrainer
from worker import misbehave


def loop(config: dict) -> None:
    rank = get_context().get_world_rank()
    t = torch.ones(1 << 16)
    for step in range(6):
        misbehave(config["mode"], rank, config["culprit"], step)
        dist.all_reduce(t)
        print(f"rank {rank} step {step} done", flush=True)


def main() -> None:
    mode = sys.argv[1]
    culprit = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    ray.init(num_cpus=4, include_dashboard=False)
    trainer = TorchTrainer(loop, train_loop_config={"mode": mode, "culprit": culprit},
                           scaling_config=ScalingConfig(num_workers=4, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=10),
                           run_config=RunConfig(storage_path="/tmp/ncclcheck-ray"))
    trainer.fit()


if __name__ == "__main__":
    main()
