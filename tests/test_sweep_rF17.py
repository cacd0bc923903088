"""Schedulers' and launchers' own words about a job's processes, each read with the meaning its source gives it
(docs/data/sweep-rF17-2026-11-29.md): Slurm's slurmstepd says why it stopped a job or step (a time limit, a requeue,
a cancel, a failure elsewhere, a node's memory error, a preemption), and its accounting kill names memory.

The lines are written from Slurm's format strings (src/slurmd/slurmstepd/req.c, src/common/slurm_jobacct_gather.c),
each release's form, alone and after an NCCL set-up, as a console holds them.
"""

from __future__ import annotations

import pytest
from conftest import run_text

from ncclcheck.render.json_out import analysis_json

SETUP = """\
node1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:2001:2001 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
node1:2001:2050 [0] NCCL INFO comm 0x5600 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init COMPLETE
"""
_T = "2026-11-29T03:10:00"


def _verdict(text: str) -> dict:
    return analysis_json(run_text(text))["verdict"]


@pytest.mark.parametrize("setup", ["", SETUP])
@pytest.mark.parametrize(("line", "cause", "first"), [
    # SIG_TIME_LIMIT, the same words from 17.11 to 26.05; Slurm 21+ names the host in the program's name
    (f"slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT {_T} DUE TO TIME LIMIT ***", "stopped_externally",
     "Look at how far the job got before the limit"),
    (f"slurmstepd-gpu07: error: *** STEP 4242.0 ON gpu07 CANCELLED AT {_T} DUE TO TIME LIMIT ***",
     "stopped_externally", "Look at how far the job got before the limit"),
    # mpirun --timeout (orterun's help text [orterun:timeout])
    ("The user-provided time limit for job execution has been reached:", "stopped_externally",
     "Look at how far the job got before the limit"),
    (f"slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT {_T} DUE TO JOB REQUEUE ***", "stopped_externally",
     "`sacct -j JOBID --duplicates"),
    # scancel: bare up to 24.05, "DUE to SIGNAL <strsignal>" from 24.11
    (f"slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT {_T} ***", "stopped_externally",
     "If srun reported a task's end before this line"),
    (f"slurmstepd: error: *** STEP 4242.0 ON gpu07 CANCELLED AT {_T} DUE to SIGNAL Terminated ***",
     "stopped_externally", "If srun reported a task's end before this line"),
    # SIG_FAILURE (21.08 on) and SIG_UME (21.08 to 24.05): stops that say where to look
    ("slurmstepd: error: *** STEP 4242.0 ON gpu07 FAILED (non-zero exit code or other failure mode) ***",
     "stopped_externally", "`sacct -j JOBID --format=JobID,State,ExitCode,NodeList` names the step"),
    (f"slurmstepd: error: *** JOB 4242 ON gpu07 UNCORRECTABLE MEMORY ERROR AT {_T} ***", "stopped_externally",
     "Take the named node out of the pool"),
    # SIG_PREEMPTED: the scheduler's own stop, its own cause
    (f"slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT {_T} DUE TO PREEMPTION ***", "scheduler_stop",
     "Run in a partition or priority class that is not preempted"),
    (f"slurmstepd: error: *** STEP 4242.0 ON gpu07 CANCELLED AT {_T} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR "
     "DETAILS ***", "node_failure", "Give the node's own records to this tool"),
    # the accounting plugin's kill: "%ps" from 20.02, "Step J.S"/"Job J" before
    ("slurmstepd: error: StepId=4242.0 exceeded memory limit (8388608 > 8192000), being killed", "host_oom",
     "Ask for more memory"),
    ("slurmstepd: error: Job 4242 exceeded memory limit (8388608 > 8192000), being killed", "host_oom",
     "Ask for more memory"),
])
def test_slurmstepd_says_why_it_stopped_the_job(setup, line, cause, first):
    v = _verdict(setup + line + "\n")
    assert v["cause"]["kind"] == cause
    assert v["next_steps"][0].startswith(first) and v["cause"]["fix"][0].startswith(first)
    assert v["culprit_ranks"] == []  # the scheduler's stop names no rank of its own fault


@pytest.mark.parametrize("setup", ["", SETUP])
@pytest.mark.parametrize(("line", "signal", "cause"), [
    # srun's _task_finish: strsignal's words, " (core dumped)" where the task dumped core (src/srun/launch.c)
    ("srun: error: gpu07: task 1: Segmentation fault (core dumped)", "SIGSEGV", "native_crash"),
    ("srun: error: gpu07: task 1: Illegal instruction", "SIGILL", "native_crash"),
    ("srun: error: gpu07: task 1: Floating point exception (core dumped)", "SIGFPE", "native_crash"),
])
def test_srun_names_a_tasks_fatal_signal_in_words(setup, line, signal, cause):
    v = _verdict(setup + line + "\n")
    assert (v["kind"], v["cause"]["kind"], v["culprit_ranks"]) == ("rank_failed_first", cause, [1])


def test_a_step_stopped_after_a_tasks_exit_is_that_tasks_failure():
    """srun's --kill-on-bad-exit as its own console says it (tests/data/launchers/slurm/killbad, the tasks' lines
    left out): task 2 exited 1, srun ended the step (slurmstepd's bare CANCELLED line), the others were terminated:
    task 2 failed first, no outside stop."""
    v = _verdict("srun: error: vm: task 2: Exited with exit code 1\n"
                 "srun: launch/slurm: _step_signal: Terminating StepId=1.0\n"
                 "slurmstepd-vm: error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-28T08:32:20 ***\n"
                 "srun: error: vm: tasks 0-1,3: Terminated\n")
    assert (v["kind"], v["culprit_ranks"]) == ("rank_failed_first", [2])


@pytest.mark.parametrize("setup", ["", SETUP])
@pytest.mark.parametrize(("lines", "rank"), [
    # Open MPI 1.x-4.x's help text (5.x puts "  Proc:" and "  Errorcode:" lines under the first)
    (("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD", "with errorcode 3."), 2),
    (("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD", "  Proc: [[4242,1],2]", "  Errorcode: 3"), 2),
    # MPICH 3.4+'s ch4 head (its node is the world rank) and the bare form of older MPICH's process managers
    (("Abort(3) on node 2 (rank 0 in comm 480): application called MPI_Abort(comm=0x84000002, 3) - process 0",), 2),
    (("application called MPI_Abort(MPI_COMM_WORLD, 3) - process 2",), 2),
    # a rank in another communicator is not the world's: the line names no culprit
    (("MPI_ABORT was invoked on rank 0 in communicator split_comm", "with errorcode 3."), None),
])
def test_mpi_abort_is_the_programs_own_end_on_the_rank_it_names(setup, lines, rank):
    v = _verdict(setup + "\n".join(lines) + "\n")
    assert v["cause"]["kind"] == "stated_reason"
    assert v["next_steps"][0].startswith("Read what the aborting rank printed just before the abort")
    assert v["culprit_ranks"] == ([rank] if rank is not None else [])


def test_mpi_abort_after_the_ranks_own_error_keeps_that_error():
    """The rank's own exception before the abort says why: its mechanism, not the abort's, comes first."""
    v = _verdict("[1,1]<stderr>:Traceback (most recent call last):\n"
                 "[1,1]<stderr>:  File \"train.py\", line 9, in <module>\n"
                 "[1,1]<stderr>:RuntimeError: CUDA error: out of memory\n"
                 "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n")
    assert v["culprit_ranks"] == [1] and "out of memory" in v["stated"]["text"]


@pytest.mark.parametrize("first", [
    "There are not enough slots available in the system to satisfy the 64",  # Open MPI 1.x-5.x rmaps base
    "There are not enough slots available in the system or not enough",  # PRRTE's round-robin mapper
])
def test_mpirun_refusing_for_slots_is_the_launchers_failure(first):
    v = _verdict(f"{first}\nslots that were requested by the application:\n\n  python\n")
    assert (v["kind"], v["cause"]["kind"], v["culprit_ranks"]) == ("launcher_failure", "mpi_slots", [])
    assert "slots=N" in v["next_steps"][0]


@pytest.mark.parametrize(("line", "first"), [
    ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", "The reason is in the lines around it"),
    ("srun: error: Timed out waiting for job step to complete", "The reason is in the lines around it"),
    ("srun: interrupt (one more within 1 sec to abort)", "If the job was interrupted because it seemed hung"),
    ("mpirun: abort is already in progress...hit ctrl-c again to forcibly terminate",
     "If the job was interrupted because it seemed hung"),
    ("prterun: abort is already in progress...hit ctrl-c again to forcibly terminate",
     "If the job was interrupted because it seemed hung"),
])
def test_a_launchers_word_that_it_is_ending_the_job_says_where_the_reason_is(line, first):
    """Alone, the line is all there is (error_unread quotes it first); its mechanism's step follows at once, before
    the general steps for a line of no known form."""
    v = _verdict(line + "\n")
    assert v["stated"]["meaning"] and v["next_steps"][1].startswith(first)
    assert v["culprit_ranks"] == []
