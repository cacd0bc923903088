"""The shared vocabulary of the layouts: a Shape on the wire and the Setting it is computed for."""

from __future__ import annotations

from dataclasses import dataclass

from ncclcheck.explain.models import Model
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import Table


@dataclass(frozen=True)
class Shape:
    """One tensor a collective could be moving."""

    kind: str
    family: str
    numel_in: int
    numel_out: int | None
    description: str
    tier: int
    params: tuple[str, ...] = ()


@dataclass(frozen=True)
class Setting:
    """Everything the layouts need: the model's shape, its table, the group size, the training dtype's element
    size, DDP's bucket cap where the user gave one, the HSDP mesh (replicate, shard) where one was given and whether
    DDP was told to find unused parameters; a pipeline's stages and microbatches."""

    model: Model
    table: Table
    world: int | None
    itemsize: int
    bucket_cap_mb: float | None = None
    mesh: tuple[int, int] | None = None
    find_unused: bool = False  # DDP(find_unused_parameters=True), where the user says so
    pipeline: tuple[int | None, int | None] | None = None  # (stages, microbatches) of a pipeline, where given
    reduce_bucket_size: int | None = None  # DeepSpeed's reduce_bucket_size (elements), where the job set it

    @property
    def params(self) -> tuple[Param, ...]:
        return self.table.params


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
