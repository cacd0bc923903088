"""Apptainer's and Singularity's own FATAL line (evidence/formats/apptainer.py): the container runtime gave up before
the program ran, and the report quotes its reason with what it means. Lines written from pkg/sylog's prefixes: the
label padded to eight columns and a space (``FATAL:   ``), with colour codes around it, and the debug level's
``FATAL   [U=..,P=..]   function()   ``; behind a launcher's tag; and other programs' FATAL lines left alone.
"""

from __future__ import annotations

import pytest
from conftest import run_text

_OMPI_ABORTED = ("-" * 74 + "\nPrimary job  terminated normally, but 1 process returned\n"
                 "a non-zero exit code. Per user-direction, the job has been aborted.\n" + "-" * 74 + "\n")


@pytest.mark.parametrize(("text", "said"), [
    ("FATAL:   permission denied\nFATAL:   permission denied\n" + _OMPI_ABORTED, "FATAL:   permission denied"),
    ("\x1b[31mFATAL:  \x1b[0m could not open image /scratch/a.sif: failed to retrieve path for /scratch/a.sif: lstat "
     "/scratch/a.sif: no such file or directory\n",
     "FATAL:   could not open image /scratch/a.sif: failed to retrieve path for /scratch/a.sif: lstat /scratch/a.sif: no "
     "such file or directory"),
    ("FATAL   [U=1000,P=4211]    execProcess()                 exec ./train.sh failed: permission denied\n",
     "FATAL:   exec ./train.sh failed: permission denied"),
    ("1: FATAL:   container creation failed: mount /data->/data error: while mounting /data: mount source /data "
     "doesn't exist\n",
     "FATAL:   container creation failed: mount /data->/data error: while mounting /data: mount source /data doesn't "
     "exist"),
])
def test_the_runtimes_fatal_line_is_the_launch_failure_it_states(text, said):
    v = run_text(text).verdict
    assert v.kind.value == "launcher_failure" and v.culprit_ranks == (), v.summary
    assert v.stated is not None and (v.stated.source, v.stated.text) == ("container", said)
    assert "before the program inside the container ran" in v.stated.meaning
    assert "--bind" in v.next_steps[0] and "chmod +x" in v.next_steps[0], v.next_steps


@pytest.mark.parametrize("line", [
    'FATAL:  password authentication failed for user "train"',  # PostgreSQL's label: two spaces
    "F1122 04:10:11.123456 4211 train.cc:42] Check failed: x",  # glog's FATAL
    "the runtime printed FATAL: with three spaces",  # prose
])
def test_other_fatal_lines_are_not_the_container_runtimes(line):
    v = run_text(line + "\n").verdict
    assert v.stated is None or v.stated.source != "container", v.summary
