"""A heartbeat failure after the program's own end (job/afterend.py): the process groups' tear-down hung, no rank
is the culprit, and the fix is the order the groups are destroyed in."""

from __future__ import annotations

from conftest import DATA, run, run_text

from ncclcheck.evidence.formats.testends import Lines as EndLines
from ncclcheck.evidence.types import Loc

# ProcessGroupNCCL.cpp's heartbeat monitor, 2.5+ (its PG prefix) and 2.3-2.4 (its first words), as a rank prints them
STUCK = ("[rank0]:[E1128 05:10:11.000000000 ProcessGroupNCCL.cpp:1487] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
         "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
         "collectives.\n")
TIMED_OUT = ("[rank1]:[E1128 05:10:11.000000000 ProcessGroupNCCL.cpp:1200] [PG 0 Rank 1] Heartbeat monitor timed out! "
             "Process will be terminated after dumping debug info. workMetaList_.size()=0\n")


def test_the_fuser_threads_watchdog_after_googletests_tear_down_is_the_groups_tear_down():
    """Public thread 144 (NVIDIA/Fuser#3055): four ranks' googletest binary; fixed by destroying in one order."""
    v = run(DATA / "public_threads" / "144-fuser-3055-teardown-watchdog-stuck.log").verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("watchdog_stuck", (), ())
    assert v.cause is not None and v.cause.cause.kind == "teardown_order"
    assert v.action.kind == "fix-code"
    assert "after the program's own end" in v.summary and "Global test environment tear-down" in v.summary
    assert "same order on every rank, subgroups before the default group" in v.next_steps[0]


def test_unittests_end_then_the_watchdog_stuck_is_the_tear_down():
    v = run_text("[rank0]:Ran 4 tests in 3.204s\n" + STUCK).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", ())
    assert v.cause is not None and v.cause.cause.kind == "teardown_order"
    assert '"Ran 4 tests in 3.204s"' in v.summary


def test_nccls_destroy_complete_then_the_2_3_heartbeat_timeout_is_the_tear_down():
    text = ("[rank1]:node1:2094:2094 [1] NCCL INFO comm 0x55d0 rank 1 nranks 2 cudaDev 1 busId 1c000 - Destroy "
            "COMPLETE\n" + TIMED_OUT)
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "teardown_order"
    assert "the heartbeat monitor timed out" in v.summary


def test_the_watchdog_stuck_during_the_work_keeps_its_reading():
    v = run_text(STUCK).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", (0,))
    assert v.cause is None


def test_an_end_printed_after_the_watchdog_fired_is_no_tear_down():
    v = run_text(STUCK + "[rank0]:Ran 4 tests in 3.204s\n").verdict
    assert v.cause is None or v.cause.cause.kind != "teardown_order"


def test_a_heartbeat_no_line_names_says_so_in_words():
    v = run_text(STUCK.replace("[rank0]:", "")).verdict
    assert "ranks none" not in v.summary
    assert v.summary.startswith("The heartbeat monitor fired on a process no line names")


def test_the_test_frameworks_ends_are_read_and_a_tests_name_is_not():
    lines = EndLines()
    (f,) = lines.feed("[----------] Global test environment tear-down", Loc("x", 1))
    assert (f.key, f.value) == ("program_end", "[----------] Global test environment tear-down")
    assert not list(lines.feed("Ran out of memory while testing", Loc("x", 2)))
