"""A 2-rank torchrun worker for the recordings of issue 44 §3 / issue 41 §3 (ncclcheck).

argv[1]: ok    init NCCL, five all_reduces, a barrier, destroy
         hang  three all_reduces, then rank 1 sleeps HANG_S before its fourth while rank 0 waits in it
Env: JOB_DIR (pid and ready files), JOB_TIMEOUT_S (process-group timeout), DBG_DIR (start PyTorch's debug server
with periodic dumps there, every DBG_EVERY_S), DBG_PORT.
"""
import datetime
import os
import sys
import time

mode = sys.argv[1]
if os.environ.get("RANK") == "1" and os.environ.get("RANK1_ENV"):  # rank 1 alone gets these (KEY=VALUE,...)
    os.environ.update(kv.split("=", 1) for kv in os.environ["RANK1_ENV"].split(","))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
jd = os.environ.get("JOB_DIR", "/tmp")
backend = os.environ.get("JOB_BACKEND", "nccl")
cuda = backend == "nccl"
dev = torch.device("cuda", min(local, torch.cuda.device_count() - 1)) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(dev)
print(f"job rank={rank} pid={os.getpid()} torch={torch.__version__} "
      f"nccl={torch.cuda.nccl.version() if cuda else '-'}", file=sys.stderr, flush=True)
with open(os.path.join(jd, f"pid.{rank}"), "w") as f:
    f.write(str(os.getpid()))
timeout = datetime.timedelta(seconds=int(os.environ.get("JOB_TIMEOUT_S", "60")))
kw = {"device_id": dev} if cuda else {}
dist.init_process_group(backend, timeout=timeout, **kw)
if os.environ.get("DBG_DIR"):
    try:
        from torch.distributed.debug import start_debug_server
    except ImportError as e:
        print(f"job rank={rank} no debug server: {e}", file=sys.stderr, flush=True)
        start_debug_server = None
    if start_debug_server:
        start_debug_server(port=int(os.environ.get("DBG_PORT", "25999")), dump_dir=os.environ["DBG_DIR"],
                           dump_interval=float(os.environ.get("DBG_EVERY_S", "5")),
                           enabled_dumps={"stacks", "fr_trace", "tcpstore", "wait_counters"})
x = torch.ones(1 << 20, device=dev)


def step(n):
    for _ in range(n):
        dist.all_reduce(x)
    if cuda:
        torch.cuda.synchronize()


def rank1_sleeps(s):
    """Rank 1 away from the collectives (a rank that never arrives)."""
    time.sleep(s)


step(3)
if mode == "ok":
    step(2)
    dist.barrier()
    print(f"job rank={rank} ok sum={x[0].item()}", file=sys.stderr, flush=True)
elif mode == "hang":
    open(os.path.join(jd, f"ready.{rank}"), "w").close()
    if rank == 1:
        rank1_sleeps(float(os.environ.get("HANG_S", "60")))
    step(1)
    print(f"job rank={rank} finished the fourth all_reduce", file=sys.stderr, flush=True)
dist.destroy_process_group()
