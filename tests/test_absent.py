"""Timeouts whose culprit the inputs do not show (issue 41): a timeout stated in part, the one rank every waiter
waited for that left no input (unknown, not guilty), the work one rank does alone and a pipeline's exchange.

The lines are real: the public threads' posts (tests/data/public_threads/100, 105, 108, 109, 110) and the
watchdog's C++ frames as public logs of each release print them (ProcessGroupNCCL.cpp: WorkNCCL::checkTimeout under
workCleanupLoop in 2.1-2.2, watchdogHandler in 2.3-2.7, Watchdog::runLoop from 2.8).
"""

from __future__ import annotations

import pytest
from conftest import run, run_text, thread_log

from ncclcheck.evidence.formats.pgnccl import timeout_in_part
from ncclcheck.evidence.formats.pipeline import FORMAT as PIPELINE
from ncclcheck.evidence.types import Loc, Who
from ncclcheck.job.model import VerdictKind

_LIB = "(0x7f1d990756e6 in /usr/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so)"
_ERR = "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f1e10143d87 in libc10.so)"
_CHECK = ("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
          f"std::ratio<1l, 1000l> > >) + 0x1e6 {_LIB}")
# The frames under checkTimeout, by release.
FRAMES = {
    "2.1-2.2": [_ERR, _CHECK, f"frame #2: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x19d {_LIB}",
                f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x119 {_LIB}"],
    "2.3-2.7": [_ERR, _CHECK, f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 {_LIB}",
                f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c {_LIB}"],
    "2.8+": [_ERR, _CHECK, f"frame #2: c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0x14f1 {_LIB}",
             f"frame #3: c10d::ProcessGroupNCCL::Watchdog::run() + 0x157 {_LIB}"],
}


def test_a_watchdog_line_cut_after_its_opening_is_a_timeout():
    """108 posts one line, cut before the WorkNCCL: a collective timed out on rank 1, op and number unknown."""
    v = run(thread_log("108")).verdict
    assert v.kind is VerdictKind.INCOMPLETE and v.waiting_ranks == (1,)
    assert "an unnamed collective" in v.summary


@pytest.mark.parametrize("release", sorted(FRAMES))
def test_the_frames_of_the_timeout_path_are_a_timeout_in_every_release(release):
    """Only the C++ frames of the watchdog's timeout (the message line lost): a collective timed out, never
    no_failure; a rank tag names who."""
    text = "".join(f"[rank2]:{line}\n" for line in FRAMES[release])
    a = run_text(text)
    assert a.verdict.kind is not VerdictKind.NO_FAILURE
    two = a.job.rank(2)
    assert two is not None and two.stuck is not None and two.stuck.op is None and two.stuck.seq is None


def test_frames_of_105_are_a_timeout_with_the_work_one_rank_does_alone():
    """105 posts the 2.3-2.7 frames and "Exception raised from ncclCommWatchdog": a timeout; the next steps name the
    work one rank does alone (the thread: end-of-epoch tests on rank 0) and spreading it over every rank."""
    v = run(thread_log("105")).verdict
    assert v.kind is VerdictKind.INCOMPLETE
    steps = " ".join(v.next_steps)
    assert "tests or plots at the end of an epoch" in steps and "spread that work over every rank" in steps


def test_the_watchdog_loop_alone_is_no_timeout():
    """The watchdog's loop also rethrows a CUDA error (isCompleted, no checkTimeout): its frames are no timeout."""
    frame = ("frame #5: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x227 (0x7fff617dca07 in "
             "/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so)")
    assert timeout_in_part(Who(), frame.replace(" ", ""), Loc("x", 1), frame) is None
    frame = "frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7fff617db4b8 in libtorch_cuda.so)"
    assert timeout_in_part(Who(), frame.replace(" ", ""), Loc("x", 1), frame) is None


def test_a_full_timeout_with_its_frames_is_one_work():
    """The frames printed under a whole watchdog message restate its work: one record, with the op and number."""
    line = ("[rank0]:[E1127 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
            "600071 milliseconds before timing out.\n")
    a = run_text(line + "".join(f"[rank0]:{f}\n" for f in FRAMES["2.3-2.7"]))
    assert [(r.seq, r.op_type) for r in a.job.records] == [(5, "ALLREDUCE")]


def test_the_one_rank_waited_for_is_unknown_and_its_log_is_the_first_step():
    """109: ranks 1-3 timed out in one all-gather and rank 0 left no line: it is the one they waited for, unknown
    and not guilty; bring its log; the log shows an epoch's end just before the timeout."""
    v = run(thread_log("109")).verdict
    assert (v.kind, v.culprit_ranks, v.waiting_ranks, v.unknown_ranks) == (
        VerdictKind.INCOMPLETE, (), (1, 2, 3), (0,))
    assert "the one they waited for is rank 0" in v.summary
    assert v.next_steps[0].startswith("Bring rank 0's log")
    phase = next(s for s in v.next_steps if s.startswith("The log shows the phase"))
    assert "(16/16" in phase and f"{thread_log('109')}:1" in phase
    assert v.chain[-1] == "All 3 other ranks are only waiting."


def test_a_desync_report_that_names_the_absent_rank_makes_it_the_culprit():
    """The same timeouts with PyTorch's desync report (TraceUtils.h's retrieveDesyncReport) saying rank 0 finished
    #15036 and never joined #15037: a line says what it did, so it is the culprit."""
    timeouts = "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=15037, OpType=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeout(ms)=600000) "
        f"ran for 60005{r} milliseconds before timing out.\n" for r in (1, 2, 3))
    # as tests/data/real/mismatch-desync prints it: the report's lines after its first carry no rank prefix
    report = ("[rank1]:[E1122 05:11:44.936512405 ProcessGroupNCCL.cpp:2495] Rank 1\n"
              "\t - [1] Timeout at collective: _ALLGATHER_BASE, #15037\n"
              "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
              "\t   - [0] finished collective #15036, but didn't join collective #15037 (count from 1)\n")
    v = run_text(timeouts + report).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.LAGGING_RANK, (0,))


def test_ranks_waited_for_without_input_name_the_work_one_rank_does_alone():
    """110: one rank's 30-minute all-gather timeout, ranks 0-2 without input: the steps name the work one rank does
    alone (validation among it) and its two fixes."""
    steps = " ".join(run(thread_log("110")).verdict.next_steps)
    assert "evaluation or validation" in steps and "dist.new_group(timeout=...)" in steps


def test_a_coalesced_timeout_of_the_pipeline_group_is_the_stages_exchange():
    """100: COALESCED #16 with PIPELINE_MODEL_PARALLEL_GROUP on the next line: the pipeline's exchange, its size and
    the stages' send/recv order and shapes to check."""
    step = run(thread_log("100")).verdict.next_steps[0]
    assert step.startswith("COALESCED #16 is a batch of operations issued together, and its group is the "
                           "pipeline-parallel group (PIPELINE_MODEL_PARALLEL_GROUP")
    assert "pipeline-parallel size" in step and "same order" in step and "same shapes" in step


def test_the_pipeline_group_in_the_prefix_and_its_size():
    """Megatron's group description in ProcessGroupNCCL's prefix, and its arguments' size printed at start."""
    text = ("  pipeline_model_parallel_size .................. 16\n"
            "[rank1]:[E1127 10:02:11.417000000 ProcessGroupNCCL.cpp:632] [PG ID 3 PG GUID 12"
            "(PIPELINE_MODEL_PARALLEL_GROUP) Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=16, OpType=COALESCED, NumelIn=0, NumelOut=0, Timeout(ms)=600000) ran for 600022 "
            "milliseconds before timing out.\n")
    steps = run_text(text).verdict.next_steps
    assert any("(pipeline_model_parallel_size 16, " in s and "console.log:1)" in s for s in steps)


def test_a_coalesced_timeout_of_another_group_is_no_pipeline():
    """A COALESCED work of a group no line calls the pipeline's (FSDP's and DDP's coalesced collectives) gets no
    pipeline step."""
    text = ("[rank1]:[E1127 10:02:11.417000000 ProcessGroupNCCL.cpp:632] [PG ID 1 PG GUID 1(dp) Rank 1] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=16, OpType=COALESCED, NumelIn=0, NumelOut=0, "
            "Timeout(ms)=600000) ran for 600022 milliseconds before timing out.\n")
    assert not any("pipeline" in s for s in run_text(text).verdict.next_steps)


def test_the_pipeline_reader_reads_its_samples():
    """Each sample line reads as its source says (the formats' own samples)."""
    for sample in PIPELINE.samples:
        assert tuple(PIPELINE.reader().feed(sample.line, sample.reads[0].loc)) == sample.reads
