"""Determined's master header before each line of a task's log, every release's form, taken off so the line behind it
is read (evidence/formats/collectors.py's MASTER), and horovodrun's tag behind it naming the rank (evidence/whose.py).

The headers are written from Determined's format strings: 0.12-0.13's ContainerLog.String ("[%s] %s [%s] || %s":
RFC3339 time, the container's first 8 characters, its state), 0.13.8-0.17's Postgres query ("[time] <container>
[rank=N] || LEVEL: log", "[UNKNOWN TIME]", "[UNKNOWN CONTAINER]"), TrialLog.Resolve ("[%s] [%s] %s|| %s %s") and
TaskLog.Message (microsecond time, 8 spaces for no container). horovodrun's tag is safe_shell_exec's
"[<rank>]<stderr>:" behind time.asctime()'s stamp (--prefix-output-with-timestamp).
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.evidence.formats.collectors import MASTER
from ncclcheck.evidence.whose import PREFIX

HEADERS = (
    "[2020-06-09T20:10:40Z] cf108822 [RUNNING] || ",  # 0.12-0.13, ContainerLog.String
    "[2021-03-01T10:00:00Z] 3f2a9c1d [rank=1] || ERROR: ",  # 0.13.8-0.17, the Postgres query
    "[UNKNOWN TIME] [UNKNOWN CONTAINER] || ",  # the query's defaults
    "[2021-07-01T10:00:00.123456Z] [3f2a9c1d] [rank=1] ||  ",  # TrialLog.Resolve, no level
    "[2022-03-02T02:15:18.299569Z] f6114bb3 [rank=1] || INFO: ",  # TaskLog.Message
    "[2022-03-02T02:15:18.299569Z]          || INFO: ",  # TaskLog.Message, no container
)
LINE = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error, NCCL version 2.10.3"


@pytest.mark.parametrize("header", HEADERS)
def test_the_master_header_is_taken_off(header):
    """The header matches whole, and the prefix the sources read behind leaves the line itself."""
    m = MASTER.match(header + LINE)
    assert m is not None and (header + LINE)[m.end():].lstrip() == LINE
    assert PREFIX.sub("", header + LINE) == LINE


@pytest.mark.parametrize("header", HEADERS)
def test_a_line_behind_the_header_is_read(header):
    v = run_text(header + LINE + "\n").verdict
    assert v.kind.value != "no_failure"
    assert "unhandled system error" in v.summary


def test_horovodrun_tag_behind_the_oldest_header_names_the_rank():
    """0.12's header, then horovodrun's stamped tag: the line is rank 1's."""
    text = ("[2020-06-09T20:10:40Z] cf108822 [RUNNING] ||  Tue Jun  9 20:10:40 2020[1]<stderr>:terminate called "
            "after throwing an instance of 'std::runtime_error'\n"
            "[2020-06-09T20:10:40Z] cf108822 [RUNNING] ||  Tue Jun  9 20:10:40 2020[1]<stderr>:  what():  boom\n")
    v = run_text(text).verdict
    assert v.culprit_ranks == (1,)


def test_horovodrun_stamped_tag_alone_names_the_rank():
    text = "Tue Jun  9 20:10:40 2020[3]<stderr>:terminate called after throwing an instance of 'std::runtime_error'\n"
    assert run_text(text).verdict.culprit_ranks == (3,)


def test_a_bracketed_line_is_no_header():
    """A line that merely starts with a time stamp in brackets (a logger's) is not the master's header."""
    assert MASTER.match("[2020-06-09T20:10:40Z] INFO training started") is None
    assert MASTER.match("[2020-06-09T20:10:40Z] cf108822 training || started") is None
