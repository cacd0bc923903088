"""A user's model that calls one block twice (weights shared across depth, as ALBERT-style and looped models do):
`explain --module twicenet:build --block-class Block`. Its first block runs before and after the second, so autograd
accumulates that block's gradients from both calls and they become ready only after the second block's (the
backward of the first call comes last); the embedding is not named ``embed_tokens``."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, HIDDEN, CLASSES = 2003, 160, 7


class Block(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.fc1 = nn.Linear(h, 4 * h + 3)
        self.fc2 = nn.Linear(4 * h + 3, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        x = x + self.proj(att @ v)
        return x + self.fc2(torch.relu(self.fc1(x)))


class TwiceNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.blocks = nn.ModuleList(Block(HIDDEN) for _ in range(2))
        self.norm = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = self.blocks[1](self.blocks[0](x))
        x = self.blocks[0](x)  # the first block again, with the same weights
        return self.head(self.norm(x).mean(dim=1))


def build() -> nn.Module:
    return TwiceNet()
