"""A small job under PyTorch Lightning (Trainer on CPU, 4 devices, DDP) that fails on purpose.

usage: lightning_job.py MODE [CULPRIT]   (modes as worker.py's)
"""

from __future__ import annotations

import datetime
import os
import sys

import lightning as L
import torch
from lightning.pytorch.strategies import DDPStrategy
from worker import misbehave

# Lightning starts its ranks one after another, and the store's connect timeout is this one too: on a loaded
# machine 10 s is not enough for the last rank to come up (lightning/slowstart: 30 s was not either).
TIMEOUT = int(os.environ.get("WORKER_TIMEOUT", "120"))


class Tiny(L.LightningModule):
    def __init__(self, mode: str, culprit: int) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 32)
        self.mode, self.culprit = mode, culprit

    def training_step(self, batch, batch_idx):
        misbehave(self.mode, self.global_rank, self.culprit, batch_idx)
        loss = self.layer(batch[0]).pow(2).mean()
        self.log("loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    mode = sys.argv[1]
    culprit = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 32)), batch_size=2)
    trainer = L.Trainer(accelerator="cpu", devices=4, max_steps=6, logger=False, enable_checkpointing=False,
                        enable_model_summary=False,
                        strategy=DDPStrategy(process_group_backend="gloo", timeout=datetime.timedelta(seconds=TIMEOUT)))
    trainer.fit(Tiny(mode, culprit), data)


if __name__ == "__main__":
    main()
