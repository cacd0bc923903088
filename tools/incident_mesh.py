"""Provoke 3-D mesh (TP x PP x DP) and expert-parallel incidents on purpose, for golden test fixtures.

Run under torchrun:  MESH=2,2,2 torchrun --nproc-per-node 8 tools/incident_mesh.py SCENARIO

MESH is "tp,pp,dp" (their product is the world size); ranks are laid out tensor-parallel fastest, then
data-parallel, then pipeline stage: rank = stage * (dp * tp) + replica * tp + shard, as Megatron orders them.
Each rank creates its groups with ``split_group`` (the groups of one dimension share a PG ID and differ in GUID,
as a DeviceMesh makes them), each with an explicit ``timeout=``: ``new_group()`` without one waits ten minutes.
A training step: receive the activation from the previous stage, all_reduce it in tp, send it to the next stage,
all_reduce the gradients in dp.  The culprit rank is CULPRIT (default: the last rank of the first tp group).
BACKEND=gloo runs the same steps on CPU (every rank creates every group with ``new_group``): a dry run of the
scenarios' logic where no GPU is lent, not a source of fixtures.

Scenarios:
  tp_straggler  the culprit sleeps before its tp all_reduce at step 3: its tp peers wait in tp, every other rank of
                its stage in dp (for a tp peer of the culprit, itself stuck), the next stages in the pipeline recv.
  pp_skip_send  the culprit (stage 0) skips its send at step 3: its next stage takes step 4's activation for step
                3's, and its last recv never completes (one send fewer than receives); the rest waits in the
                final barrier.
  killed        the culprit is killed by SIGKILL in the middle of step 3 (no traceback).
  order_cycle   at step 3 every rank whose replica and shard numbers add up to an odd number issues dp before tp,
                the others tp before dp: in each stage a ring of four ranks across the two groups (1 -> 3 -> 2 ->
                0 -> 1 in stage 0), no single culprit.  With one replica the second group is a second tp-sized
                group over the same ranks, and the ring is the two ranks of a tp group.
  moe_split     an expert-parallel exchange (all_to_all_single over all ranks, uneven splits from a router); at
                step 3 the culprit sends one token more to its first peer than that peer expects.
  moe_skip      the culprit skips the expert exchange at step 3.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=int(os.environ.get("INCIDENT_TIMEOUT_S", "15")))
STEPS = 5
BACKEND = os.environ.get("BACKEND", "nccl")
DEVICE = "cpu" if BACKEND == "gloo" else "cuda"
BAD_STEP = 3
HIDDEN = 1024


def mesh() -> tuple[int, int, int]:
    tp, pp, dp = (int(x) for x in os.environ.get("MESH", "2,2,2").split(","))
    return tp, pp, dp


def coords(rank: int, tp: int, dp: int) -> tuple[int, int, int]:
    """(stage, replica, shard) of a rank."""
    stage, rest = divmod(rank, dp * tp)
    replica, shard = divmod(rest, tp)
    return stage, replica, shard


def groups(world: int, tp: int, pp: int, dp: int) -> dict[str, list[list[int]]]:
    ranks = range(world)
    by = {"tp": {}, "pp": {}, "dp": {}}
    for r in ranks:
        stage, replica, shard = coords(r, tp, dp)
        by["tp"].setdefault((stage, replica), []).append(r)
        by["dp"].setdefault((stage, shard), []).append(r)
        by["pp"].setdefault((replica, shard), []).append(r)
    return {k: list(v.values()) for k, v in by.items()}


def make_groups(rank: int, world: int, tp: int, pp: int, dp: int) -> dict[str, dist.ProcessGroup | None]:
    named = groups(world, tp, pp, dp)
    if dp == 1:  # a second group over the tp ranks, for the opposite-order cycle
        named["dp"] = named["tp"]
    out: dict[str, dist.ProcessGroup | None] = {}
    for name, splits in named.items():
        desc = "tp2" if dp == 1 and name == "dp" else name
        if BACKEND == "gloo":
            made = [dist.new_group(ranks, timeout=TIMEOUT, group_desc=desc) for ranks in splits]
            out[name] = next(g for g, ranks in zip(made, splits, strict=True) if rank in ranks)
        else:
            out[name] = dist.split_group(split_ranks=splits, timeout=TIMEOUT, group_desc=desc)
    return out


def train_step(scenario: str, rank: int, culprit: int, step: int, g: dict, tp: int, pp: int, dp: int) -> None:
    stage, replica, shard = coords(rank, tp, dp)
    stride = dp * tp
    reverse = scenario == "order_cycle" and step == BAD_STEP and (replica + shard) % 2 == 1
    act = torch.ones(4096, HIDDEN // 16, device=DEVICE)
    grad = torch.ones(1_048_576, device=DEVICE)
    bad = step == BAD_STEP and rank == culprit
    if stage > 0:
        dist.recv(act, src=rank - stride, group=g["pp"])
    if bad and scenario == "tp_straggler":
        time.sleep(TIMEOUT.total_seconds() * 4)
    if bad and scenario == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    if reverse:
        dist.all_reduce(grad, group=g["dp"])
        dist.all_reduce(act, group=g["tp"])
    else:
        dist.all_reduce(act, group=g["tp"])
    if stage < pp - 1 and not (bad and scenario == "pp_skip_send"):
        dist.send(act, dst=rank + stride, group=g["pp"])
    if not reverse:
        dist.all_reduce(grad, group=g["dp"])
    _sync()


def moe_step(scenario: str, rank: int, culprit: int, step: int, world: int) -> None:
    """Tokens routed to experts: rank r sends (r + peer) % 3 + 1 rows of HIDDEN to each peer, and expects
    what each peer computes for it by the same rule."""
    if step == BAD_STEP and rank == culprit and scenario == "moe_skip":
        return
    send = [((rank + p) % 3 + 1) * 64 for p in range(world)]
    recv = [((p + rank) % 3 + 1) * 64 for p in range(world)]
    if step == BAD_STEP and rank == culprit and scenario == "moe_split":
        send[(rank + 1) % world] += 1
    tokens = torch.ones(sum(send), HIDDEN, device=DEVICE)
    out = torch.empty(sum(recv), HIDDEN, device=DEVICE)
    dist.all_to_all_single(out, tokens, output_split_sizes=recv, input_split_sizes=send)
    _sync()


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def main(scenario: str) -> None:
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    if BACKEND == "gloo":
        dist.init_process_group("gloo", timeout=TIMEOUT)
    else:
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", timeout=TIMEOUT, device_id=torch.device("cuda", local))
    tp, pp, dp = mesh()
    assert tp * pp * dp == world, f"MESH={tp},{pp},{dp} does not make {world} ranks"
    culprit = int(os.environ.get("CULPRIT", str(tp - 1)))
    if scenario.startswith("moe"):
        for step in range(STEPS):
            moe_step(scenario, rank, culprit, step, world)
    else:
        g = make_groups(rank, world, tp, pp, dp)
        for step in range(STEPS):
            train_step(scenario, rank, culprit, step, g, tp, pp, dp)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
