"""A user's model whose registration order is not what its names suggest (issue 43, §2): `explain --module
stagenet:build --block-class Block`. Two stages hold their blocks under the same indices (``encoder.blocks.0`` and
``decoder.blocks.0``), a bridge between them is registered between the stages, and the embedding is not named
``embed_tokens``; the forward uses every module in the order it is registered. No config, so no pass runs: the
gradient-ready order must come from registration order (its reverse), not from the names."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, WIDTH, WIDE, CLASSES = 3001, 160, 176, 7


class Block(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(h)
        self.mix = nn.Linear(h, h)
        self.norm2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h + 1)
        self.fc2 = nn.Linear(4 * h + 1, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mix(self.norm1(x))
        return x + self.fc2(torch.relu(self.fc1(self.norm2(x))))


class Stage(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(h) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class StageNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.encoder = Stage(WIDTH)
        self.bridge = nn.Linear(WIDTH, WIDE)
        self.decoder = Stage(WIDE)
        self.norm = nn.LayerNorm(WIDE)
        self.head = nn.Linear(WIDE, CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.decoder(self.bridge(self.encoder(self.tokens(ids))))
        return self.head(self.norm(x).mean(dim=1))


def build() -> nn.Module:
    return StageNet()
