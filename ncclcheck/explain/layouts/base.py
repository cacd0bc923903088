"""The shared vocabulary of the layouts: a Shape on the wire and the Setting it is computed for."""

from __future__ import annotations

from dataclasses import dataclass

from ncclcheck.explain.models import Model
from ncclcheck.explain.params import Param


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
    """Everything the layouts need: the model, its parameters, the group size and the element size."""

    model: Model
    params: tuple[Param, ...]
    world: int | None
    itemsize: int


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
