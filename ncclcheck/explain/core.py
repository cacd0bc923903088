"""What tensor an element count is, and what it is not: exact arithmetic only.

A count is a *match* only when a candidate's element count equals it exactly.
Near misses are reported as such with their distance, never as evidence; the
prime factorisation and the divisibility facts say which shapes are impossible.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ncclcheck.transfer import DTYPE_BYTES, FABRICS, transfer_seconds

NEAR = 0.05  # near misses within 5% are listed (as "not a match")
DDP_BUCKET_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 2**20
DEEPSPEED_BUCKET_ELEMENTS = 500_000_000


class ExplainError(ValueError):
    """Impossible or conflicting input; the message is shown to the user as is."""


def parse_count(text: str) -> int:
    """Parse ``467019003``, ``467,019,003``, ``467_019_003`` or ``4.67e8`` into a positive integer."""
    s = text.strip().replace(",", "").replace("_", "")
    if s.startswith("-") and len(s) > 1:
        raise ExplainError(f"{text!r}: an element count must be positive")
    if not re.fullmatch(r"[+]?(\d+(\.\d*)?|\.\d+)([eE][+]?\d+)?", s):
        raise ExplainError(f"{text!r} is not a number of elements")
    if re.fullmatch(r"[+]?\d+", s):
        n = int(s)
    else:
        mantissa, _, exp = s.lower().partition("e")
        whole, _, frac = mantissa.lstrip("+").partition(".")
        digits = int((whole or "0") + frac) if (whole or frac) else 0
        scale = int(exp or 0) - len(frac)
        if scale < 0 and digits % 10 ** (-scale):
            raise ExplainError(f"{text!r} is not a whole number of elements")
        n = digits * 10**scale if scale >= 0 else digits // 10 ** (-scale)
    if n <= 0:
        raise ExplainError(f"{text!r}: an element count must be positive")
    return n


def factorize(n: int) -> list[int]:
    """Prime factors with multiplicity, smallest first (trial division; counts are < 1e13)."""
    out: list[int] = []
    for p in (2, 3):
        while n % p == 0:
            out.append(p)
            n //= p
    f = 5
    while f * f <= n:
        for p in (f, f + 2):
            while n % p == 0:
                out.append(p)
                n //= p
        f += 6
    if n > 1:
        out.append(n)
    return out


def format_factors(factors: Sequence[int]) -> str:
    """``2^20 × 3 × 7^2``."""
    parts = []
    for p in sorted(set(factors)):
        k = factors.count(p)
        parts.append(f"{p:,}" + (f"^{k}" if k > 1 else ""))
    return " × ".join(parts) if parts else "1"


@dataclass(frozen=True)
class Model:
    """The shape facts a count can be matched against; every field may be unknown."""

    name: str | None = None
    batch: int | None = None
    seq: int | None = None
    hidden: int | None = None
    layers: int | None = None
    vocab: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    world_size: int | None = None
    tp: int | None = None
    tie_word_embeddings: bool = False
    qkv_bias: bool = False

    @property
    def kv_dim(self) -> int | None:
        hd = self.head_dim or (self.hidden // self.heads if self.hidden and self.heads else None)
        kv = self.kv_heads or self.heads
        return kv * hd if kv and hd else None

    @property
    def q_dim(self) -> int | None:
        if self.head_dim and self.heads:
            return self.heads * self.head_dim
        return self.hidden


# Public configs (config.json on the Hugging Face Hub).
PRESETS = {
    "qwen2.5-7b": Model("Qwen2.5-7B", hidden=3584, layers=28, vocab=152064, heads=28, kv_heads=4, head_dim=128,
                        intermediate=18944, qkv_bias=True),
    "qwen2.5-vl-7b": Model("Qwen2.5-VL-7B (language model)", hidden=3584, layers=28, vocab=152064, heads=28,
                           kv_heads=4, head_dim=128, intermediate=18944, qkv_bias=True),
    "llama-3-8b": Model("Llama-3-8B", hidden=4096, layers=32, vocab=128256, heads=32, kv_heads=8, head_dim=128,
                        intermediate=14336),
    "llama-3-70b": Model("Llama-3-70B", hidden=8192, layers=80, vocab=128256, heads=64, kv_heads=8, head_dim=128,
                         intermediate=28672),
    "mistral-7b": Model("Mistral-7B-v0.1", hidden=4096, layers=32, vocab=32000, heads=32, kv_heads=8, head_dim=128,
                        intermediate=14336),
}

_BIAS_MODEL_TYPES = {"qwen2", "qwen2_vl", "qwen2_5_vl", "qwen2_moe"}


def model_from_config(path: str) -> Model:
    """Read a Hugging Face ``config.json``; VL configs keep the language model under ``text_config``."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as exc:
        raise ExplainError(f"{path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExplainError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ExplainError(f"{path}: expected a JSON object")
    text = cfg.get("text_config") or cfg.get("llm_config") or cfg.get("language_config") or {}
    merged = {**cfg, **text} if isinstance(text, dict) else cfg

    def num(key: str) -> int | None:
        v = merged.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ExplainError(f"{path}: {key} must be a positive integer, not {v!r}")
        return v

    model_type = str(merged.get("model_type", ""))
    bias = merged.get("attention_bias")
    return Model(
        name=merged.get("_name_or_path") or model_type or path,
        hidden=num("hidden_size"),
        layers=num("num_hidden_layers"),
        vocab=num("vocab_size"),
        heads=num("num_attention_heads"),
        kv_heads=num("num_key_value_heads"),
        head_dim=num("head_dim"),
        intermediate=num("intermediate_size"),
        tie_word_embeddings=bool(merged.get("tie_word_embeddings", False)),
        qkv_bias=bool(bias) if bias is not None else model_type in _BIAS_MODEL_TYPES,
    )


def merge(base: Model, **overrides: object) -> Model:
    """Flags override the config: only the values given replace the base's."""
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class Param:
    """One parameter tensor in registration order."""

    name: str
    numel: int


def parameters(m: Model) -> list[Param]:
    """A decoder-only transformer's parameters in registration order (Llama/Qwen2/Mistral layout)."""
    if not (m.hidden and m.layers and m.intermediate and m.q_dim and m.kv_dim):
        return []
    h, q, kv, i = m.hidden, m.q_dim, m.kv_dim, m.intermediate
    out: list[Param] = []
    if m.vocab:
        out.append(Param("model.embed_tokens.weight", m.vocab * h))
    for n in range(m.layers):
        p = f"model.layers.{n}."
        out.append(Param(p + "self_attn.q_proj.weight", q * h))
        if m.qkv_bias:
            out.append(Param(p + "self_attn.q_proj.bias", q))
        out.append(Param(p + "self_attn.k_proj.weight", kv * h))
        if m.qkv_bias:
            out.append(Param(p + "self_attn.k_proj.bias", kv))
        out.append(Param(p + "self_attn.v_proj.weight", kv * h))
        if m.qkv_bias:
            out.append(Param(p + "self_attn.v_proj.bias", kv))
        out.append(Param(p + "self_attn.o_proj.weight", h * q))
        out.append(Param(p + "mlp.gate_proj.weight", i * h))
        out.append(Param(p + "mlp.up_proj.weight", i * h))
        out.append(Param(p + "mlp.down_proj.weight", h * i))
        out.append(Param(p + "input_layernorm.weight", h))
        out.append(Param(p + "post_attention_layernorm.weight", h))
    out.append(Param("model.norm.weight", h))
    if m.vocab and not m.tie_word_embeddings:
        out.append(Param("lm_head.weight", m.vocab * h))
    return out


@dataclass(frozen=True)
class Candidate:
    """A tensor that could have this element count; ``exact`` only when it does."""

    kind: str  # activation | parameter | layer | model | partition | gradient_bucket | scalar | solved
    description: str
    numel: int
    exact: bool
    delta: int  # candidate - N

    @property
    def delta_pct(self) -> float:
        return 100.0 * self.delta / (self.numel - self.delta) if self.numel - self.delta else 0.0


@dataclass(frozen=True)
class Explanation:
    """The result for one element count."""

    numel: int
    numel_out: int | None
    op: str | None
    factors: tuple[int, ...]
    facts: tuple[str, ...]
    candidates: tuple[Candidate, ...]  # exact matches first, then near misses by distance
    advice: tuple[str, ...]
    transfer: tuple[tuple[str, float], ...]  # (fabric, seconds) for the assumed dtype
    dtype: str

    @property
    def matches(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.exact)


def _activations(m: Model) -> list[tuple[str, str, int]]:
    """(kind, description, numel) of the common activation tensors the shape allows."""
    out: list[tuple[str, str, int]] = []
    b, s, h = m.batch, m.seq, m.hidden
    if b and s and h:
        bsh = b * s * h
        out.append(("activation", f"one hidden state B×S×H = {b}×{s}×{h}", bsh))
        if m.layers:
            out.append(("activation", f"output_hidden_states tuple (L+1)×B×S×H = {m.layers + 1}×{b}×{s}×{h}",
                        (m.layers + 1) * bsh))
        if m.tp and m.tp > 1:
            out.append(("activation", f"hidden state shard B×S×H/tp = {b}×{s}×{h}/{m.tp}", bsh // m.tp))
    if b and s and m.vocab:
        out.append(("activation", f"logits B×S×V = {b}×{s}×{m.vocab}", b * s * m.vocab))
        if m.tp and m.tp > 1:
            out.append(("activation", f"logits shard B×S×V/tp = {b}×{s}×{m.vocab}/{m.tp}", b * s * m.vocab // m.tp))
    if b and s and m.heads:
        out.append(("activation", f"attention maps B×heads×S×S = {b}×{m.heads}×{s}×{s}", b * m.heads * s * s))
        if m.layers:
            out.append(("activation", f"output_attentions tuple L×B×heads×S×S = {m.layers}×{b}×{m.heads}×{s}×{s}",
                        m.layers * b * m.heads * s * s))
    if m.world_size and m.world_size > 1:
        out += [(k, f"{d}, gathered over {m.world_size} ranks", n * m.world_size) for k, d, n in list(out)]
    return out


def _param_candidates(m: Model, params: Sequence[Param]) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    seen: set[tuple[str, int]] = set()
    for p in params:
        generic = re.sub(r"layers\.\d+\.", "layers.N.", p.name)
        if (generic, p.numel) not in seen:
            seen.add((generic, p.numel))
            out.append(("parameter", generic, p.numel))
    layer = sum(p.numel for p in params if p.name.startswith("model.layers.0."))
    total = sum(p.numel for p in params)
    if layer:
        out.append(("layer", "one decoder layer", layer))
        for k in range(2, 5):
            out.append(("layer", f"{k} decoder layers", k * layer))
    if total:
        out.append(("model", f"whole model ({len(params)} tensors)", total))
        if m.world_size and m.world_size > 1:
            w = m.world_size
            out.append(("partition", f"ZeRO/FSDP shard of the whole model, total/{w} (padded up)", -(-total // w)))
            if layer:
                out.append(("partition", f"FSDP shard of one decoder layer, layer/{w} (padded up)", -(-layer // w)))
    return out


def _runs(params: Sequence[Param], n: int) -> list[tuple[int, int]]:
    """Contiguous runs [i, j) whose sizes sum to exactly n (prefix sums)."""
    index: dict[int, int] = {0: 0}
    acc = 0
    out = []
    for j, p in enumerate(params, 1):
        acc += p.numel
        if acc - n in index:
            out.append((index[acc - n], j))
        index.setdefault(acc, j)
    return out


def _greedy_buckets(params: Sequence[Param], cap: int, first_cap: int | None = None) -> list[tuple[int, int, int]]:
    """Buckets filled in order until the next tensor would overflow ``cap`` (DeepSpeed's rule)."""
    out = []
    start, size, limit = 0, 0, first_cap or cap
    for j, p in enumerate(params):
        if size and size + p.numel > limit:
            out.append((start, j, size))
            start, size, limit = j, 0, cap
        size += p.numel
    if size:
        out.append((start, len(params), size))
    return out


def _ddp_buckets(params: Sequence[Param], itemsize: int) -> list[tuple[int, int, int]]:
    """DDP's rule: close a bucket once it reaches the cap (1 MiB first, then 25 MiB)."""
    out = []
    start, size, limit = 0, 0, DDP_FIRST_BUCKET_BYTES // itemsize
    for j, p in enumerate(params):
        size += p.numel
        if size >= limit:
            out.append((start, j + 1, size))
            start, size, limit = j + 1, 0, DDP_BUCKET_BYTES // itemsize
    if size:
        out.append((start, len(params), size))
    return out


def _describe_run(params: Sequence[Param], i: int, j: int) -> str:
    names = [p.name for p in params[i:j]]
    layers = sorted({int(x) for name in names for x in re.findall(r"layers\.(\d+)\.", name)})
    whole = [n for n in layers if all(f"model.layers.{n}." + s in set(names) for s in ("self_attn.q_proj.weight",
                                                                                       "post_attention_layernorm.weight"))
             and sum(1 for name in names if name.startswith(f"model.layers.{n}.")) ==
             sum(1 for p in params if p.name.startswith(f"model.layers.{n}."))]
    extra = [nm for nm in names if not any(nm.startswith(f"model.layers.{n}.") for n in whole)]
    parts = []
    if whole:
        parts.append(f"{len(whole)} whole decoder layer{'s' if len(whole) > 1 else ''} ({', '.join(map(str, whole))})")
    if extra:
        parts.append(" + ".join(extra[:3]) + (f" + {len(extra) - 3} more" if len(extra) > 3 else ""))
    return f"{j - i} tensors, {names[0]} … {names[-1]}: " + " + ".join(parts)


_BACKWARD_IN_LAYER = ("mlp.down_proj", "mlp.up_proj", "mlp.gate_proj", "post_attention_layernorm",
                      "self_attn.o_proj", "self_attn.v_proj", "self_attn.k_proj", "self_attn.q_proj", "input_layernorm")


def backward_order(params: Sequence[Param]) -> list[Param]:
    """The order gradients become ready: the forward pass reversed (within a layer, the MLP before attention)."""
    def key(item: tuple[int, Param]) -> tuple[int, int, int]:
        i, p = item
        m = re.match(r"model\.layers\.(\d+)\.(.+?)\.(?:weight|bias)$", p.name)
        if not m:
            return (-1, 0, -i) if i > 0 else (10**9, 0, 0)  # head and final norm first, embeddings last
        where = next(k for k, part in enumerate(_BACKWARD_IN_LAYER) if m[2] == part)
        return (10**6 - int(m[1]), where, -i)
    return [p for _, p in sorted(enumerate(params), key=key)]


def _bucket_candidates(params: Sequence[Param], n: int, itemsize: int) -> list[tuple[str, str, int]]:
    """Contiguous runs of gradients summing to n, in backward order and in reverse registration order."""
    out: list[tuple[str, str, int]] = []
    ruled: list[tuple[str, str, int]] = []
    seen: set[frozenset[str]] = set()
    for label, order in (("backward order", backward_order(params)), ("reverse registration order",
                                                                     list(reversed(params)))):
        ds = {(i, j) for i, j, _ in _greedy_buckets(order, DEEPSPEED_BUCKET_ELEMENTS)}
        ddp = {(i, j) for i, j, _ in _ddp_buckets(order, itemsize)}
        runs = sorted(_runs(order, n), key=lambda r: ((r in ds) or (r in ddp), -r[0]), reverse=True)
        for i, j in runs[:3]:
            names = frozenset(p.name for p in order[i:j])
            if names in seen:
                continue
            seen.add(names)
            how = []
            if (i, j) in ds:
                how.append("exactly the bucket DeepSpeed ZeRO forms (reduce_bucket_size 5e8 elements)")
            if (i, j) in ddp:
                how.append("exactly the bucket DDP forms (25 MiB buckets)")
            note = f"; {' and '.join(how)}" if how else ""
            item = ("gradient_bucket", f"gradient bucket ({label}): {_describe_run(order, i, j)}{note}", n)
            (ruled if how else out).append(item)
    # NOTE: a count that is one run is usually also other, shifted runs; prefer the ones a real bucketing rule forms.
    return ruled or out[:2]


def _scalars(n: int, m: Model) -> list[tuple[str, str, int]]:
    out = [("scalar", "barrier (PyTorch runs barrier() as a 1-element all_reduce), a loss or metric sync, "
                      "an early-stopping or 'done' flag", 1)]
    if m.world_size:
        out.append(("scalar", f"one value per rank (world size {m.world_size}): an object-collective size "
                              "exchange or a per-rank flag", m.world_size))
    return out


def _solve(n: int, m: Model) -> list[Candidate]:
    """With all but one of B, S, H known, solve B×S×H = n for the missing one."""
    dims = {"batch": m.batch, "seq": m.seq, "hidden": m.hidden}
    missing = [k for k, v in dims.items() if v is None]
    if len(missing) != 1:
        return []
    known = math.prod(v for v in dims.values() if v is not None)
    value, rem = divmod(n, known)
    what = missing[0]
    if rem == 0:
        return [Candidate("solved", f"B×S×H with {what} = {value:,} (the other two as given)", n, True, 0)]
    return [Candidate("solved", f"B×S×H would need {what} = {n / known:,.3f}, not an integer: not an activation "
                                "of that shape", value * known, False, value * known - n)]


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


def _advice(n: int, exact: Sequence[Candidate], m: Model) -> list[str]:
    kinds = {c.kind for c in exact}
    out = []
    if any("output_hidden_states" in c.description or "output_attentions" in c.description for c in exact):
        out.append("The model returns all hidden states (or attention maps) and something reduces or gathers "
                   "them: stop returning them (output_hidden_states=False / output_attentions=False, or return "
                   "None from the wrapper) so they are never communicated.")
    if kinds & {"gradient_bucket", "layer", "parameter", "model", "partition"}:
        out.append("This is ordinary training traffic (gradients or parameters): its size is not the problem. A "
                   "timeout on it means a rank never joined; run `ncclcheck analyze-log` on every rank's log.")
    if n == 1 or "scalar" in kinds:
        out.append("A 1-element collective is a barrier or a metric/flag sync: a rank that skipped it (or reached "
                   "it alone) left a loop early or took a rank-dependent branch; run `ncclcheck analyze-log`.")
    if not exact:
        extra = ""
        if n <= DEEPSPEED_BUCKET_ELEMENTS:
            extra = (" It is at most 5e8 elements, so it is consistent with a DeepSpeed gradient bucket (which "
                     "holds whatever tensors fit, odd-sized ones included) or another partial bucket.")
        out.append("No exact match with the shapes given: nothing here explains the number." + extra +
                   " Give the model (--model / --config) and batch shape to test more candidates.")
    return out


def explain(n: int, m: Model, numel_out: int | None = None, op: str | None = None,
            dtype: str = "float32") -> Explanation:
    """Rank the candidates that could produce exactly ``n`` elements, with the facts that rule others out."""
    factors = factorize(n)
    itemsize = DTYPE_BYTES[dtype]
    params = parameters(m)
    raw = _activations(m) + _param_candidates(m, params) + _scalars(n, m)
    cands = [Candidate(k, d, c, c == n, c - n) for k, d, c in raw if c > 0]
    cands += [Candidate(k, d, c, True, 0) for k, d, c in _bucket_candidates(params, n, itemsize)]
    cands += _solve(n, m)
    if numel_out is not None and numel_out != n:
        ratio = numel_out / n
        if numel_out % n == 0:
            note = f"NumelOut = {numel_out // n} × NumelIn: a gather over {numel_out // n} ranks (all_gather)"
        elif n % numel_out == 0:
            note = f"NumelIn = {n // numel_out} × NumelOut: a reduce_scatter over {n // numel_out} ranks"
        else:
            note = f"NumelOut / NumelIn = {ratio:.4g}: not a whole number of ranks (uneven or coalesced collective)"
        cands.append(Candidate("relation", note, numel_out, True, 0))
    exact = sorted((c for c in cands if c.exact), key=lambda c: _RANK.get(c.kind, 9))
    near = sorted((c for c in cands if not c.exact and abs(c.delta) <= NEAR * n), key=lambda c: abs(c.delta))
    nbytes = max(n, numel_out or 0) * itemsize
    transfer = tuple((f.name, transfer_seconds(nbytes, op or "ALLREDUCE", m.world_size, f)) for f in FABRICS)
    return Explanation(n, numel_out, op, tuple(factors), tuple(_facts(n, factors, m)), tuple(exact + near),
                       tuple(_advice(n, exact, m)), transfer, dtype)


_RANK = {"relation": 0, "solved": 1, "activation": 2, "gradient_bucket": 3, "layer": 4, "parameter": 5, "model": 6,
         "partition": 7, "scalar": 8}


@dataclass(frozen=True)
class SizeRow:
    """One common tensor of the model, for the table shown without ``--numel``."""

    description: str
    numel: int
    bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    allreduce: tuple[tuple[str, float], ...] = ()
    allgather: tuple[tuple[str, float], ...] = ()


def size_table(m: Model, dtypes: Iterable[str] = ("float32", "bfloat16")) -> list[SizeRow]:
    """What the common tensors of this model weigh and how long one collective of each takes."""
    rows = []
    for kind, desc, n in _activations(m) + [c for c in _param_candidates(m, parameters(m)) if c[0] in ("layer", "model")]:
        if kind == "layer" and not desc.startswith("one"):
            continue
        b = {d: n * DTYPE_BYTES[d] for d in dtypes}
        first = next(iter(b.values()))
        ar = tuple((f.name, transfer_seconds(first, "ALLREDUCE", m.world_size, f)) for f in FABRICS)
        ag = tuple((f.name, transfer_seconds(first * (m.world_size or 1), "_ALLGATHER_BASE", m.world_size, f))
                   for f in FABRICS)
        rows.append(SizeRow(desc, n, b, ar, ag))
    return rows

