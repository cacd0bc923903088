"""Jobs recorded under the real launchers (tools/launchers/*.sh: Slurm, Open MPI, pdsh running torchrun; gloo on
CPU), each read as the launcher's console and as its per-rank files: the culprit rank and the kind of failure are
what the run did (tests/data/launchers/truth.json), whichever form is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run

from ncclcheck.evidence import formats
from ncclcheck.evidence.formats.source import AT
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.reader import Source
from ncclcheck.evidence.types import WorkerDied, WorkerStarted

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


def test_open_mpi_names_the_rank_in_its_tag_and_its_output_folders():
    assert formats.rank_tag("[1,3]<stderr>:[rank3]: Traceback (most recent call last):") == 3
    assert formats.path_rank("mpi/kill/ranks/1/rank.12/stderr") == 12
    assert formats.path_rank("slurm/raise/tasks/7.log") == 7
    assert formats.path_rank("logs/train.log") is None


def test_torchrun_names_the_rank_in_its_log_dir_and_a_file_named_for_its_rank_is_read_too():
    """torchrun's --log-dir (DIR/<run id>/attempt_N/<local rank>/stderr.log, as tests/data/real4/detail holds) is a
    path rank its format declares; a file its writer named for its rank (rank6.log) the reader reads itself."""
    assert formats.path_rank("real4/detail/attempt_0/3/stderr.log") == 3
    assert formats.path_rank("logs/none_x1/attempt_2/11/error.json") == 11
    assert formats.path_rank("logs/attempt_0/3/train.log") is None
    paths = ("real4/detail/attempt_0/3/stderr.log", "C:\\runs\\attempt_1\\5\\stdout.log", "runs/rank_6.log",
             "x/RANK-2", "x/attempt_0/4/rank1.txt", "x/attempt_0/4/train.log")
    assert [Source(p, p).path_rank for p in paths] == [3, 5, 6, 2, 1, None]


def test_a_two_line_open_mpi_report_names_the_first_process_that_failed():
    lines = formats.mpi.FORMAT.reader()
    assert not lines.feed("  Process name: [[11946,1],2]", AT)
    (end,) = lines.feed("  Exit code:    1", AT)
    assert (end.rank, end.exitcode, end.source) == (2, 1, "Open MPI")
    assert not lines.feed("  Exit code:    1", AT)  # no worker named before it


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
    # Slurm's step line (its oom-kill event, read since old and new Slurm's words are both the cause) comes first.
    assert v.culprit_ranks == (1,) and v.cause is not None and v.cause.cause.kind == "host_oom"
    assert "failed first: 0: slurmstepd-vm: error: Detected 1 oom-kill event(s) in StepId=1.0." in v.summary
    assert "CUDA" not in v.summary


def test_deepspeed_names_each_worker_it_spawned_by_its_node_and_local_rank():
    """Two nodes of 3 and 2 workers behind pdsh's labels, lines interleaved: a worker's global rank is the one of its
    node's ranks whose remainder by num_local_procs is its --local_rank (launch.py)."""
    spawns = formats.deepspeed.FORMAT.reader()
    mapping = "global_rank_mapping=defaultdict(<class 'list'>, {'n0': [0, 1, 2], 'n1': [3, 4]})"
    lines = [f"n0: [2026-11-25 15:27:48,056] [INFO] [launch.py:169:main] {mapping}",
             f"n1: [2026-11-25 15:27:48,056] [INFO] [launch.py:169:main] {mapping}",
             "n1: [2026-11-25 15:27:48,056] [INFO] [launch.py:158:main] nnodes=2, num_local_procs=2, node_rank=1",
             "n0: [2026-11-25 15:27:48,056] [INFO] [launch.py:158:main] nnodes=2, num_local_procs=3, node_rank=0",
             "n1: [2026-11-25 15:27:48,061] [INFO] [launch.py:245:main] process 71 spawned with command: ['python3', "
             "'-u', 'w.py', '--local_rank=0', 'kill', '1']",
             "n0: [2026-11-25 15:27:48,061] [INFO] [launch.py:245:main] process 81 spawned with command: ['python3', "
             "'-u', 'w.py', '--local_rank=2']",
             "n1: [2026-11-25 15:27:48,061] [INFO] [launch.py:245:main] process 72 spawned with command: ['python3', "
             "'-u', 'w.py', '--local_rank=1']"]
    assert [[(e.pid, e.rank, e.own_log) for e in spawns.feed(x, AT) if isinstance(e, WorkerStarted)]
            for x in lines] == [[], [], [], [], [(71, 4, False)], [(81, 2, False)], [(72, 3, False)]]


def test_deepspeed_rankless_kill_is_the_one_worker_that_wrote_no_error(write):
    """DeepSpeed's exit line gives the signal but not the worker; it spawned ranks 0-2 into this console, ranks 0 and
    2 each wrote that their peer went away: rank 1, which wrote nothing, is the one killed."""
    head = "[2026-11-25 15:27:48,056] [INFO] [launch.py:{}:main] "
    log = write("console.log",
                head.format(158) + "nnodes=1, num_local_procs=3, node_rank=0",
                head.format(169) + "global_rank_mapping=defaultdict(<class 'list'>, {'localhost': [0, 1, 2]})",
                *(head.format(245) + f"process {80 + r} spawned with command: ['python3', '-u', 'w.py', "
                  f"'--local_rank={r}']" for r in range(3)),
                *(f"[rank{r}]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer "
                  "[127.0.0.1]:30120. This is typically caused by a remote worker crashing." for r in (0, 2)),
                "[2026-11-25 15:28:08,874] [ERROR] [launch.py:259:sigkill_handler] ['python3', '-u', 'w.py', "
                "'--local_rank=2'] exits with return code = -9")
    v = run(log).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [1], "host_kill")
    assert v.cause.detail.startswith("rank 1 died of SIGKILL with no traceback: the launcher reports a worker dead of "
                                     "SIGKILL without naming it, and rank 1 is the only rank that wrote no error")


def test_ray_reads_a_worker_that_died_without_an_error_of_its_own(write):
    """Ray's controller reports the dead worker's actor (its PID) and that its process died (SYSTEM_ERROR): that rank
    died by a signal no line names, and Ray's list of what may have caused it is not read as the cause."""
    ctl = "(TrainController pid=41) "
    log = write("ray.log",
                ctl + "- (ip=10.0.0.2, pid=55) world_rank=0, local_rank=0, node_rank=0",
                ctl + "- (ip=10.0.0.2, pid=56) world_rank=1, local_rank=1, node_rank=0",
                "(RayTrainWorker pid=55) RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer "
                "[127.0.0.1]:11482. This is typically caused by a remote worker crashing.",
                ctl + "[Rank 0 Error Snippet]:",
                ctl + "[Rank 1 Error Snippet]:",
                ctl + "The actor died unexpectedly before finishing this task.",
                ctl + "\tclass_name: RayTrainWorker",
                ctl + "\tpid: 56",
                ctl + "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker "
                "exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common "
                "causes include: (1) the process was killed by the OOM killer due to high memory usage")
    v = run(log).verdict
    assert v.cause is not None
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [1], "host_kill")
    assert v.cause.detail == ("rank 1 died with no error of its own, by a signal no line names (The actor is dead "
                              "because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
                              "detail: Worker unexpectedly exits with a connection error code 2. End of file.)")


def test_ray_names_the_dead_worker_by_its_snippet_where_no_pid_is_paired():
    deaths = formats.ray.FORMAT.reader()
    said = "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR"
    assert [list(deaths.feed(x, AT)) for x in ("[Rank 0,2 Error Snippet]:", "[Rank 3 Error Snippet]:", said)] == \
        [[], [], [WorkerDied(None, (3,), said, AT)]]
    assert not deaths.feed("\tpid: 77", AT) and list(deaths.feed(said, AT)) == [WorkerDied(77, (3,), said, AT)]
    assert not deaths.feed(said.replace("SYSTEM_ERROR", "INTENDED_USER_EXIT"), AT)


def test_a_nodes_local_tag_behind_its_label_is_placed_by_one_line_that_carries_both(write):
    """pdsh runs torchrun on each node: "node1: [default1]:" is node1's local rank 1. torchrun numbers a node's
    workers consecutively, so node1's "[default0]:[rank2]:" places its [default1] at rank 3, even on lines before it;
    node0's [default1] stays rank 1."""
    log = write("console.log",
                "node1: [default1]:step 0 done",
                "node0: [default1]:[rank1]: RuntimeError: a bad batch",
                "node1: [default0]:[rank2]: Traceback (most recent call last):",
                "node1: [default1]:step 1 done")
    a = run(log)
    assert [s.rank for s in a.job.ranks if s.present] == [1, 2, 3]
    assert a.job.rank(1).ending.kind.value == "exception"


def test_a_node_label_whose_lines_disagree_places_no_tag(write):
    log = write("console.log",
                "node1: [default0]:[rank2]: step 0 done",
                "node1: [default0]:[rank4]: step 0 done",
                "node1: [default1]:step 1 done")
    assert [s.rank for s in run(log).job.ranks if s.present] == [2, 4]


def test_torchrun_agents_local_rank_behind_a_node_label_is_that_nodes(write):
    """pdsh/hang: node1's agent reports "local_rank: 0" failed: that is rank 2 (node1's [default0] is [rank2]), not
    rank 0; behind a label whose node no line places, the local rank is left unplaced. Each agent's failure table,
    behind the same label, names the global ranks itself (and speaks for the agent's lines)."""
    lines = (LAUNCHERS / "pdsh" / "hang" / "console.log").read_text().splitlines()
    scan = run(LAUNCHERS / "pdsh" / "hang" / "console.log").scans[0]
    assert sorted((e.rank, e.local_rank, e.root_cause) for e in scan.elastic) == [
        (0, 0, False), (1, 1, True), (2, 0, True), (3, 1, False)]
    table = [i for i, x in enumerate(lines) if x.endswith("ChildFailedError: ") or x.endswith("=" * 60)]
    cut = set().union(*(range(a, b + 1) for a, b in zip(table[0::3], table[2::3], strict=True)))
    scan = run(write("console.log", "\n".join(x for i, x in enumerate(lines) if i not in cut))).scans[0]
    assert sorted((e.rank, e.local_rank) for e in scan.elastic) == [(1, 1), (2, 0)]
    log = write("console.log", "node7: E1125 15:07:58.888000 25659 torch/distributed/elastic/multiprocessing/api.py:1002] "
                "failed (exitcode: 1) local_rank: 0 (pid: 25675) of binary: .venv/bin/python")
    assert [(e.rank, e.local_rank) for e in run(log).scans[0].elastic] == [(None, 0)]


def test_deepspeed_lines_are_read_behind_their_own_words_not_the_loggers_file_name():
    """The launcher's lines are read by the words the reader keeps them by: a logger format without "launch.py" in
    its header still names the worker it spawned."""
    p = LogParser("console.log", None)
    head = "[2026-11-25 15:27:48,056] [INFO] [ds.py:1:main] "
    for i, line in enumerate(("global_rank_mapping=defaultdict(<class 'list'>, {'localhost': [0, 1]})",
                              "nnodes=1, num_local_procs=2, node_rank=0",
                              "process 81 spawned with command: ['python3', '-u', 'w.py', '--local_rank=1']"), 1):
        p.feed(i, (head + line).encode())
    scan = p.finish(3, 200)
    assert {(f.key, f.value, f.who.global_rank) for f in scan.facts} == {("pid", "81", 1), ("spawned", "81", 1),
                                                                         ("launched", "DeepSpeed", None)}
    assert scan.ranks_seen == (1,)
