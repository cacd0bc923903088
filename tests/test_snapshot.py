"""snapshot's parts without a live job: discovery, py-spy output, dump pipes, GPU state, verdict, archive, lint."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import time
from pathlib import Path

import pytest
from conftest import DATA, REAL
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import archive as evidence_archive
from ncclcheck.evidence.formats.pyspy import collective_of
from ncclcheck.evidence.frdump import Frame, parse_dump
from ncclcheck.evidence.types import Fact, FileScan, LiveStack, LiveThread, Loc, Who
from ncclcheck.findings import Severity
from ncclcheck.job import live
from ncclcheck.job.analyze import analyze_scans
from ncclcheck.job.model import Analysis
from ncclcheck.probe.host import Host
from ncclcheck.snapshot import archive, collect, dumppipe, gpu, procs, pyspy
from ncclcheck.snapshot.settings import lint_ranks

SNAP = DATA / "snapshot"
SLEEP_DUMPS = REAL / "sleep-info" / "dumps"
runner = CliRunner()


# ---------------------------------------------------------------- discovery

def _torchrun_env(rank: int, **extra: str) -> dict[str, str]:
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "abc", "NCCL_DEBUG": "INFO", "HF_TOKEN": "secret",
            "HOME": "/home/u", "PATH": "/usr/bin", **extra}


PY = ("/usr/bin/python3", "-u", "train.py")
SLURM = {"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2"}
PROCS = [
    procs.ProcInfo(101, 100, _torchrun_env(0), PY, "/w"),
    procs.ProcInfo(102, 100, _torchrun_env(1), PY, "/w"),
    procs.ProcInfo(103, 100, _torchrun_env(2), PY, "/w"),
    procs.ProcInfo(110, 101, _torchrun_env(0), PY, "/w"),  # a data loader worker of rank 0
    procs.ProcInfo(200, 1, {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29501"}, PY),
    procs.ProcInfo(300, 299, {"SLURM_PROCID": "0", **SLURM}, ("/bin/bash", "-c", "python x.py")),
    procs.ProcInfo(301, 300, {"SLURM_PROCID": "0", **SLURM}, ("python", "x.py")),
    procs.ProcInfo(302, 299, {"SLURM_PROCID": "1", **SLURM}, ("/bin/bash", "-c", "python x.py")),
    procs.ProcInfo(303, 302, {"SLURM_PROCID": "1", **SLURM}, ("python", "x.py")),
    procs.ProcInfo(400, 1, {"RANK": "0"}, PY),  # RANK alone is no launcher's doing
    procs.ProcInfo(500, 1, _torchrun_env(0), PY),  # ncclcheck itself, started inside the job's shell
]
PARENTS = {p.pid: p.ppid for p in PROCS} | {100: 1, 299: 1}


def test_find_jobs_groups_ranks_and_skips_children_and_self():
    d = procs.find_jobs(PROCS, exclude=[500], parents=PARENTS)
    assert [(j.label, [(r.rank, r.pid) for r in j.ranks], j.world_size) for j in d.jobs] == [
        ("torchelastic run abc, MASTER_ADDR:PORT 127.0.0.1:29500", [(0, 101), (1, 102), (2, 103)], 3),
        ("MASTER_ADDR:PORT h:29501", [(0, 200)], 1),
        ("Slurm job 77.0", [(0, 301), (1, 303)], 2),
    ]
    assert d.notes == ()
    rank0 = d.jobs[0].ranks[0]
    assert "HF_TOKEN" not in rank0.env and "PATH" not in rank0.env
    assert rank0.env["NCCL_DEBUG"] == "INFO" and rank0.local_rank == 0


def test_two_processes_claiming_one_rank_are_reported():
    twin = procs.ProcInfo(104, 1, _torchrun_env(2), PY)
    d = procs.find_jobs([*PROCS[:3], twin], parents=PARENTS)
    assert [r.pid for r in d.jobs[0].ranks] == [101, 102, 103]
    assert d.notes == ("several processes claim rank 2 of torchelastic run abc, MASTER_ADDR:PORT 127.0.0.1:29500 "
                       "(pids 103, 104); using 103",)


def test_candidates_by_rank_pid_launcher_pid_or_all():
    d = procs.find_jobs(PROCS, exclude=[500], parents=PARENTS)
    assert procs.candidates(d, 102, PARENTS) == (d.jobs[0],)
    assert procs.candidates(d, 100, PARENTS) == (d.jobs[0],)  # torchrun's own pid
    assert procs.candidates(d, 299, PARENTS) == (d.jobs[2],)
    assert procs.candidates(d, None, PARENTS) == d.jobs  # the caller must choose
    assert procs.candidates(d, 1, PARENTS) == d.jobs  # init is above every job: no choice made
    assert procs.candidates(d, 4242, PARENTS) == ()


# ---------------------------------------------------------------- py-spy

def test_parse_real_pyspy_output_main_thread_first():
    raw = (SNAP / "pyspy-two-threads.json").read_text()
    pid = json.loads(raw)[0]["pid"]
    threads = pyspy.parse(raw, pid)
    assert [t.name for t in threads] == ["MainThread", "helper"]  # py-spy listed the helper first
    assert [(f.name, f.line) for f in threads[0].frames] == [("main", 13), ("<module>", 16)]
    assert threads[0].frames[0].file.endswith("two_threads.py")
    assert [f.name for f in threads[1].frames][:2] == ["worker", "Thread.run"]


def test_collective_from_real_stacks():
    waiting = pyspy.parse((SNAP / "pyspy-waiting.json").read_text(), 0)
    sleeping = pyspy.parse((SNAP / "pyspy-sleeping-native.json").read_text(), 0)
    assert collective_of(waiting[0].frames) == "all_reduce"
    assert collective_of(sleeping[0].frames) is None
    assert live.code_frame(waiting[0].frames).line == 35  # hang_job.py: dist.all_reduce(t)
    assert live.code_frame(sleeping[0].frames).line == 34  # time.sleep(3600), native frames skipped
    assert live.native_call(sleeping[0].frames) == "time_sleep"
    # a user function named like a collective, outside torch.distributed, is not one
    assert collective_of((Frame("all_reduce", "/w/mylib/comm.py", 3),)) is None


def test_parse_rejects_non_json():
    with pytest.raises(pyspy.StackError, match="no JSON"):
        pyspy.parse("Process 12: python\n", 12)


def _fake_py_spy(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "py-spy"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


PTRACE_REFUSED = "echo \"Permission Denied: Try running again with elevated permissions by going 'sudo env \\\"PATH=\\$PATH\\\" !!'\" >&2; exit 1"
NOT_PYTHON = "printf 'Error: Failed to find python version from target process\\n\\nStack backtrace:\\n   0: anyhow\\n' >&2; exit 1"


def test_take_classifies_failures(tmp_path: Path):
    with pytest.raises(pyspy.StackError) as e:
        pyspy.take(_fake_py_spy(tmp_path, PTRACE_REFUSED), 1, False, 5)
    assert e.value.ptrace and str(e.value).startswith("py-spy failed: Permission Denied: Try running again")
    with pytest.raises(pyspy.StackError) as e:
        pyspy.take(_fake_py_spy(tmp_path, NOT_PYTHON), 1, False, 5)
    assert not e.value.ptrace
    assert str(e.value) == "py-spy failed: Error: Failed to find python version from target process"
    with pytest.raises(pyspy.StackError, match=r"longer than 0.5 s"):
        pyspy.take(_fake_py_spy(tmp_path, "exec sleep 5"), 1, False, 0.5)


def test_command_is_nonblocking_unless_native():
    assert pyspy.command("py-spy", 7, False) == ["py-spy", "dump", "--pid", "7", "--json", "--nonblocking"]
    assert pyspy.command("py-spy", 7, True)[-1] == "--native"


def test_ptrace_help_names_scope_and_capability(tmp_path: Path):
    (tmp_path / "proc/sys/kernel/yama").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/yama/ptrace_scope").write_text("1\n")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/status").write_text("Name:\tx\nCapEff:\t00000000a80425fb\n")  # docker's default set
    text = pyspy.ptrace_help(str(tmp_path))
    assert "kernel.yama.ptrace_scope is 1" in text and "--cap-add=SYS_PTRACE" in text
    (tmp_path / "proc/sys/kernel/yama/ptrace_scope").write_text("0\n")
    (tmp_path / "proc/self/status").write_text("CapEff:\t000001fffeffffff\n")
    assert pyspy.ptrace_help(str(tmp_path)) == "run ncclcheck as the job's user or as root"


# ---------------------------------------------------------------- GPU state

def test_gpu_state_per_pid():
    state = gpu.parse("0, GPU-aaa, 100, 3100, 143771\n1, GPU-bbb, 0, 3100, 143771\nbad line\n",
                      "4242, GPU-aaa, 2900\n4243, GPU-bbb, 2900\n")
    assert state.util_of(4242) == 100 and state.util_of(4243) == 0 and state.util_of(1) is None
    assert state.of_pid(4243) == (gpu.GpuUse(1, "GPU-bbb", 0, 3100, 143771),)


# ---------------------------------------------------------------- dump pipes

def _rank(tmp_path: Path, env: dict[str, str], rank: int = 0) -> procs.RankProc:
    return procs.RankProc(os.getpid(), rank, rank, 2, PY, str(tmp_path), "u", env)


def test_plan_says_why_there_is_no_pipe(tmp_path: Path):
    assert "no dump pipe (neither TORCH_NCCL_DEBUG_INFO_PIPE_FILE nor TORCH_FR_DEBUG_INFO_PIPE_FILE" in (
        dumppipe.plan(_rank(tmp_path, {})).reason)
    off = dumppipe.plan(_rank(tmp_path, {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/tmp/p_"}))
    assert off.pipe is None and "trace buffer is off" in off.reason
    on = dumppipe.plan(_rank(tmp_path, {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "p_", "TORCH_FR_BUFFER_SIZE": "2000",
                                        "TORCH_FR_DUMP_TEMP_FILE": "/d/trace_"}, rank=3))
    assert on.pipe.endswith(f"{tmp_path}/p_3.pipe")  # relative to the rank's working directory
    assert [p.endswith("/d/trace_3") for p in on.dumps] == [True]
    default = dumppipe.plan(_rank(tmp_path, {"HOME": "/home/u"}, rank=1))
    assert sorted(p.split("/root", 1)[-1] if p.startswith("/proc/") else p for p in default.dumps) == [
        "/home/u/.cache/torch/comm_lib_trace_rank_1", "/tmp/nccl_trace_rank_1"]


def test_trigger_writes_to_the_pipe_and_collects_the_new_dump(tmp_path: Path):
    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": f"{tmp_path}/pipe_", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
           "TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/trace_rank_"}
    plan = dumppipe.plan(_rank(tmp_path, env))
    assert dumppipe.trigger(plan).startswith(f"{plan.pipe} does not exist")
    os.mkfifo(tmp_path / "pipe_0.pipe")
    assert dumppipe.trigger(plan) == f"nothing reads {plan.pipe}: the rank's monitor thread is not running"
    reader = os.open(tmp_path / "pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)  # as PyTorch opens it
    try:
        before = dumppipe.stamps([plan])
        assert before == {plan.dumps[0]: None}
        assert dumppipe.trigger(plan) is None
        assert os.read(reader, 16) == b"1"
    finally:
        os.close(reader)
    data = (SLEEP_DUMPS / "nccl_trace_rank_0").read_bytes()
    (tmp_path / "trace_rank_0").write_bytes(data)  # what the rank writes when asked
    got, why = dumppipe.collect([plan], before, time.time() + 2)
    assert why == {} and [(c.rank, c.data == data, len(c.dump.entries)) for c in got] == [(0, True, 4)]


def test_old_dump_files_are_not_taken_for_new_ones(tmp_path: Path):
    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": f"{tmp_path}/pipe_", "TORCH_FR_BUFFER_SIZE": "1",
           "TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/trace_rank_"}
    plan = dumppipe.plan(_rank(tmp_path, env))
    old = tmp_path / "trace_rank_0"
    old.write_bytes((SLEEP_DUMPS / "nccl_trace_rank_0").read_bytes())  # a dump from a moment ago
    before = dumppipe.stamps([plan])
    got, why = dumppipe.collect([plan], before, time.time() + 0.3, poll=0.05)
    assert got == [] and why[0].startswith("no new dump appeared in time at ")
    os.utime(old, ns=(before[plan.dumps[0]] + 1000, before[plan.dumps[0]] + 1000))  # the rank rewrote it
    got, why = dumppipe.collect([plan], before, time.time() + 0.3, poll=0.05)
    assert [c.rank for c in got] == [0] and why == {}


def test_not_a_pipe(tmp_path: Path):
    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": f"{tmp_path}/pipe_", "TORCH_FR_BUFFER_SIZE": "10"}
    (tmp_path / "pipe_0.pipe").write_text("")
    plan = dumppipe.plan(_rank(tmp_path, env))
    assert dumppipe.trigger(plan) == f"{plan.pipe} is not a named pipe"


# ---------------------------------------------------------------- the live verdict (the job model's)

MAIN = Frame("main", "/w/train.py", 47)


def _stack(rank: int, *frames: Frame, collective: str | None = None, util: int | None = None,
           sources: tuple[tuple[str, int, str], ...] = ()) -> FileScan:
    st = LiveStack(rank, 1000 + rank, "node1", (LiveThread("MainThread", frames),), collective, util,
                   Loc(f"node1:rank{rank}", 0), sources)
    return FileScan(file=f"node1:rank{rank}", path_rank=rank, lines=0, bytes_read=0, ranks_seen=(rank,), live=(st,))


def _waiting(rank: int, util: int | None = None, op: str = "all_reduce") -> FileScan:
    return _stack(rank, Frame(op, "/py/torch/distributed/distributed_c10d.py", 2950),
                  Frame("main", "/w/train.py", 52), collective=op, util=util)


def _dump(rank: int) -> FileScan:
    name = f"nccl_trace_rank_{rank}"
    d = parse_dump((SLEEP_DUMPS / name).read_bytes(), name)
    return FileScan(file=name, path_rank=rank, lines=0, bytes_read=0, ranks_seen=(rank,), dump=d)


def _world(n: int) -> FileScan:
    """What the snapshot knows of the job's size (each rank's WORLD_SIZE), as the archive carries it."""
    return FileScan(file="node1:job", path_rank=None, lines=0, bytes_read=0, ranks_seen=(),
                    facts=(Fact(Who(global_rank=0), "world_size", str(n), Loc("node1:job", 0)),))


def _live(*scans: FileScan, world: int | None = None) -> Analysis:
    return analyze_scans([*scans, *((_world(world),) if world else ())])


def test_verdict_host_code_root_and_grouped_waiters():
    a = _live(_waiting(0, 100), _waiting(1, 100), _waiting(2, 100),
              _stack(3, MAIN, util=0, sources=(("/w/train.py", 47, "time.sleep(600)"),)), world=4)
    v = a.verdict
    assert v.kind.value == "lagging_rank"
    assert v.summary == ("Rank 3 is in host code at train.py:47 `time.sleep(600)`, GPU idle; ranks 0-2 wait in "
                         "all_reduce (train.py:52).")
    assert (v.culprit_ranks, v.waiting_ranks, v.unknown_ranks) == ((3,), (0, 1, 2), ())
    assert [(g.ranks, g.state, g.collective) for g in a.job.stack_groups] == [((0, 1, 2), "waiting", "all_reduce"),
                                                                               ((3,), "host_code", None)]


def test_verdict_from_nccl_stacks_and_real_dumps():
    """With NCCL the waiting rank's host thread is past the call; its dump holds the pending collective."""
    sync = Frame("main", "/w/train.py", 53)
    a = _live(_stack(0, sync, util=100), _dump(0), _stack(1, MAIN, util=0), _dump(1))
    assert a.verdict.kind.value == "lagging_rank"
    assert a.verdict.summary == ("Rank 1 is in host code at train.py:47, GPU idle; rank 0 waits in all_reduce #4 "
                                 "(incident.py:41).")
    p0 = a.job.live[0]
    assert (p0.state, p0.seq, p0.pg, p0.host_where, p0.evidence) == ("waiting", 4, "0", sync, "stack+dump")


def test_a_rank_without_dump_joins_its_numbered_twins():
    a = _live(_stack(0, Frame("main", "/w/train.py", 53)), _dump(0), _waiting(2), _stack(1, MAIN), world=3)
    assert a.verdict.kind.value == "lagging_rank"
    assert a.verdict.summary.endswith("ranks 0, 2 wait in all_reduce #4 (incident.py:41).")


SYNC = (Frame("synchronize", "/py/torch/cuda/__init__.py", 1162), Frame("main", "/w/train.py", 53))


def test_verdict_nccl_without_dumps_host_waits_on_the_gpu():
    """Real layout of the 4xH200 run without dumps: ranks 0-2 in torch.cuda.synchronize, GPU 100 %; rank 3 asleep."""
    a = _live(*(_stack(r, *SYNC, util=100) for r in (0, 1, 2)), _stack(3, MAIN, util=0), world=4)
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.waiting_ranks) == ("lagging_rank", (3,), (0, 1, 2))
    assert v.summary == ("Rank 3 is in host code at train.py:47, GPU idle; ranks 0-2 wait on the GPU in "
                         "torch.cuda.synchronize (train.py:53), GPU 100% busy: with NCCL, likely inside a collective "
                         "that rank 3 has not joined (a flight-recorder dump would tell).")
    assert [(g.ranks, g.state) for g in a.job.stack_groups] == [((0, 1, 2), "gpu_wait"), ((3,), "host_code")]
    native = (Frame("cuCtxSynchronize_v2", "/lib/libcuda.so", 0), Frame("main", "/w/train.py", 53))
    assert live.cuda_wait(native) == "cuCtxSynchronize_v2"
    assert live.cuda_wait((Frame("cudaMemcpyAsync", "/lib/libcudart.so", 0), MAIN)) is None


def test_verdict_dumps_alone():
    """Dumps with no stack are read by the rest of the job model (no live positions): rank 1 completed #3, rank 0
    waits in #4."""
    a = _live(_dump(0), _dump(1))
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.waiting_ranks) == ("lagging_rank", (1,), (0,))
    assert a.job.live == () and a.job.stack_groups == ()


def test_verdict_all_waiting_elsewhere_no_hang_unknown():
    every = _live(_waiting(0), _waiting(1), world=2).verdict
    assert (every.kind.value, every.culprit_ranks) == ("all_ranks_stuck", ())
    other = _live(_waiting(0), _waiting(1), world=8).verdict
    assert (other.kind.value, other.unknown_ranks) == ("incomplete_evidence", (2, 3, 4, 5, 6, 7))
    calm = _live(_stack(0, MAIN, util=0), _stack(1, MAIN, util=87), world=2)
    assert calm.verdict.kind.value == "no_failure" and "Rank 1 shows a busy GPU" in calm.verdict.summary
    assert [g.ranks for g in calm.job.stack_groups] == [(0, 1)]
    empty = FileScan(file="x", path_rank=0, lines=0, bytes_read=0, ranks_seen=(0,), live=(
        LiveStack(0, 1, None, (), None, None, Loc("x", 0)),))
    nothing = _live(empty, world=1)
    assert (nothing.verdict.kind.value, nothing.verdict.summary) == (
        "incomplete_evidence", "No rank's stack or dump could be read: nothing to decide.")


def test_native_address_frames_do_not_split_groups():
    inner = Frame("pthread_cond_wait", "/lib/libc.so.6", 0)
    a = _stack(0, Frame("0x7f2448ea3f16", "/lib/libc.so.6", 0), inner, MAIN)
    b = _stack(1, Frame("0x7f78ec8a3f16", "/lib/libc.so.6", 0), inner, MAIN)
    assert [(g.ranks, g.frames) for g in _live(a, b, world=2).job.stack_groups] == [((0, 1), (inner, MAIN))]


# ---------------------------------------------------------------- archive

def _snapshot(tmp_path: Path) -> collect.Snapshot:
    waiting = pyspy.parse((SNAP / "pyspy-waiting.json").read_text(), 0)
    sleeping = pyspy.parse((SNAP / "pyspy-sleeping-native.json").read_text(), 0)
    ranks = tuple(procs.RankProc(4000 + r, r, r, 2, PY, "/w", "u", {"NCCL_DEBUG": "INFO", "RANK": str(r)})
                  for r in (0, 1))
    job = procs.Job(("abc", "127.0.0.1", "29500", "", ""), "torchelastic run abc", ranks, 2)
    data = (SLEEP_DUMPS / "nccl_trace_rank_0").read_bytes()
    dump = dumppipe.Collected(0, "/tmp/fr/dump_rank_0", data, parse_dump(data, "dump_rank_0"))
    results = (
        collect.RankResult(ranks[0], waiting, "all_reduce", 100, dump=dump),
        collect.RankResult(ranks[1], sleeping, None, 0, dump_note="no new dump appeared in time at /tmp/fr/x"),
    )
    state = gpu.parse("0, GPU-a, 100, 1, 2\n1, GPU-b, 0, 1, 2\n", "4000, GPU-a, 1\n4001, GPU-b, 1\n")
    return collect.Snapshot("node1", 1_700_000_000.0, 0.5, job, results, state, sources={(MAIN.file, 47): "x"})


def test_archive_round_trip(tmp_path: Path):
    s = _snapshot(tmp_path)
    path = tmp_path / "snapshot-node1.tar.gz"
    archive.write(str(path), s, {"verdict": {"kind": "x"}})
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["snapshot.json", "dumps/dump_rank_0"]
    scans = evidence_archive.read_archive(str(path))
    assert [(f.file, f.path_rank, f.dump is not None, len(f.live)) for f in scans] == [
        ("snapshot-node1.tar.gz:rank0", 0, False, 1), ("snapshot-node1.tar.gz:dumps/dump_rank_0", 0, True, 0),
        ("snapshot-node1.tar.gz:rank1", 1, False, 1)]
    live = scans[0].live[0]
    assert (live.global_rank, live.pid, live.host, live.collective, live.gpu_util) == (0, 4000, "node1", "all_reduce",
                                                                                      100)
    assert live.threads == s.ranks[0].threads
    assert [(f.key, f.value) for f in scans[0].facts] == [("NCCL_DEBUG", "INFO"), ("launcher_world", "2"), ("pid", "4000"),
                                                         ("host", "node1")]
    from_archive = analyze_scans(scans).verdict
    taken = analyze_scans(archive.snapshot_scans(s)).verdict  # the same document, its files named by host
    assert (from_archive.kind, from_archive.summary, from_archive.culprit_ranks, from_archive.waiting_ranks) == (
        taken.kind, taken.summary, taken.culprit_ranks, taken.waiting_ranks)
    assert (from_archive.kind.value, from_archive.culprit_ranks) == ("lagging_rank", (1,))


def test_real_archive_from_four_h200():
    """Written by `ncclcheck snapshot --out` on 4xH200 (torch 2.11, NCCL 2.28.9): rank 3 asleep, ranks 0-2 in
    all_reduce #4 on the GPU, their host threads in torch.cuda.synchronize; dumps collected through the pipes."""
    path = SNAP / "h200x4" / "snapshot-nccl.tar.gz"
    doc, dumps = evidence_archive.load(str(path))
    assert sorted(dumps) == [f"dumps/dump_rank_{r}" for r in range(4)]
    scans = evidence_archive.read_archive(str(path))
    a = analyze_scans(scans)
    v = a.verdict
    assert v.summary == ("Rank 3 is in host code at hang_job.py:34 `time.sleep(3600)  # SLEEP`, GPU idle; ranks 0-2 "
                         "wait in all_reduce #4 (hang_job.py:35).")
    stored = doc["verdict"]  # written by schema 1 (its own verdict engine, which called the culprits root_ranks)
    assert doc["schema_version"] == 1
    assert (stored["kind"], stored["root_ranks"], stored["waiting_ranks"]) == ("rank_in_host_code",
                                                                            list(v.culprit_ranks),
                                                                            list(v.waiting_ranks))
    assert v.kind.value == "lagging_rank"
    assert [(p.rank, p.state, p.seq, p.gpu_util, p.host_where.line) for p in a.job.live] == [
        (0, "waiting", 4, 100, 37), (1, "waiting", 4, 100, 37), (2, "waiting", 4, 100, 37), (3, "host_code", None, 0, 34)]
    assert [(g.ranks, g.state, g.pending) for g in a.job.stack_groups] == [((0, 1, 2), "waiting", "all_reduce #4"),
                                                                          ((3,), "host_code", None)]


def test_real_archive_of_a_two_group_deadlock():
    """Recorded on CPU with gloo (README beside it): rank 0 blocked in the dp line, rank 1 in the cp line, each
    waiting for the other to join its call. Different lines are different calls: a ring, not one stuck collective."""
    a = analyze_scans(evidence_archive.read_archive(str(SNAP / "gloo_cycle" / "snapshot.tar.gz")))
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.cycle, v.waiting_ranks) == ("deadlock", (), (0, 1), (0, 1))
    assert v.summary == (
        "Deadlock across process groups: rank 0 is blocked in all_reduce at cycle_job.py:29 (`dist.all_reduce(t, "
        "group=dp)  # DP`) and waits there for rank 1; rank 1 is blocked in all_reduce at cycle_job.py:32 "
        "(`dist.all_reduce(t, group=cp)  # CP`) and waits there for rank 0. A collective returns only once every "
        "member of its group has called it, and each of these ranks is blocked in a different call: they issued "
        "these collectives in different orders. No single rank is the culprit: every one of ranks 0-1 waits for "
        "another.")
    assert any("same order on every rank" in s for s in v.next_steps)


def test_ranks_at_one_call_site_are_not_a_ring():
    """The same line on every rank may be one collective every member joined: no order can be told from it."""
    call = (Frame("all_reduce", "/py/torch/distributed/distributed_c10d.py", 2950),)
    same = _live(*(_stack(r, *call, Frame("main", "/w/train.py", 52), collective="all_reduce") for r in (0, 1)),
                 world=2).verdict
    assert (same.kind.value, same.cycle) == ("all_ranks_stuck", ())
    apart = _live(*(_stack(r, *call, Frame("main", "/w/train.py", 52 + r), collective="all_reduce") for r in (0, 1)),
                  world=2).verdict
    assert (apart.kind.value, apart.cycle, apart.culprit_ranks) == ("deadlock", (0, 1), ())
    # NCCL: a host blocked in torch.cuda.synchronize waits behind GPU work, whatever line it synchronises at
    sync = _live(*(_stack(r, SYNC[0], Frame("main", "/w/train.py", 53 + r), util=100) for r in (0, 1)), world=2)
    assert (sync.verdict.kind.value, sync.verdict.cycle) == ("all_ranks_stuck", ())


def test_two_nodes_merge_into_one_verdict(tmp_path: Path):
    """Node 1 holds ranks 0-1 (both waiting), node 2 ranks 2-3 (rank 2 asleep): alone, node 1 cannot name the root."""
    waiting = [{"name": "MainThread", "frames": [{"name": "all_reduce", "file": "/py/torch/distributed/distributed_c10d.py",
                                                  "line": 2950}, {"name": "main", "file": "/w/train.py", "line": 52}]}]
    asleep = [{"name": "MainThread", "frames": [{"name": "main", "file": "/w/train.py", "line": 47}]}]

    def node(host: str, ranks: dict[int, list]) -> str:
        doc = {"format": "ncclcheck-snapshot", "schema_version": 1, "host": host, "ranks": [
            {"rank": r, "pid": 100 + r, "world_size": 4, "threads": t,
             "collective": "all_reduce" if t is waiting else None} for r, t in ranks.items()]}
        return _tar(tmp_path / f"snapshot-{host}.tar.gz", {"snapshot.json": json.dumps(doc).encode()})

    one = evidence_archive.read_archive(node("node1", {0: waiting, 1: waiting}))
    two = evidence_archive.read_archive(node("node2", {2: asleep, 3: waiting}))
    j1 = analyze_scans(one).verdict
    assert (j1.kind.value, j1.culprit_ranks, j1.unknown_ranks) == ("incomplete_evidence", (), (2, 3))
    j2 = analyze_scans(one + two).verdict
    assert (j2.kind.value, j2.culprit_ranks, j2.waiting_ranks) == ("lagging_rank", (2,), (0, 1, 3))
    assert j2.summary == "Rank 2 is in host code at train.py:47; ranks 0-1, 3 wait in all_reduce (train.py:52)."


def _tar(path: Path, members: dict[str, bytes], link: str | None = None) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return str(path)


def test_bad_archives_are_one_fatal_problem(tmp_path: Path):
    (tmp_path / "plain.tar.gz").write_bytes(b"not an archive")
    doc = {"format": "ncclcheck-snapshot", "schema_version": 1, "ranks": []}
    cases = {
        "plain.tar.gz": None,
        "nodoc.tar.gz": {"dumps/x": b"1"},
        "other.tar.gz": {"snapshot.json": b'{"format": "something"}'},
        "newer.tar.gz": {"snapshot.json": json.dumps(doc | {"schema_version": 5}).encode()},
        "broken.tar.gz": {"snapshot.json": b"{"},
    }
    msgs = {}
    for name, members in cases.items():
        path = tmp_path / name
        if members is not None:
            _tar(path, members)
        [scan] = evidence_archive.read_archive(str(path))
        assert scan.file == name and scan.live == () and scan.problems[0].fatal
        msgs[name] = scan.problems[0].message
    assert msgs["plain.tar.gz"].startswith("not a readable .tar.gz")
    assert msgs["nodoc.tar.gz"] == "no snapshot.json: not an ncclcheck snapshot archive"
    assert msgs["other.tar.gz"] == "snapshot.json is not an ncclcheck snapshot"
    assert msgs["newer.tar.gz"].startswith("snapshot schema_version 5 is not one of 1, 2, 3, 4")
    assert msgs["broken.tar.gz"].startswith("snapshot.json is not valid JSON")


def test_archive_reader_ignores_links_and_strange_members_and_flags_bad_dumps(tmp_path: Path):
    doc = {"format": "ncclcheck-snapshot", "schema_version": 1, "host": "n",
           "ranks": [{"rank": 0, "pid": 1, "threads": [], "dump": "dumps/bad"}, {"rank": "x"}]}
    path = _tar(tmp_path / "s.tar.gz", {"snapshot.json": json.dumps(doc).encode(), "../escape": b"x",
                                        "dumps/bad": b"\x80\x04not a pickle"}, link="dumps/link")
    scans = evidence_archive.read_archive(path)
    assert [(s.file, bool(s.problems and s.problems[0].fatal)) for s in scans] == [
        ("s.tar.gz:rank0", False), ("s.tar.gz:dumps/bad", True)]
    assert not (tmp_path.parent / "escape").exists()


# ---------------------------------------------------------------- settings lint

def test_lint_uses_each_ranks_environment(tmp_path: Path):
    ranks = [procs.RankProc(1, r, r, 3, PY, None, None, env) for r, env in
             enumerate([{"NCCL_TIMEOUT": "1800"}, {}, {"NCCL_TIMEOUT": "1800", "NCCL_ASYNC_ERROR_HANDLING": "1"}])]
    found = lint_ranks(ranks, Host(root=str(tmp_path), hostname="t"), memlock=lambda pid: None)
    got = [(f.severity, f.code, rs) for f, rs in found]
    assert got == [(Severity.ERROR, "timeout-not-read", (0, 2)), (Severity.WARNING, "deprecated-name", (2,))]


# ---------------------------------------------------------------- CLI without a job

@pytest.mark.parametrize(("euid", "advice"), [(1000, "run as the job's user or root"),
                                              (0, "even as root: another PID namespace or a hardened /proc")])
def test_cli_no_job_found(monkeypatch, euid, advice):
    monkeypatch.setattr(procs, "scan", lambda: ([], 3, {}))
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    r = runner.invoke(app, ["snapshot"], catch_exceptions=False)
    assert (r.exit_code, r.stdout) == (3, "")
    assert r.stderr.strip() == ("ncclcheck: no job found on this node: no process has RANK and WORLD_SIZE or "
                                f"LOCAL_RANK in its environment (3 processes could not be read: {advice})")


def test_cli_several_jobs_need_pid(monkeypatch):
    monkeypatch.setattr(procs, "scan", lambda: (PROCS[:5], 0, PARENTS))
    r = runner.invoke(app, ["snapshot"], catch_exceptions=False)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "ncclcheck: pid 101: torchelastic run abc, MASTER_ADDR:PORT 127.0.0.1:29500, ranks 0-2",
        "ncclcheck: pid 200: MASTER_ADDR:PORT h:29501, ranks 0",
        "ncclcheck: error: 2 jobs run here; pick one with --pid RANK_PID",
    ]


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_rank_table_never_splits_a_location(tmp_path: Path, columns: int):
    """At any width a `file:line` (and a pid) is printed whole on one line: the table stacks instead of folding."""
    from dataclasses import replace

    from rich.console import Console

    from ncclcheck.render.snapshot import report

    s = _snapshot(tmp_path)
    a = analyze_scans(archive.snapshot_scans(s))
    # the issue's own case: a script name long enough that a folding table cut it (`make_incidents3.p|y:49`)
    a = replace(a, job=replace(a.job, live=tuple(replace(p, where=Frame("main", "/work/tools/make_incidents3.py", 49))
                                                 for p in a.job.live)))
    console = Console(width=columns, record=True, color_system=None)
    console.print(report(s, a))
    text = console.export_text()
    where = [p.where for p in a.job.live if p.where is not None]
    assert where
    for f in where:
        assert f"{f.file.rsplit('/', 1)[-1]}:{f.line}" in text, (columns, text)
    assert "4000" in text and "4001" in text


def test_an_out_that_cannot_be_written_is_a_usage_error_before_anything_is_collected(tmp_path, monkeypatch):
    """Exit 2 and one line, no report: a script must not read "hang found" (1) when no archive was written."""
    from ncclcheck.snapshot import procs

    def no_scan():
        raise AssertionError("the job was scanned although --out cannot be written")

    monkeypatch.setattr(procs, "scan", no_scan)
    r = runner.invoke(app, ["snapshot", "--out", str(tmp_path / "missing" / "x.tar.gz")])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip().endswith(f"no such directory: {tmp_path / 'missing'}")


def test_the_nodes_kernel_log_travels_in_the_archive_and_joins_by_pid(tmp_path: Path):
    """snapshot keeps the end of the node's kernel log (dmesg -T) in its archive; read back, an OOM kill of a
    rank's PID names that rank; where dmesg cannot be read, the snapshot says so and the archive has no member."""
    from dataclasses import replace

    from ncclcheck.job.hosts import join_events

    kill = ("[Wed Nov 25 11:37:29 2026] Memory cgroup out of memory: Killed process 4001 (python) total-vm:6855516kB, "
            "anon-rss:3598628kB, file-rss:226300kB\n")
    s = replace(_snapshot(tmp_path), kernel_log=kill)
    path = tmp_path / "snapshot-node1.tar.gz"
    archive.write(str(path), s)
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["snapshot.json", "dumps/dump_rank_0", "kernel.log"]
    scans = evidence_archive.read_archive(str(path))
    [j] = join_events(scans)
    assert (j.event.kind, j.event.pid, j.ranks, j.by, j.event.loc.file) == (
        "oom_killed", 4001, (1,), "pid", "snapshot-node1.tar.gz:kernel.log")


def test_a_kernel_log_that_cannot_be_read_is_said(monkeypatch):
    class Refused:
        returncode, stdout = 1, ""

    monkeypatch.setattr(collect.subprocess, "run", lambda *a, **k: Refused())
    text, note = collect.kernel_log()
    assert text is None and "kernel.dmesg_restrict" in note and "run the snapshot as root" in note
