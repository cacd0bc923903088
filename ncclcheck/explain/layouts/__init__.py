"""What each parallelism strategy puts on the wire, as whole units its own rules form.

Each module yields ``Shape``s: a tensor some framework communicates, the op family that carries it, its per-rank
NumelIn (and NumelOut where the op has one), the parameters it holds and how structural it is (tier 0: a unit the
framework's rule forms; 1: a whole tensor, layer or activation).
"""

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


def shapes(s: Setting) -> list[Shape]:
    """Every strategy's units for this setting."""
    from ncclcheck.explain.layouts import ddp, fsdp, generic, tp, zero

    return [*ddp.shapes(s), *zero.shapes(s), *fsdp.shapes(s), *tp.shapes(s), *generic.shapes(s)]
