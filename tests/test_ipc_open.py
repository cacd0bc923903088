"""A process that cannot open a peer process's GPU memory from its IPC handle: the GPU peer-to-peer path of its host
(cause p2p_unsupported, a setting of the host: no rank is its culprit).

Each line is written from the format string of the library that prints it: NCCL 2.3-2.7's WARN after
cudaIpcOpenMemHandle (src/transport/p2p.cc), UCX's CUDA IPC cache (src/uct/cuda/cuda_ipc/cuda_ipc_cache.c), oneCCL's
Level Zero calls (src/sched/entry/ze/ze_call.cpp, raised into Python by its PyTorch binding).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app

LINES = [
    "[rank{r}]:gpu1:2753:2762 [{r}] NCCL WARN failed to open CUDA IPC handle : 201 invalid device context",
    "[rank{r}]:[1700000000.123456] [gpu1:4242:0]  cuda_ipc_cache.c:288  UCX  ERROR cuIpcOpenMemHandle() failed: "
    "invalid argument",
    "[rank{r}]: RuntimeError: oneCCL: ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemOpenIpcHandle, code: "
    "ZE_RESULT_ERROR_INVALID_ARGUMENT",
    # UCX's UCT_CUDADRV_LOG (src/uct/cuda/base/cuda_util.h): "%s failed: %s" with the call as written
    "[rank{r}]:[1700000000.123456] [gpu1:4242:0]  cuda_ipc_cache.c:301  UCX  ERROR cuIpcOpenMemHandle((CUdeviceptr*)"
    "&ptr, key->ph, 0x1) failed: invalid device context",
]


def _verdict(tmp_path, text: str) -> dict:
    path = tmp_path / "console.log"
    path.write_text(text)
    return json.loads(CliRunner().invoke(app, ["analyze-log", "--json", str(path)]).stdout)["verdict"]


@pytest.mark.parametrize("line", LINES)
def test_every_rank_failing_to_open_a_peers_ipc_handle_is_the_hosts_p2p_path(tmp_path, line):
    """Both ranks print it: the host's peer-to-peer path, a set-up failure, no culprit; the steps name the isolating
    settings of each library."""
    v = _verdict(tmp_path, "".join(line.format(r=r) + "\n" for r in (0, 1)))
    assert (v["kind"], v["cause"]["kind"], v["culprit_ranks"]) == ("setup_failure", "p2p_unsupported", [])
    steps = " ".join(v["next_steps"])
    assert "NCCL_P2P_DISABLE=1" in steps and "CCL_TOPO_P2P_ACCESS=0" in steps and "UCX_TLS=^cuda_ipc" in steps


@pytest.mark.parametrize("line", [
    "zeMemOpenIpcHandle returned ZE_RESULT_SUCCESS",  # no failure
    "opened the peer's CUDA IPC handle for rank 1 in 3 ms",
])
def test_an_ipc_handle_opened_is_no_failure(tmp_path, line):
    assert (_verdict(tmp_path, line + "\n")["cause"] or {}).get("kind") != "p2p_unsupported"
