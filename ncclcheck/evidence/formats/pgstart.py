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

A framework that makes its own NCCL communicator prints its last line before ``ncclCommInitRank`` (:data:`COMM`),
a step of its own, :data:`COMM_STEP`: NCCL prints nothing of its set-up without NCCL_DEBUG=INFO, so a process whose
last line it is never finished that set-up (or its first collective), or its log was cut there:

* vLLM's PyNcclCommunicator (vllm/distributed/device_communicators/pynccl.py): ``vLLM is using nccl==X`` (every rank
  until 2025, rank 0 alone since, ``(via nccl4py)`` after it in the newest), then rank 0's ncclUniqueId broadcast over
  the CPU group, ncclCommInitRank and a warm-up all-reduce; SGLang's copy of it (``sglang is using nccl==X``, also
  ``sglang-diffusion``), on rank 0;
* Paddle's NCCLParallelContext::Init (paddle/fluid/imperative/nccl_context.cc): ``init nccl context nranks: N local
  rank: R gpu id: G`` (``ring id: I`` added in later releases, one line per ring) after the ids' exchange over the
  trainers' endpoints, right before the ring's communicator is made.

The same barrier's wait (:data:`BARRIER`) says more than a step: a group's creation (init_process_group; new_group,
which every process of the world must enter, member or not) counts the processes that reached it in the store key
``store_based_barrier_key:N`` and waits until all of them have, logging every 10 s or so ``Waiting in store based
barrier to initialize process group for rank: R, key: K (world_size=W, worker_count=C, timeout=T)`` (PyTorch 1.8 to
1.13, INFO), ``... num_workers_joined=C ...`` (2.x, some with ``error: E`` after it), ``... for S secondsrank: R, ...
timeout=T error=E)`` (later 2.x, at DEBUG, as torch 2.13 prints it), and at the group's timeout raises ``Timed out
initializing process group in store based barrier on rank: R, for key: K (world_size=W, worker_count=C, ...``
(RuntimeError; ``on rank R`` and DistStoreError in 2.x). Either is a :data:`BARRIER_FACT` fact ``R W C K``: rank R
waits, and W-C processes never reached the group. ``Rank R: Completed store-based barrier for key:K with W nodes.``
is that key's wait over (:data:`BARRIER_DONE`). job/storebarrier.py reads them.
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
# The store-based barrier's wait and its timeout, in every release's words (the module's docstring); a copy in
# another project printed "process" "group" and "based" "barrier" without a space between the joined strings.
BARRIER = re.compile(r"(?:Waiting in store based ?barrier to initialize process ?group for (?:[\d.]+ seconds ?)?"
                     r"|Timed out initializing process ?group in store based ?barrier on )rank:? (?P<rank>\d+), "
                     r"(?:for )?key: (?P<key>\S+) \(world_size=(?P<world>\d+), "
                     r"(?:worker_count|num_workers_joined)=(?P<joined>\d+)")
DONE = re.compile(r"Completed store-based barrier for key: ?(?P<key>\S+) with")
BARRIER_FACT, BARRIER_DONE = "store_barrier", "store_barrier_done"
COMM_STEP = "NCCL communicator start"
COMM = re.compile(r"(?:vLLM|sglang|sglang-diffusion) is using nccl==\d|init nccl context nranks: \d+ local rank: \d")
WORDS = ("n store based", "Completed store-based barrier", " is using nccl==", "init nccl context nranks:",
         "Initializing TorchBackend", ":init_distributed] cdb=", "shm_comm_op built successfully",
         "nitializing distributed: GLOBAL_RANK", "nitializing ddp: GLOBAL_RANK", "Added key: store_based_barrier_key")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


class Lines:
    """One input's process-group start lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "store based" in text and (m := BARRIER.search(text)):
            return (Fact(_ANYONE, BARRIER_FACT, f"{m['rank']} {m['world']} {m['joined']} {m['key']}", loc),)
        if "store-based" in text and (m := DONE.search(text)):
            return (Fact(_ANYONE, BARRIER_DONE, m["key"].rstrip(","), loc),)
        if "nccl" in text and COMM.search(text):
            return (Fact(_ANYONE, "setup", COMM_STEP, loc),)
        return (Fact(_ANYONE, "setup", PG_STEP, loc),) if STARTS.search(text) else ()


FORMAT = Format(
    name="a framework's process-group start",
    words=WORDS,
    make=Lines,
    patterns=(STARTS, BARRIER, DONE, COMM),
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
        Sample("INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5",
               "vllm/distributed/device_communicators/pynccl.py (PyNcclCommunicator.__init__)",
               (Fact(_ANYONE, "setup", COMM_STEP, AT),)),
        Sample("[2025-03-02 10:11:12 TP0] sglang is using nccl==2.21.5",
               "sglang/srt/distributed/device_communicators/pynccl.py (PyNcclCommunicator.__init__)",
               (Fact(_ANYONE, "setup", COMM_STEP, AT),)),
        Sample("I0302 09:24:11.613677 15692 nccl_context.cc:189] init nccl context nranks: 2 local rank: 0 gpu id: 0 "
               "ring id: 0", "paddle/fluid/imperative/nccl_context.cc (NCCLParallelContext::Init)",
               (Fact(_ANYONE, "setup", COMM_STEP, AT),)),
        Sample("I0318 17:04:25.652648 31603 nccl_context.cc:127] init nccl context nranks: 2 local rank: 0 gpu id: 0",
               "paddle/fluid/imperative/nccl_context.cc (NCCLParallelContext::Init, before ring ids)",
               (Fact(_ANYONE, "setup", COMM_STEP, AT),)),
        Sample("I0510 07:28:04.417845 139863945226048 distributed_c10d.py:337] Waiting in store based barrier to "
               "initialize process group for rank: 2, key: store_based_barrier_key:2 (world_size=8, worker_count=7, "
               "timeout=0:30:00)", "https://github.com/s-JoL/Open-Llama/issues/47 (PyTorch 1.x's wording)",
               (Fact(_ANYONE, BARRIER_FACT, "2 8 7 store_based_barrier_key:2", AT),)),
        Sample("[rank1]:V1128 13:25:08.498000 12595 torch/distributed/distributed_c10d.py:1068] Waiting in store based "
               "barrier to initialize process group for 10.011635541915894 secondsrank: 1, key: "
               "store_based_barrier_key:1 (world_size=3, num_workers_joined=2, timeout=0:00:25 error=wait timeout "
               "after 10003ms, keys: /default_pg/0//store_based_barrier_key:1:last_worker)",
               "tests/data/launchers/torchrun/store_barrier_console/console.log:30 (torch 2.13)",
               (Fact(_ANYONE, BARRIER_FACT, "1 3 2 store_based_barrier_key:1", AT),)),
        Sample("[rank0]: torch.distributed.DistStoreError: Timed out initializing process group in store based "
               "barrier on rank 0, for key: store_based_barrier_key:1 (world_size=3, num_workers_joined=2, "
               "timeout=0:00:25 error=wait timeout after 10003ms, keys: "
               "/default_pg/0//store_based_barrier_key:1:last_worker)",
               "tests/data/launchers/torchrun/store_barrier_console/console.log:67 (torch 2.13)",
               (Fact(_ANYONE, BARRIER_FACT, "0 3 2 store_based_barrier_key:1", AT),)),
        Sample("[rank0]:I1128 13:24:58.482000 12594 torch/distributed/distributed_c10d.py:1087] Rank 0: Completed "
               "store-based barrier for key:store_based_barrier_key:0 with 3 nodes.",
               "tests/data/launchers/torchrun/store_barrier_console/console.log:17 (torch 2.13)",
               (Fact(_ANYONE, BARRIER_DONE, "store_based_barrier_key:0", AT),)),
    ),
)
