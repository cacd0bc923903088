"""Worker for the corpus GPU runs: produces real torch output for three failure shapes.

Scenario is argv[1]:
  async   - rank 1 kills itself (SIGKILL) while both ranks loop on all_reduce over NCCL sockets;
            rank 0 should report an async NCCL error ("remote process exited") on its work.
  nccl2   - a collective timeout on the nccl2 backend (backend from $CORPUS_BACKEND).
  dump    - a collective timeout on a sub-group after p2p traffic, with the debug pipe poked
            first; both ranks should print the dump-signal / TCPStore / pipe lines.
Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun or the launcher), CORPUS_DIR.
"""

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

scenario = sys.argv[1]
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
out = os.environ.get("CORPUS_DIR", ".")
backend = os.environ.get("CORPUS_BACKEND", "nccl")
cuda = torch.cuda.is_available() and backend != "gloo"
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank))) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(dev)


def note(msg):
    print(f"corpus-worker rank={rank} {msg}", file=sys.stderr, flush=True)


def save_fr(tag):
    """Both in-process flight-recorder dumps (pickle and JSON), when this torch has them."""
    c = torch._C._distributed_c10d
    for name, fn in (("pickle", "_dump_nccl_trace"), ("json", "_dump_nccl_trace_json")):
        f = getattr(c, fn, None)
        if f is None:
            note(f"no {fn}")
            continue
        try:
            data = f(includeCollectives=True, onlyActive=False)
        except (RuntimeError, TypeError) as e:
            note(f"{fn} failed: {e}")
            continue
        path = os.path.join(out, f"fr_{tag}_rank{rank}.{name}")
        with open(path, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        note(f"wrote {path}")


kw = {"timeout": datetime.timedelta(seconds=int(os.environ.get("CORPUS_TIMEOUT_S", "10")))}
if cuda and scenario != "nccl2":
    kw["device_id"] = dev
note(f"init backend={backend} torch={torch.__version__}")
dist.init_process_group(backend=backend, **kw)
note(f"pg backend={dist.get_backend()}")

x = torch.ones(1 << 20, device=dev)

if scenario == "async":
    for i in range(10_000):
        dist.all_reduce(x)
        if rank == 1 and i == 200:
            if cuda:
                torch.cuda.synchronize()
            note("SIGKILL self")
            os.kill(os.getpid(), signal.SIGKILL)
        if i % 50 == 0 and cuda:
            torch.cuda.synchronize()
    note("loop ended")

elif scenario == "nccl2":
    dist.all_reduce(x)
    y = torch.empty(world * x.numel(), device=dev)
    dist.all_gather_into_tensor(y, x)
    if cuda:
        torch.cuda.synchronize()
    if rank == 1:
        note("sleeping instead of the all_reduce")
        time.sleep(90)
    else:
        dist.all_reduce(torch.ones(3 * 1024, device=dev))
        if cuda:
            torch.cuda.synchronize()
    note("done")

elif scenario == "dump":
    sub = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=8), group_desc="tp")
    dist.all_reduce(x)
    dist.broadcast(x, src=0)
    y = torch.empty(world * x.numel(), device=dev)
    dist.all_gather_into_tensor(y, x)
    if rank == 0:
        dist.send(torch.arange(7, dtype=torch.float32, device=dev), dst=1)
    else:
        r = torch.empty(7, device=dev)
        dist.recv(r, src=0)
    dist.all_reduce(x, group=sub)
    if cuda:
        torch.cuda.synchronize()
    save_fr("live")
    pipe_stem = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
    if pipe_stem and rank == 0:
        pipe = f"{pipe_stem}{rank}.pipe"
        for _ in range(30):
            if os.path.exists(pipe):
                break
            time.sleep(0.2)
        if os.path.exists(pipe):
            try:
                fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"1\n")
                os.close(fd)
                note(f"poked {pipe}")
            except OSError as e:
                note(f"could not poke {pipe}: {e}")
        else:
            note(f"no pipe at {pipe}")
    dist.barrier()
    time.sleep(3)
    if rank == 1:
        note("sleeping instead of the sub-group all_reduce")
        time.sleep(90)
    else:
        dist.all_reduce(torch.ones(5, 3, device=dev), group=sub)
        if cuda:
            torch.cuda.synchronize()
    note("done")

dist.destroy_process_group()
