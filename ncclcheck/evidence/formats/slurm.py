"""Slurm's srun and slurmstepd: per-task output files (their lines about tasks are read in logparse.py).

Recorded with tools/launchers/slurm.sh (tests/data/launchers/slurm/). srun numbers its tasks 0..n-1 (``%t``,
``SLURM_PROCID``), the job's global ranks when one task runs one rank.
"""

from __future__ import annotations

import re

from ncclcheck.evidence.formats.lines import LineFormat

# `--output=DIR/%t.log` (or .out/.err/.txt): a file named by the task number alone.
PATH_RANKS = (re.compile(r"(?:^|/)(\d{1,7})\.(?:log|out|err|txt)$"),)
LINES = (
    # Memory enforced by accounting (JobAcctGatherParams=OverMemoryKill, no cgroup): the step's tasks are summed,
    # and every task is killed at once, so no one task is named.
    LineFormat("Slurm", "xceeded", re.compile(r"Exceeded job memory limit|(?:Step|Job) \S{1,64} exceeded memory limit"),
               "srun: Exceeded job memory limit", stop=True),
    # "slurmstepd: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TIME LIMIT ***"; Slurm 21+
    # names the host in the program's name ("slurmstepd-vm: error:").
    LineFormat("Slurm", "CANCELLED AT",
               re.compile(r"(?:slurmstepd(?:-[\w.-]+)?: error: )?\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT"),
               "0: slurmstepd-vm: error: *** STEP 11.0 ON vm CANCELLED AT 2026-11-25T15:05:34 DUE TO TIME LIMIT ***",
               stop=True),
)
