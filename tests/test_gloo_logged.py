"""gloo's timeout written through a program's logger is a wait, not the program's own failure (issue 41: 309).

gloo's transport throws ``[<file>:<line>] Timed out waiting <N>ms for recv operation to complete`` (GLOO_ERROR_MSG,
gloo/transport/tcp/unbound_buffer.cc, waitRecv/waitSend) after closing every pair of its context with "Application
timeout caused pair closure" (signalException), which the other pending operations of the process then raise. A
program that catches the exception and logs it writes each as an error record: Python's logging.BASIC_FORMAT
``%(levelname)s:%(name)s:%(message)s``, the HOWTO's `` - ERROR - `` and DeepSpeed's ``[ERROR]`` shapes
(formats/loglevel.py). Each record is the timeout, read as gloo's wait, never the last error the process logged.
"""

from __future__ import annotations

import pytest
from conftest import run_text, thread_log

from ncclcheck.job.model import VerdictKind

TIMEOUT = "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] Timed out waiting 60000ms for recv " \
          "operation to complete"
CLOSURE = "Application timeout caused pair closure"


@pytest.mark.parametrize("head", ["ERROR:root:", "ERROR:ftlib.impl:", "2020-07-15 06:29:40,500 - trainer - ERROR - ",
                                  "[2020-07-15 06:29:40,500] [ERROR] [impl.py:366:func] "])
def test_a_logged_gloo_timeout_is_a_wait(head):
    v = run_text(f"{head}{TIMEOUT}\n{head}{CLOSURE}\n").verdict
    assert v.kind is VerdictKind.INCOMPLETE
    assert "timed out" in v.summary and CLOSURE not in v.summary
    assert v.cause is None or v.cause.cause.kind != "stated_reason"


def test_the_pair_closure_alone_is_the_same_wait():
    """Another pending operation of the process raises the closure, not the timeout's own words."""
    v = run_text(f"ERROR:root:{CLOSURE}\n").verdict
    assert v.kind is not VerdictKind.RANK_FAILED_FIRST
    assert v.cause is None or v.cause.cause.kind != "stated_reason"


def test_another_logged_error_is_still_the_processs_own():
    v = run_text("ERROR:root:could not open /data/shard-7.tar: No such file or directory\n").verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST


def test_the_public_thread():
    """309: worker 1's logged timeout in its barrier while worker 0 has no tasks left: a wait, the steps' uneven
    data among the reasons a member never arrives."""
    v = run_text(thread_log("309").read_text()).verdict
    assert v.kind is VerdictKind.INCOMPLETE and v.culprit_ranks == ()
    assert any("fewer iterations" in s for s in v.next_steps)
