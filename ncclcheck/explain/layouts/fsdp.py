"""FSDP1 flat parameters and FSDP2 per-parameter shards, one all-gather (and one reduce-scatter) per unit.

FSDP1 (torch/distributed/fsdp/_flat_param.py) flattens each wrapped unit's parameters into one FlatParameter. With
use_orig_params=True every parameter starts on a 16-byte boundary, so padding of up to 16 bytes / the element size
goes in front of any parameter that would not; the total is then padded to a multiple of the world size. All-gather
NumelIn = padded / world, reduce-scatter NumelIn = padded. FSDP2 (fully_shard) shards every parameter on dim 0,
padding dim 0 to a multiple of the world size, and gathers a unit's shards in one all-gather: NumelIn = the sum over
its parameters of ceil(dim0 / world) x the other dims; the reduce-scatter holds only the unit's parameters that
get a gradient (frozen ones are gathered but never reduced: _fsdp_collectives.py foreach_reduce). FSDP1 with
use_orig_params=True reduce-scatters a partly frozen FlatParameter whole, and a wholly frozen one not at all
(recorded). The units are
the model's blocks (the classes the user's wrap policy names, else the modules its own code says must not be split,
else each member of a container of identical modules), then the root holding the rest.

Hybrid sharding (FSDP2 fully_shard on a 2-D DeviceMesh (replicate, shard); FSDP1 HYBRID_SHARD) shards over the
shard dimension only: the all-gathers and reduce-scatters above run in the shard group, with the shard group's size
as the world; then the replicate group all-reduces each unit's reduced gradient shard (FSDP2: the sum of the
gradient shards; FSDP1: padded / shard size). Without the mesh, every split of the group into replicas x shards is
tried for that all-reduce.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ncclcheck.explain.layouts.base import Setting, Shape, ceil_div
from ncclcheck.explain.layouts.ddp import BROADCAST_BYTES, buckets
from ncclcheck.explain.ops import ALLGATHER, ALLREDUCE, BROADCAST, REDUCESCATTER
from ncclcheck.explain.params import Param, describe
from ncclcheck.transfer import DTYPE_BYTES

ALIGN_BYTES = 16  # use_orig_params=True starts every parameter on this boundary


def _label(name: str) -> str:
    if not name:
        return "the root unit (everything outside the wrapped blocks)"
    kind = "vision block" if ".visual." in f".{name}" else "block"
    return f"{kind} {name}"


def fsdp2_shard(p: Param, world: int) -> int:
    """One rank's share of a parameter under fully_shard: dim 0 padded to a multiple of the world size."""
    return ceil_div(p.shape[0], world) * math.prod(p.shape[1:]) if p.shape else 1


def flat_numel(ps: Sequence[Param], world: int, align: int = 0) -> int:
    """A FlatParameter's padded size: with ``align`` elements (use_orig_params), padding in front of each parameter
    that would not start on that boundary; then the total up to a multiple of the world size."""
    total = 0
    for p in ps:
        if align and total % align:
            total += align - total % align
        total += p.numel
    return ceil_div(total, world) * world


def unit_sets(s: Setting) -> list[tuple[str, list[Param]]]:
    """The wrapped units: every block; for VL models also the variant that leaves the vision tower in the root
    (only decoder layers wrapped)."""
    params = list(s.params)
    found = s.table.units()
    out = list(found)
    if any(".visual." in f".{name}" for name, _ in found):
        decoder_only = [(n, ps) for n, ps in found if n and ".visual." not in f".{n}"]
        wrapped = {p.name for _, ps in decoder_only for p in ps}
        out.append(("", [p for p in params if p.name not in wrapped]))
    return out


# HSDP meshes are guessed from the world's divisors up to this world (a million ranks); past it only --mesh names one.
MAX_GUESSED_WORLD = 1 << 20


def _splits(s: Setting) -> tuple[int | None, list[tuple[int, int]]]:
    """The shard group's size, and the (replicas, shard size) splits whose replicate all-reduce is possible: the mesh
    given, else every split of the group into at least two replicas of at least two ranks."""
    if s.mesh:
        return s.mesh[1], [s.mesh]
    w = s.world
    if not w:
        return None, []
    if w > MAX_GUESSED_WORLD:  # a world no mesh is guessed for (its divisors would be tried one by one)
        return w, []
    shards = sorted({d for i in range(2, math.isqrt(w) + 1) if w % i == 0 for d in (i, w // i)})
    return w, [(w // d, d) for d in shards if 2 <= d <= w // 2]


def shapes(s: Setting) -> list[Shape]:
    w, splits = _splits(s)
    if not w or not s.params:
        return []
    on = f" in the shard group (mesh dimension 1, {w} ranks)" if s.mesh else ""
    out: list[Shape] = []
    seen: set[tuple[str, ...]] = set()
    align = max(ALIGN_BYTES // s.itemsize, 1)
    for name, ps in unit_sets(s):
        key = tuple(p.name for p in ps)
        if key in seen or not ps:
            continue
        seen.add(key)
        what = _label(name) if name or len(ps) < len(s.params) else "the whole model (nothing else wrapped)"
        if not name:
            what += f", {describe(s.params, ps)}"
        variants = {flat_numel(ps, w, align): f", use_orig_params=True ({align}-element alignment before each "
                                              "parameter)", flat_numel(ps, w): ""}  # equal sizes: one, unqualified
        reduced = any(p.trainable for p in ps)  # a FlatParameter with any gradient reduces all of it (recorded)
        for padded, how in variants.items():
            out.append(Shape("fsdp_unit", ALLGATHER, padded // w, padded,
                             f"FSDP1 FlatParameter of {what}{how}: {padded:,} elements padded to a multiple of {w}, "
                             f"1/{w} per rank{on}", 0, key))
            if not reduced:
                continue
            out.append(Shape("fsdp_unit", REDUCESCATTER, padded, padded // w,
                             f"FSDP1 gradient of {what}{how}: the padded FlatParameter ({padded:,}, frozen parts "
                             f"included) reduce-scattered over {w}{on}", 0, key))
            for replicas, size in splits:
                flat = padded if size == w else flat_numel(ps, size, align if how else 0)
                out.append(Shape("fsdp_unit", ALLREDUCE, flat // size, None,
                                 f"FSDP1 HYBRID_SHARD gradient shard of {what}{how} all-reduced in the replicate group "
                                 f"(mesh dimension 0, {replicas} replicas of {size} ranks): {flat:,} padded elements / "
                                 f"{size}", 0, key))
        out += _synced_states(s, name, ps, what)
        shard = sum(fsdp2_shard(p, w) for p in ps)
        out.append(Shape("fsdp2_unit", ALLGATHER, shard, shard * w,
                         f"FSDP2 fully_shard unit {what}: {len(ps)} parameters, dim 0 of each padded to a multiple "
                         f"of {w}{on}", 0, key))
        grads = [p for p in ps if p.trainable]
        if not grads:
            continue
        gkey = tuple(p.name for p in grads)
        frozen = f" (the {len(ps) - len(grads)} frozen ones are gathered, never reduced)" if len(grads) < len(ps) else ""
        gshard = sum(fsdp2_shard(p, w) for p in grads)
        out.append(Shape("fsdp2_unit", REDUCESCATTER, gshard * w, gshard,
                         f"FSDP2 gradient of {what}: {len(grads)} parameters{frozen}, dim 0 of each padded to a "
                         f"multiple of {w}{on}", 0, gkey))
        for replicas, size in splits:
            part = gshard if size == w else sum(fsdp2_shard(p, size) for p in grads)
            out.append(Shape("fsdp2_unit", ALLREDUCE, part, None,
                             f"HSDP (fully_shard on a 2-D mesh) gradient shard of {what} all-reduced in the replicate "
                             f"group (mesh dimension 0, {replicas} replicas of {size} ranks): {len(grads)} "
                             f"parameters{frozen}, dim 0 of each padded to a multiple of {size}", 0, gkey))
    return out


def _synced_states(s: Setting, name: str, ps: list[Param], what: str) -> list[Shape]:
    """FSDP1 with sync_module_states=True (torch/distributed/fsdp/_init_utils.py): as each unit is wrapped, inner
    units first, rank 0 broadcasts the unit's parameters and the buffers under it not yet broadcast, coalesced per
    dtype up to 250 MiB. Read from the source; a GPU-only path (CPU states are refused), not in the recorded runs."""
    bufs = dict(s.table.units(s.table.buffers)).get(name, []) if s.table.buffers else []
    groups: dict[str, list[Param]] = {"float": list(ps)}
    for b in bufs:
        groups.setdefault(b.dtype if b.dtype.startswith(("int", "uint", "bool")) else "float", []).append(b)
    out = []
    for key, tensors in groups.items():
        size = s.itemsize if key == "float" else DTYPE_BYTES.get(key, 8)
        for c in buckets(tensors, size, BROADCAST_BYTES, BROADCAST_BYTES):
            nb = sum(1 for t in c if t in bufs)
            out.append(Shape("model", BROADCAST, sum(t.numel for t in c), None,
                             f"FSDP1 sync_module_states=True: {what} broadcast from rank 0 before flattening "
                             f"({len(c) - nb} parameters, {nb} buffers, "
                             f"{'the training dtype' if key == 'float' else key})", 0, tuple(t.name for t in c)))
    return out
