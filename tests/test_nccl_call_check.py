"""PyTorch's own NCCL calls word their error ``NCCL Error <n>: <reason>`` (torch/csrc/cuda/nccl.cpp,
throw_nccl_error); ProcessGroupNCCL makes them for all_to_all, gather, scatter, send and recv on a communicator it
had already made, while its set-up's check (C10D_NCCL_CHECK) reads ``NCCL error in: <file>:<line>, ...``. Under a
traceback through one of those collectives the error is that call's, a run-time NCCL error (job/callphase.py); the
unhandled CUDA error's steps then name the device each group's calls run on. Lines are written from those format
strings and Python's traceback layout.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app

C10D = "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"


def _traceback(frame: str, error: str) -> str:
    return ("[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/work/train.py", line 88, in <module>\n'
            "[rank1]:     step(x)\n"
            f"{frame}"
            f"[rank1]: {error}\n")


def _verdict(tmp_path, text: str) -> dict:
    path = tmp_path / "console.log"
    path.write_text(text)
    return json.loads(CliRunner().invoke(app, ["analyze-log", "--json", str(path)]).stdout)["verdict"]


@pytest.mark.parametrize("op", ["all_to_all_single", "gather", "scatter", "send", "recv"])
def test_pytorchs_own_nccl_calls_error_under_their_collective_is_that_calls(tmp_path, op):
    frame = f'[rank1]:   File "{C10D}", line 4388, in {op}\n[rank1]:     work = group.{op}(tensor)\n'
    v = _verdict(tmp_path, _traceback(frame, "RuntimeError: NCCL Error 1: unhandled cuda error"))
    assert v["kind"] == "nccl_error"
    assert f"ProcessGroupNCCL makes for {op}" in v["summary"] and "not in the communicator's set-up" in v["summary"]
    assert any("torch.cuda.set_device(local_rank) before init_process_group" in s for s in v["next_steps"])


@pytest.mark.parametrize(("frame", "error"), [
    # ProcessGroupNCCL's own check (its lazy set-up in the first collective): C10D_NCCL_CHECK's words
    (f'[rank1]:   File "{C10D}", line 2050, in all_to_all_single\n',
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
     "unhandled cuda error, NCCL version 2.19.3"),
    # the same words through DataParallel's torch.cuda.nccl, whose communicators are made in that very call
    ('[rank1]:   File "/usr/lib/python3/site-packages/torch/nn/parallel/comm.py", line 58, in broadcast_coalesced\n',
     "RuntimeError: NCCL Error 1: unhandled cuda error"),
    # an all_reduce: not one of the calls PyTorch makes through torch/csrc/cuda/nccl.cpp
    (f'[rank1]:   File "{C10D}", line 2050, in all_reduce\n', "RuntimeError: NCCL Error 1: unhandled cuda error"),
])
def test_other_paths_stay_the_set_up(tmp_path, frame, error):
    v = _verdict(tmp_path, _traceback(frame, error))
    assert v["kind"] == "setup_failure" and "not in the communicator's set-up" not in v["summary"]
