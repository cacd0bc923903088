"""A batched (COALESCED) work that timed out in a pipeline-parallel group: the exchange between pipeline stages.

ProcessGroupNCCL records the operations issued between ``startCoalescing`` and ``endCoalescing`` as one work of op
type COALESCED (ProcessGroupNCCL.cpp; ``torch.distributed.batch_isend_irecv`` is one such batch of sends and
receives). Pipeline schedules pass activations forward and gradients backward between neighbouring stages this way
(Megatron-Core's megatron/core/pipeline_parallel/p2p_communication.py ``_batched_p2p_ops``), so a COALESCED timeout in
the pipeline group is a stage whose neighbour never posted its side of the exchange: the stages disagree on the
schedule (the pipeline-parallel size, the number of micro-batches, which stage sends first) or on the shapes they
exchange, or a stage never got there. The group is the pipeline's where its description says so (Megatron's
``PIPELINE_MODEL_PARALLEL_GROUP``, a DeviceMesh's ``mesh_pp``) or where a line naming the pipeline stands beside the
timeout (evidence/formats/pipeline.py); the size is taken from Megatron's printed arguments where they are there.
"""

from __future__ import annotations

import re

from ncclcheck.evidence.types import Fact, Loc
from ncclcheck.job.model import Job, Record

# A group description that names the pipeline: Megatron's, a DeviceMesh dimension named pp.
_PIPELINE_DESC = re.compile(r"PIPELINE|(?:^|_)pp(?:$|_)", re.IGNORECASE)
_SIZE = re.compile(r"pipeline[_-]model[_-]parallel[_-]size\W+(?P<n>\d+)")
# How far from the timeout's line a line that names the pipeline still speaks of its group (the record's own lines,
# the traceback printed with it).
_NEAR = 50


def _beside(r: Record, facts: tuple[Fact, ...]) -> Fact | None:
    """A line naming the pipeline beside one of the record's printings, in its file."""
    locs = r.locs or (r.loc,)
    return next((f for f in facts if not _SIZE.search(f.value)
                 and any(f.loc.file == loc.file and abs(f.loc.line - loc.line) <= _NEAR for loc in locs)), None)


def pipeline_exchange(job: Job) -> tuple[Record, str, Loc] | None:
    """The COALESCED timeout of a pipeline group, with the words and the line that say the group is the pipeline's."""
    for r in job.records:
        if r.op_type != "COALESCED":
            continue
        if r.pg is not None and r.pg.desc and _PIPELINE_DESC.search(r.pg.desc):
            return r, r.pg.desc, r.loc
        if (f := _beside(r, job.facts.pipeline)) is not None:
            return r, f.value, f.loc
    return None


def pipeline_step(job: Job) -> str | None:
    """What to check where a pipeline's exchange between stages timed out."""
    found = pipeline_exchange(job)
    if found is None:
        return None
    r, said, loc = found
    number = f" #{r.seq}" if r.seq is not None else ""
    size = next(((m["n"], f.loc) for f in job.facts.pipeline if (m := _SIZE.search(f.value))), None)
    sized = f" (pipeline_model_parallel_size {size[0]}, {size[1]})" if size is not None else ""
    return (f"COALESCED{number} is a batch of operations issued together, and its group is the pipeline-parallel "
            f"group ({said}, {loc}): it is the exchange between pipeline stages, the batched sends and receives "
            "(batch_isend_irecv) that pass activations forward and gradients backward between neighbouring stages, "
            "and one stage's neighbour never posted its side. Check the pipeline-parallel size"
            f"{sized} against the model's layers and the world (tensor x pipeline x data parallel sizes = world size; "
            "a config that sets another size than intended), then that each pair of neighbouring stages issues its "
            "sends and receives in the same order (the schedule, the number of micro-batches) with the same shapes "
            "(micro-batch size, sequence length, hidden size).")
