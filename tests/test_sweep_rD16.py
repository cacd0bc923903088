"""NCCL's WARN lines read with their own meaning (issue 41, the sweep of NCCL's src/ for the lines a failed job
prints): each line alone is the failure it states, with the entry of job/statements.toml or the cause of the
catalogue whose mechanism it names, and the first next step is that mechanism's.

The lines are written from NCCL's format strings (tests/data/stated_formats/nccl_warn_sweep.log, its README says
which source prints each), not from any thread's words.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.render.json_out import analysis_json

SWEEP = (Path(__file__).resolve().parent / "data" / "stated_formats" / "nccl_warn_sweep.log").read_text().splitlines()


def _verdict(text: str) -> dict:
    return analysis_json(run_text(text + "\n"))["verdict"]


def _said(text: str) -> str | None:
    cause = run_text(text + "\n").verdict.cause
    return cause.said.id if cause is not None and cause.said is not None else None


# NCCL_DEBUG=INFO's set-up lines before the failure: the stated line keeps its reading after them
SETUP = """gpu1:4101:4101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
gpu1:4101:4101 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
NCCL version 2.21.5+cuda12.4
gpu1:4101:4150 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>
gpu1:4101:4150 [0] NCCL INFO comm 0x55d0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1a2b - Init START"""


@pytest.mark.parametrize("index, entry, kind, step", [
    (0, "nccl_world_disagrees", "setup_failure", "Give every process the same world"),
    (1, "nccl_world_disagrees", "setup_failure", "Give every process the same world"),
    (2, "nccl_world_disagrees", "setup_failure", "Give every process the same world"),
    (3, "nccl_world_disagrees", "setup_failure", "Give every process the same world"),
    (4, "nccl_comm_id_format", "setup_failure", "Unset NCCL_COMM_ID"),
    (5, "nccl_net_count_differs", "setup_failure", "Compare the NICs each node's ranks use"),
    (6, "ib_link_layer_mixed", "setup_failure", "Name NICs of one link type on every node with NCCL_IB_HCA"),
    (7, "ib_link_layer_mixed", "setup_failure", "Name NICs of one link type on every node with NCCL_IB_HCA"),
    (8, "ib_link_layer_mixed", "setup_failure", "Name NICs of one link type on every node with NCCL_IB_HCA"),
    (9, "open_files_limit", "nccl_error", "Raise the open-file limit"),
    (10, "open_files_limit", "nccl_error", "Raise the open-file limit"),
    (11, "open_files_limit", "nccl_error", "Raise the open-file limit"),
    (12, "thread_limit", "nccl_error", "Count the threads against the limits"),
    (13, "thread_limit", "nccl_error", "Count the threads against the limits"),
    (14, "nccl_buffer_not_on_comm_gpu", "nccl_error", "Make each rank's tensors live on the GPU"),
    (15, "nccl_buffer_not_on_comm_gpu", "nccl_error", "Make each rank's tensors live on the GPU"),
    (16, "nccl_no_algorithm", "nccl_error", "Unset NCCL_ALGO and NCCL_PROTO"),
    (17, "nccl_no_algorithm", "nccl_error", "Unset NCCL_ALGO and NCCL_PROTO"),
    (18, "nccl_uds_peer_missing", "setup_failure", "Where the ranks of a node run in separate containers"),
    (19, "nccl_uds_peer_missing", "setup_failure", "Where the ranks of a node run in separate containers"),
    (20, "nccl_gpu_buffer_alloc", "nccl_error", "Read NCCL's Cuda failure line just before it"),
    (21, "nccl_gpu_buffer_alloc", "nccl_error", "Read NCCL's Cuda failure line just before it"),
    (22, "nccl_oob_ifname_missing", "setup_failure", "Set NCCL_OOB_NET_IFNAME to a device"),
    (23, "nccl_oob_ifname_missing", "setup_failure", "Set NCCL_OOB_NET_IFNAME to a device"),
    (24, "nvml_driver_library_mismatch", "setup_failure", "Compare the kernel module's release"),
    (25, "nccl_host_alloc_failed", "nccl_error", "Check the host's memory where the rank ran"),
    (26, "nccl_host_alloc_failed", "nccl_error", "Check the host's memory where the rank ran"),
])
@pytest.mark.parametrize("setup", [False, True], ids=["alone", "after_setup"])
def test_a_nccl_warn_line_is_read_with_its_mechanism(index, entry, kind, step, setup):
    line = SWEEP[index]
    text = f"{SETUP}\n{line}" if setup else line
    v = _verdict(text)
    assert (v["kind"], v["cause"]["kind"]) == (kind, "stated_reason"), line
    assert _said(text) == entry
    assert v["next_steps"][0].startswith(step)
    assert v["stated"]["text"] in line


def test_the_pythons_thread_refusal_is_the_same_limit():
    """CPython's "can't start new thread" (Modules/_threadmodule.c) is pthread_create's EAGAIN under a traceback."""
    assert _said("[rank0]: RuntimeError: can't start new thread") == "thread_limit"


@pytest.mark.parametrize("line, cause, step", [
    ("gpu-n1:4410:4470 [0] init.cc:1057 NCCL WARN Multiple Ranks are using the same GPU/Partition. Set "
     "NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.", "duplicate_gpu", "Call `torch.cuda.set_device"),
    ("node2:3301:3390 [0] init.cc:1043 NCCL WARN Mismatched NCCL version detected : rank 0 version 22105 rank 4 "
     "version 21805", "nccl_version_mismatch", "Run every node from the same image"),
    ("node2:3301:3399 [0] ras/ras.cc:415 NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<28028> (local: "
     "2.24.3, remote 2.23.4)", "nccl_version_mismatch", "Run every node from the same image"),
    ("node1:1958:1990 [3] transport/net_ib/init.cc:307 NCCL WARN NET/IB : No IP interface found.",
     "no_socket_interface", "Set NCCL_SOCKET_IFNAME to an interface that exists on every node"),
    ("node1:1958:1958 [3] bootstrap.cc:120 NCCL WARN NET/Socket : No usable listening interface found",
     "no_socket_interface", "Set NCCL_SOCKET_IFNAME to an interface that exists on every node"),
    ("node1:1958:1990 [3] transport/net_socket.cc:61 NCCL WARN NET/Socket : no interface found",
     "no_socket_interface", "Set NCCL_SOCKET_IFNAME to an interface that exists on every node"),
    ("node1:1234:1290 [0] misc/socket.cc:564 NCCL WARN socketProgressOpt: Call to send to 10.0.0.2<44312> failed : "
     "Broken pipe", "remote_exited", "First the peer's own log"),
    ("node1:2345:2390 [1] include/alloc.h:120 NCCL WARN Cuda failure 2 'out of memory'", "cuda_oom",
     "Lower the per-GPU batch"),
    ("node1:2001:2050 [0] transport/net_ib.cc:1081 NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<44312> collective "
     "mismatch error, local size 1048576 remote size 65536", "calls_disagree", "Rerun with TORCH_DISTRIBUTED_DEBUG"),
    ("node1:2001:2050 [0] transport/net_ib.cc:666 NCCL WARN NET/IB : collective mismatch error local size 1048576 "
     "remote 65536 addr 7f3a2c000000 rkey 1a2b seq 3/3", "calls_disagree", "Rerun with TORCH_DISTRIBUTED_DEBUG"),
    ("node1:1958:1958 [3] include/socket.h:202 NCCL WARN Net : No interface found in the same subnet as remote "
     "address 10.0.0.1<29500>", "no_socket_interface", "Set NCCL_SOCKET_IFNAME to an interface that exists"),
])
def test_a_nccl_warn_line_names_its_cause(line, cause, step):
    """The catalogue's causes read every release's wording of their NCCL lines: 2.30.7's duplicate GPU, init.cc's and
    RAS's version checks, the interface lookups of the socket and IB transports and of NCCL_COMM_ID's subnet, a send
    to a closed peer (EPIPE), and CUCHECK's out of memory with its code."""
    v = _verdict(line)
    assert v["cause"]["kind"] == cause
    assert v["next_steps"][0].startswith(step)


def test_nccls_unix_socket_is_not_the_store():
    """NCCL's Unix socket to a process of its own host refused is not the rendezvous store unreachable."""
    v = _verdict(SWEEP[18])
    assert v["cause"]["kind"] != "store_unreachable" and v["kind"] != "launcher_failure"


def test_the_warn_line_keeps_its_meaning_above_pytorchs_error():
    """NCCL's WARN, then PyTorch's DistBackendError with ncclGetErrorString's words: the WARN says why."""
    text = (f"{SWEEP[3]}\n[rank9]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
            "c10d/ProcessGroupNCCL.cpp:1970, invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5")
    v = _verdict(text)
    assert v["kind"] == "setup_failure" and v["next_steps"][0].startswith("Give every process the same world")


def test_nccls_connect_with_no_route_is_not_the_store():
    """NCCL's socketPollConnect to a peer's address with EHOSTUNREACH is NCCL's socket layer, not the store."""
    v = _verdict("node1:2001:2050 [0] misc/socket.cc:484 NCCL WARN socketPollConnect: Connect to 10.0.0.2<44312> "
                 "returned 113(No route to host) errno 113(No route to host)")
    assert v["cause"]["kind"] != "store_unreachable"
    assert "NCCL_SOCKET_IFNAME" in v["next_steps"][0]
