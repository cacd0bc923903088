"""An NCCL 'invalid usage' that a collective's own C API call returned through a binding (vLLM's pynccl): the CUDA
graph capture NCCL refuses (src/misc/strongstream.cc), the host's library and driver, not two ranks on one GPU."""

from __future__ import annotations

import json

from conftest import run_text
from typer.testing import CliRunner

from ncclcheck.cli import app

FRAMES = (
    '[rank0]:   File "/opt/vllm/vllm/distributed/device_communicators/pynccl.py", line 118, in all_reduce\n'
    '[rank0]:     self.nccl.ncclAllReduce(buffer_type(tensor.data_ptr()),\n'
    '[rank0]:   File "/opt/vllm/vllm/distributed/device_communicators/pynccl_wrapper.py", line 257, in ncclAllReduce\n'
    '[rank0]:     self.NCCL_CHECK(self._funcs["ncclAllReduce"](sendbuff, recvbuff, count,\n'
    '[rank0]:   File "/opt/vllm/vllm/distributed/device_communicators/pynccl_wrapper.py", line 223, in NCCL_CHECK\n'
    '[rank0]:     raise RuntimeError(f"NCCL error: {error_str}")\n'
    "[rank0]: RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n")


def test_a_collectives_own_invalid_usage_is_the_graph_capture_with_no_culprit():
    v = run_text(FRAMES).verdict
    assert (v.kind.value, v.cause.cause.kind, list(v.culprit_ranks), list(v.stopped_ranks)) == (
        "nccl_error", "nccl_graph_capture", [], [0])
    assert "NCCL's ncclAllReduce itself returned invalid usage" in v.summary
    assert any("VLLM_NCCL_SO_PATH" in s for s in v.next_steps)


def test_nccls_warn_names_the_capture_itself():
    warn = ("node1:2210:2210 [0] NCCL WARN NCCL cannot be captured in a graph if either it wasn't built with CUDA "
            "runtime >= 11.3 or if the installed CUDA driver < R465.\n")
    v = run_text(warn + FRAMES).verdict
    assert (v.cause.cause.kind, list(v.culprit_ranks)) == ("nccl_graph_capture", [])


def test_without_a_collectives_frame_an_unsaid_invalid_usage_stays_the_duplicate_gpu():
    v = run_text(FRAMES.splitlines(keepends=True)[-1]).verdict
    assert v.cause.cause.kind == "duplicate_gpu"


def test_the_json_names_no_culprit(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(FRAMES)
    r = CliRunner().invoke(app, ["analyze-log", "--json", str(log)])
    v = json.loads(r.stdout)["verdict"]
    assert (r.exit_code, v["culprit_ranks"], v["waiting_ranks"], v["cause"]["kind"]) == (
        1, [], [], "nccl_graph_capture")  # README: exit 1, a failure found
