"""c10d's store-based barrier (job/storebarrier.py): ranks that wait for processes that never reached a group's creation.

The lines are written from torch/distributed/distributed_c10d.py's _store_based_barrier in each release's format
strings (1.8-1.13: worker_count; 2.x: num_workers_joined, some releases with `)error: E`; later 2.x: `for S
secondsrank:` at DEBUG), and recorded with tools/launchers/store_barrier.sh (torch 2.13)."""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text, thread_log

from ncclcheck.evidence.formats import pgstart
from ncclcheck.evidence.types import Loc
from ncclcheck.job.model import VerdictKind

RECORDED = DATA / "launchers" / "torchrun" / "store_barrier_console" / "console.log"
KEY = "store_based_barrier_key:1"


def _wait(rank: int, form: str, world: int = 4, joined: int = 3) -> str:
    """One release's wait line for ``rank`` (the module's docstring)."""
    return {
        "1.x": f"INFO:root:Waiting in store based barrier to initialize process group for rank: {rank}, key: {KEY} "
               f"(world_size={world}, worker_count={joined}, timeout=0:30:00)",
        "2.x": f"INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group "
               f"for rank: {rank}, key: {KEY} (world_size={world}, num_workers_joined={joined}, timeout=0:30:00)",
        "2.x-error": f"INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group "
               f"for rank: {rank}, key: {KEY} (world_size={world}, num_workers_joined={joined}, timeout=0:30:00)"
               f"error: Socket Timeout",
        "2.x-debug": f"[rank{rank}]:V1128 13:25:08.498000 12595 torch/distributed/distributed_c10d.py:1068] Waiting in store "
               f"based barrier to initialize process group for 10.01 secondsrank: {rank}, key: {KEY} "
               f"(world_size={world}, num_workers_joined={joined}, timeout=0:30:00 error=wait timeout after 10003ms, "
               f"keys: /default_pg/0//{KEY}:last_worker)",
    }[form]


def _timeout(rank: int, form: str, world: int = 4, joined: int = 3) -> str:
    """One release's timeout: RuntimeError with `on rank: R` (1.x), DistStoreError with `on rank R` (2.0 on)."""
    if form == "1.x":
        return (f"RuntimeError: Timed out initializing process group in store based barrier on rank: {rank}, for key: "
                f"{KEY} (world_size={world}, worker_count={joined}, timeout=0:30:00)")
    return (f"torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank "
            f"{rank}, for key: {KEY} (world_size={world}, num_workers_joined={joined}, timeout=0:30:00)")


@pytest.mark.parametrize("form", ["1.x", "2.x", "2.x-error", "2.x-debug"])
def test_every_releases_wait_and_timeout_is_read_as_the_rank_the_world_and_the_count(form):
    lines = [_wait(2, form)] + ([_timeout(2, form)] if form != "2.x-error" else [])
    for line in lines:
        facts = list(pgstart.Lines().feed(line, Loc("x", 1)))
        assert [(f.key, f.value) for f in facts] == [(pgstart.BARRIER_FACT, f"2 4 3 {KEY}")], line


@pytest.mark.parametrize("form", ["1.x", "2.x", "2.x-debug"])
def test_waits_of_fewer_ranks_than_joined_name_the_waiters_and_leave_the_rest_unknown(form):
    v = run_text(f"{_wait(0, form)}\n{_wait(1, form)}\n").verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.INCOMPLETE, "store_barrier_wait")
    assert (v.culprit_ranks, v.waiting_ranks) == ((), (0, 1))
    assert "1 process never reached it, and the lines do not say which" in v.summary
    assert any("py-spy dump" in f for f in v.cause.fix)


@pytest.mark.parametrize("form", ["1.x", "2.x"])
def test_the_timeout_of_every_rank_that_joined_names_the_one_that_never_did(form):
    text = "".join(f"{_wait(r, form)}\n{_timeout(r, form)}\n" for r in (0, 1, 3))
    v = run_text(text).verdict
    assert (v.kind, v.cause.cause.kind) == (VerdictKind.LAGGING_RANK, "store_barrier_wait")
    assert (v.culprit_ranks, v.waiting_ranks) == ((2,), (0, 1, 3))
    assert "rank 2 never reached it" in v.summary


def test_a_barrier_that_completed_is_no_failure():
    done = f"INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:{KEY} with 4 nodes."
    v = run_text(f"{_wait(0, '2.x')}\n{done}\nepoch 0 loss 2.3\n").verdict
    assert v.kind is VerdictKind.NO_FAILURE


def test_the_recorded_run_names_the_rank_held_before_new_group():
    """tools/launchers/store_barrier.sh: rank 2 sleeps before new_group; ranks 0-1 wait in the barrier and time out."""
    v = run(RECORDED).verdict
    assert (v.kind, v.cause.cause.kind, v.culprit_ranks, v.waiting_ranks) == (
        VerdictKind.LAGGING_RANK, "store_barrier_wait", (2,), (0, 1))


def test_the_public_thread_says_one_of_eight_never_arrived():
    """210: ranks 2 and 7 of 8 wait, worker_count=7: one process never reached the group; which, no line says."""
    v = run(thread_log("210")).verdict
    assert (v.kind, v.cause.cause.kind, v.culprit_ranks, v.waiting_ranks) == (
        VerdictKind.INCOMPLETE, "store_barrier_wait", (), (2, 7))
