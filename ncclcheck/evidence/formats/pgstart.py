"""A framework's lines as it starts its process group: the last words a process prints before the rendezvous.

init_process_group (torch/distributed/distributed_c10d.py) connects to the rendezvous store (MASTER_ADDR and
MASTER_PORT under the env:// method) and waits there, printing nothing, until every rank of the world has joined;
only then does the framework go on. So a process whose last line is one of these has entered that wait:

* DeepSpeed (deepspeed/comm/comm.py, init_distributed): ``cdb=None`` as it starts (its logger's header names the
  function: ``[comm.py:637:init_distributed]``), then on rank 0 ``Initializing TorchBackend in DeepSpeed with backend
  nccl`` right before TorchBackend is made, whose constructor builds its shared-memory op on accelerators that have
  one (deepspeed/comm/torch.py, build_shm_op: ``DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built
  successfully``, the CPU accelerator's) and then calls init_process_group;
* Lightning (lightning/fabric/utilities/distributed.py, _init_dist_connection; pytorch_lightning's before it, whose
  1.x releases wrote ``initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/2``): ``Initializing distributed: GLOBAL_RANK: 0,
  MEMBER: 1/2`` right before init_process_group; rank 0 prints "All
  distributed processes registered" once every rank joined;
* PyTorch 1.x itself (distributed_c10d.py, _store_based_barrier, at the INFO level): ``Added key:
  store_based_barrier_key:1 to store for rank: 0`` as a rank checks in after making its group, then "Completed
  store-based barrier for key:... with N nodes." once the world has.

Each yields a ``setup`` fact of the step :data:`PG_STEP`, as formats/ncclsetup.py's steps do: job/stall.py reads
inputs whose lines all stop at such a step (job/pgstart.py words them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

PG_STEP = "process group start"
STARTS = re.compile(r"Initializing TorchBackend in DeepSpeed|:init_distributed\] cdb="
                    r"|deepspeed_shm_comm_op built successfully"
                    r"|[Ii]nitializing distributed: GLOBAL_RANK: \d|[Ii]nitializing ddp: GLOBAL_RANK: \d"
                    r"|Added key: store_based_barrier_key")
WORDS = ("Initializing TorchBackend", ":init_distributed] cdb=", "shm_comm_op built successfully",
         "nitializing distributed: GLOBAL_RANK", "nitializing ddp: GLOBAL_RANK", "Added key: store_based_barrier_key")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


class Lines:
    """One input's process-group start lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        return (Fact(_ANYONE, "setup", PG_STEP, loc),) if STARTS.search(text) else ()


FORMAT = Format(
    name="a framework's process-group start",
    words=WORDS,
    make=Lines,
    patterns=(STARTS,),
    samples=(
        Sample("[2024-06-11 00:23:36,254] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed "
               "with backend nccl", "deepspeed/comm/comm.py (init_distributed); "
               "https://github.com/RLHFlow/Online-RLHF/issues/11", (Fact(_ANYONE, "setup", PG_STEP, AT),)),
        Sample("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2",
               "lightning/fabric/utilities/distributed.py (_init_dist_connection)",
               (Fact(_ANYONE, "setup", PG_STEP, AT),)),
        Sample("INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0",
               "torch/distributed/distributed_c10d.py (_store_based_barrier, PyTorch 1.x)",
               (Fact(_ANYONE, "setup", PG_STEP, AT),)),
    ),
)
