"""What each parallelism strategy puts on the wire, as whole units its own rules form.

Each module yields ``Shape``s: a tensor some framework communicates, the op family that carries it, its per-rank
NumelIn (and NumelOut where the op has one), the parameters it holds and how structural it is (tier 0: a unit the
framework's rule forms; 1: a whole tensor, layer or activation).
"""

from __future__ import annotations

from ncclcheck.explain.layouts import ddp, fsdp, generic, pp, tp, tp_fsdp, zero
from ncclcheck.explain.layouts.base import Setting, Shape

# The last setting's units: one explain call asks for them once, but ``explain --log`` and analyze-log's tensor
# finder explain every count of a log under the same model and table, and forming them is most of an explanation's
# time (the truth runs' 2,918 counts: about 80 %). Settings are compared by value (the table by identity first, as
# a tuple's items are), and one entry is held, replaced whole, so a reader sees a pair made together.
_last: list[tuple[Setting, tuple[Shape, ...]]] = []


def shapes(s: Setting) -> list[Shape]:
    """Every strategy's units for this setting."""
    made = _last[0] if _last else None
    if made is None or made[0] != s:
        made = (s, (*ddp.shapes(s), *zero.shapes(s), *fsdp.shapes(s), *tp.shapes(s), *generic.shapes(s),
                    *pp.shapes(s), *tp_fsdp.shapes(s)))
        _last[:] = [made]
    return list(made[1])
