"""gloo's timeouts are waits, like NCCL's watchdog line: real 4-rank jobs under torchrun on CPU
(tests/data/real_gloo/hang.py), rank 2 asleep in host code while the others wait in an all_reduce or in
monitored_barrier, with torchrun's per-rank logs and its console."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run
from typer.testing import CliRunner

from ncclcheck.cli import app

GLOO = Path(__file__).parent / "data" / "real_gloo"


@pytest.mark.parametrize("inputs", [["allreduce/attempt_0"], ["allreduce"], ["allreduce/console.log"],
                                    ["monitored/attempt_0"], ["monitored"], ["monitored/console.log"]])
def test_the_sleeping_rank_is_the_culprit_and_the_ranks_that_timed_out_only_waited(inputs):
    v = run(*(GLOO / x for x in inputs)).verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (2,), (0, 1, 3)), v.summary


def test_monitored_barrier_names_the_rank_that_never_came_even_without_its_log():
    a = run(GLOO / "monitored/attempt_0/0", GLOO / "monitored/attempt_0/1")
    # rank 2 is the culprit, not also unknown: each rank is in one set (issue 41 §4); it has no input of its own
    assert (a.verdict.culprit_ranks, a.verdict.unknown_ranks) == ((2,), ())
    assert a.job.rank(2) is not None and not a.job.rank(2).present
    barrier = next(f for f in a.verdict.findings if f.code == "monitored-barrier")
    assert barrier.message == "Rank 0's monitored_barrier names the rank that never reached it: rank 2."
    assert barrier.evidence[0].line == 1


def test_every_rank_monitored_barrier_missed_is_read(tmp_path):
    """wait_all_ranks=True: "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 8000 ms"."""
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]:[E1125 09:36:46.844271395 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 1, 3 failed to pass "
                   "monitoredBarrier in 8000 ms\n")
    a = run(log)
    assert next(f.message for f in a.verdict.findings if f.code == "monitored-barrier").endswith("ranks 1, 3.")
    assert a.job.world == 4


def test_the_report_prints_no_unknown_as_a_question_mark_or_none():
    r = CliRunner().invoke(app, ["analyze-log", str(GLOO / "allreduce/attempt_0")])
    assert r.exit_code == 1
    for bad in ("#?", "(?)", "None", " ? "):
        assert bad not in r.stdout, bad
    # the op from the ranks' tracebacks (issue 41 §5)
    assert "(no sequence number printed) (allreduce)" in r.stdout.replace("\n", " ").replace("  ", " ")


def test_the_trace_writes_no_null_for_what_the_logs_do_not_say(tmp_path):
    out = tmp_path / "t.json"
    r = CliRunner().invoke(app, ["analyze-log", str(GLOO / "allreduce/attempt_0"), "--trace", str(out), "-q"])
    assert r.exit_code == 1 and out.exists()
    text = out.read_text()
    assert "null" not in text and "None" not in text
    r = CliRunner().invoke(app, ["analyze-log", str(Path(__file__).parent.parent / "examples" / "incident-8rank"),
                                 "--trace", str(out), "-q"])
    assert "null" not in out.read_text()

