"""A library's news that it shut down because another rank failed is a consequence, never a culprit (issue 41: 312).

Horovod's SHUT_DOWN_ERROR (horovod/common/common.h) in both its wordings, 0.13-0.14's ("This has been caused by an
exception on one of the rank ...") and 0.15's on ("This was caused by an exception on one of the ranks ... you
should see the exception in the log before the first shutdown message."), as PyTorch's RuntimeError, TensorFlow's
UnknownError and Horovod's own HorovodInternalError (horovod/common/exceptions.py, 0.20 on) raise it, under Open MPI's
``--tag-output`` tags (horovodrun runs mpirun) and mpirun's report of the first process that failed
(orte/tools/orterun help-orterun.txt: "The first process to do so was: Process name: [[J,1],R] Exit code: N").
"""

from __future__ import annotations

import pytest
from conftest import run_text, thread_log

from ncclcheck.job.model import VerdictKind

NEW = ("Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, "
       "allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown was caused by an "
       "exception, you should see the exception in the log before the first shutdown message.")
OLD = ("Horovod has been shut down. This has been caused by an exception on one of the rank or an attempt to "
       "allreduce, allgather or broadcast a tensor after one of the ranks has finished execution.")
RAISED = ("RuntimeError: {}", "horovod.common.exceptions.HorovodInternalError: {}",
          "tensorflow.python.framework.errors_impl.UnknownError: {}")
FIRST = "\n".join((
    "--------------------------------------------------------------------------",
    "mpirun detected that one or more processes exited with non-zero status, thus causing",
    "the job to be terminated. The first process to do so was:",
    "",
    "  Process name: [[50371,1],0]",
    "  Exit code:    1",
    "--------------------------------------------------------------------------",
)) + "\n"


def _finding(v):
    return next((f for f in v.findings if f.code == "shut-down-after-failure"), None)


@pytest.mark.parametrize("said", [NEW, OLD])
@pytest.mark.parametrize("form", RAISED)
def test_the_shutdown_rank_is_stopped_and_the_first_process_to_fail_the_culprit(said, form):
    v = run_text(f"[1,1]<stderr>:{form.format(said)}\n" + FIRST).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST
    assert v.culprit_ranks == (0,)
    assert 1 in v.stopped_ranks
    f = _finding(v)
    assert f is not None and "rank 0's own output before the first shutdown message" in f.fix


def test_the_failing_ranks_own_exception_stays_the_cause():
    text = "\n".join((
        "[1,0]<stderr>:RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
        "14.50 GiB already allocated; 4.75 MiB free; 14.61 GiB reserved in total by PyTorch)",
        f"[1,1]<stderr>:RuntimeError: {NEW}",
        f"[1,2]<stderr>:RuntimeError: {NEW}",
    )) + "\n"
    v = run_text(text).verdict
    assert v.culprit_ranks == (0,) and set(v.stopped_ranks) >= {1, 2}
    assert v.cause is not None and v.cause.cause.kind == "cuda_oom"


def test_shutdowns_alone_name_no_culprit():
    """Every rank shown stopped: the rank that failed is not in these inputs."""
    v = run_text(f"[1,1]<stderr>:RuntimeError: {NEW}\n[1,2]<stderr>:RuntimeError: {NEW}\n").verdict
    assert v.culprit_ranks == ()
    assert "the output of the rank that failed first" in _finding(v).fix


def test_the_public_thread():
    """312: rank 1's shutdown, mpirun names rank 0 first (its out-of-memory error is not in the paste)."""
    v = run_text(thread_log("312").read_text()).verdict
    assert v.culprit_ranks == (0,) and 1 in v.stopped_ranks
