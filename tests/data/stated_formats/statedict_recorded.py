"""A flat parameter of ceil(N / 2) elements (a rank's shard of a 2-rank job) loaded into one of ceil(N / 8) (an
8-rank job's): load_state_dict's own error."""
import math

import torch
from torch import nn

N = 11_227_301


class Shard(nn.Module):
    def __init__(self, world: int) -> None:
        super().__init__()
        self.flat_param = nn.Parameter(torch.zeros(math.ceil(N / world)))


saved = Shard(2).state_dict()
Shard(8).load_state_dict(saved)
