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
