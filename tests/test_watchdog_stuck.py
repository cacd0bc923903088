"""The heartbeat monitor's verdict (watchdog_stuck): who is named, and the steps from its mechanism.

The lines are ProcessGroupNCCL's (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp): the heartbeat monitor's
``Heartbeat monitor timed out! Process will be terminated after dumping debug info.`` (2.3-2.4) and ``ProcessGroupNCCL's
watchdog got stuck for N seconds without making progress in monitoring enqueued collectives.`` (2.3+), and
~ProcessGroupNCCL's exit warning in both wordings: ``process group has NOT been destroyed before we destruct
ProcessGroupNCCL`` (2.4-2.5) and ``destroy_process_group() was not called before program exit`` (2.6+).
"""

from __future__ import annotations

from conftest import run_text

STUCK = ("[rank{r}]:[F ProcessGroupNCCL.cpp:1169] [PG 5 Rank {g}] ProcessGroupNCCL's watchdog got stuck for 600 seconds "
         "without making progress in monitoring enqueued collectives.")
TIMED_OUT = ("[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank {g}] Heartbeat monitor timed out! Process will be "
             "terminated after dumping debug info. workMetaList_.size()=3")
OLD_EXIT = ("[rank{r}]:[W414 16:54:27.214824770 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
            "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
            "destroy_process_group to ensure that any pending NCCL operations have finished in this process.")


def test_a_heartbeat_on_one_rank_names_that_rank():
    v = run_text(STUCK.format(r=3, g=3) + "\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", (3,))


def test_heartbeats_on_several_ranks_single_none_out_and_name_the_groups_teardown_as_a_step():
    v = run_text("\n".join((TIMED_OUT.format(r=0, g=0), TIMED_OUT.format(r=4, g=0), STUCK.format(r=0, g=0), ""))).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", ())
    assert "ranks 0, 4" in v.summary and "none of them is singled out" in v.summary
    assert any("destroy_process_group()" in s for s in v.next_steps)
    assert "ranks 0, 4" in v.action.why


def test_the_older_exit_warning_before_a_heartbeat_is_the_teardown_at_exit():
    v = run_text("\n".join((OLD_EXIT.format(r=0), OLD_EXIT.format(r=1), STUCK.format(r=1, g=1), ""))).verdict
    assert (v.kind.value, v.culprit_ranks) == ("watchdog_stuck", ())
    assert "after the program had ended" in v.summary
    assert "destroy_process_group()" in v.next_steps[0]


def test_the_exit_warning_gives_the_teardown_step_once():
    v = run_text("\n".join((OLD_EXIT.format(r=0), OLD_EXIT.format(r=1), STUCK.format(r=0, g=0), STUCK.format(r=1, g=1),
                            ""))).verdict
    assert sum("destroy_process_group()" in s for s in v.next_steps) == 1
