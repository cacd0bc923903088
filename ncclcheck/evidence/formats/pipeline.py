"""Lines that say the job runs pipeline parallelism, and over which group: the stages pass activations and gradients
to their neighbours by batched sends and receives.

* Megatron-Core names its pipeline group ``PIPELINE_MODEL_PARALLEL_GROUP`` (megatron/core/parallel_state.py passes it
  as ``group_desc`` to ``new_group``, so ProcessGroupNCCL's prefixes print it: ``[PG ID 3 PG GUID 12(PIPELINE_MODEL_
  PARALLEL_GROUP) Rank 1]``) and prints its arguments at start (``pipeline_model_parallel_size ........ 16``, the
  command line's ``--pipeline-model-parallel-size 16``); its stages exchange through
  megatron/core/pipeline_parallel/p2p_communication.py (``_batched_p2p_ops``: ``torch.distributed.batch_isend_irecv``),
  whose frames a traceback shows.
* A DeviceMesh's groups are described ``mesh_<dim>`` (torch/distributed/device_mesh.py), so a mesh dimension named
  ``pp`` (torchtitan's and others') prints ``mesh_pp``.
* DeepSpeed's pipeline engine (deepspeed/runtime/pipe/) and PyTorch's own (torch/distributed/pipelining/) show in
  a traceback's paths.

Each is a fact ``pipeline`` with the words that say it; job/pipeline.py reads them beside a batched (COALESCED) work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

WORDS = ("PIPELINE_MODEL_PARALLEL_GROUP", "pipeline_model_parallel_size", "pipeline-model-parallel-size",
         "pipeline_parallel/p2p_communication", "mesh_pp", "deepspeed/runtime/pipe/", "torch/distributed/pipelining/",
         "pp_group")
# Each alternative holds one of WORDS (the block reader keeps a line by them: tests/test_keep.py).
_PIPELINE = re.compile(
    r"PIPELINE_MODEL_PARALLEL_GROUP"
    r"|pipeline_model_parallel_size\W{1,40}\d+|pipeline-model-parallel-size\W{1,4}\d+"
    r"|pipeline_parallel/p2p_communication\.py|\bmesh_pp\b|deepspeed/runtime/pipe/\w+\.py"
    r"|torch/distributed/pipelining/\w+\.py|\bpp_group\b"
)
_ANYONE = Who()


class Lines:
    """One input's lines naming pipeline parallelism, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = _PIPELINE.search(text)
        return () if m is None else (Fact(_ANYONE, "pipeline", " ".join(m[0].split()), loc),)


FORMAT = Format(
    name="pipeline",
    words=WORDS,
    make=Lines,
    patterns=(_PIPELINE,),
    samples=(
        Sample("[rank1]:[E1127 10:02:11.417000000 ProcessGroupNCCL.cpp:632] [PG ID 3 PG GUID 12"
               "(PIPELINE_MODEL_PARALLEL_GROUP) Rank 1] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=16, OpType=COALESCED, NumelIn=0, NumelOut=0, Timeout(ms)=600000) ran for 600022 "
               "milliseconds before timing out.",
               "megatron/core/parallel_state.py's group_desc for the pipeline group, in ProcessGroupNCCL.cpp's prefix",
               (Fact(_ANYONE, "pipeline", "PIPELINE_MODEL_PARALLEL_GROUP", AT),)),
        Sample("  pipeline_model_parallel_size .................. 16",
               "megatron/training/arguments.py's print of its arguments at start",
               (Fact(_ANYONE, "pipeline", "pipeline_model_parallel_size .................. 16", AT),)),
        Sample('  File "/opt/megatron-lm/megatron/core/pipeline_parallel/p2p_communication.py", line 344, in '
               "_batched_p2p_ops",
               "a traceback through Megatron-Core's batched send/recv between stages",
               (Fact(_ANYONE, "pipeline", "pipeline_parallel/p2p_communication.py", AT),)),
    ),
)
