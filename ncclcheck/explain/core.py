"""What tensor an element count is, and what it is not: exact arithmetic, op-aware, honest about chance.

A count is a *match* only when a candidate's element count equals it exactly (and NumelOut too, where given).
Only kinds the op can carry are candidates; the others are named as ruled out. Candidates rank by how structural
they are (a unit a framework's rule forms, then a whole tensor, layer or activation, then an arbitrary run), and
the number of sums searched gives the chance that a hit is a coincidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ncclcheck.explain import coincidence, ops
from ncclcheck.explain.counts import factorize, format_factors
from ncclcheck.explain.layouts import ddp, pp, shapes, zero
from ncclcheck.explain.layouts.base import Setting, Shape
from ncclcheck.explain.layouts.generic import activations
from ncclcheck.explain.models import Model
from ncclcheck.explain.params import built_in
from ncclcheck.explain.search import search
from ncclcheck.explain.table import Table, builtin_table
from ncclcheck.transfer import DTYPE_BYTES, FABRICS, transfer_seconds

NEAR = 0.05  # near misses within 5% are listed (as "not a match")
DEEPSPEED_BUCKET_ELEMENTS = 500_000_000
MATCH, COINCIDENCE, MISS = "match", "match, but likely coincidence", "not a match"


@dataclass(frozen=True)
class Candidate:
    """A tensor that could have this element count; ``exact`` only when it does."""

    kind: str
    description: str
    numel: int  # the NumelIn it predicts
    numel_out: int | None  # the NumelOut it predicts, where the op has one
    exact: bool
    delta: int  # candidate - N
    tier: int  # 0: a unit a framework's rule forms; 1: a whole tensor, layer or activation; 2: an arbitrary run
    verdict: str
    params: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # every kind this same tensor is under the layouts that form it, ``kind`` first

    @property
    def strategy(self) -> str | None:
        return ops.KIND_STRATEGY.get(self.kind)

    @property
    def delta_pct(self) -> float:
        return 100.0 * self.delta / (self.numel - self.delta) if self.numel - self.delta else 0.0


NO_TABLE = "none (no parameters known)"  # an answer's table source when no parameter of the model is known


@dataclass(frozen=True)
class Explanation:
    """The result for one element count."""

    numel: int
    numel_out: int | None
    op: str | None
    family: str | None
    world: int | None
    strategy: str | None
    factors: tuple[int, ...]
    facts: tuple[str, ...]
    candidates: tuple[Candidate, ...]  # exact matches first (best first), then near misses by distance
    ruled_out: tuple[str, ...]
    searched: int  # candidate sums compared with the count
    chance: float  # probability that an unrelated count of this size matches one of them
    advice: tuple[str, ...]
    transfer: tuple[tuple[str, float], ...]  # (fabric, seconds) for the assumed dtype
    dtype: str
    source: str = "the built-in layouts"  # where the parameter table came from
    source_notes: tuple[str, ...] = ()  # what in that table is inferred rather than known
    ready_how: str = ""  # how the table's gradient-ready order was learnt (observed in a pass, or inferred)
    ready_observed: bool = False
    dtype_from: str = "default"  # where the dtype came from: "--dtype", "config" (its torch_dtype) or "default"
    unbuilt: str | None = None  # why the config's own model could not be built, where it could not

    @property
    def matches(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.exact)

    @property
    def source_known(self) -> bool:
        """Whether the model's parameters were known, so that no match means no tensor of it has the count."""
        return self.source != NO_TABLE


def _world(n: int, numel_out: int | None, family: str | None, m: Model) -> tuple[int | None, list[str]]:
    """The group size the op implies (NumelOut / NumelIn), else the one given; with the facts that say so."""
    facts: list[str] = []
    if numel_out is None or numel_out == n:
        return m.world_size, facts
    if numel_out == 0:
        facts.append("NumelOut = 0: this rank's output list is empty, as on every rank but the root of a scatter")
        return m.world_size, facts
    big, small = max(n, numel_out), min(n, numel_out)
    ratio, rem = divmod(big, small)
    if rem:
        facts.append(f"NumelOut / NumelIn = {numel_out / n:.4g}: not a whole number of ranks (an uneven or "
                     "coalesced collective)")
        return m.world_size, facts
    if numel_out > n and family == ops.SCATTER:
        facts.append(f"NumelOut = {ratio} × NumelIn: the root's list of {ratio} shards, NumelIn is one of them")
    elif numel_out > n:
        facts.append(f"NumelOut = {ratio} × NumelIn: an all-gather over {ratio} ranks, NumelIn is one rank's shard")
        if family not in (None, ops.ALLGATHER):
            facts.append(f"but the op is a {family}, whose NumelOut is not larger than NumelIn")
    else:
        facts.append(f"NumelIn = {ratio} × NumelOut: a reduce-scatter over {ratio} ranks, NumelIn is the whole "
                     "(padded) tensor")
        if family not in (None, ops.REDUCESCATTER):
            facts.append(f"but the op is a {family}, whose NumelOut is not smaller than NumelIn")
    if m.world_size and m.world_size != ratio:
        facts.append(f"the op's ratio says {ratio} ranks, not the --world-size {m.world_size} given: the group is a "
                     "subgroup (or the flag is wrong); the ratio is used")
    return ratio, facts


def _expected_out(s: Shape) -> int:
    return s.numel_out if s.numel_out is not None else s.numel_in


def generic(names: Sequence[str]) -> tuple[str, ...]:
    """Parameter names with block indices replaced, so identical decoder layers compare equal."""
    return tuple(_INDEX.sub(r".\1.N", n) for n in names)


_INDEX = re.compile(r"\.(layers|blocks)\.\d+(?=\.)")


def _merge(cands: list[tuple[Shape, str]]) -> list[tuple[Shape, str, list[str], list[str]]]:
    """One candidate per distinct tensor: the same parameters (identical blocks alike) with the same counts are one
    thing, named by the most structural description; each other kind that forms it adds one note."""
    best: dict[tuple, tuple[Shape, str, list[str], list[str]]] = {}
    repeats: dict[tuple, set[tuple[str, ...]]] = {}
    for s, verdict in sorted(cands, key=lambda c: (c[0].tier, _kind_rank(c[0].kind))):
        ident = generic(s.params) if s.params else (s.description,)
        members = s.params
        if s.kind in ("ddp_bucket", "zero_bucket", "zero3_bucket"):  # a bucket: the set of its gradients, any order
            ident, members = tuple(sorted(ident)), tuple(sorted(s.params))
        key = (s.numel_in, _expected_out(s), ident)
        if key not in best:
            best[key] = (s, verdict, [], [s.kind])
            repeats[key] = {members}
            continue
        kept = best[key]
        repeats[key].add(members)
        if s.kind not in kept[3]:
            kept[3].append(s.kind)
            kept[2].append(s.description)
        elif not s.params and s.description != kept[0].description and s.description not in kept[2]:
            kept[2].append(s.description)
    out = []
    for key, (s, verdict, also, kinds) in best.items():
        if len(repeats[key]) > 1:
            also.insert(0, f"the same count for each of {len(repeats[key])} identical units")
        out.append((s, verdict, also, kinds))
    return out


def _facts(n: int, factors: Sequence[int], m: Model) -> list[str]:
    out = [f"{n:,} = {format_factors(factors)}"]
    twos = factors.count(2)
    if twos == 0:
        out.append("odd: it has no factor 2, so it is not any tensor with an even dimension "
                   "(every power-of-two batch, sequence or hidden size is ruled out)")
    else:
        out.append(f"divisible by 2^{twos} = {2**twos:,} and by no higher power of two")
    for label, d in (("hidden size", m.hidden), ("sequence length", m.seq), ("vocab size", m.vocab),
                     ("B×S", m.batch * m.seq if m.batch and m.seq else None),
                     ("B×S×H", m.batch * m.seq * m.hidden if m.batch and m.seq and m.hidden else None)):
        if d:
            q, r = divmod(n, d)
            out.append(f"{'divisible' if r == 0 else 'not divisible'} by the {label} {d:,}"
                       + (f" (= {q:,} × {d:,})" if r == 0 else f" (remainder {r:,}): not an activation whose "
                          f"elements are a multiple of {d:,}"))
    return out


def _solve(n: int, m: Model) -> list[Shape]:
    """With all but one of B, S, H known, solve B×S×H = n for the missing one."""
    dims = {"batch": m.batch, "seq": m.seq, "hidden": m.hidden}
    missing = [k for k, v in dims.items() if v is None]
    if len(missing) != 1:
        return []
    known = math.prod(v for v in dims.values() if v is not None)
    value, rem = divmod(n, known)
    if rem == 0:
        return [Shape("activation", ops.ALLREDUCE, n, None, f"B×S×H with {missing[0]} = {value:,} (the other two "
                                                            "as given)", 1)]
    return []


def _advice(n: int, exact: Sequence[Candidate], family: str | None, m: Model, world: int | None,
            table: Table) -> list[str]:
    kinds = {c.kind for c in exact if c.verdict == MATCH}
    out = []
    if any("output_hidden_states" in c.description or "output_attentions" in c.description for c in exact):
        out.append("The model returns all hidden states (or attention maps) and something reduces or gathers "
                   "them: stop returning them (output_hidden_states=False / output_attentions=False, or return "
                   "None from the wrapper) so they are never communicated.")
    if kinds - {"scalar", "activation", "expert_tokens"}:
        out.append("This is ordinary training traffic (gradients or parameters): its size is not the problem. A "
                   "timeout on it means a rank never joined; run `ncclcheck analyze-log` on every rank's log.")
    if n == 1 or "scalar" in kinds:
        out.append("A 1-element collective is a barrier or a metric/flag sync: a rank that skipped it (or reached "
                   "it alone) left a loop early or took a rank-dependent branch; run `ncclcheck analyze-log`.")
    if not kinds:
        extra = ""
        if n <= DEEPSPEED_BUCKET_ELEMENTS and family in (None, ops.ALLREDUCE):
            extra = (" It is at most 5e8 elements, so it is consistent with a DeepSpeed gradient bucket of a "
                     "non-default size (which holds whatever tensors fit, odd-sized ones included).")
        missing = [what for what, known in (("the model (--model / --config / --checkpoint / --module)",
                                             table.params or m.unbuilt),
                                            ("the op (--op, --numel-out)", family),
                                            ("the world size", world), ("the batch shape (--batch --seq)",
                                                                        m.batch and m.seq)) if not known]
        more = f" Give {', '.join(missing)} to test more candidates." if missing else ""
        if m.unbuilt and not table.params:
            out.append(f"The model could not be built ({m.unbuilt}): no tensor of it was tested." + extra + more)
        else:
            out.append("No structural match with the shapes given: nothing here explains the number." + extra + more)
    return out


def _kind_rank(kind: str) -> int:
    return _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)


_KIND_ORDER = ("scalar", "tp_activation", "fsdp2_unit", "fsdp_unit", "zero3_gather", "zero_partition", "ddp_bucket",
               "zero_bucket", "zero3_bucket", "tp_shard", "tp_replicated", "metadata", "buffers", "activation",
               "expert_tokens", "layer", "parameter", "model", "gradient_run", "gather_run")


def _as_gloo_records(shapes: Sequence[Shape]) -> list[Shape]:
    """What gloo's flight recorder shows for the same tensors: a reduce-scatter runs as an all_reduce of the whole
    (padded) tensor, a scatter's root list is its input, not its output (NCCL records the opposite), and a DTensor
    all-gather (tensor parallelism) records one rank's part as its output too (recorded)."""
    out = []
    for s in shapes:
        if s.family == ops.ALLGATHER and s.kind == "tp_activation" and s.numel_out:
            out.append(replace(s, numel_out=s.numel_in, description=s.description + " (gloo records a DTensor "
                                                                                   "gather's output as one part)"))
        if s.family == ops.REDUCESCATTER and s.kind in ("fsdp_unit", "fsdp2_unit", "zero3_bucket"):
            out.append(replace(s, family=ops.ALLREDUCE, numel_out=None, tier=max(s.tier, 1),
                               description=s.description + " (gloo runs a reduce-scatter as an all_reduce of the "
                                                           "whole tensor)"))
        elif s.family == ops.SCATTER and s.numel_out:
            out.append(replace(s, numel_in=s.numel_out, numel_out=s.numel_in,
                               description=s.description + " (gloo records the root's list as the input)"))
    return out


def explain(n: int, m: Model, numel_out: int | None = None, op: str | None = None, dtype: str = "float32",
            strategy: str | None = None, table: Table | None = None,
            bucket_cap_mb: float | None = None, mesh: tuple[int, int] | None = None, find_unused: bool = False,
            dtype_from: str = "default", pipeline: tuple[int | None, int | None] | None = None,
            reduce_bucket_size: int | None = None) -> Explanation:
    """Rank the candidates that could produce exactly ``n`` elements, with the facts that rule others out.

    ``table`` is the model's tensors (from the model itself, a checkpoint or a module); without one the built-in
    layouts are used. ``dtype_from`` says where the dtype came from (``--dtype``, ``config``, ``default``). ``mesh``
    is an HSDP job's (replicate, shard) mesh shape; ``find_unused`` says DDP was built with
    find_unused_parameters=True (its buckets are then only the ones it forms at construction); ``pipeline`` is a
    pipeline's (stages, microbatches), either may be None; ``reduce_bucket_size`` DeepSpeed's, where the job set it."""
    factors = factorize(n)
    fam = ops.family(op)
    world, relation = _world(n, numel_out, fam, m)
    given_out, numel_out = numel_out, numel_out or None  # 0 (a scatter's non-root rank) says nothing
    inferred = fam is None and numel_out is not None and numel_out != n
    if inferred and numel_out is not None:
        fam = ops.ALLGATHER if numel_out > n else ops.REDUCESCATTER
    table = table or builtin_table(m)
    setting = Setting(m, table, world, DTYPE_BYTES[dtype], bucket_cap_mb, mesh, find_unused, pipeline,
                      reduce_bucket_size)
    everything = shapes(setting) + _solve(n, m)
    payload = pp.payload(n, dtype) if fam == ops.P2P else None
    if payload:
        everything.append(payload)
    if (op or "").lower().startswith("gloo:"):
        everything += _as_gloo_records(everything)
    if m.batch and m.seq and m.hidden and world and world > 1:
        gathered = m.batch * m.seq * m.hidden * world
        everything.append(Shape("activation", ops.ALLREDUCE, gathered, None,
                                f"hidden states of all {world} ranks B×S×H×W = {m.batch}×{m.seq}×{m.hidden}×{world} "
                                "(an all_gather's output, reduced again)", 1))
    allowed = [s for s in everything if (fam is None or s.family == fam) and ops.strategy_allows(s.kind, strategy)]
    exact: list[tuple[Shape, str]] = []
    near: list[tuple[Shape, str]] = []
    for s in allowed:
        if s.numel_in == n and (numel_out is None or _expected_out(s) == numel_out):
            exact.append((s, MATCH))
        elif s.tier < 2 and abs(s.numel_in - n) <= NEAR * n:
            near.append((s, MISS))
    sizes = ddp.bucket_sizes(setting, n) if fam == ops.BROADCAST and strategy in (None, "ddp") else None
    if sizes is not None and (numel_out is None or _expected_out(sizes) == numel_out):
        exact.append((sizes, MATCH))  # a small broadcast: DDP's rebuilt buckets' sizes for some rebuild
    # a range, not a rule: only where the user says the job runs ZeRO-3 (any small broadcast is in some range)
    trace = zero.submodule_trace(setting, n) if fam == ops.BROADCAST and strategy is not None and ops.strategy_allows(
        "zero3_gather", strategy) else None
    if trace is not None:
        exact.append((trace, MATCH))  # a small int64 broadcast: ZeRO-3's submodule trace for some forward
    lo, hi = coincidence.window(n)
    run_kinds_allowed = any(ops.strategy_allows(k, strategy) and (fam is None or k in ops.CARRIES[fam])
                            for k in ("gradient_run", "gather_run"))
    runs = search(setting, fam, n, lo, hi) if run_kinds_allowed else None
    structural_values = {(s.numel_in, _expected_out(s)) for s in allowed if lo <= s.numel_in <= hi}
    in_window = len(structural_values) + (runs.in_window if runs else 0)
    chance = coincidence.chance(in_window, n)
    if runs:
        run_chance = coincidence.chance(runs.in_window, n)
        explained = any(v == MATCH and s.tier < 2 for s, v in exact)
        taken = {s.params for s, _ in exact}
        for r in runs.hits:
            if r.params in taken or not ops.strategy_allows(r.kind, strategy):
                continue
            if numel_out is not None and _expected_out(r) != numel_out:
                continue
            verdict = COINCIDENCE if explained or run_chance >= coincidence.LIKELY else MATCH
            exact.append((r, verdict))
    hits = [s for s in everything if s.numel_in == n]
    by_op = sorted({s.kind for s in hits if fam is not None and s.family != fam} - {s.kind for s, _ in exact})
    by_strategy = sorted({s.kind for s in hits if (fam is None or s.family == fam)
                          and not ops.strategy_allows(s.kind, strategy)} - set(by_op))
    ruled_out = []
    if by_op:
        why = ops.WHY_NOT.get(fam or "")
        ruled_out.append(f"{', '.join(by_op)} would have this NumelIn, but not as a {fam}" + (f": {why}" if why else ""))
    if by_strategy:
        ruled_out.append(f"{', '.join(by_strategy)} would have this NumelIn, but belong to another strategy than "
                         f"--strategy {strategy}")

    def rank(item: tuple[Shape, str, list[str], list[str]]) -> tuple:
        s, verdict, _, _ = item
        owner = ops.KIND_STRATEGY.get(s.kind)
        return (s.tier, verdict != MATCH, 0 if strategy and owner else 1, _kind_rank(s.kind))

    def cand(item: tuple[Shape, str, list[str], list[str]], is_exact: bool) -> Candidate:
        s, verdict, also, kinds = item
        desc = s.description + "".join(f"; also: {a}" for a in also)
        return Candidate(s.kind, desc, s.numel_in, s.numel_out, is_exact, s.numel_in - n, s.tier, verdict, s.params,
                         tuple(kinds))

    ranked = [cand(c, True) for c in sorted(_merge(exact), key=rank)]
    ranked += [cand(c, False) for c in sorted(_merge(near), key=lambda c: abs(c[0].numel_in - n))]
    searched = len(allowed) + (runs.searched if runs else 0)
    nbytes = max(n, numel_out or 0) * DTYPE_BYTES[dtype]  # nccl-tests' size: the larger buffer
    op_for_time = op or {ops.ALLGATHER: "_ALLGATHER_BASE", ops.REDUCESCATTER: "_REDUCE_SCATTER_BASE"}.get(fam or "")
    transfer = tuple((f.name, transfer_seconds(nbytes, op_for_time or "ALLREDUCE", world, f)) for f in FABRICS)
    facts = _facts(n, factors, m) + relation
    if inferred:
        facts.append(f"op not given: NumelOut and NumelIn make it an {fam}")
    if fam is not None:
        facts.append(f"the op ({fam}) carries {ops.MEANS[fam]}")
    if fam == ops.REDUCE:
        facts.append("ZeRO-1/2 (reduce_scatter: true) reduces the slices of a bucket that fall in each rank's "
                     "partition; those slices depend on partition boundaries and are not modelled here")
    if strategy:
        facts.append(f"--strategy {strategy}: other strategies' layouts are left out")
    if fam is None and op:
        facts.append(f"op {op} is not one explain knows: every kind of collective considered")
    elif fam is None:
        facts.append("op not given: every kind of collective considered (give --op, or --numel-out, to rule out "
                     "what the op cannot carry)")
    if not table.params and m.unbuilt:
        facts.append(f"no parameter table: the model could not be built, and the built-in layouts describe "
                     f"Llama-style families, not {m.model_type or 'this one'}")
    elif not table.params and m.model_type and not built_in(m):
        facts.append(f"no parameter table: the built-in layouts describe Llama-style families, not {m.model_type}; "
                     "give --config with transformers installed (pip install 'ncclcheck[hf]'), --checkpoint or "
                     "--module")
    elif not table.params and (m.hidden or m.layers):
        facts.append("the model shape is incomplete (hidden size, layers, heads and MLP width are all needed): "
                     "parameters and layouts not considered")
    return Explanation(n, given_out, op, fam, world, strategy, tuple(factors), tuple(facts), tuple(ranked),
                       tuple(ruled_out), searched, chance, tuple(_advice(n, ranked, fam, m, world, table)), transfer,
                       dtype, table.source if table.params else NO_TABLE, table.notes,
                       table.ready_how, table.ready_observed, dtype_from, m.unbuilt)


DEFAULT_GATHER_WORLD = 8


@dataclass(frozen=True)
class SizeRow:
    """One common tensor of the model, for the table shown without ``--numel``."""

    description: str
    numel: int
    bytes_by_dtype: tuple[tuple[str, int], ...]
    allreduce: tuple[tuple[str, float], ...]
    allgather: tuple[tuple[str, float], ...]


def size_table(m: Model, dtypes: Iterable[str] = ("float32", "bfloat16"),
               table: Table | None = None) -> tuple[int, list[SizeRow]]:
    """What the common tensors of this model weigh and how long one collective of each takes.

    All_gather time is one definition for every row: each of W ranks contributes this tensor, so W times it is
    gathered (W = the world size given, else 8, and the caller says which). Returns (W, rows).
    """
    world = m.world_size or DEFAULT_GATHER_WORLD
    table = table or builtin_table(m)
    params = table.params
    items = activations(Setting(m, table, world, 4))
    units = [(name, ps) for name, ps in table.units() if name]
    if units:
        items.append((f"one block ({units[0][0]})", sum(p.numel for p in units[0][1])))
    if params:
        items.append((f"whole model ({len(params)} tensors)", sum(p.numel for p in params)))
    dtypes = list(dtypes)
    rows = []
    for desc, n in items:
        b = tuple((d, n * DTYPE_BYTES[d]) for d in dtypes)
        first = b[0][1]
        ar = tuple((f.name, transfer_seconds(first, "ALLREDUCE", m.world_size, f)) for f in FABRICS)
        ag = tuple((f.name, transfer_seconds(first * world, "_ALLGATHER_BASE", world, f)) for f in FABRICS)
        rows.append(SizeRow(desc, n, b, ar, ag))
    return world, rows
