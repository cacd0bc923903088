"""A program's last logged error is its stated reason (issue 41 §1), and an error it logged on from is none.

Each common logging library's error record (evidence/formats/loglevel.py, each shape from the library's documented
default format) read alone is a failure of its process, quoted with the library named; a record below the error
level from the same process afterwards withdraws it (a retry that succeeded); records below the error level are
never a failure.
"""

from __future__ import annotations

import pytest
from conftest import run_text
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclcheck.evidence.formats import loglevel

LINES = (
    ("ERROR:trainer:could not load shard 3: checksum mismatch", "Python's logging"),
    ("2024-05-01 10:00:00,123 - trainer - ERROR - could not load shard 3", "Python's logging"),
    ("2018-12-09 11:23:55.344 | ERROR    | __main__:<module>:1 - could not load shard 3", "loguru"),
    ("[2014-10-31 23:46:59.678] [worker] [error] could not load shard 3", "spdlog"),
    ("[2014-10-31 23:46:59.678] [critical] could not load shard 3", "spdlog"),
    ("[2017-11-09T02:12:24Z ERROR loader] could not load shard 3", "Rust's env_logger or tracing"),
    ("2022-02-15T18:40:14.289898Z ERROR loader: could not load shard 3", "Rust's env_logger or tracing"),
    ('time=2022-11-08T15:28:26.000-05:00 level=ERROR msg="could not load shard 3"', "Go's log/slog"),
    ("F1128 12:00:00.123456  1234 loader.cc:12] Check failed: shard < count (3 vs. 3)", "glog"),
    ("F20261128 12:00:00.123456  1234 loader.cc:12] Check failed: shard < count (3 vs. 3)", "glog"),  # 0.6.0 on
    ("ERROR 02-12 02:14:01 [loader.py:57] could not load shard 3", "vLLM's logger"),
)


@pytest.mark.parametrize(("line", "lib"), LINES)
def test_an_error_record_alone_is_its_processs_failure_with_its_library_named(line, lib):
    v = run_text(f"{line}\n").verdict
    assert v.kind.value == "rank_failed_first" and v.culprit_ranks == ()
    assert v.stated is not None and v.stated.source == "logged" and v.stated.text == line
    assert f'"{line}"' in v.summary and lib in v.summary


def test_a_glog_check_is_the_librarys_own_fatal_check_with_its_steps():
    """glog's CHECK (src/glog/logging.h) as LogMessage::Init heads it, the year first since 0.6.0
    (log_year_in_prefix), then its stack trace's banner and the abort: the library's own fatal check, its place and
    expression quoted, its steps the call the expression checks and the library's release or build."""
    check = ("F20261128 09:14:03.512004 20817 sock.cc:88] Check failed: bind(fd, (struct sockaddr*)&addr, "
             "sizeof(addr)) >= 0 bind failed")
    trace = "*** Check failure stack trace: ***\n    @     0x7f3a2c1e0031  google::LogMessage::Fail()\n"
    v = run_text(f"{check}\n{trace}").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", ())
    assert v.stated is not None and v.stated.text == check and "glog's CHECK" in v.stated.meaning
    steps = " ".join(v.next_steps)
    assert "a port or address in use" in steps and "rebuild it against the NCCL" in steps
    assert loglevel.went_on("I20261128 09:14:03.512004 20817 sock.cc:80] listening")


@pytest.mark.parametrize(("line", "lib"), LINES[:8])
def test_an_error_the_process_logged_on_from_is_no_failure(line, lib):
    """A retry that succeeded: the error, then the same library's record below the error level."""
    below = line.replace("ERROR", "INFO").replace("[error]", "[info]").replace("[critical]", "[info]")
    assert loglevel.went_on(below), below
    v = run_text(f"{line}\n{below}\n").verdict
    assert v.kind.value == "no_failure", v.summary


def test_the_last_error_after_retries_is_the_failure():
    v = run_text("ERROR:net:connect to 10.0.0.2 refused, retrying\nINFO:net:attempt 2\n"
                 "ERROR:net:connect to 10.0.0.2 refused, retrying\nINFO:net:attempt 3\n"
                 "ERROR:net:connect to 10.0.0.2 refused, giving up\n").verdict
    assert v.kind.value == "rank_failed_first" and v.stated is not None
    assert v.stated.text == "ERROR:net:connect to 10.0.0.2 refused, giving up" and v.stated.loc.line == 5


def test_an_exception_under_the_record_is_quoted_before_it():
    v = run_text("ERROR:trainer:step failed\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
                 "ValueError: shard 3 is empty\n").verdict
    assert v.stated is not None and v.stated.source == "exception" and "shard 3 is empty" in v.stated.text


def test_a_ranks_record_names_the_rank():
    v = run_text("[rank3]:ERROR:trainer:could not load shard 3\n[rank0]:INFO:trainer:step 7\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (3,))


def test_a_failed_c_assertion_is_quoted_with_its_place():
    line = "python: ../src/alloc.c:88: pool_get: Assertion `slot < pool->size' failed."
    v = run_text(f"{line}\nAborted (core dumped)\n").verdict
    assert v.kind.value == "rank_failed_first" and v.stated is not None and v.stated.source == "c_assert"
    assert "pool_get (../src/alloc.c:88)" in v.summary


def test_a_cuda_device_assertion_stays_cudas():
    line = ("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [5,0,0], thread: "
            "[64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
    v = run_text(f"{line}\n").verdict
    assert v.stated is not None and v.stated.source == "cuda_assert"


_LEVEL = st.sampled_from(("INFO", "WARNING", "DEBUG"))
_WORDS = st.text(st.sampled_from("abcdef ERROR:-|[]0123456789"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_LEVEL, _WORDS), min_size=1, max_size=8))
def test_records_below_the_error_level_are_never_a_failure(records):
    """INFO, WARNING and DEBUG records, whatever their message holds, in each library's shape: no failure."""
    shapes = ("{l}:app:{m}", "2024-05-01 10:00:00,123 - app - {l} - {m}", "2018-12-09 11:23:55.344 | {l} | m:f:1 - {m}",
              "[2017-11-09T02:12:24Z {l} app] {m}")
    text = "".join(shapes[i % len(shapes)].format(l=level, m=msg.replace("ERROR", "E")) + "\n"
                   for i, (level, msg) in enumerate(records))
    assert run_text(text).verdict.kind.value == "no_failure"
