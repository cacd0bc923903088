"""Jobs recorded under the real launchers (tools/launchers/*.sh: Slurm, Open MPI, pdsh running torchrun; gloo on
CPU), each read as the launcher's console and as its per-rank files: the culprit rank and the kind of failure are
what the run did (tests/data/launchers/truth.json), whichever form is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run

from ncclcheck.evidence import formats

LAUNCHERS = Path(__file__).parent / "data" / "launchers"
TRUTH = {k: v for k, v in json.loads((LAUNCHERS / "truth.json").read_text()).items() if not k.startswith("_")}
# A reading the engine still gets wrong is named in the truth ("known_miss": {"input+input": "the mechanism"}) and
# runs as a strict xfail: a fix that makes it right fails the suite until the line goes.
CASES = [pytest.param(case, tuple(inputs), id=f"{case}:{'+'.join(inputs)}",
                      marks=[pytest.mark.xfail(strict=True, reason=t["known_miss"]["+".join(inputs)])]
                      if "+".join(inputs) in t.get("known_miss", {}) else [])
         for case, t in TRUTH.items() for inputs in t["inputs"]]


@pytest.mark.parametrize(("case", "inputs"), CASES)
def test_each_recorded_run_names_the_rank_and_the_failure_the_run_had(case, inputs):
    truth = TRUTH[case]
    v = run(*(LAUNCHERS / case / x for x in inputs)).verdict
    got = (v.kind.value, list(v.culprit_ranks))
    assert got == (truth["kind"], truth["culprits"]), v.summary
    if "cause" in truth:
        assert v.cause is not None and v.cause.cause.kind == truth["cause"], v.summary


def test_every_recorded_case_is_held_by_the_truth_table():
    recorded = {f"{d.parent.name}/{d.name}" for d in LAUNCHERS.glob("*/*") if (d / "WHAT.txt").exists()}
    assert recorded == set(TRUTH)


@pytest.mark.parametrize("fmt", formats.LINE_FORMATS, ids=lambda f: f"{f.source}:{f.word}")
def test_every_launcher_line_format_reads_its_example(fmt):
    assert fmt.word in fmt.example and fmt.pattern.search(fmt.example)


def test_open_mpi_names_the_rank_in_its_tag_and_its_output_folders():
    assert formats.rank_tag("[1,3]<stderr>:[rank3]: Traceback (most recent call last):") == 3
    assert formats.path_rank("mpi/kill/ranks/1/rank.12/stderr") == 12
    assert formats.path_rank("slurm/raise/tasks/7.log") == 7
    assert formats.path_rank("logs/train.log") is None


def test_a_two_line_open_mpi_report_names_the_first_process_that_failed():
    lines = formats.LauncherLines(formats.LINE_FORMATS)
    assert lines.feed("  Process name: [[11946,1],2]") is None
    fmt, end = lines.feed("  Exit code:    1")
    assert (end.rank, end.exitcode, fmt.source) == (2, 1, "Open MPI")
    assert lines.feed("  Exit code:    1") is None  # no worker named before it


def test_an_error_its_process_outlived_is_not_how_it_ended(write):
    """Ray's controller logs a traceback with a warning and goes on; the worker's error is its last word."""
    log = write("ray.log",
                "(TrainController pid=41) Failed to send resource request. It's safe to ignore this error.",
                "(TrainController pid=41) Traceback (most recent call last):",
                "(TrainController pid=41)   File \"a.py\", line 1, in f",
                "(TrainController pid=41) ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
                "(TrainController pid=41) Attempting to start training worker group of size 2",
                "(TrainController pid=41) - (ip=10.0.0.2, pid=55) world_rank=0, local_rank=0, node_rank=0",
                "(TrainController pid=41) - (ip=10.0.0.2, pid=56) world_rank=1, local_rank=1, node_rank=0",
                "(RayTrainWorker pid=56) Traceback (most recent call last):",
                "(RayTrainWorker pid=56) RuntimeError: a bad batch")
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (1,)), v.summary
    assert "GetTimeoutError" not in v.summary


def test_slurm_cgroup_oom_kill_is_joined_to_the_task_its_memory_cgroup_names():
    """The kernel's OOM account prints the killed process's memory cgroup, .../job_1/step_0/user/task_1: under srun,
    one process a rank, that task is rank 1 (recorded on the GPU machine, tests/data/launchers/slurm-gpu/oom)."""
    case = LAUNCHERS / "slurm-gpu" / "oom"
    v = run(*(case / x for x in ("console.log", "dmesg.txt", "scontrol.txt", "jobcomp.txt"))).verdict
    assert "joined by the Slurm task its memory cgroup names (" in v.summary and "dmesg.txt:200)" in v.summary
    found = [f.message for f in v.findings if f.code == "host-record"]
    assert len(found) == 2 and all("the whole job's record: it names no task or process" in t for t in found), found


def test_slurm_task_numbers_join_only_ranks_srun_named(write):
    """A memory cgroup's task that srun never reported is not made a rank (srun may run one torchrun a node)."""
    console = write("console.log", "srun: error: vm: task 1: Out Of Memory")
    kernel = write("dmesg.txt",
                   "[Wed Nov 25 17:20:01 2026] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=task_7,"
                   "mems_allowed=0,oom_memcg=/system.slice/vm_slurmstepd.scope/job_1,task_memcg=/system.slice/"
                   "vm_slurmstepd.scope/job_1/step_0/user/task_7,task=python3,pid=2672,uid=0",
                   "[Wed Nov 25 17:20:01 2026] Memory cgroup out of memory: Killed process 2672 (python3) "
                   "total-vm:637564kB, anon-rss:603520kB, file-rss:7452kB, shmem-rss:0kB, UID:0 pgtables:1252kB")
    v = run(console, kernel).verdict
    assert v.culprit_ranks == (1,) and "joined by the Slurm task" not in v.summary, v.summary


def test_a_host_oom_reported_by_srun_is_not_called_a_cuda_allocation():
    v = run(LAUNCHERS / "slurm-gpu" / "oom" / "console.log").verdict
    assert "failed first: srun: error: vm: task 1: Out Of Memory (" in v.summary and "CUDA" not in v.summary
