"""The part that needs torch: process group, buffers, timed collectives.

Default mode, per transfer: on GPU, a barrier, then CUDA events recorded on the current stream around the whole
transfer (one collective, or every chunk's collective back to back), then a synchronise; on CPU, a barrier, then
``time.perf_counter`` around the transfer.  Each rank times itself; a transfer's time is that of its slowest rank.

Sweep, per size: ``--iters`` back-to-back all_reduces (or one replay of a CUDA graph holding them), each on the next
slice of one buffer as nccl-tests' all_reduce_perf does; on GPU queued behind a spin kernel and timed by CUDA events
(:class:`_Queue`), on CPU a host clock around them; the median of three such blocks, averaged over ranks.
"""

from __future__ import annotations

import datetime
import os
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from ncclcheck.bench import fmt
from ncclcheck.bench.config import BenchConfig, sweep_sizes
from ncclcheck.bench.metrics import ModeResult, summarise, sweep_point

# Told each step: finished ("mode 2 of 4 (chunks of 1,000,000 elements) measured"), or under way (finished False:
# "... transfer 3 of 13"); rank 0 shows them on stderr past a second.
Progress = Callable[[str, bool], None]


def quiet(_: str, finished: bool = True) -> None:
    """No progress to show (ranks other than 0)."""


class BenchError(Exception):
    """The run cannot go on (memory too small, bad combination); shown as one line."""


_COMM_FAILURE = ("gloo", "nccl", "timed out", "timeout", "connection", "closed", "reset by peer", "abort", "socket")


def is_comm_failure(exc: BaseException) -> bool:
    """True for the errors a dead or absent peer causes; anything else is a bug and keeps its traceback."""
    if isinstance(exc, dist.DistError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(k in text for k in _COMM_FAILURE)


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# torch 2.13 renamed the tensor-in/tensor-out collectives; the GPU machines run 2.11.
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass(frozen=True)
class Env:
    """Where the run happened."""

    rank: int
    local_rank: int
    world: int
    backend: str
    device: str
    launched: bool  # False when not started by torchrun (single process)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(cfg: BenchConfig) -> Env:
    """Join the process group (or make a single-rank one when not launched by torchrun)."""
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if not launched:
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(_free_port()))
    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    cuda = torch.cuda.is_available()
    backend = cfg.backend if cfg.backend != "auto" else ("nccl" if cuda else "gloo")
    if backend == "nccl" and not cuda:
        raise BenchError("--backend nccl needs CUDA GPUs; use --backend gloo on CPU")
    device = f"cuda:{local}" if backend == "nccl" else "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=cfg.timeout),
                            **({"device_id": torch.device(device)} if backend == "nccl" else {}))
    return Env(rank, local, world, backend, device, launched)


def _sync(env: Env) -> None:
    if env.backend == "nccl":
        torch.cuda.synchronize()


def _buffers(cfg: BenchConfig, env: Env) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(input, output) for the op; refuses before allocating when the device cannot hold them."""
    n = cfg.size
    out_elems = n * env.world if cfg.op == "all_gather" else (n // env.world if cfg.op == "reduce_scatter" else 0)
    if cfg.op == "reduce_scatter" and n % env.world:
        raise BenchError(f"--size {n} is not divisible by the world size {env.world} (reduce_scatter)")
    _fits((n + out_elems) * cfg.itemsize, env)
    dtype = _DTYPES[cfg.dtype]
    x = torch.ones(n, dtype=dtype, device=env.device)
    y = torch.empty(out_elems, dtype=dtype, device=env.device) if out_elems else None
    return x, y


def _fits(need: int, env: Env) -> None:
    """Refuse, before allocating, buffers the device (GPU memory, or host memory with gloo) cannot hold."""
    if env.backend == "nccl":
        free, where = torch.cuda.mem_get_info()[0], f"GPU memory free on {env.device}"
    else:
        import psutil

        # every rank on this host allocates its own buffers
        free = psutil.virtual_memory().available // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        where = "host memory available to this rank"
    if need > free * 0.9:
        raise BenchError(f"needs {need / 1e9:.2f} GB for the buffers but {free / 1e9:.2f} GB is {where}: "
                         "use a smaller size")


def _views(x: torch.Tensor, y: torch.Tensor | None, chunk: int | None) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """(input, output) pairs for one transfer: the whole buffer, or consecutive chunk views of it (no copies)."""
    if chunk is None:
        return [(x, y)]
    return [(x[s: s + chunk], None) for s in range(0, x.numel(), chunk)]


def _one(op: str, inp: torch.Tensor, out: torch.Tensor | None, world: int, scratch: dict[int, torch.Tensor]) -> None:
    if op == "all_reduce":
        dist.all_reduce(inp)
    elif op == "broadcast":
        dist.broadcast(inp, src=0)
    elif op == "all_gather":
        if out is None:
            out = scratch.setdefault(inp.numel() * world, torch.empty(inp.numel() * world, dtype=inp.dtype,
                                                                       device=inp.device))
        _all_gather(out, inp)
    else:
        n = inp.numel() // world * world
        if out is None:
            out = scratch.setdefault(n // world, torch.empty(n // world, dtype=inp.dtype, device=inp.device))
        _reduce_scatter(out, inp[:n])


def _transfer(cfg: BenchConfig, env: Env, pairs, scratch) -> float:
    dist.barrier()
    if env.backend == "nccl":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _sync(env)
        start.record()
        for inp, out in pairs:
            _one(cfg.op, inp, out, env.world, scratch)
            if cfg.sync_per_chunk:
                torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    for inp, out in pairs:
        _one(cfg.op, inp, out, env.world, scratch)
    return time.perf_counter() - t0


def _check(cfg: BenchConfig, env: Env, x: torch.Tensor, y: torch.Tensor | None) -> bool:
    """One verified transfer: every rank contributes rank+1, so a sum is n(n+1)/2."""
    if cfg.op not in ("all_reduce", "broadcast"):
        return True
    x.fill_(env.rank + 1)
    _one(cfg.op, x, y, env.world, {})
    expected = env.world * (env.world + 1) / 2 if cfg.op == "all_reduce" else 1.0
    ok = True
    step = 1 << 24  # compare in pieces: no full-size temporary
    for i in range(0, x.numel(), step):
        if not torch.all(x[i:i + step] == expected):
            ok = False
            break
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=x.device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _gather_times(mine: list[float], env: Env) -> list[list[float]]:
    """Every rank's timings, on every rank (a plain tensor all_gather: no pickling)."""
    local = torch.tensor(mine, dtype=torch.float64, device=env.device)
    out = torch.empty(env.world * len(mine), dtype=torch.float64, device=env.device)
    _all_gather(out, local)
    return out.view(env.world, len(mine)).tolist()


def _leave_early(cfg: BenchConfig, env: Env) -> None:
    """Testing aid: the rank ``--exit-early-rank`` names leaves before the measured collectives. It first joins one
    barrier, so that every rank's set-up is over (gloo's constructor connects the full mesh, and a peer gone in the
    middle of it fails the survivor's init_process_group, not a collective): the survivor's next collective is the one
    that meets the lost peer."""
    if cfg.exit_early_rank is not None and env.rank == cfg.exit_early_rank:
        dist.barrier()
        os._exit(0)


def run(cfg: BenchConfig, env: Env, progress: Progress = quiet) -> dict[str, Any]:
    """Measure every mode; return (on every rank) the per-mode results and memory figures."""
    _leave_early(cfg, env)
    free_before = torch.cuda.mem_get_info()[0] if env.backend == "nccl" else None
    if env.backend == "nccl":
        torch.cuda.reset_peak_memory_stats()
    x, y = _buffers(cfg, env)
    scratch: dict[int, torch.Tensor] = {}
    results: list[ModeResult] = []
    min_free = free_before
    modes = (None, *cfg.chunks)
    for i, chunk in enumerate(modes, 1):
        pairs = _views(x, y, chunk)
        what = "unchunked" if chunk is None else f"chunks of {chunk:,} elements"
        mine: list[float] = []
        for k in range(cfg.warmup + cfg.iters):
            t = _transfer(cfg, env, pairs, scratch)
            if k >= cfg.warmup:
                mine.append(t)
            progress(f"mode {i} of {len(modes)} ({what}): transfer {k + 1} of {cfg.warmup + cfg.iters}", False)
        if env.backend == "nccl":
            min_free = min(min_free or 0, torch.cuda.mem_get_info()[0]) if min_free is not None else None
        gathered = _gather_times(mine, env)
        results.append(summarise(cfg.op, cfg.nbytes, env.world, chunk, len(pairs), gathered,
                                 results[0].median_s if results else None))
        progress(f"mode {i} of {len(modes)} ({what}) measured, median {fmt.duration(results[-1].median_s)}", True)
    checked = _check(cfg, env, x, y) if cfg.check else None
    memory = {
        "torch_peak_allocated_bytes": torch.cuda.max_memory_allocated() if env.backend == "nccl" else None,
        "device_free_drop_bytes": (free_before - min_free) if free_before is not None and min_free is not None
        else None,
    }
    return {"results": results, "check": checked, "memory": memory}


# How a sweep size was timed (the "timed" column, the JSON's "timing").
GRAPH, QUEUED, HOST = "graph", "queued", "host clock"


def _host_block(launch) -> float:
    """Seconds for one block of back-to-back collectives on CPU (gloo): barrier, host clock around them."""
    dist.barrier()
    t0 = time.perf_counter()
    launch()
    return time.perf_counter() - t0


class _Queue:
    """GPU timing that leaves the host out: the block is queued behind a spin kernel, then timed by CUDA events.

    PyTorch spends tens of microseconds of host time per ``dist.all_reduce``, about what NCCL needs for a few MiB, so
    a host clock around a loop of calls (or events recorded while the GPU waits for the next launch) times the
    launches.  Here the GPU first spins while the host enqueues everything; a one-element all_reduce then lines the
    ranks up on the GPU; the events around the block see only collectives running back to back.  If the spin ended
    before the host had queued the block, the block is timed again behind a spin twice as long.
    """

    def __init__(self, device: str) -> None:
        self.tick = torch.zeros(1, device=device)
        self.agreed = torch.zeros(1, dtype=torch.int32, device=device)
        self.per_s = self._rate()

    @staticmethod
    def _rate(cycles: int = 2_000_000) -> float:
        """Spin cycles per second on this GPU: the fastest of three, after a spin that lets the clock rise (an idle
        GPU runs several times slower, and a rate read then would make every spin too short)."""
        torch.cuda._sleep(cycles * 10)
        rates = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            rates.append(cycles / (start.elapsed_time(end) / 1e3))
        return max(rates)

    def block(self, launch, calls: int) -> float:
        """Seconds for one block of ``calls`` collectives started by ``launch``, timed on the GPU.

        Whether the host queued the block in time is agreed by all ranks (a one-element all_reduce): a rank that
        timed the block again on its own would run collectives its peers never call.
        """
        spin_s = 2e-3 + calls * 100e-6  # far more than PyTorch's host time per call
        for _ in range(6):
            dist.barrier()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            spun = torch.cuda.Event()
            torch.cuda._sleep(int(spin_s * self.per_s))
            spun.record()
            dist.all_reduce(self.tick)
            start.record()
            launch()
            end.record()
            ahead = not spun.query()  # the GPU was still spinning when the host had queued the whole block
            end.synchronize()
            self.agreed.fill_(1 if ahead else 0)
            dist.all_reduce(self.agreed, op=dist.ReduceOp.MIN)
            if self.agreed.item():
                return start.elapsed_time(end) / 1e3
            spin_s *= 2
        raise BenchError("the host could not queue the timed collectives ahead of the GPU; run again with fewer "
                         "--iters")


def _sweep_size(cfg: BenchConfig, env: Env, buf: torch.Tensor, nbytes: int, repeats: int,
                queue: _Queue | None) -> tuple[float, str]:
    """This rank's time per all_reduce at one size (median of ``repeats`` blocks of ``--iters``), and how it was timed.

    Each iteration uses the next slice of the whole buffer (nccl-tests shifts its offsets the same way), so small
    sizes are not served from a warm cache.
    """
    count = nbytes // cfg.itemsize
    steps = max(1, buf.numel() // count)
    views = [buf.narrow(0, (i % steps) * count, count) for i in range(cfg.iters)]
    for v in views[: max(1, cfg.warmup)]:
        dist.all_reduce(v)
    _sync(env)

    def eager() -> None:
        for v in views:
            dist.all_reduce(v)

    if queue is None:
        times = [_host_block(eager) for _ in range(repeats)]
        return statistics.median(times) / cfg.iters, HOST
    if cfg.graph == "off":
        times = [queue.block(eager, cfg.iters) for _ in range(repeats)]
        return statistics.median(times) / cfg.iters, QUEUED
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            eager()
    except RuntimeError as exc:
        raise BenchError(f"CUDA-graph capture of all_reduce failed ({str(exc).strip().splitlines()[0][:200]}); "
                         "run again with --graph off") from None
    graph.replay()  # one untimed replay: the first launch uploads the graph
    _sync(env)
    times = [queue.block(graph.replay, cfg.iters) for _ in range(repeats)]
    del graph
    return statistics.median(times) / cfg.iters, GRAPH


def _check_slice(env: Env, x: torch.Tensor) -> bool:
    """One verified all_reduce of this slice: every rank contributes rank+1; all ranks agree on the verdict."""
    x.fill_(env.rank + 1)
    dist.all_reduce(x)
    ok = bool(torch.all(x == env.world * (env.world + 1) / 2))
    x.zero_()
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=x.device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


SWEEP_REPEATS = 3


def run_sweep(cfg: BenchConfig, env: Env, progress: Progress = quiet) -> dict[str, Any]:
    """One all_reduce measurement per size of ``--sweep``; every rank returns the same points."""
    _leave_early(cfg, env)
    if cfg.sweep is None:
        raise BenchError("no --sweep given")
    if cfg.graph == "on" and env.backend != "nccl":
        raise BenchError("--graph on needs CUDA GPUs (the nccl backend); on CPU leave it out")
    sizes = sweep_sizes(*cfg.sweep, cfg.itemsize)
    _fits(sizes[-1], env)
    # zeros stay zeros however often they are summed: no overflow to inf over thousands of iterations
    buf = torch.zeros(sizes[-1] // cfg.itemsize, dtype=_DTYPES[cfg.dtype], device=env.device)
    mine: list[float] = []
    methods: list[str] = []
    checks: list[bool | None] = []
    queue = _Queue(env.device) if env.backend == "nccl" else None
    for i, nbytes in enumerate(sizes, 1):
        t, how = _sweep_size(cfg, env, buf, nbytes, SWEEP_REPEATS, queue)
        progress(f"size {i} of {len(sizes)} ({fmt.size(nbytes)}) measured", True)
        mine.append(t)
        methods.append(how)
        checks.append(_check_slice(env, buf.narrow(0, 0, nbytes // cfg.itemsize)) if cfg.check else None)
    gathered = _gather_times(mine, env)
    points = [sweep_point(nbytes, nbytes // cfg.itemsize, env.world, [row[i] for row in gathered], methods[i],
                          checks[i]) for i, nbytes in enumerate(sizes)]
    return {"points": points}


def environment(env: Env) -> dict[str, Any]:
    """Versions and devices, for the JSON."""
    nccl = None
    if env.backend == "nccl":
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    device = torch.cuda.get_device_name(env.local_rank) if env.backend == "nccl" else "cpu"
    return {"torch": torch.__version__, "nccl": nccl, "backend": env.backend, "world_size": env.world,
            "device": device, "hostname": socket.gethostname(), "launched_by_torchrun": env.launched}


def teardown() -> None:
    """Leave the process group cleanly."""
    if dist.is_initialized():
        dist.destroy_process_group()
