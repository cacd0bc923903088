"""A rank's own counters against the collective that timed out (job/behind.py, job/graph.py).

ProcessGroupNCCL prints each group's two counters, the last work a rank enqueued and the last it saw complete: in the
dump signal's line (2.3: "Received a timeout signal ...", 2.4-2.9: "Received a dump signal due to a collective
timeout from ... Last enqueued NCCL work: E, last completed NCCL work: C."), in the watchdog's periodic "NCCL Work
update periodically: last enqueued NCCL work: E, last completed NCCL work: C." (INFO), and in a paste that keeps only
the sentence. The lines below are written from those format strings (ProcessGroupNCCL.cpp; the prefixes of
logPrefix(): "[Rank r] " before 2.3, "[PG ID i PG GUID g(desc) Rank r] " from 2.5).
"""

from __future__ import annotations

import pytest
from conftest import run_text

_OLD = "[Rank {r}] "
_NEW = "[rank{r}]:[E1128 10:00:00.000000000 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
_TIMEOUT = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, "
            "NumelIn=176556032, NumelOut=706224128, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.")
_SENTENCE = "Last enqueued NCCL work: {e}, last completed NCCL work: {c}."
_SIGNAL = ("Received a dump signal due to a collective timeout from  rank 0 and we will try our best to dump the debug "
           "info. " + _SENTENCE + "This is most likely caused by incorrect usages of collectives, e.g., wrong sizes "
           "used across ranks, the order of collectives is not same for all ranks or the scheduled collective, for "
           "some reason, didn't run.")
_PERIODIC = "NCCL Work update periodically: last enqueued NCCL work: {e}, last completed NCCL work: {c}."


def _verdict(*lines: str):
    v = run_text("\n".join(lines) + "\n").verdict
    return v.kind.value, list(v.culprit_ranks), v.summary


@pytest.mark.parametrize(("prefix", "counters"), [
    (_OLD, _SENTENCE), (_NEW, _SENTENCE), (_NEW, _SIGNAL), (_NEW, _PERIODIC)])
def test_a_rank_whose_last_enqueued_is_below_the_timed_out_number_is_behind(prefix, counters):
    kind, culprits, _ = _verdict(prefix.format(r=0) + _TIMEOUT.format(seq=21937),
                                 prefix.format(r=1) + counters.format(e=21936, c=21936))
    assert (kind, culprits) == ("lagging_rank", [1])


@pytest.mark.parametrize("counters", [_SENTENCE, _PERIODIC])
def test_with_the_timeout_unplaced_an_idle_rank_is_behind(counters):
    """The timeout line's rank and number lost in a paste: rank 1 completed all it enqueued, so it waits in no
    collective of the group and is not the rank that timed out."""
    kind, culprits, summary = _verdict("[Rank N] " + _TIMEOUT.format(seq="…"),
                                       _OLD.format(r=1) + counters.format(e=21936, c=21936))
    assert (kind, culprits) == ("lagging_rank", [1])
    assert "last enqueued 21,936, last completed 21,936" in summary and ":2)" in summary


def test_an_unplaced_timeout_with_its_number_reads_each_ranks_last_enqueued():
    kind, culprits, _ = _verdict("[Rank N] " + _TIMEOUT.format(seq=40),
                                 _OLD.format(r=2) + _SENTENCE.format(e=39, c=38),
                                 _OLD.format(r=3) + _SENTENCE.format(e=41, c=39))
    assert (kind, culprits) == ("lagging_rank", [2])


@pytest.mark.parametrize(("seq", "e", "c"), [
    ("…", 21937, 21936),  # work pending and the number unknown: it may be the rank that timed out
    (21937, 21937, 21937),  # it completed the timed-out number: not behind (the waiter is the odd one out)
    (21937, 21940, 21936),  # it issued the number and more
])
def test_counters_that_do_not_decide_name_no_one(seq, e, c):
    kind, culprits, _ = _verdict("[Rank N] " + _TIMEOUT.format(seq=seq), _OLD.format(r=1) + _SENTENCE.format(e=e, c=c))
    assert kind != "lagging_rank" and culprits == []


def test_counters_of_another_group_say_nothing_of_this_one():
    other = "[rank1]:[E1128 10:00:00.000000000 ProcessGroupNCCL.cpp:1895] [PG ID 3 PG GUID 7 Rank 0] "
    kind, culprits, _ = _verdict("[PG ID 0 PG GUID 0(default_pg) Rank N] " + _TIMEOUT.format(seq="…"),
                                 other + _PERIODIC.format(e=5, c=5))
    assert kind != "lagging_rank" and culprits == []
