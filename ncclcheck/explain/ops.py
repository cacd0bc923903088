"""What an op can carry: op names to families, and which kinds of tensor each family can move.

The watchdog prints OpType (``ALLREDUCE``, ``_ALLGATHER_BASE``); flight-recorder dumps name ops ``nccl:all_reduce``.
Both reduce to one family. A kind the family cannot carry is never a match: an all-gather moves parameters (or
activations), never gradient buckets; a reduce-scatter moves gradients, never parameter gathers.
"""

from __future__ import annotations

ALLREDUCE, ALLGATHER, REDUCESCATTER = "all_reduce", "all_gather", "reduce_scatter"
BROADCAST, SCATTER, ALLTOALL, P2P, REDUCE = "broadcast", "scatter", "all_to_all", "send/recv", "reduce"

_FAMILIES = {
    "ALLREDUCE": ALLREDUCE, "ALLREDUCECOALESCED": ALLREDUCE, "ALLREDUCEBARRIER": ALLREDUCE, "BARRIER": ALLREDUCE,
    "ALLREDUCESPARSE": ALLREDUCE,
    "ALLGATHER": ALLGATHER, "ALLGATHERBASE": ALLGATHER, "ALLGATHERCOALESCED": ALLGATHER,
    "ALLGATHERINTOTENSORCOALESCED": ALLGATHER, "ALLGATHERINTOTENSOR": ALLGATHER, "ALLGATHERSINGLE": ALLGATHER,
    "REDUCESCATTER": REDUCESCATTER, "REDUCESCATTERBASE": REDUCESCATTER, "REDUCESCATTERTENSORCOALESCED": REDUCESCATTER,
    "REDUCESCATTERTENSOR": REDUCESCATTER, "REDUCESCATTERSINGLE": REDUCESCATTER,
    "BROADCAST": BROADCAST, "SCATTER": SCATTER, "ALLTOALL": ALLTOALL, "ALLTOALLBASE": ALLTOALL,
    "SEND": P2P, "RECV": P2P, "RECVANYSOURCE": P2P, "REDUCE": REDUCE,
}

# Kinds of tensor, by the strategy that forms them (None: any strategy).
KIND_STRATEGY = {
    "ddp_bucket": "ddp", "zero_bucket": "zero1/2", "zero_partition": "zero1/2", "zero3_gather": "zero3",
    "zero3_bucket": "zero3", "fsdp_unit": "fsdp", "fsdp2_unit": "fsdp2", "tp_activation": "tp", "tp_shard": "tp",
    "tp_replicated": "tp",
    "activation": None, "parameter": None, "layer": None, "model": None, "scalar": None, "expert_tokens": None,
    "gradient_run": None, "gather_run": "zero3", "buffers": "ddp", "metadata": "ddp",
    "pp_activation": "pp", "pp_metadata": "pp", "zero_broadcast": "zero", "zero_metadata": "zero",
}

CARRIES = {
    ALLREDUCE: {"ddp_bucket", "zero_bucket", "tp_activation", "activation", "parameter", "layer", "model", "scalar",
                "gradient_run", "metadata", "fsdp_unit", "fsdp2_unit", "tp_replicated"},
    ALLGATHER: {"fsdp_unit", "fsdp2_unit", "zero3_gather", "zero_partition", "tp_activation", "activation", "scalar",
                "gather_run", "parameter"},
    REDUCESCATTER: {"fsdp_unit", "fsdp2_unit", "zero3_bucket", "tp_activation", "activation", "gradient_run"},
    BROADCAST: {"model", "parameter", "scalar", "activation", "buffers", "metadata", "tp_replicated", "zero_broadcast",
                "zero_metadata"},
    SCATTER: {"tp_shard"},
    ALLTOALL: {"expert_tokens", "activation"},
    P2P: {"activation", "pp_activation", "pp_metadata"},
    REDUCE: {"zero_bucket", "parameter", "gradient_run", "scalar"},
}

MEANS = {
    ALLREDUCE: "gradient buckets (DDP, ZeRO-1/2), DDP's used-parameter map, HSDP's gradient shards across replicas, "
               "tensor-parallel activations, metrics and barriers",
    ALLGATHER: "parameter gathers (FSDP1, FSDP2, ZeRO) or gathered activations",
    REDUCESCATTER: "gradient shards (FSDP1, FSDP2, ZeRO-3) or sequence-parallel activations",
    BROADCAST: "a copy from one rank: initial parameter sync, DDP's buffers and bookkeeping, replicated "
               "tensor-parallel biases, flags",
    SCATTER: "tensor-parallel parameter shards handed out from one rank",
    ALLTOALL: "MoE token dispatch (expert parallelism)",
    P2P: "pipeline-parallel activations",
    REDUCE: "ZeRO-1/2 gradient slices reduced to their owner",
}

WHY_NOT = {
    ALLGATHER: "an all-gather moves parameter shards or activations, never gradients",
    REDUCESCATTER: "a reduce-scatter moves gradient shards (FSDP, ZeRO-3); DDP and ZeRO-1/2 buckets are all-reduced "
                   "and parameters are gathered",
    ALLREDUCE: "FSDP and ZeRO-3 units move as all-gather and reduce-scatter; an FSDP unit is all-reduced only as HSDP's "
               "gradient shard across the replicate dimension",
    BROADCAST: "a broadcast copies one rank's tensor: no gradient bucket or sharded unit",
}

STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp2", "tp", "pp")


def family(op: str | None) -> str | None:
    """The family of an OpType or flight-recorder op name; None when unknown."""
    if not op:
        return None
    key = op.rpartition(":")[2].upper().replace("_", "").replace(" ", "")
    return _FAMILIES.get(key)


def strategy_allows(kind: str, strategy: str | None) -> bool:
    """Whether a kind can occur under the strategy given (every kind when none is); a combined strategy
    (``tp+fsdp2``, ``pp+ddp``) allows the kinds of each part."""
    owner = KIND_STRATEGY.get(kind)
    if strategy is None or owner is None:
        return True
    parts = strategy.split("+")
    if owner == "zero1/2":
        return "zero1" in parts or "zero2" in parts
    if owner == "zero":  # every ZeRO stage
        return any(p.startswith("zero") for p in parts)
    return owner in parts


def known_strategy(strategy: str) -> bool:
    """Whether every part of a strategy (one name, or several joined by ``+``) is one of STRATEGIES."""
    return all(part in STRATEGIES for part in strategy.split("+"))
