"""What each parallelism strategy puts on the wire, as whole units its own rules form.

Each module yields ``Shape``s: a tensor some framework communicates, the op family that carries it, its per-rank
NumelIn (and NumelOut where the op has one), the parameters it holds and how structural it is (tier 0: a unit the
framework's rule forms; 1: a whole tensor, layer or activation).
"""

from __future__ import annotations

from ncclcheck.explain.layouts import ddp, fsdp, generic, pp, tp, tp_fsdp, zero
from ncclcheck.explain.layouts.base import Setting, Shape


def shapes(s: Setting) -> list[Shape]:
    """Every strategy's units for this setting."""
    return [*ddp.shapes(s), *zero.shapes(s), *fsdp.shapes(s), *tp.shapes(s), *generic.shapes(s), *pp.shapes(s),
            *tp_fsdp.shapes(s)]
