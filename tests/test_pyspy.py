"""py-spy's text dumps read as live stacks (evidence/formats/pyspy.py, job/live.py, job/spied.py).

The line forms are written from py-spy's own format strings (benfred/py-spy src/dump.rs ``print_traces`` and
``write_trace``, 0.2.2 on; src/main.rs ``print_traces`` of 0.1.x and 0.2.0; src/stack_trace.rs ``status_str`` and
``format_threadid``); tests/data/pyspy/loader-hang is a real recording (its README says how it was made).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import reader
from ncclcheck.evidence.scan import scan_source
from ncclcheck.evidence.types import FileScan

HANG = DATA / "pyspy" / "loader-hang"
C10D = "torch/distributed/distributed_c10d.py"


def _scan(tmp_path: Path, name: str, text: str) -> FileScan:
    path = tmp_path / name
    path.write_text(text)
    return scan_source(reader.Source(str(path), str(path)))


def _verdict(*paths: Path) -> dict:
    result = CliRunner().invoke(app, ["analyze-log", "--json", *map(str, paths)])
    assert result.exit_code in (0, 1, 2), result.output
    return json.loads(result.stdout)["verdict"]


# Each release's form of one process's dump: the thread's header and a frame row, as its format strings print them.
FORMS = {
    # 0.1.x (src/main.rs): "Thread {:#X} ({})" and "\t {} ({}:{})"; no Process or Python line
    "0.1": f"Thread 0x7F3A2C1B7740 (active)\n\t all_reduce ({C10D}:1234)\n\t main (train.py:40)\n",
    # 0.2.0-0.2.1 (src/main.rs): the Process and Python lines, the OS thread id, no thread name, still "\t "
    "0.2.0": (f"Process 4242: python train.py\nPython v3.7.3 (/usr/bin/python3.7)\n\nThread 4242 (idle)\n"
              f"\t all_reduce ({C10D}:1234)\n\t main (train.py:40)\n"),
    # 0.2.2 on (src/dump.rs): 'Thread {} ({}): "{}"' and "    {} ({}:{})"
    "0.3": (f'Process 4242: python train.py\nPython v3.8.10 (/usr/bin/python3.8)\n\nThread 4242 (active+gil): '
            f'"MainThread"\n    all_reduce ({C10D}:1234)\n    main (train.py:40)\n'),
    # macOS, or no OS thread id found: the Python thread id as {:#X}, named
    "hex": f'Thread 0x7FA6E7C01740 (idle): "MainThread"\n    all_reduce ({C10D}:1234)\n    main (train.py:40)\n',
    # --native: a frame with no line prints "    {} ({})"
    "native": (f'Process 4242: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\nThread 4242 (idle): '
               f'"MainThread"\n    pthread_cond_wait (libc.so.6)\n    c10d::Work::wait (libtorch_cpu.so)\n'
               f'    all_reduce ({C10D}:1234)\n    main (train.py:40)\n'),
}


@pytest.mark.parametrize("form", FORMS)
def test_every_release_form_of_a_dump_is_its_ranks_live_stack(tmp_path, form):
    """Each release's header and frame rows read into one live stack, frames innermost first, inside all_reduce; the
    rank is the file's name's."""
    scan = _scan(tmp_path, "pyspy_rank5.txt", FORMS[form])
    [stack] = scan.live
    assert stack.global_rank == 5 and stack.collective == "all_reduce"
    frames = stack.threads[0].frames
    assert [(f.name, f.file, f.line) for f in frames][-2:] == [("all_reduce", C10D, 1234), ("main", "train.py", 40)]
    assert stack.pid == (4242 if "Process" in FORMS[form] else 0)
    assert scan.ranks_seen == (5,) and not scan.unranked


def test_the_main_thread_is_first_and_a_threads_locals_are_its_dumps_own(tmp_path):
    """--locals' lines (arguments' and locals' reprs: program data) are the dump's, read by no other source; the main
    thread is put first whatever py-spy's order."""
    text = ('Process 7: python train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n'
            'Thread 9 (idle): "Thread-1"\n    Condition.wait (threading.py:320)\n'
            'Thread 7 (idle): "MainThread"\n    main (train.py:12)\n        Locals:\n'
            '            rank: 0\n            msg: "NCCL error: unhandled system error"\n    <module> (train.py:20)\n')
    scan = _scan(tmp_path, "rank2.txt", text)
    [stack] = scan.live
    assert [t.name for t in stack.threads] == ["MainThread", "Thread-1"]
    assert [f.name for f in stack.threads[0].frames] == ["main", "<module>"]
    assert not scan.errors and not scan.clues


@pytest.mark.parametrize("variant", ["", "-locals", "-native", "-subprocesses"])
def test_recorded_dumps_name_the_rank_its_data_loader_holds(variant):
    """The recording: rank 1's main thread in its DataLoader's queue, rank 0 in all_reduce. Rank 1 lags; the summary
    says it waits for its data loader's next batch, and the first step is about the loader's workers."""
    v = _verdict(HANG / f"rank0{variant}.txt", HANG / f"rank1{variant}.txt")
    assert v["kind"] == "lagging_rank" and v["culprit_ranks"] == [1] and v["waiting_ranks"] == [0]
    assert "waiting for its data loader's next batch" in v["summary"] and "loader_hang.py:38" in v["summary"]
    assert "rank 0 waits in all_reduce (loader_hang.py:40)" in v["summary"]
    assert "num_workers=0" in v["next_steps"][0]


def test_a_childs_dump_is_not_its_parents_stack():
    """--subprocesses dumps the rank's DataLoader worker after it (a ``Parent Process`` line): the rank's stack is its
    own main thread, not the worker's ``__getitem__``."""
    scan = scan_source(reader.Source(str(HANG / "rank1-subprocesses.txt"), str(HANG / "rank1-subprocesses.txt")))
    [stack] = scan.live
    assert stack.global_rank == 1 and not scan.unranked
    assert stack.threads[0].frames[-2].name == "main"
    assert all(f.name != "Slow.__getitem__" for t in stack.threads for f in t.frames)


def test_a_launcher_tag_on_the_lines_names_the_rank(tmp_path):
    """Lines behind torchrun's ``[rankN]:`` tag (or any launcher's) are that rank's dump."""
    text = "".join(f"[rank3]:{line}\n" for line in FORMS["0.3"].splitlines())
    [stack] = _scan(tmp_path, "console.log", text).live
    assert stack.global_rank == 3 and stack.collective == "all_reduce"


def test_a_pid_a_launcher_paired_with_a_rank_names_the_dump(tmp_path):
    """Ray's line pairing a worker's PID with its rank, then that PID's dump: the dump is that rank's."""
    text = ("(RayTrainWorker pid=4242) Setting up process group for: env:// [rank=6, world_size=8]\n"
            + FORMS["0.3"])
    [stack] = _scan(tmp_path, "console.log", text).live
    assert stack.global_rank == 6


def _dump(pid: int, frames: list[str]) -> str:
    rows = "".join(f"    {f}\n" for f in frames)
    return f'Process {pid}: python train.py\nPython v3.9.7 (/usr/bin/python3.9)\n\nThread {pid} (idle): "MainThread"\n{rows}'


LOADER = ["wait (threading.py:302)", "get (queue.py:170)", "__next__ (mylib/data/iterators.py:648)",
          "train (mylib/train.py:274)"]
WAITING = [f"all_reduce ({C10D}:1234)", "train (mylib/train.py:280)"]


def test_one_unranked_dump_in_its_data_loader_is_incomplete_evidence_that_says_where(tmp_path):
    """One dump no line ranks, its main thread in an iterator's queue get: incomplete_evidence (unranked_stack), no
    culprit rank, the summary saying it waits for its data loader's next batch, a step with num_workers=0."""
    path = tmp_path / "stack.txt"
    path.write_text(_dump(101, LOADER))
    v = _verdict(path)
    assert v["kind"] == "incomplete_evidence" and v["cause"]["kind"] == "unranked_stack" and v["culprit_ranks"] == []
    assert "waiting for its data loader's next batch" in v["summary"] and "iterators.py:648" in v["summary"]
    assert any("num_workers=0" in s for s in v["next_steps"])
    assert v["action"]["kind"] == "collect-more"


def test_unranked_dumps_name_the_process_outside_the_collective(tmp_path):
    path = tmp_path / "stacks.txt"
    path.write_text(_dump(101, WAITING) + "\n" + _dump(102, WAITING) + "\n" + _dump(103, LOADER))
    v = _verdict(path)
    assert v["kind"] == "incomplete_evidence" and v["culprit_ranks"] == []
    assert "outside any collective (PID 103" in v["summary"]


def test_unranked_dumps_all_in_one_collective_point_at_the_transport(tmp_path):
    path = tmp_path / "stacks.txt"
    path.write_text(_dump(101, WAITING) + _dump(102, WAITING))
    v = _verdict(path)
    assert "Every one waits in all_reduce and none is outside it" in v["summary"]
    assert any("NCCL_P2P_DISABLE=1" in s for s in v["next_steps"])


@pytest.mark.parametrize("text", [
    # another program's "Process N:" line (JAX's device list), and frame-like lines under no thread header
    "Process 2: Global devices: [CpuDevice(id=0)]\n    train (train.py:12)\nNCCL WARN Call to connect returned "
    "Connection refused\n",
    # ProcessGroupNCCL's words, and a logger's "(file.py:N)" lines
    "Process group watchdog thread terminated with exception\n    step (engine.py:123)\n",
])
def test_lines_that_are_no_dump_make_no_stack(tmp_path, text):
    scan = _scan(tmp_path, "rank1.log", text)
    assert not scan.live and not scan.unranked


@pytest.mark.parametrize("engine", reader.ENGINES)
def test_a_dump_deep_in_a_long_log_is_handed_over_whole(tmp_path, engine, monkeypatch):
    """A dump 2 MiB into a log: its header holds a word of its source, its Python frames are found by their shape
    (``(file.py:N)`` at a line's end), its native frames come with them; every engine hands them all over."""
    monkeypatch.setattr(reader, "ENGINE", engine)
    chatter = "".join(f"node3:4003:4103 [3] NCCL INFO Channel {i % 32:02d}/32 : 3[3] -> 4[4] via P2P/IPC/read\n"
                      f"step {i} loss 0.5\n" for i in range(30000))
    deep = [f"frame{i} (mylib/deep.py:{i + 1})" for i in range(40)]
    dump = _dump(5, ["pthread_cond_wait (libc.so.6)", *WAITING[:1], *deep])
    scan = _scan(tmp_path, "rank4.log", chatter + dump + chatter)
    [stack] = scan.live
    assert stack.global_rank == 4 and stack.collective == "all_reduce"
    assert [f.name for f in stack.threads[0].frames] == ["pthread_cond_wait", "all_reduce", *(f"frame{i}" for i in range(40))]


def test_the_others_timeouts_and_the_lagging_ranks_dump_together(tmp_path):
    """Ranks 0, 2, 3 time out in ALLREDUCE #5 (ProcessGroupNCCL's watchdog line) and rank 1's recorded dump is in its
    DataLoader's queue: rank 1 is the culprit, the summary adds what its main thread waits for (not "no rank is inside
    a collective": the others' logs say they are), and the data loader's step comes first."""
    console = tmp_path / "console.log"
    console.write_text("".join(
        f"[rank{r}]:[E1119 13:21:13.092845528 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for "
        "600013 milliseconds before timing out.\n" for r in (0, 2, 3)))
    v = _verdict(console, HANG / "rank1.txt")
    assert v["kind"] == "lagging_rank" and v["culprit_ranks"] == [1] and v["waiting_ranks"] == [0, 2, 3]
    assert "Rank 1's main thread is waiting for its data loader's next batch" in v["summary"]
    assert "No rank is inside" not in v["summary"]
    assert v["next_steps"][0].startswith("Rank 1's main thread waits for its data loader's next batch")


def test_a_data_loader_workers_own_dump_names_what_holds_the_batch():
    """--subprocesses dumps rank 1's DataLoader worker under it: the summary says where that worker is (the dataset's
    __getitem__ that sleeps), after what rank 1's main thread waits for."""
    v = _verdict(HANG / "rank0-subprocesses.txt", HANG / "rank1-subprocesses.txt")
    assert v["culprit_ranks"] == [1]
    assert "waiting for its data loader's next batch" in v["summary"]
    assert "while its worker process (PID " in v["summary"] and "Slow.__getitem__ at loader_hang.py:30" in v["summary"]
