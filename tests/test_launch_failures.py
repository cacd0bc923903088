"""The launchers' own failures, read from the source that prints them (issue 41, sections 1 and 4): torchrun's agent
failing in its own rendezvous (torch/distributed/elastic), Slurm refusing a step's launch (srun's step_launch.c and
launch.c), the c10d rendezvous backend's store, and Horovod's stall report naming the ranks that never submitted a
collective. Lines are written from each source's format, beside the recorded runs (tests/data/launchers/torchrun/rdzv_*)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run

from ncclcheck.job.model import VerdictKind

RUNS = Path(__file__).parent / "data" / "launchers" / "torchrun"
# torch/distributed/elastic/agent/server/api.py's lines as the agent logs them at LOGLEVEL=INFO (glog's header).
_AGENT = "I1128 05:34:04.820000 25692 torch/distributed/elastic/agent/server/api.py:{}] [default] {}"
FAILED = _AGENT.format(942, "Worker group FAILED. 3/3 attempts left; will restart worker group")
STOPPING = _AGENT.format(733, "Stopping worker group")
RENDEZVOUSING = _AGENT.format(707, "Rendezvous'ing worker group")
STARTING = _AGENT.format(715, "Starting worker group")
EXITED = ("E1128 05:34:04.820000 25692 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
          "local_rank: 0 (pid: 25779) of binary: /usr/bin/python3")
AGENT_TRACEBACK = ("Traceback (most recent call last):", '  File "/opt/venv/bin/torchrun", line 8, in <module>',
                   "    sys.exit(main())")


def _cause(v) -> str | None:
    return v.cause.cause.kind if v.cause is not None else None


def test_an_agents_traceback_cut_in_its_re_rendezvous_is_the_launchers_failure(write):
    """The agent restarted its workers and its own traceback began before any rendezvous completed: the exception is
    cut off, but the agent, not a worker, ended the job (pytorch/pytorch#147064's reproduction has this shape)."""
    v = run(write("console.log", EXITED, FAILED, STOPPING, RENDEZVOUSING, *AGENT_TRACEBACK)).verdict
    assert (v.kind, v.culprit_ranks, _cause(v)) == (VerdictKind.LAUNCHER_FAILURE, (), "rdzv_failed"), v.summary
    assert "after it restarted its worker group" in v.summary
    assert any("--rdzv-id" in s for s in v.next_steps) and v.action is not None and v.action.kind == "collect-more"


def test_an_agents_traceback_after_its_workers_started_is_not_its_rendezvous(write):
    """The same traceback once the rendezvous completed ("Starting worker group") is the agent reporting its workers'
    failure (ChildFailedError), not a rendezvous of its own."""
    v = run(write("console.log", RENDEZVOUSING, STARTING, EXITED, *AGENT_TRACEBACK,
                  "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:")).verdict
    assert _cause(v) != "rdzv_failed" and v.kind is not VerdictKind.LAUNCHER_FAILURE, v.summary


def test_a_closed_rendezvous_names_its_meaning_and_the_release_that_keeps_it_open(write):
    v = run(write("console.log", *AGENT_TRACEBACK, "torch.distributed.elastic.rendezvous.api.RendezvousClosedError")).verdict
    assert (v.kind, _cause(v)) == (VerdictKind.LAUNCHER_FAILURE, "rdzv_failed"), v.summary
    assert "fresh --rdzv-id" in v.next_steps[0] and "#152525" in v.next_steps[0], v.next_steps


def test_the_c10d_backends_store_line_is_read_and_says_to_give_each_job_its_endpoint(write):
    """c10d_rendezvous_backend.py's own sentence, alone: the store the agent could not use, its inner exception the
    place that says which, and an endpoint and id per job."""
    v = run(write("console.log", "The connection to the C10d store has failed. See inner exception for details.")).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.LAUNCHER_FAILURE, ()), v.summary
    assert any("inner exception" in s and "--rdzv-endpoint=HOST:PORT" in s for s in v.next_steps), v.next_steps


def test_the_recorded_closed_rendezvous_alone_is_the_agents_failure():
    """node0's console (tests/data/launchers/torchrun/rdzv_closed): its worker lost its peer, its agent restarted and
    found the rendezvous closed; rank 1's exception is in the other console only."""
    v = run(RUNS / "rdzv_closed" / "node0.console.log").verdict
    assert (v.kind, v.culprit_ranks, _cause(v)) == (VerdictKind.LAUNCHER_FAILURE, (), "rdzv_failed"), v.summary
    assert "RendezvousClosedError" in v.summary


def test_a_closed_rendezvous_after_a_workers_own_error_is_its_echo():
    """Both consoles: rank 1 raised first and its agent, out of restarts, closed the rendezvous on its way out."""
    run_dir = RUNS / "rdzv_closed"
    v = run(run_dir / "node0.console.log", run_dir / "node1.console.log").verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, (1,)), v.summary
    assert _cause(v) != "rdzv_failed"


# src/api/step_launch.c: error("Task launch for %ps failed on node %s: %m") with the slurmd's reason
# (src/common/slurm_errno.c), as srun prints it ("srun: error: ..."; %ps is "StepId=J.S" since Slurm 20.11).
@pytest.mark.parametrize("reason", ["Job credential expired", "Invalid job credential", "Job credential revoked"])
def test_slurms_refused_task_launch_is_the_launchers_failure_with_the_credentials_meaning(write, reason):
    v = run(write("srun.log", f"srun: error: Task launch for StepId=4711.0 failed on node gpu-17: {reason}")).verdict
    assert (v.kind, v.culprit_ranks, _cause(v)) == (VerdictKind.LAUNCHER_FAILURE, (), "slurm_launch"), v.summary
    assert "clocks" in v.next_steps[0] and "munge" in v.next_steps[0], v.next_steps


def test_slurms_refused_step_is_the_launchers_failure_and_names_no_credential(write):
    v = run(write("srun.log", "srun: error: Unable to create step for job 4711: Requested node configuration is not "
                              "available")).verdict
    assert (v.kind, _cause(v)) == (VerdictKind.LAUNCHER_FAILURE, "slurm_launch"), v.summary
    assert not any("clocks" in s for s in v.next_steps), v.next_steps


# Horovod's stall report: operations.cc's "Stalled ops:" layout (2018-2019) and stall_inspector.cc's "Missing ranks:".
_PREAMBLE = ("One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
             "waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying "
             "to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. ")


def test_horovods_older_stall_report_names_the_missing_ranks_as_culprits(write):
    v = run(write("rank0.log", "WARNING: " + _PREAMBLE, "Stalled ops:",
                  "broadcast.fc.weight [missing ranks: 2, 5]", "broadcast.fc.bias [missing ranks: 2, 5]")).verdict
    assert (v.kind, v.culprit_ranks, _cause(v)) == (VerdictKind.COLLECTIVE_MISMATCH, (2, 5), "horovod_stall"), v.summary
    assert "broadcast.fc.weight" in v.summary and v.action is not None and v.action.kind == "fix-code"


def test_horovods_newer_stall_report_reads_one_missing_rank_a_line(write):
    v = run(write("rank0.log", f"[2026-11-28 06:00:00.000000: W /tmp/horovod/common/stall_inspector.cc:105] {_PREAMBLE}",
                  "Missing ranks:", "1: [allreduce.layer1.weight, allreduce.layer1.bias]",
                  "3!: [allreduce.layer1.weight]",
                  "One or more rank (marked by \"!\") is stalled for longer than 120 seconds. Will shutdown.")).verdict
    assert (v.kind, v.culprit_ranks, _cause(v)) == (VerdictKind.COLLECTIVE_MISMATCH, (1, 3), "horovod_stall"), v.summary


def test_a_rank_line_without_the_reports_head_is_no_stall(write):
    """"1: [allreduce.x]" is a stall report's line only under its "Missing ranks:" head."""
    v = run(write("rank0.log", "1: [allreduce.layer1.weight]", "step 3 done")).verdict
    assert _cause(v) != "horovod_stall" and not v.culprit_ranks, v.summary
