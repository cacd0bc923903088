"""Write realistic multi-rank incident logs: the bundled example and the benchmark corpus.

Each rank's log looks like torchrun + torch 2.5 with NCCL_DEBUG=INFO: NCCL init chatter,
per-collective NCCL INFO lines (NCCL_DEBUG_SUBSYS=COLL), training progress, then the
watchdog timeout on every rank except the straggler, which is stuck writing a checkpoint.

A second corpus, ``chatty``, is the shape of a job whose log is mostly NCCL INFO chatter with frequent
c10 warnings: 55% channel lines, 25% communicator-init lines, 17% training progress, 3% ``[W…] Warning:``
lines, then the watchdog timeout on every rank but one.  Its warnings put an anchor byte (``W``) on
every 33rd line, which is what makes it hard for the reader.

Usage:
  python tools/synth.py example DIR             # 8 ranks, small, for `make demo`
  python tools/synth.py corpus DIR --mib 1024   # many ranks, ~1 GiB, for `make bench`
  python tools/synth.py chatty DIR --mib 512    # NCCL INFO chatter and glog warnings, for `make bench`
"""

from __future__ import annotations

import argparse
import os
import random
from collections.abc import Iterator

SEQ = 2841
NUMEL = 467019003


def _init(rank: int, world: int, host: str, pid: int) -> Iterator[str]:
    p = f"{host}:{pid}:{pid}"
    dev = rank % 8
    yield f"[rank{rank}]:[I1121 22:14:03.512884211 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] ProcessGroupNCCL initialization options: size: {world}, global rank: {rank}, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0"
    yield f"[rank{rank}]:[I1121 22:14:03.512901119 ProcessGroupNCCL.cpp:914] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 0, TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC: 60000, TORCH_NCCL_DESYNC_DEBUG: 0, TORCH_NCCL_ENABLE_TIMING: 0, TORCH_NCCL_BLOCKING_WAIT: 0, TORCH_DISTRIBUTED_DEBUG: OFF, TORCH_NCCL_ENABLE_MONITORING: 1, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: 480, TORCH_NCCL_TRACE_BUFFER_SIZE: 0"
    yield f"{p} [{dev}] NCCL INFO Bootstrap : Using eth0:10.1.{rank // 8}.{10 + rank % 8}<0>"
    yield f"{p} [{dev}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)"
    yield f"{p} [{dev}] NCCL INFO cudaDriverVersion 12040"
    yield f"{p} [{dev}] NCCL INFO NCCL version 2.21.5+cuda12.4"
    yield f"{p} [{dev}] NCCL INFO NET/IB : No device found."
    yield f"{p} [{dev}] NCCL INFO NET/Socket : Using [0]eth0:10.1.{rank // 8}.{10 + rank % 8}<0>"
    yield f"{p} [{dev}] NCCL INFO Using non-device net plugin version 0"
    yield f"{p} [{dev}] NCCL INFO Using network Socket"
    yield f"{p} [{dev}] NCCL INFO ncclCommInitRank comm 0x55d1c3a0e2b0 rank {rank} nranks {world} cudaDev {dev} nvmlDev {dev} busId {dev + 1}8000 commId 0x9f1b8d2c6e2a11ef - Init START"
    yield f"{p} [{dev}] NCCL INFO Setting affinity for GPU {dev} to ffffffff,00000000,ffffffff"
    yield f"{p} [{dev}] NCCL INFO comm 0x55d1c3a0e2b0 rank {rank} nRanks {world} nNodes {max(1, world // 8)} localRanks 8 localRank {dev} MNNVL 0"
    for ch in range(16):
        yield f"{p} [{dev}] NCCL INFO Channel {ch:02d}/0 : {rank}[{dev}] -> {(rank + 1) % world}[{(dev + 1) % 8}] via P2P/CUMEM/read"
    yield f"{p} [{dev}] NCCL INFO Connected all rings"
    yield f"{p} [{dev}] NCCL INFO Connected all trees"
    yield f"{p} [{dev}] NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512 | 512"
    yield f"{p} [{dev}] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 16 p2p channels per peer"
    yield f"{p} [{dev}] NCCL INFO ncclCommInitRank comm 0x55d1c3a0e2b0 rank {rank} nranks {world} cudaDev {dev} nvmlDev {dev} busId {dev + 1}8000 commId 0x9f1b8d2c6e2a11ef - Init COMPLETE"


def _noise(rank: int, world: int, host: str, pid: int, rng: random.Random, n: int) -> Iterator[str]:
    p = f"{host}:{pid}:{pid}"
    dev = rank % 8
    for i in range(n):
        r = rng.random()
        if r < 0.80:
            yield (f"{p} [{dev}] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f3a{rng.getrandbits(24):06x}00 "
                   f"recvbuff 0x7f3a{rng.getrandbits(24):06x}00 count {rng.choice((1, 4096, 25165824, NUMEL))} "
                   f"datatype 7 op 0 root 0 comm 0x55d1c3a0e2b0 [nranks={world}] stream 0x55d1c2f1a7c0")
        elif r < 0.95:
            yield (f"{p} [{dev}] NCCL INFO Channel {i % 16:02d}/1 : {rank}[{dev}] -> {(rank + 1) % world}[{(dev + 1) % 8}]"
                   " via P2P/CUMEM/read")
        elif r < 0.99:
            step = i // 50
            yield f"[default{dev}]:{{'loss': {2.5 - step * 1e-4:.4f}, 'grad_norm': {rng.random():.3f}, 'learning_rate': 1e-05, 'epoch': {step / 1e4:.4f}}}"
        else:
            yield f"[default{dev}]: 42%|████▏     | {i // 50}/9000 [1:02:11<1:25:43,  1.34s/it]"


def _timeout(rank: int) -> Iterator[str]:
    ts = f"1122 00:31:{17 + rank % 3:02d}.{418552033 + rank * 7919}"
    yield (f"[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
           f"WorkNCCL(SeqNum={SEQ}, OpType=ALLREDUCE, NumelIn={NUMEL}, NumelOut={NUMEL}, Timeout(ms)=600000) "
           f"ran for {600000 + 31 + rank * 7} milliseconds before timing out.")
    yield (f"[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception "
           f"(either an error or timeout) detected by watchdog at work: {SEQ}, last enqueued NCCL work: {SEQ}, "
           f"last completed NCCL work: {SEQ - 1}.")
    yield (f"[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:630] [Rank {rank}] Some NCCL operations have failed or timed out. "
           "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
    yield (f"[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:636] [Rank {rank}] To avoid data inconsistency, we are taking "
           "the entire process down.")
    yield (f"[rank{rank}]:[E{ts} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group "
           f"watchdog thread terminated with exception: [Rank {rank}] Watchdog caught collective operation timeout: "
           f"WorkNCCL(SeqNum={SEQ}, OpType=ALLREDUCE, NumelIn={NUMEL}, NumelOut={NUMEL}, Timeout(ms)=600000) ran for "
           f"{600000 + 31 + rank * 7} milliseconds before timing out.")
    yield "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):"
    yield "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f61c2b6c446 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)"
    yield "terminate called after throwing an instance of 'c10::DistBackendError'"


def _straggler(rank: int) -> Iterator[str]:
    dev = rank % 8
    yield f"[default{dev}]:INFO:trainer:step 9000: saving checkpoint to /checkpoints/step-9000 (rank {rank} writes shard {rank})"
    yield f"[default{dev}]:INFO:trainer:rank {rank}: writing optimizer state, 14.2 GB"


def write_rank(path: str, rank: int, world: int, noise_lines: int, straggler: int, seed: int = 0) -> None:
    """Write one rank's log."""
    rng = random.Random(seed * 1000 + rank)
    host, pid = f"gpu-node-{rank // 8:02d}", 41000 + rank
    with open(path, "w", encoding="utf-8") as f:
        for block in (_init(rank, world, host, pid), _noise(rank, world, host, pid, rng, noise_lines),
                      _straggler(rank) if rank == straggler else _timeout(rank)):
            for line in block:
                f.write(line + "\n")


def _chatty_rank(rank: int, world: int, size: int, rng: random.Random) -> Iterator[str]:
    host, pid = f"node{rank // 8:03d}", 5200 + rank
    p = f"[rank{rank}]:{host}:{pid}:{pid + 77} [{rank % 8}]"
    written = 0
    while written < size:
        r = rng.random()
        if r < 0.55:
            line = f"{p} NCCL INFO Channel {rng.randrange(32):02d}/32 : {rank} -> {(rank + 1) % world} via P2P/IPC/read"
        elif r < 0.80:
            line = (f"{p} NCCL INFO comm 0x{rng.getrandbits(44):x} rank {rank} nranks {world} cudaDev {rank % 8} "
                    f"busId {rng.randrange(0x10, 0xff):x}000 - Init COMPLETE")
        elif r < 0.97:
            line = (f"step {rng.randrange(200000)} | loss {rng.random() * 4:.4f} | lr 2.0e-05 | "
                    f"grad_norm {rng.random() * 2:.3f} | tokens/s {rng.randrange(900, 95000)}")
        else:
            line = (f"[rank{rank}]:[W1122 03:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.getrandbits(29):09d} "
                    f"ProcessGroupNCCL.cpp:4712] Warning: an expected condition was seen on rank {rank}")
        written += len(line) + 1
        yield line
    if rank != 5:
        yield (f"[rank{rank}]:[E1122 04:10:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
               f"collective operation timeout: WorkNCCL(SeqNum={SEQ}, OpType=ALLREDUCE, NumelIn={NUMEL}, "
               f"NumelOut={NUMEL}, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.")
        yield (f"[rank{rank}]:[E1122 04:10:00.000000100 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) "
               f"Rank {rank}]  failure detected by watchdog at work sequence id: {SEQ} PG status: last enqueued "
               f"work: {SEQ}, last completed work: {SEQ - 1}")


def write_chatty(directory: str, mib: int, ranks: int) -> None:
    """Write the chatty corpus: one file per rank, rank 5 the one that never times out."""
    rng = random.Random(11)
    for r in range(ranks):
        with open(os.path.join(directory, f"rank{r}.log"), "w", encoding="utf-8") as f:
            for line in _chatty_rank(r, ranks, (mib << 20) // ranks, rng):
                f.write(line + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("example", "corpus", "chatty"))
    ap.add_argument("dir")
    ap.add_argument("--mib", type=int, default=1024, help="corpus size in MiB")
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    if args.kind == "example":
        for r in range(8):
            write_rank(os.path.join(args.dir, f"rank{r}.log"), r, 8, 120, straggler=5)
        return
    if args.kind == "chatty":
        write_chatty(args.dir, args.mib, args.ranks)
        return
    per_rank = (args.mib << 20) // args.ranks // 175  # ~175 bytes per noise line
    for r in range(args.ranks):
        write_rank(os.path.join(args.dir, f"rank{r}.log"), r, args.ranks, per_rank, straggler=args.ranks - 3, seed=1)


if __name__ == "__main__":
    main()
