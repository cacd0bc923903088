"""What this torch build knows: versions, registered backends, and which log literals its libraries hold."""

import glob
import os

import torch
import torch.distributed as dist

print("torch", torch.__version__, "cuda", torch.version.cuda)
try:
    print("nccl", torch.cuda.nccl.version())
except (RuntimeError, AttributeError) as e:
    print("nccl unknown:", e)
print("backend_list", getattr(dist.Backend, "backend_list", None))
for name in ("nccl", "nccl2", "gloo"):
    try:
        print("is_backend_available", name, dist.is_backend_available(name))
    except (RuntimeError, AttributeError, ValueError) as e:
        print("is_backend_available", name, "error", e)
print("Backend attrs", sorted(a for a in dir(dist.Backend) if a.isupper()))
c = torch._C._distributed_c10d
print("c10d names with nccl", sorted(n for n in dir(c) if "nccl" in n.lower() or "NCCL" in n))

WANT = [b"TORCH_DIST_USE_NCCL2", b"nccl2", b"[TC]", b"Operation timed out after", b"Aborting process due to",
        b"Observed flight recorder dump signal", b"First PG on this rank to signal dumping",
        b"preparing to dump debug info", b"Dump signal received through pipe", b"comm_lib_trace_rank_",
        b"nccl_trace_rank_", b"raised the following async exception", b"Terminating the process after",
        b"Received a dump signal", b"Watchdog caught collective operation timeout", b"comm_lib_version",
        b"thread_name", b"duration_ms", b"timeout_ms", b"Operation timed out"]
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
for path in sorted(glob.glob(os.path.join(lib, "*.so*"))):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        continue
    for w in WANT:
        hits, at = [], data.find(w)
        while at != -1 and len(hits) < 4:
            hits.append(at)
            at = data.find(w, at + 1)
        for h in hits:
            a = data.rfind(b"\0", 0, h) + 1
            b = data.find(b"\0", h)
            s = data[a:b if b - a < 400 else a + 400]
            print(f"{os.path.basename(path)}\t{w.decode()}\t{s.decode('latin-1')!r}")
