"""FSDP1 flat parameters and FSDP2 per-parameter shards, one all-gather (and one reduce-scatter) per unit.

FSDP1 flattens each wrapped unit's parameters into one FlatParameter padded to a multiple of the world size:
all-gather NumelIn = padded / world, reduce-scatter NumelIn = padded. FSDP2 (fully_shard) shards every parameter
on dim 0, padding dim 0 to a multiple of the world size, and gathers a unit's shards in one all-gather: NumelIn =
the sum over its parameters of ceil(dim0 / world) x the other dims.
"""

from __future__ import annotations

import math

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.ops import ALLGATHER, REDUCESCATTER
from ncclcheck.explain.params import Param, describe, units


def _label(name: str) -> str:
    if not name:
        return "the root unit (everything outside the wrapped blocks)"
    kind = "vision block" if ".visual." in f".{name}" else "decoder layer"
    return f"{kind} {name.rpartition('.')[2]} ({name})"


def fsdp2_shard(p: Param, world: int) -> int:
    """One rank's share of a parameter under fully_shard: dim 0 padded to a multiple of the world size."""
    return ceil_div(p.shape[0], world) * math.prod(p.shape[1:]) if p.shape else 1


def unit_sets(s: Setting) -> list[tuple[str, list[Param]]]:
    """The wrapped units: every repeated block; for VL models also the variant that leaves the vision tower in the
    root (only decoder layers wrapped)."""
    params = list(s.params)
    found = units(params)
    out = list(found)
    if any(".visual." in f".{name}" for name, _ in found):
        decoder_only = [(n, ps) for n, ps in found if n and ".visual." not in f".{n}"]
        wrapped = {p.name for _, ps in decoder_only for p in ps}
        out.append(("", [p for p in params if p.name not in wrapped]))
    return out


def shapes(s: Setting) -> list[Shape]:
    w = s.world
    if not w or not s.params:
        return []
    out: list[Shape] = []
    seen: set[tuple[str, ...]] = set()
    for name, ps in unit_sets(s):
        key = tuple(p.name for p in ps)
        if key in seen or not ps:
            continue
        seen.add(key)
        what = _label(name) if name or len(ps) < len(s.params) else "the whole model (nothing else wrapped)"
        if not name:
            what += f", {describe(s.params, ps)}"
        padded = ceil_div(sum(p.numel for p in ps), w) * w
        out += [Shape("fsdp_unit", ALLGATHER, padded // w, padded,
                      f"FSDP1 FlatParameter of {what}: {padded:,} elements padded to a multiple of {w}, "
                      f"1/{w} per rank", 0, key),
                Shape("fsdp_unit", REDUCESCATTER, padded, padded // w,
                      f"FSDP1 gradient of {what}: the padded FlatParameter ({padded:,}) reduce-scattered over {w}",
                      0, key)]
        shard = sum(fsdp2_shard(p, w) for p in ps)
        out += [Shape("fsdp2_unit", ALLGATHER, shard, shard * w,
                      f"FSDP2 fully_shard unit {what}: {len(ps)} parameters, dim 0 of each padded to a multiple "
                      f"of {w}", 0, key),
                Shape("fsdp2_unit", REDUCESCATTER, shard * w, shard,
                      f"FSDP2 gradient of {what}: {len(ps)} parameters, dim 0 of each padded to a multiple of {w}",
                      0, key)]
    return out
