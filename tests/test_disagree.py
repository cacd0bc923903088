"""Members whose own records of one call differ (job/disagree.py): calls_disagree from the watchdog's lines.

ProcessGroupNCCL numbers each group's collectives in issue order, one count per group on every member, and its
watchdog prints the timed-out work as ``WorkNCCL(SeqNum=N, OpType=OP, NumelIn=..., NumelOut=..., Timeout(ms)=T)``
(ProcessGroupNCCL.cpp's WorkNCCL printer; the line's head as 1.x-2.1 and 2.2 on print it). Two members whose work
at one number is one op of different sizes made one call with different data: the catalogue's calls_disagree, with
or without a majority; another op there is most often another place in the program (no cause from it).
"""

from __future__ import annotations

import pytest
from conftest import run_text


def _old(rank: int, seq: int, op: str, numel: int) -> str:
    """PyTorch 1.x-2.1's watchdog line (no [PG ...] prefix; [Rank N] the rank in the group)."""
    return (f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=1800000) ran for "
            f"180032{rank} milliseconds before timing out.\n")


def _new(rank: int, seq: int, op: str, numel: int) -> str:
    """PyTorch 2.4 on: the line under a [rankN]: prefix, its group named in [PG ID .. PG GUID ..(desc) Rank N]."""
    return (f"[rank{rank}]:[E1128 10:00:0{rank}.000000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) "
            f"Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 60001{rank} milliseconds before timing "
            "out.\n")


@pytest.mark.parametrize("line", [_old, _new])
def test_two_sizes_at_one_number_with_no_majority_are_calls_disagree(line):
    """Two ranks of four print one BROADCAST number with different sizes: the ranks disagree (no side named), and
    the cause is calls_disagree; its steps are the calls' own, not "align the NCCL settings" (no NCCL setting changes
    the size PyTorch records)."""
    v = run_text(line(2, 7219, "BROADCAST", 24084544) + line(3, 7219, "BROADCAST", 64)).verdict
    assert v.kind.value == "collective_mismatch" and v.culprit_ranks == ()
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"
    assert v.cause.ranks == (2, 3)
    assert "#7219" in v.cause.detail and "24,084,544" in v.cause.detail and "NumelIn=64" in v.cause.detail
    steps = " ".join(v.next_steps)
    assert "NCCL_PROTO" not in steps and steps.count("TORCH_DISTRIBUTED_DEBUG=DETAIL") == 1
    assert "Make every rank issue the same collectives" in steps


def test_a_majority_names_the_odd_rank_beside_the_cause():
    """Three ranks broadcast 64 elements at #12 and one 4,096: rank 1 differs from the majority; the cause stands."""
    text = "".join(_new(r, 12, "BROADCAST", 4096 if r == 1 else 64) for r in range(4))
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", (1,))
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"


def test_another_op_at_one_number_sets_no_cause():
    """One rank's #5 is an ALLGATHER where the other's is an ALLREDUCE: a mismatch, but most often a rank one
    iteration ahead or behind (its next call is another op), not one call with different sizes: no cause."""
    v = run_text(_old(0, 5, "ALLREDUCE", 1024) + _old(1, 5, "_ALLGATHER_BASE", 1024)).verdict
    assert (v.kind.value, v.cause) == ("collective_mismatch", None)


def test_a_barriers_one_element_allreduce_against_a_larger_one_sets_no_cause():
    """ProcessGroupNCCL's barrier() is an all_reduce of one element (recorded: tests/data/gpu/mechanisms/nccl_uneven,
    rank 1's barrier against rank 0's 7th gradient all_reduce): the pair may be two places in the program."""
    v = run_text(_new(0, 7, "ALLREDUCE", 1048576) + _new(1, 7, "ALLREDUCE", 1)).verdict
    assert (v.kind.value, v.cause) == ("collective_mismatch", None)


def test_lines_without_a_number_set_no_cause():
    """Old lines without SeqNum show where each rank is blocked, not one position: one rank may have run fewer
    calls than the other, so no cause is read from them."""
    text = ("[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType="
            "BROADCAST, Timeout(ms)=60000) ran for 66853 milliseconds before timing out.\n"
            "[E ProcessGroupNCCL.cpp:566] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType="
            "ALLREDUCE, Timeout(ms)=60000) ran for 66854 milliseconds before timing out.\n")
    v = run_text(text).verdict
    assert (v.kind.value, v.cause) == ("collective_mismatch", None)


def test_the_same_call_on_every_rank_is_no_disagreement():
    """Every rank printing the same op and size at one number agree: nothing disagrees."""
    v = run_text("".join(_new(r, 9, "ALLREDUCE", 64) for r in range(4))).verdict
    assert v.kind.value != "collective_mismatch" and v.cause is None
