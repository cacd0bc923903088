"""Python's faulthandler dumps read as live stacks (evidence/formats/faulthandler.py, job/live.py, job/spied.py) and
the frame families a stack can wait in (job/framewaits.py).

The line forms are written from CPython's own format strings (Python/traceback.c ``write_thread_id``,
``dump_traceback``, ``dump_frame``; Modules/faulthandler.c ``format_timeout``, ``faulthandler_fatal_error``), each
release's; tests/data/faulthandler is a real recording (its README says how it was made).
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

REC = DATA / "faulthandler"
C10D = "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"
_FRAMES = f'  File "{C10D}", line 1234 in all_reduce\n  File "/work/train.py", line 40 in main\n'


def _scan(tmp_path: Path, name: str, text: str) -> FileScan:
    path = tmp_path / name
    path.write_text(text)
    return scan_source(reader.Source(str(path), str(path)))


def _verdict(*paths: Path) -> dict:
    result = CliRunner().invoke(app, ["analyze-log", "--json", *map(str, paths)])
    assert result.exit_code in (0, 1, 2), result.output
    return json.loads(result.stdout)["verdict"]


# Each release's form of one thread's dump: its header line and the frames under it.
FORMS = {
    # 3.3: write_thread_id without the words in parentheses
    "3.3": "Current thread 0x00007fb899f39700:\n" + _FRAMES,
    # 3.4 to 3.13: all_threads=True, the thread not the dumping one (dump_traceback_later's timer thread has no state)
    "3.4": "Thread 0x00007f57caf71740 (most recent call first):\n" + _FRAMES,
    # the dumping thread's (dump_traceback(), a registered signal's handler)
    "current": "Current thread 0x00007f57caf71740 (most recent call first):\n" + _FRAMES,
    # 3.14: the thread's name in brackets after its id
    "3.14": "Thread 0x00007f57caf71740 [python3] (most recent call first):\n" + _FRAMES,
    # all_threads=False: one thread, no id
    "stack": "Stack (most recent call first):\n" + _FRAMES,
    # dump_traceback_later's timer line (fractional seconds: %06u microseconds), 3.12's collector line
    "timer": "Timeout (0:10:00.500000)!\nCurrent thread 0x00007f57caf71740 (most recent call first):\n"
             "  Garbage-collecting\n" + _FRAMES,
}


@pytest.mark.parametrize("form", FORMS)
def test_every_release_form_of_a_dump_is_its_ranks_live_stack(tmp_path, form):
    """Each release's header and frame rows read into one live stack, frames innermost first, inside all_reduce; the
    rank is the file's name's."""
    scan = _scan(tmp_path, "rank5.log", FORMS[form])
    [stack] = scan.live
    assert stack.global_rank == 5 and stack.collective == "all_reduce"
    assert [(f.name, f.file, f.line) for f in stack.threads[0].frames] == [("all_reduce", C10D, 1234),
                                                                           ("main", "/work/train.py", 40)]
    assert not scan.errors and not scan.clues


def test_threads_are_read_apart_with_the_main_thread_first(tmp_path):
    """The interpreter lists threads newest first: the main thread is the last one printed, put first; a thread
    outside Python code (``<no Python frame>``) and a frame's unknown parts (``???``) are read."""
    text = ("Thread 0x00007f11 (most recent call first):\n  <no Python frame>\n\n"
            'Thread 0x00007f22 (most recent call first):\n  File "???", line ??? in ???\n'
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n\n'
            "Thread 0x00007f33 (most recent call first):\n" + _FRAMES)
    [stack] = _scan(tmp_path, "rank0.log", text).live
    assert [t.name for t in stack.threads] == ["Thread 0x00007f33", "Thread 0x00007f11", "Thread 0x00007f22"]
    assert stack.collective == "all_reduce"
    assert [f.line for f in stack.threads[2].frames] == [0, 320]


def test_a_crash_dump_is_no_live_stack(tmp_path):
    """The dump after ``Fatal Python error: Segmentation fault`` is where the process crashed: the fatal line is
    the crash (errors.py), the frames are no live stack (nor is a Py_FatalError's, with its state line)."""
    for head in ("Fatal Python error: Segmentation fault\n\n",
                 "Fatal Python error: _PyMem_DebugRawFree: bad ID\nPython runtime state: initialized\n\n"):
        scan = _scan(tmp_path, "rank1.log", head + "Current thread 0x00007f3d44646b80 (most recent call first):\n"
                     + _FRAMES + "\nExtension modules: torch._C (total: 1)\n")
        assert not scan.live and not scan.unranked
    crash = str(DATA / "crash/torchrun/console.log")
    scan = scan_source(reader.Source(crash, crash))
    assert not scan.live and not scan.unranked


def test_a_tracebacks_frames_are_not_a_dump(tmp_path):
    """A traceback's frame has a comma before ``in`` (``line N, in f``): no dump."""
    text = ('Traceback (most recent call last):\n  File "/work/train.py", line 40, in main\n'
            f'  File "{C10D}", line 1234, in all_reduce\nRuntimeError: boom\n')
    scan = _scan(tmp_path, "rank0.log", text)
    assert not scan.live and not scan.unranked


def test_a_frame_whose_thread_line_was_cut_opens_a_dump(tmp_path):
    """A paste that starts at the frames (faulthandler's shape alone has no comma) is still a dump; the summary says
    its thread's line was cut."""
    path = tmp_path / "paste.log"
    path.write_text(_FRAMES)
    v = _verdict(path)
    assert v["kind"] == "incomplete_evidence" and v["cause"]["kind"] == "unranked_stack"
    assert "faulthandler dump" in v["summary"] and "thread's line cut off" in v["summary"]
    path.write_text('  File "/work/train.py", line 40 in main\n')  # outside any collective: no claim it is waited for
    v = _verdict(path)
    assert "not certain" in v["summary"] and "the one they wait for" not in v["summary"]


def test_recorded_dumps_behind_torchruns_tags_name_the_rank_that_was_elsewhere():
    """The recording: every rank's timer fired; rank 0's dump is inside all_reduce, rank 1's in its own code (it ran
    one all_reduce fewer): rank 1 is the one rank 0 waited for."""
    v = _verdict(REC / "extra-allreduce-tee" / "console.log")
    assert v["culprit_ranks"] == [1] and v["waiting_ranks"] == [0]
    assert "rank 0 waits in all_reduce (hang.py:27 (step))" in v["summary"]


def test_recorded_dumps_with_no_tag_are_read_as_dumps_no_rank_names():
    path = str(REC / "extra-allreduce" / "console.log")
    scan = scan_source(reader.Source(path, path))
    assert not scan.live
    assert sorted(len(u.threads[0].frames) for u in scan.unranked) == [2, 5]
    assert all(u.tool == "faulthandler" and u.command == "Timeout (0:00:06)!" for u in scan.unranked)


# DeepSpeed ZeRO-3's parameter fetch, as a dump shows it in each layout of its code (frames innermost first):
# 0.3.10-0.5's stage3.py, 0.6-0.8's stage3.py with the coordinator, 0.9 on parameter_offload.py and
# partitioned_param_coordinator.py (the gather's handle wait in partition_parameters.py).
_SITE = "/usr/lib/python3/site-packages"
ZERO3 = {
    "0.4": [("torch/cuda/streams.py", 95, "synchronize"), ("deepspeed/runtime/zero/stage3.py", 521,
            "_synchronize_communication"), ("deepspeed/runtime/zero/stage3.py", 390, "fetch_sub_module"),
            ("deepspeed/runtime/zero/stage3.py", 1517, "pre_sub_module_forward_function"),
            ("deepspeed/runtime/zero/stage3.py", 1418, "_pre_forward_module_hook")],
    "0.9": [("deepspeed/runtime/zero/partition_parameters.py", 709, "wait"),
            ("deepspeed/runtime/zero/partitioned_param_coordinator.py", 310, "fetch_sub_module"),
            ("deepspeed/runtime/zero/parameter_offload.py", 525, "pre_sub_module_forward_function"),
            ("deepspeed/runtime/zero/parameter_offload.py", 353, "_pre_forward_module_hook")],
    "fsdp": [("torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py", 417, "wait_for_unshard"),
             ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py", 290, "_pre_forward")],
}


@pytest.mark.parametrize("layout", ZERO3)
def test_a_stack_in_a_frameworks_own_gather_says_every_rank_runs_it_alike(tmp_path, layout):
    """A main thread inside ZeRO-3's parameter fetch (or FSDP's unshard) waits in that framework's all-gather, with
    no torch.distributed call on its stack: the summary says so, and the step names what makes one rank run fewer
    forwards (generation's synced_gpus)."""
    frames = "".join(f'  File "{_SITE}/{f}", line {n} in {name}\n' for f, n, name in ZERO3[layout])
    path = tmp_path / "dump.log"
    path.write_text("Thread 0x00007f57caf71740 (most recent call first):\n" + frames
                    + '  File "/work/generate.py", line 12 in main\n')
    v = _verdict(path)
    assert v["kind"] == "incomplete_evidence"
    assert "an all_gather of its own" in v["summary"]
    assert "synced_gpus=True" in v["next_steps"][0] and "the dumped process no line ranks" in v["next_steps"][0]


def test_a_stack_in_its_own_code_names_no_family(tmp_path):
    path = tmp_path / "dump.log"
    path.write_text("Thread 0x00007f57caf71740 (most recent call first):\n"
                    '  File "/work/train.py", line 40 in main\n')
    v = _verdict(path)
    assert not any("synced_gpus" in s for s in v["next_steps"])
