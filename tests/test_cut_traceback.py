"""A traceback cut off before its exception's line is a failure of the process that printed it (issue 41: 301, 305).

CPython prints a traceback as the exception propagates (Lib/traceback.py: ``Traceback (most recent call last):``, each
frame ``  File "<file>", line <n>, in <function>`` with its source line and, since 3.11, a line of carets, then
``<name>: <message>``). An input that ends inside one lost that last line; its prefix says whose it was: torchrun's
``[rankN]:`` (PyTorch 2.2 on), Open MPI's ``--tag-output`` ``[jobid,rank]<stream>:`` (orte/mca/iof, 1.x-4.x; prte in
5.x), a per-rank file's name. The real run is tests/data/gloo_mechanisms/ddp_alone (rank 0 alone left the loop and
stood in DDP's parameter check); the other forms are written from those formats.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import DATA, run, run_text, thread_log

from ncclcheck.job.model import VerdictKind

RUN = DATA / "gloo_mechanisms" / "ddp_alone" / "console.log"
SITE = "/usr/lib/python3.10/site-packages"


def _cut(lines: int) -> str:
    return "".join(RUN.read_text().splitlines(keepends=True)[:lines])


def _finding(v):
    return next((f for f in v.findings if f.code == "cut-traceback"), None)


@pytest.mark.parametrize("lines", [26, 27, 28])  # the frame, its source line, its carets (Python 3.11's)
def test_a_recorded_console_cut_inside_a_ranks_traceback_names_that_rank(lines):
    v = run_text(_cut(lines)).verdict
    assert v.kind is VerdictKind.RANK_FAILED_FIRST
    assert v.culprit_ranks == (0,)
    assert 1 in v.waiting_ranks  # its gloo timeout in the all_reduce rank 0 left
    f = _finding(v)
    assert f is not None and "collective of torch.distributed" in f.message
    assert "_verify_param_shape_across_processes" in f.message and "job.py:21" in f.message
    assert "broadcast it from the rank that makes it" in f.fix


def test_the_whole_console_holds_no_cut_traceback():
    """The same run with its exception's line: rank 0's error is its RuntimeError, no traceback is cut."""
    v = run(RUN).verdict
    assert _finding(v) is None
    assert "cut off" not in v.summary


def test_the_public_threads():
    """301: torchrun's ``[rank0]:`` traceback cut in DDP's check; 305: Open MPI's ``[1,5]<stdout>:`` traceback cut in
    mpi4py's runner, after rank 0's download lines (a console that only stopped, before)."""
    v = run(thread_log("301")).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, (0,))
    assert "_verify_param_shape_across_processes" in _finding(v).message
    v = run(thread_log("305")).verdict
    assert (v.kind, v.culprit_ranks) == (VerdictKind.RANK_FAILED_FIRST, (5,))
    assert "mpi4py/run.py:196" in _finding(v).message and "collective" not in _finding(v).message


def _traceback(prefix: str, tail: tuple[str, ...] = ()) -> str:
    return "\n".join((
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/workspace/train.py", line 88, in <module>',
        f"{prefix}    dist.broadcast(flag, src=0)",
        f'{prefix}  File "{SITE}/torch/distributed/distributed_c10d.py", line 1451, in broadcast',
        f"{prefix}    work.wait()",
        *tail,
    )) + "\n"


@pytest.mark.parametrize(("prefix", "rank"), [
    ("[rank3]:", 3),  # torchrun's worker prefix
    ("[1,3]<stderr>:", 3),  # Open MPI's --tag-output
    ("[1,3]<stdout>:", 3),
])
def test_every_prefix_that_names_a_rank(prefix, rank):
    v = run_text(_traceback(prefix)).verdict
    assert v.culprit_ranks == (rank,)
    assert "broadcast" in _finding(v).message and "train.py:88" in _finding(v).message


def test_a_per_rank_file_names_its_rank():
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "rank2.log"
        log.write_text("step 4/10\n" + _traceback(""))
        v = run(log).verdict
    assert v.culprit_ranks == (2,)


def test_an_exception_that_follows_closes_the_traceback():
    """KeyboardInterrupt (no Error or Exception in its name) and an error line are the traceback's end, not a cut."""
    for last in ("[rank3]: KeyboardInterrupt", "[rank3]: RuntimeError: Connection closed by peer"):
        v = run_text(_traceback("[rank3]:", (last,))).verdict
        assert _finding(v) is None and "cut off" not in v.summary


def test_a_traceback_the_input_goes_on_after_is_not_cut():
    """More lines after the last frame than CPython prints under one: the exception's line was among them."""
    v = run_text(_traceback("[rank3]:", tuple(f"[rank3]:     line {i}" for i in range(6)))).verdict
    assert _finding(v) is None and "cut off" not in v.summary


def test_a_traceback_no_line_ranks_is_no_failure_of_its_own():
    """Whose it was is unknown and its exception too (a Ctrl-C of a hung job prints one): nothing is added."""
    v = run_text(_traceback("")).verdict
    assert "cut off" not in v.summary


def test_frames_printed_with_no_traceback_line_are_no_failure():
    """traceback.print_stack() and a logger's stack_info print frames without the header: no exception."""
    text = _traceback("[rank3]:").split("\n", 1)[1]
    assert "cut off" not in run_text(text).verdict.summary
