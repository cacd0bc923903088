"""The watchdog's tear-down line alone (evidence/formats/errors.py reads it, job/stated.py words it): an NCCL failure,
never "nothing failed", and no culprit: a peer's failure ends every rank's collectives the same way."""

from __future__ import annotations

from conftest import DATA, run
from test_failures import run_text

from ncclcheck.evidence.formats import errors
from ncclcheck.evidence.types import Clue, Loc, Who

LINE = ("[rank1]:[E1122 05:12:52.547056800 ProcessGroupNCCL.cpp:750] [Rank 1] Some NCCL operations have failed or timed "
        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n"
        "[rank1]:[E1122 05:12:52.547083367 ProcessGroupNCCL.cpp:764] [Rank 1] To avoid data inconsistency, we are "
        "taking the entire process down.\n")  # as tests/data/real/uneven-info-desync/attempt_0/0/stderr.log:21-22 print it


def test_either_sentence_is_read_as_the_teardown():
    """A terminal or a collector may keep one of the two lines: each is the tear-down."""
    for text in ("Some NCCL operations have failed or timed out", "we are taking the entire process down"):
        line = f"[Rank 1] {text}. More words."
        assert errors.clues(Who(), line, Loc("x", 1), None) == [Clue(Who(), "teardown", text, Loc("x", 1))]


def test_a_ranks_teardown_alone_is_an_nccl_error_with_no_culprit():
    v = run_text(LINE).verdict
    assert (v.kind.value, v.culprit_ranks) == ("nccl_error", ())
    assert v.summary.startswith("NCCL failed, as PyTorch's watchdog states (rank 1):")
    assert v.cause is not None and v.cause.cause.kind == "nccl_no_reason"


def test_a_teardown_no_rank_names_is_still_a_failure():
    """Public thread 63 (nanoGPT#55) posted only these lines: a failure of a process no line names."""
    v = run(DATA / "public_threads" / "63-nanogpt-55-multinode-crash.log").verdict
    assert (v.kind.value, v.culprit_ranks) == ("nccl_error", ())
    assert v.summary.startswith("NCCL failed, as PyTorch's watchdog states:")


def test_beside_its_timeout_the_teardown_is_only_its_echo():
    """With the timeout it follows, the verdict is the timeout's: the tear-down adds no failure of its own."""
    timeout = ("[rank1]:[E1122 05:12:27.026812300 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
               "Timeout(ms)=10000) ran for 10025 milliseconds before timing out.\n")
    v = run_text(timeout + LINE).verdict
    assert v.kind.value != "nccl_error" and "Some NCCL operations" not in v.summary
