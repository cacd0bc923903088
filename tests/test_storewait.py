"""A store's wait that gave up after the job ran (job/storewait.py): ranks waited for a rank still at work, busy not
dead, never a store that could not be reached; at start-up the same line keeps its old reading."""

from __future__ import annotations

import pytest
from conftest import DATA, run, run_text

from ncclcheck.evidence.formats.busy import busy_phase
from ncclcheck.evidence.formats.pgwrapper import Lines as WrapperLines
from ncclcheck.evidence.types import Loc

STORE = DATA / "launchers" / "torchrun"
# TCPStore::doWait's words since 2.2 (torch/csrc/distributed/c10d/TCPStore.cpp) and 2.1's, each as a rank raises it
WAIT = "[rank1]: torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//eval_done\n"
OLD_WAIT = ("RuntimeError: Socket Timeout\n"
            "Exception raised from doWait at ../torch/csrc/distributed/c10d/TCPStore.cpp:445 (most recent call "
            "first):\n")


@pytest.mark.parametrize("case", ["busy_store_console", "busy_store_tee"])
def test_the_recorded_store_wait_names_the_evaluating_rank_busy_not_dead(case):
    """tools/launchers/busy_store.sh: rank 0 evaluates for 8 s while rank 1 waits 4 s in the store and gives up."""
    v = run(STORE / case / "console.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (0,), (1,))
    assert v.cause is not None and v.cause.cause.kind == "store_wait"
    assert v.action.reason == "busy_rank"
    assert "not a store that could not be reached" in v.summary
    assert "Rank 0 was busy, not dead" in v.summary and "epoch 1 valid, step" in v.summary
    assert "outlasted the 4 s timeout" in v.summary
    steps = " ".join(v.next_steps)
    assert "Evaluate on every rank" in steps and "keep the others in step" in steps
    assert "will not help" not in steps


def test_a_console_without_prefixes_says_why_the_unnamed_evaluation_is_rank_0s():
    v = run(STORE / "busy_store_console" / "console.log").verdict
    assert "names no rank, but rank 0 is the one rank that did not wait in the store" in v.summary


def test_the_named_busy_line_of_a_lightning_validation_bar_names_its_rank():
    text = ("[rank0]:Epoch 1:  100%|##########| 50/50 [00:20<00:00,  2.50it/s, loss=0.31]\n"
            "[rank1]:Epoch 1:  100%|##########| 50/50 [00:20<00:00,  2.50it/s, loss=0.29]\n"
            "[rank0]:Validation DataLoader 0:  40%|####      | 400/1000 [29:55<44:52,  0.22it/s]\n" + WAIT)
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (0,), (1,))
    assert "its last line is \"Validation DataLoader 0: 40%" in v.summary
    assert "30 min" in v.summary  # the wait's own timeout


def test_the_wait_before_any_progress_is_no_busy_rank():
    """At start-up the store's wait is a rank that never started or never got there: no one is named busy."""
    v = run_text(WAIT).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("incomplete_evidence", (), (1,))
    assert v.cause is not None and v.cause.cause.kind == "store_wait"
    assert "the store answered, so it was reachable" in v.summary and "busy, not dead" not in v.summary


def test_2_1s_socket_timeout_at_start_up_stays_a_store_that_could_not_be_reached():
    v = run_text(OLD_WAIT).verdict
    assert (v.kind.value, v.culprit_ranks) == ("launcher_failure", ())
    assert v.cause is not None and v.cause.cause.kind == "store_unreachable"


def test_2_1s_socket_timeout_after_a_ranks_collective_is_the_store_wait():
    """DETAIL's wrapper line of rank 0 after the evaluation (public thread 153's shape, written from
    ProcessGroupWrapper.cpp's format): rank 0 went on to its collective once its evaluation was done."""
    text = ("eval: 97/100 step, loss 0.41\n"
            "[I ProcessGroupWrapper.cpp:562] [Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=7, "
            "OpType=ALLREDUCE, TensorShape=[1], TensorDtypes=Float)\n" + OLD_WAIT)
    v = run_text(text).verdict
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (0,))
    assert v.cause is not None and v.cause.cause.kind == "store_wait"
    assert "going on to its next collective" in v.summary


def test_a_busy_line_of_the_waiting_rank_itself_names_no_culprit():
    text = "[rank1]:Evaluating:  40%|####      | 20/50 [00:10<00:15,  2.00it/s]\n" + WAIT
    v = run_text(text).verdict
    assert 1 not in v.culprit_ranks


@pytest.mark.parametrize(("line", "phase"), [
    ("ep 1 dev eval, step 97, min_wer -0.688, ce 0.859", "eval"),
    ("Testing DataLoader 0:  40%|████      | 4/10 [00:01<00:02,  3.00it/s]", "eval"),
    ("Sanity Checking DataLoader 0:  50%|█████     | 1/2 [00:00<00:00,  3.00it/s]", "eval"),
    ("Predicting DataLoader 0: 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]", "eval"),
    ("epoch 1 valid, step 4, acc 0.9", "eval"),
    ("model.eval()", None),  # the word alone is no phase: its progress marker must follow it
    ("eval_steps=500", None),
    ("test_allreduce.py::test_sum PASSED [ 40%]", None),
    ("[ RUN      ] DistTest.AllReduce", None),
    ("{'eval_loss': 0.3, 'eval_runtime': 12.1, 'epoch': 1.0}", None),  # the HF Trainer's metrics after it
])
def test_a_phase_word_then_its_place_in_that_phase_is_that_phases_work(line, phase):
    assert busy_phase(line) == phase


def test_the_wrapper_line_names_the_rank_the_op_and_the_sequence_number():
    (f,) = WrapperLines().feed("[Rank 3] Running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, "
                               "TensorShape=[1])", Loc("x", 1))
    assert (f.key, f.value) == ("wrapper_call", "3 BROADCAST 12")
    assert not list(WrapperLines().feed("Rank 3 is running collective: CollectiveFingerPrint(", Loc("x", 1)))
