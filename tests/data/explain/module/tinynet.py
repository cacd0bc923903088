"""A model of the user's own (no transformers): what `explain --module tinynet:build` reads on the meta device."""

from __future__ import annotations

import torch
from torch import nn

HIDDEN = 64


class Block(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.fc1 = nn.Linear(h, 4 * h + 3)
        self.fc2 = nn.Linear(4 * h + 3, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, _, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        x = x + self.proj(q * v)
        return x + self.fc2(torch.relu(self.fc1(x)))


class TinyNet(nn.Module):
    def __init__(self, vocab: int = 1000, h: int = HIDDEN, layers: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList(Block(h) for _ in range(layers))
        self.head = nn.Linear(h, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=1))


def build() -> nn.Module:
    return TinyNet()


def not_a_module() -> str:
    return "a string"
