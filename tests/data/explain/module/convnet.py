"""A user's CNN whose repeated blocks sit in nn.Sequential stages (ResNet-style): `explain --module convnet:build
--block-class Bottleneck` wraps each Bottleneck as FSDP does under ModuleWrapPolicy({Bottleneck})."""

from __future__ import annotations

import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, c: int, mid: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, c, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(x + self.bn3(self.conv3(y)))


class ConvNet(nn.Module):
    def __init__(self, classes: int = 7) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1, bias=False), nn.BatchNorm2d(24), nn.ReLU())
        self.stage1 = nn.Sequential(Bottleneck(24, 13), Bottleneck(24, 13))
        self.down = nn.Conv2d(24, 40, 3, stride=2, padding=1)
        self.stage2 = nn.Sequential(Bottleneck(40, 21), Bottleneck(40, 21))
        self.fc = nn.Linear(40, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.fc(x.mean(dim=(2, 3)))


def build() -> nn.Module:
    return ConvNet()
