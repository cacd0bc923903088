"""Members of one group stuck at different sequence numbers, the earlier in a call the others finished with
(job/passed.py): a mismatch of the ranks' calls, decided whatever a member without input did.

ProcessGroupNCCL numbers each group's collectives in issue order and runs them in that order on the group's stream;
its watchdog walks the group's works in issue order and reports the first that timed out, so a member's timeout names
its oldest unfinished work (ProcessGroupNCCL.cpp: seqCollective_, the watchdog's walk of workMetaList_). A member
whose timeout names #b >= #a + 2 completed #a and the work after it; an all-reduce (all-gather, reduce-scatter,
all-to-all, barrier) completes on a member only with every member's data, so a member still in #a made a call the
others finished with: the ranks issued different collectives. The lines are written from the watchdog's format
string (``WorkNCCL(SeqNum=N, OpType=OP, NumelIn=..., NumelOut=..., Timeout(ms)=T)``) in the three heads releases
print it under.
"""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text


def _old(rank: int, seq: int, op: str, numel: int, pg: int = 0) -> str:
    """PyTorch 1.x-2.1: no rank prefix, [Rank N] the rank in the (default) group."""
    return (f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=1800000) ran for "
            f"180032{rank} milliseconds before timing out.\n")


def _tagged(rank: int, seq: int, op: str, numel: int, pg: int = 0) -> str:
    """PyTorch 2.2-2.3: the same line behind torchrun's [rankN]: tag, still no group named."""
    return (f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for "
            f"60001{rank} milliseconds before timing out.\n")


def _new(rank: int, seq: int, op: str, numel: int, pg: int = 0) -> str:
    """PyTorch 2.4 on: the group named in [PG ID .. PG GUID ..(desc) Rank N]."""
    desc = "default_pg" if pg == 0 else "undefined"
    return (f"[rank{rank}]:[E1128 10:00:0{rank}.000000000 ProcessGroupNCCL.cpp:632] [PG ID {pg} PG GUID {pg}({desc}) "
            f"Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 60001{rank} milliseconds before timing "
            "out.\n")


def _job(line, behind: int, ahead: int, op_a: str = "ALLREDUCE", op_b: str = "ALLREDUCE", size_b: int = 2560,
         ranks: tuple[int, ...] = (0, 1, 2, 4, 5)) -> str:
    """Rank 0 still in #behind (545 M elements); the other ranks past it, in #ahead; rank 3 leaves no line."""
    return "".join(line(0, behind, op_a, 544997376) if r == 0 else line(r, ahead, op_b, size_b) for r in ranks)


@pytest.mark.parametrize("line", [_old, _tagged, _new])
def test_a_member_still_in_a_call_the_others_finished_with_is_a_mismatch(line):
    """Rank 0 timed out in ALLREDUCE #959 of 544,997,376 elements; ranks 1, 2, 4, 5 completed #959-962 and wait in
    #963 of 2,560: their smaller all-reduces completed against rank 0's larger one. A mismatch, the sizes
    calls_disagree, no side named, whatever rank 3 (no input) did."""
    v = run_text(_job(line, 959, 963)).verdict
    assert (v.kind.value, v.culprit_ranks) == ("collective_mismatch", ())
    assert v.cause is not None and v.cause.cause.kind == "calls_disagree"
    assert v.cause.ranks == (0, 1, 2, 4, 5)
    assert "#959" in v.summary and "#963" in v.summary and "#959-962" in v.summary
    assert "544,997,376" in v.cause.detail and "2,560" in v.cause.detail
    assert "Make every rank issue the same collectives" in " ".join(v.next_steps)


def test_another_op_past_it_is_a_mismatch_without_the_size_cause():
    """The others wait in an ALLGATHER: still a mismatch (they finished rank 0's all-reduce number), but not one op
    of two sizes: no cause."""
    v = run_text(_job(_new, 959, 963, op_b="_ALLGATHER_BASE")).verdict
    assert (v.kind.value, v.culprit_ranks, v.cause) == ("collective_mismatch", (), None)


@pytest.mark.parametrize("line", [_old, _new])
def test_one_number_apart_is_not_read(line):
    """The others one number past it (#960): rank 0 may have lost the last chunk of #959 after the others had sent
    theirs (its stream then blocks their #960): the numbers alone do not say the calls differed."""
    v = run_text(_job(line, 959, 960)).verdict
    assert v.kind.value != "collective_mismatch"


@pytest.mark.parametrize("line", [_old, _new])
def test_the_same_op_and_size_behind_is_not_read(line):
    """Rank 0 behind in the same op and size as the others' (numbers that releases counting sends and receives too
    may shift): not read as a mismatch."""
    v = run_text(_job(line, 959, 963, size_b=544997376)).verdict
    assert v.kind.value != "collective_mismatch"


def test_a_broadcast_behind_is_not_read():
    """A broadcast's root completes without every member's data: the others passing its number proves nothing."""
    v = run_text(_job(_new, 959, 963, op_a="BROADCAST")).verdict
    assert v.kind.value != "collective_mismatch"


def test_two_groups_are_not_compared():
    """Rank 0 in PG 1's #959, the others in PG 0's #963: two groups' numbers are two counts."""
    text = _new(0, 959, "ALLREDUCE", 544997376, pg=1) + "".join(_new(r, 963, "ALLREDUCE", 2560) for r in (1, 2, 4, 5))
    v = run_text(text).verdict
    assert v.kind.value != "collective_mismatch"


def test_a_member_timed_out_at_two_numbers_is_two_runs_not_compared(tmp_path):
    """Two recordings read together: in one, rank 0 alone timed out at #959; in the other every rank, rank 0 too,
    at #963. A process's watchdog times out once per group and run (job/runs.py), so rank 0's #959 is not of the
    others' run and says nothing about their calls; read alone, the first recording is the mismatch."""
    (tmp_path / "first.log").write_text(_new(0, 959, "ALLREDUCE", 544997376))
    (tmp_path / "second.log").write_text(_job(_new, 963, 963, size_b=2560).replace("544997376", "2560"))
    assert run(tmp_path).verdict.kind.value != "collective_mismatch"
    (tmp_path / "second.log").write_text(_job(_new, 959, 963).split("\n", 1)[1])
    assert run(tmp_path).verdict.kind.value == "collective_mismatch"


def test_separate_recordings_read_together_are_not_one_run():
    """tests/data/gpu/nccl232 read whole: rank 0 timed out at #4 in hang/ (rank 1 slept) and both ranks at #6 in
    diag_env_proto/; compared across those runs rank 0 would look stuck in a call rank 1 finished with. Each run's
    members alone are compared, so the verdict stays the set-up failure ifname/ records (NCCL_SOCKET_IFNAME=bogus0),
    as each recording alone reads."""
    v = run(DATA / "gpu" / "nccl232").verdict
    assert v.kind.value == "setup_failure"
    assert v.cause is not None and v.cause.cause.kind == "no_socket_interface"
